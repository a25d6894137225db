//! The example proxies' logic, in process with `sacp::testing` (their process tests, in
//! `proxy_process.rs` and the conductor's, are about the processes): the prefixer's transform
//! keeps the order of a turn, the auditor's permission round trip, the context in front of every
//! prompt, and the three in one chain with sessions at once.

use std::sync::atomic::Ordering;

use sacp::acp::{PermissionOptionKind, RequestPermissionOutcome, StopReason};
use sacp::testing::{Permission, ScriptedAgent, ScriptedEditor, Step, TestChain, line, within};
use sacp_examples::audit::Auditor;
use sacp_examples::context::Context;
use sacp_examples::prefix::Prefixer;

/// `N` chunks `chunk 1` … `chunk N`, then `after 1` … `after M` behind the answer.
fn stream(n: usize, after: usize) -> Vec<Step> {
    let mut steps: Vec<Step> = (1..=n).map(|i| Step::say(format!("chunk {i}"))).collect();
    steps.push(Step::after_answer(
        (1..=after).map(|i| Step::say(format!("after {i}"))),
    ));
    steps
}

#[tokio::test]
async fn the_prefixer_transforms_every_chunk_and_keeps_the_turns_order() -> sacp::Result<()> {
    let agent = ScriptedAgent::new().on_prompt(|_| stream(50, 5));
    let chain = TestChain::new().proxy(Prefixer::new("» ")).agent(agent);
    let chain = chain.start().await?;
    let session = chain.new_session().await?;
    for _ in 0..3 {
        let turn = session.prompt("go").await?;
        // Every chunk of the turn, transformed, before the answer; none of the ones sent
        // after the answer.
        let expected: Vec<String> = (1..=50).map(|i| format!("message: » chunk {i}")).collect();
        turn.assert_lines(&expected);
    }
    // What the agent sent behind each answer came after that turn and before the next one.
    within("the last turn's late updates", async {
        while session.updates().len() < 3 * 55 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    let one_turn: Vec<String> = (1..=50)
        .map(|i| format!("message: » chunk {i}"))
        .chain((1..=5).map(|i| format!("message: » after {i}")))
        .collect();
    let all: Vec<String> = session.updates().iter().map(line).collect();
    assert_eq!(all, [&one_turn[..], &one_turn, &one_turn].concat());
    let prefixer = chain.proxy::<Prefixer>();
    assert_eq!(prefixer.turns.load(Ordering::Relaxed), 3);
    chain.close().await?;
    Ok(())
}

#[tokio::test]
async fn the_auditor_asks_the_editor_with_the_turns_words_and_the_agent_gets_its_answer()
-> sacp::Result<()> {
    let editor =
        ScriptedEditor::new().permission(Permission::Choose(PermissionOptionKind::RejectOnce));
    let agent = ScriptedAgent::new().script([
        Step::say("thinking"),
        Step::ask_permission("edit parser.rs"),
        Step::say(" and done"),
    ]);
    let chain = TestChain::new().editor(editor).proxy(Auditor::default());
    let chain = chain.agent(agent).start().await?;
    let session = chain.new_session().await?;
    let turn = session
        .prompt("please refactor the parser into two modules today")
        .await?;
    turn.assert_text("thinkingpermission: reject and done");
    let asked = chain.editor().permission_requests();
    assert_eq!(asked.len(), 1, "asked once");
    assert_eq!(
        asked[0].0.tool_call.title.as_deref(),
        Some("edit parser.rs (during «please refactor the parser into two»)")
    );
    let outcomes = chain.agent::<ScriptedAgent>().permission_outcomes();
    assert!(
        matches!(&outcomes[..], [RequestPermissionOutcome::Selected(s)] if s.option_id.0 == "reject"),
        "{outcomes:?}"
    );
    assert_eq!(chain.proxy::<Auditor>().asked.load(Ordering::Relaxed), 1);
    chain.close().await?;
    Ok(())
}

#[tokio::test]
async fn the_context_goes_in_front_of_every_prompt() -> sacp::Result<()> {
    let context = Context {
        text: "Use tabs. ".to_owned(),
    };
    let chain = TestChain::new().proxy(context).start().await?;
    let session = chain.new_session().await?;
    // The scripted agent echoes what it got.
    session
        .prompt("hello")
        .await?
        .assert_text("Use tabs. hello");
    session
        .prompt("again")
        .await?
        .assert_text("Use tabs. again");
    let prompts: Vec<String> = chain
        .agent::<ScriptedAgent>()
        .prompts()
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    assert_eq!(prompts, ["Use tabs. hello", "Use tabs. again"]);
    chain.close().await?;
    Ok(())
}

#[tokio::test]
async fn the_three_in_one_chain_with_sessions_at_once_and_a_cancel() -> sacp::Result<()> {
    let agent = ScriptedAgent::new().on_prompt(|text| match text {
        t if t.ends_with("wait") => vec![Step::say("waiting"), Step::wait_for_cancel()],
        t if t.ends_with("ask") => vec![Step::ask_permission("run tests")],
        _ => stream(10, 0),
    });
    let context = Context {
        text: "ctx: ".to_owned(),
    };
    let chain = TestChain::new()
        .proxy(context)
        .proxy(Auditor::default())
        .proxy(Prefixer::new("> "))
        .agent(agent);
    let chain = chain.start().await?;
    let sessions = [
        chain.new_session().await?,
        chain.new_session().await?,
        chain.new_session().await?,
    ];
    let waiting = sessions[0].prompt("wait");
    let asking = sessions[1].prompt("ask");
    let streaming = sessions[2].prompt("stream");
    let streamed = streaming.await?;
    let expected: Vec<String> = (1..=10).map(|i| format!("message: > chunk {i}")).collect();
    streamed.assert_lines(&expected);
    asking.await?.assert_lines(["message: > permission: allow"]);
    sessions[0].cancel().await?;
    let cancelled = waiting.await?;
    assert_eq!(cancelled.stop_reason(), &StopReason::Cancelled);
    cancelled.assert_lines(["message: > waiting"]);
    assert_eq!(chain.agent::<ScriptedAgent>().cancels().len(), 1);
    let title = &chain.editor().permission_requests()[0].0.tool_call.title;
    assert_eq!(title.as_deref(), Some("run tests (during «ctx:»)"));
    chain.close().await?;
    Ok(())
}
