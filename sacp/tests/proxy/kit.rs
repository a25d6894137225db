//! `sacp::testing` itself: the scripted editor and agent around real proxies, through the
//! conductor's routing — cancel, a crash, two sessions, MCP over ACP, paused time, ordering
//! under a transform, and the messages its assertions fail with.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use sacp::acp::{
    ContentBlock, ContentChunk, NewSessionRequest, NewSessionResponse, PermissionOptionKind,
    PromptRequest, PromptResponse, RequestPermissionOutcome, SessionNotification, SessionUpdate,
    StopReason, TextContent,
};
use sacp::mcp::ToolCx;
use sacp::proxy::Cx;
use sacp::testing::{MessageKind, Permission, ScriptedAgent, ScriptedEditor, Step, TestChain};
use serde_json::json;

/// Upper-cases what the agent says, counts prompts, and offers a tool that says how many.
#[derive(Default)]
struct Shouter {
    prompts: AtomicUsize,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greeting {
    /// Who to greet.
    name: String,
}

#[sacp::proxy(mcp_name = "shouter")]
impl Shouter {
    /// How many prompts went through.
    #[tool]
    async fn prompts_seen(&self, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(self.prompts.load(Ordering::SeqCst).to_string())
    }

    /// Greets someone, loudly.
    #[tool]
    async fn greet(&self, input: Greeting, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(format!("HELLO {}", input.name.to_uppercase()))
    }

    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        self.prompts.fetch_add(1, Ordering::SeqCst);
        cx.successor().request(req).await
    }

    #[on_notification(from = agent)]
    async fn update(&self, mut n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        if let SessionUpdate::AgentMessageChunk(ContentChunk {
            content: ContentBlock::Text(text),
            ..
        }) = &mut n.update
        {
            text.text = text.text.to_uppercase();
        }
        cx.client().notify(n).await
    }
}

/// Forwards everything.
struct Quiet;

#[sacp::proxy]
impl Quiet {}

#[tokio::test]
async fn a_turn_is_exactly_the_updates_between_the_prompt_and_its_answer() -> sacp::Result<()> {
    let agent = ScriptedAgent::new().script([
        Step::say("one "),
        Step::think("hmm"),
        Step::say("two"),
        Step::after_answer([Step::say("late")]),
    ]);
    let chain = TestChain::new()
        .proxy(Shouter::default())
        .proxy(Quiet)
        .agent(agent)
        .start()
        .await?;
    let session = chain.new_session().await?;
    let turn = session.prompt("go").await?;
    turn.assert_lines(["message: ONE ", "thought: hmm", "message: TWO"]);
    assert_eq!(turn.stop_reason(), &StopReason::EndTurn);
    // What the agent said after its answer belongs to no turn, and comes after it.
    let mut count = 0;
    session
        .until_update("the late update", |_| {
            count += 1;
            count == 4
        })
        .await;
    assert_eq!(turn.late().len(), 1);
    assert_eq!(session.updates().len(), 4);
    assert_eq!(chain.proxy::<Shouter>().prompts.load(Ordering::SeqCst), 1);
    chain.close().await?;
    Ok(())
}

#[tokio::test]
async fn the_transcript_shows_every_hop_with_envelopes_unwrapped() -> sacp::Result<()> {
    let chain = TestChain::new().proxy(Quiet).start().await?;
    let session = chain.new_session().await?;
    session.prompt("hi").await?.assert_text("hi");
    let transcript = chain.transcript().clone();
    let prompts: Vec<String> = transcript
        .of("session/prompt")
        .iter()
        .map(|r| format!("{} -> {} {:?} wrapped={}", r.from, r.to, r.kind, r.wrapped))
        .collect();
    assert_eq!(
        prompts,
        [
            "editor -> Quiet Request wrapped=false",
            "Quiet -> ScriptedAgent Request wrapped=false",
            "ScriptedAgent -> Quiet Result wrapped=false",
            "Quiet -> editor Result wrapped=false",
        ]
    );
    // The proxy got the agent's update in the successor envelope, and passed it on plain.
    let updates = transcript.of("session/update");
    assert_eq!(updates.len(), 2, "{transcript}");
    assert!(
        updates[0].wrapped && updates[0].to == "Quiet",
        "{transcript}"
    );
    assert!(
        !updates[1].wrapped && updates[1].to == "editor",
        "{transcript}"
    );
    // The handshake: the proxy was offered the capability, the agent was not.
    let inits = transcript.of("initialize");
    assert_eq!(
        inits[0].payload["_meta"]["proxy"],
        json!(true),
        "{transcript}"
    );
    assert!(inits[1].payload.get("_meta").is_none(), "{transcript}");
    assert_eq!(inits[1].kind, MessageKind::Request);
    chain.close().await?;
    Ok(())
}

#[tokio::test]
async fn a_cancel_ends_the_turn_and_reaches_the_agent() -> sacp::Result<()> {
    let agent = ScriptedAgent::new().script([Step::say("waiting"), Step::wait_for_cancel()]);
    let chain = TestChain::new()
        .proxy(Shouter::default())
        .agent(agent)
        .start()
        .await?;
    let session = chain.new_session().await?;
    let pending = session.prompt("wait for me");
    chain
        .transcript()
        .wait_for("the update to reach the editor", |r| {
            r.to == "editor" && r.method == "session/update"
        })
        .await;
    session.cancel().await?;
    let turn = pending.await?;
    assert_eq!(turn.stop_reason(), &StopReason::Cancelled);
    turn.assert_lines(["message: WAITING"]);
    assert_eq!(
        chain.agent::<ScriptedAgent>().cancels(),
        [session.id().clone()]
    );
    chain.close().await?;
    Ok(())
}

#[tokio::test]
async fn a_crash_of_the_agent_fails_what_is_in_flight_and_ends_the_chain() -> sacp::Result<()> {
    let agent = ScriptedAgent::new().script([Step::say("last words"), Step::crash()]);
    let chain = TestChain::new().proxy(Quiet).agent(agent).start().await?;
    let session = chain.new_session().await?;
    let error = session.prompt("crash").await.unwrap_err();
    assert!(
        error
            .message
            .contains("component 2 (\"ScriptedAgent\") closed its connection"),
        "{error}"
    );
    // What it said before it crashed still reached the editor.
    assert_eq!(
        session.updates(),
        [SessionUpdate::AgentMessageChunk(ContentChunk::new(
            ContentBlock::Text(TextContent::new("last words"))
        ))]
    );
    // The chain is over: the next request fails at once saying why, and every component ends.
    let after = chain.editor().new_session().await.unwrap_err();
    assert!(
        after
            .message
            .starts_with("the chain has ended: component 2 (\"ScriptedAgent\")"),
        "{after}"
    );
    chain.close().await?;
    Ok(())
}

#[tokio::test]
async fn two_sessions_run_at_once_each_with_its_own_turns() -> sacp::Result<()> {
    let agent = ScriptedAgent::new().on_prompt(|text| match text {
        "slow" => vec![Step::say("a"), Step::wait_for_cancel()],
        other => vec![Step::say(other)],
    });
    let chain = TestChain::new()
        .proxy(Shouter::default())
        .proxy(Quiet)
        .agent(agent)
        .start()
        .await?;
    let (first, second) = (chain.new_session().await?, chain.new_session().await?);
    assert_ne!(first.id(), second.id());
    let slow = first.prompt("slow");
    // The second session's turns go on while the first one waits.
    for word in ["x", "y", "z"] {
        second.prompt(word).await?.assert_text(&word.to_uppercase());
    }
    first.cancel().await?;
    let turn = slow.await?;
    assert_eq!(turn.stop_reason(), &StopReason::Cancelled);
    turn.assert_text("A");
    assert_eq!(second.updates().len(), 3);
    chain.close().await?;
    Ok(())
}

#[tokio::test]
async fn the_agent_lists_and_calls_a_proxys_tools_over_acp() -> sacp::Result<()> {
    let agent = ScriptedAgent::new()
        .script([Step::list_tools()])
        .script([Step::call_tool("greet", json!({"name": "ada"}))])
        .script([Step::call_tool("prompts_seen", json!({}))]);
    let chain = TestChain::new()
        .proxy(Shouter::default())
        .proxy(Quiet)
        .agent(agent)
        .start()
        .await?;
    let session = chain.new_session().await?;
    session
        .prompt("list")
        .await?
        .assert_text("TOOLS OF SHOUTER: PROMPTS_SEEN, GREET");
    let turn = session.prompt("greet").await?;
    turn.assert_lines([
        "tool_call call-1 \"shouter.greet\" in_progress",
        "tool_call_update call-1 completed",
        "message: GREET: HELLO ADA",
    ]);
    session
        .prompt("count")
        .await?
        .assert_text("PROMPTS_SEEN: 3");
    let agent = chain.agent::<ScriptedAgent>();
    assert_eq!(
        agent.tools_listed(),
        [(
            "shouter".to_owned(),
            vec!["prompts_seen".to_owned(), "greet".to_owned()]
        )]
    );
    // The server entry the agent got is the proxy's own `acp:` one, as a conductor passes it
    // to an agent that speaks MCP over ACP.
    let servers = serde_json::to_value(&agent.sessions()[0].mcp_servers).unwrap();
    assert!(
        servers[0]["url"].as_str().unwrap().starts_with("acp:"),
        "{servers}"
    );
    // Every `_mcp/*` request went up the chain from the agent to the proxy that owns the
    // server, and never reached the editor.
    let transcript = chain.transcript();
    for record in transcript.records() {
        if record.method.starts_with("_mcp/") && record.kind == MessageKind::Request {
            let hop = (record.from.as_str(), record.to.as_str());
            assert!(
                hop == ("ScriptedAgent", "Quiet") || hop == ("Quiet", "Shouter"),
                "{record}\n{transcript}"
            );
        }
    }
    chain.close().await?;
    Ok(())
}

#[tokio::test]
async fn a_permission_and_a_file_make_the_round_trip_through_every_proxy() -> sacp::Result<()> {
    let editor = ScriptedEditor::new()
        .permission(Permission::Choose(PermissionOptionKind::RejectOnce))
        .file("/notes.md", "remember the milk");
    let agent = ScriptedAgent::new().script([
        Step::ask_permission("write the notes"),
        Step::read_file("/notes.md"),
    ]);
    let chain = TestChain::new()
        .editor(editor)
        .proxy(Shouter::default())
        .proxy(Quiet)
        .agent(agent)
        .start()
        .await?;
    let session = chain.new_session().await?;
    let turn = session.prompt("go").await?;
    turn.assert_lines([
        "message: PERMISSION: REJECT",
        "message: READ: REMEMBER THE MILK",
    ]);
    let asked = chain.editor().permission_requests();
    assert_eq!(asked.len(), 1, "asked once");
    assert_eq!(
        asked[0].0.tool_call.title.as_deref(),
        Some("write the notes")
    );
    let outcomes = chain.agent::<ScriptedAgent>().permission_outcomes();
    assert!(
        matches!(&outcomes[..], [RequestPermissionOutcome::Selected(s)] if s.option_id.0 == "reject"),
        "{outcomes:?}"
    );
    chain.close().await?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn time_stands_still_until_the_chain_waits_for_it() -> sacp::Result<()> {
    let agent = ScriptedAgent::new().script([
        Step::say("before"),
        Step::sleep(Duration::from_secs(20)),
        Step::say("after a while"),
    ]);
    let chain = TestChain::new().proxy(Quiet).agent(agent).start().await?;
    let session = chain.new_session().await?;
    let started = tokio::time::Instant::now();
    let turn = session.prompt("go").await?;
    turn.assert_text("beforeafter a while");
    // The time passed on the paused clock, at once on the wall clock (the kit's own waits,
    // `PATIENCE`, are longer).
    assert!(started.elapsed() >= Duration::from_secs(20));
    chain.close().await?;
    Ok(())
}

/// An agent of the user's own, driven by the scripted editor with no proxy in between.
#[derive(Default)]
struct Counter {
    sessions: AtomicUsize,
}

#[sacp::agent]
impl Counter {
    #[on_request]
    async fn new_session(
        &self,
        _req: NewSessionRequest,
        _cx: &sacp::agent::Cx,
    ) -> sacp::Result<NewSessionResponse> {
        let n = self.sessions.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(NewSessionResponse::new(format!("counter-{n}")))
    }

    #[on_request]
    async fn prompt(
        &self,
        req: PromptRequest,
        cx: &sacp::agent::Cx,
    ) -> sacp::Result<PromptResponse> {
        let n = self.sessions.load(Ordering::SeqCst);
        let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(format!(
            "{n} sessions"
        ))));
        cx.client()
            .notify(SessionNotification::new(
                req.session_id,
                SessionUpdate::AgentMessageChunk(chunk),
            ))
            .await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[tokio::test]
async fn an_agent_of_ones_own_is_driven_by_the_scripted_editor_alone() -> sacp::Result<()> {
    let chain = TestChain::new().agent(Counter::default()).start().await?;
    let init = chain.editor().initialize().await;
    // A second `initialize` of the same kind is answered too.
    assert_eq!(init?.protocol_version, sacp::acp::ProtocolVersion::from(1));
    let session = chain.new_session().await?;
    assert_eq!(session.id().0, "counter-1");
    session.prompt("how many?").await?.assert_text("1 sessions");
    assert_eq!(chain.agent::<Counter>().sessions.load(Ordering::SeqCst), 1);
    chain.close().await?;
    Ok(())
}

/// Drops the agent's second update.
#[derive(Default)]
struct Dropper {
    seen: AtomicUsize,
}

#[sacp::proxy]
impl Dropper {
    #[on_notification(from = agent)]
    async fn update(&self, n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        if self.seen.fetch_add(1, Ordering::SeqCst) == 1 {
            return Ok(());
        }
        cx.client().notify(n).await
    }
}

/// Answers the prompt at once, and sends the agent's updates on only after that.
struct Hasty;

#[sacp::proxy]
impl Hasty {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let (successor, client) = (cx.successor(), cx.client());
        let session = req.session_id.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        cx.spawn(async move {
            let _ = rx.await;
            for text in ["one", "two", "three"] {
                let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
                let update = SessionUpdate::AgentMessageChunk(chunk);
                let _ = client
                    .notify(SessionNotification::new(session.clone(), update))
                    .await;
            }
        });
        // Lets the agent's answer through first, keeps its updates for after.
        let answer = successor.request(req).await;
        let _ = tx.send(());
        answer
    }

    #[on_notification(from = agent)]
    async fn update(&self, _n: SessionNotification, _cx: &Cx) -> sacp::Result<()> {
        Ok(())
    }
}

/// Runs `test` and returns the message it panicked with.
async fn failure_of<F>(test: F) -> String
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let failed = tokio::spawn(test)
        .await
        .expect_err("the assertion should fail");
    let payload = failed.into_panic();
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

fn three_chunks() -> ScriptedAgent {
    ScriptedAgent::new().script([Step::say("one"), Step::say("two"), Step::say("three")])
}

#[tokio::test]
async fn a_proxy_that_drops_an_update_fails_with_what_was_expected_and_what_came() {
    let message = failure_of(async {
        let chain = TestChain::new()
            .proxy(Dropper::default())
            .agent(three_chunks())
            .start()
            .await
            .unwrap();
        let session = chain.new_session().await.unwrap();
        let turn = session.prompt("go").await.unwrap();
        turn.assert_lines(["message: one", "message: two", "message: three"]);
    })
    .await;
    assert!(
        message.contains("the turn's updates are not what was expected"),
        "{message}"
    );
    assert!(
        message.contains("    message: one\n  - message: two\n    message: three"),
        "{message}"
    );
}

#[tokio::test]
async fn a_proxy_whose_answer_overtakes_its_updates_fails_with_what_came_after() {
    let message = failure_of(async {
        let chain = TestChain::new()
            .proxy(Hasty)
            .agent(three_chunks())
            .start()
            .await
            .unwrap();
        let session = chain.new_session().await.unwrap();
        let turn = session.prompt("go").await.unwrap();
        // Let the hasty proxy's updates come in, so that the report can show them.
        let mut count = 0;
        session
            .until_update("the three updates after the answer", |_| {
                count += 1;
                count == 3
            })
            .await;
        turn.assert_text("onetwothree");
    })
    .await;
    assert!(
        message.contains("expected: \"onetwothree\"\n  came:     \"\""),
        "{message}"
    );
    assert!(message.contains("arrived after the answer"), "{message}");
    assert!(message.contains("    message: three"), "{message}");
}

/// A proxy that answers prompts itself, slowly: it leaves a message for after its answer, then
/// takes 100 ms to return the answer.
struct SlowToAnswer;

#[sacp::proxy]
impl SlowToAnswer {
    #[on_request]
    async fn prompt(
        &self,
        req: sacp::acp::PromptRequest,
        cx: &sacp::proxy::Cx,
    ) -> sacp::Result<sacp::acp::PromptResponse> {
        use sacp::acp::{ContentBlock, ContentChunk, SessionNotification, SessionUpdate};
        let client = cx.client();
        let session = req.session_id.clone();
        cx.after_answer(async move {
            let text = ContentBlock::Text(sacp::acp::TextContent::new("afterwards"));
            let update = SessionUpdate::AgentMessageChunk(ContentChunk::new(text));
            let _ = client
                .notify(SessionNotification::new(session, update))
                .await;
        })?;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        Ok(sacp::acp::PromptResponse::new(StopReason::EndTurn))
    }
}

/// Work left with `after_answer` starts once the answer is queued, however long the handler
/// takes to return it after leaving the work: what it sends is never part of the turn.
#[tokio::test]
async fn work_left_for_after_the_answer_waits_for_a_slow_answer() -> sacp::Result<()> {
    let chain = TestChain::new().proxy(SlowToAnswer).start().await?;
    let session = chain.new_session().await?;
    let turn = session.prompt("go").await?;
    assert_eq!(turn.text(), "", "nothing of the work inside the turn");
    let late = session
        .until_update("the message after the answer", |u| {
            sacp::testing::line(u) == "message: afterwards"
        })
        .await;
    assert_eq!(sacp::testing::line(&late), "message: afterwards");
    chain.close().await?;
    Ok(())
}
