//! Messages between turns: a component speaks to the editor when no turn is open — a proxy's
//! reminder, an agent's updates after its answer — and the chain delivers them in their
//! session, in the order sent, never ahead of the answer of the turn before them.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::common::*;

/// `conductor agent reminder-proxy passthrough-proxy test-agent`.
fn reminder_chain() -> Vec<String> {
    vec![
        "agent".to_owned(),
        example("reminder-proxy"),
        passthrough(),
        agent(),
    ]
}

fn text_of(message: &Value) -> &str {
    message["params"]["update"]["content"]["text"]
        .as_str()
        .unwrap_or_default()
}

#[tokio::test]
async fn a_reminder_reaches_its_own_session_after_the_answer_and_before_the_next_turn() {
    let mut editor = Editor::start(conductor(), &reminder_chain());
    let a = editor.open_session().await;
    let b = editor.new_session().await;
    let asked_a = editor.send_prompt(&a, "/remind 300ms alpha").await;
    let asked_b = editor.send_prompt(&b, "/remind 100ms beta").await;
    // Everything that arrives until both reminders have: answers and updates, in order.
    let mut seen: Vec<String> = Vec::new();
    while seen.iter().filter(|s| s.starts_with("update")).count() < 2 {
        let message = editor
            .next_message()
            .await
            .expect("the chain ended before both reminders");
        if message.get("method").is_none() {
            assert_eq!(message["result"]["stopReason"], "end_turn", "{message}");
            let session = if message["id"] == asked_a { &a } else { &b };
            assert!(
                message["id"] == asked_a || message["id"] == asked_b,
                "{message}"
            );
            seen.push(format!("answer {session}"));
            continue;
        }
        assert_eq!(message["method"], "session/update", "{message}");
        let session = message["params"]["sessionId"].as_str().unwrap_or_default();
        seen.push(format!("update {session} {}", text_of(&message)));
    }
    for (session, text) in [(&a, "alpha"), (&b, "beta")] {
        let answer = seen.iter().position(|s| *s == format!("answer {session}"));
        let reminder = seen
            .iter()
            .position(|s| *s == format!("update {session} reminder: {text}"));
        assert!(
            answer.is_some() && reminder.is_some() && answer < reminder,
            "session {session}: its answer, then its reminder, and nothing the agent said \
             (it never saw the prompt): {seen:?}"
        );
    }
    // The next turn is the agent's again, and nothing else arrives in it.
    let next = editor.send_prompt(&a, "hello").await;
    let said = editor.next_message().await.expect("the echo");
    assert_eq!(
        (said["params"]["sessionId"].as_str(), text_of(&said)),
        (Some(a.as_str()), "hello"),
        "{said}"
    );
    let answer = editor.next_message().await.expect("the answer");
    assert_eq!(answer["id"], next, "{answer}");
    editor.close_and_expect_a_clean_exit().await;
}

/// A reminder due at once still comes after the answer it follows: it is timed from the
/// answer, not from the prompt.
#[tokio::test]
async fn a_reminder_due_at_once_never_overtakes_its_answer() {
    let mut editor = Editor::start(conductor(), &reminder_chain());
    let session = editor.open_session().await;
    for round in 1..=30 {
        let asked = editor
            .send_prompt(&session, &format!("/remind 0ms round {round}"))
            .await;
        let first = editor.next_message().await.expect("the answer");
        assert_eq!(first["id"], asked, "round {round}: {first}");
        let reminder = editor.next_message().await.expect("the reminder");
        assert_eq!(
            text_of(&reminder),
            format!("reminder: round {round}"),
            "{reminder}"
        );
    }
    editor.close_and_expect_a_clean_exit().await;
}

/// A job the agent starts with the proxy's tool ends while its turn is still open; its end is
/// reported after the turn's answer, in its session.
#[tokio::test]
async fn a_background_jobs_end_is_reported_after_the_turn_that_started_it() {
    let mut editor = Editor::start(conductor(), &reminder_chain());
    let session = editor.open_session().await;
    let asked = editor
        .send_prompt(
            &session,
            r#"call reminders start_job {"name": "build", "millis": 0}"#,
        )
        .await;
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|s: &String| s.contains("job build finished"))
    {
        let message = editor.next_message().await.expect("the job's end");
        if message.get("method").is_none() {
            assert_eq!(message["id"], asked, "{message}");
            assert_eq!(message["result"]["stopReason"], "end_turn", "{message}");
            seen.push("answer".to_owned());
            continue;
        }
        if message["method"] == "session/update" {
            assert_eq!(
                message["params"]["sessionId"],
                session.as_str(),
                "{message}"
            );
            if let Some(text) = message["params"]["update"]["content"]["text"].as_str() {
                seen.push(text.to_owned());
            }
        }
    }
    let answer = seen.iter().position(|s| s == "answer");
    let started = seen.iter().position(|s| s.contains("job build started"));
    let finished = seen.iter().position(|s| s.contains("job build finished"));
    assert!(
        started < answer && answer < finished && started.is_some(),
        "the tool's result in the turn, the answer, then the job's end: {seen:?}"
    );
    editor.close_and_expect_a_clean_exit().await;
}

/// A turn the proxy starts with the agent: the editor sees its prompt marked as the proxy's,
/// then the agent's updates, then (from the proxy) how it ended; the editor's
/// `session/cancel` cancels it like one of its own turns.
#[tokio::test]
async fn a_turn_the_proxy_starts_is_shown_marked_and_the_editor_can_cancel_it() {
    let mut editor = Editor::start(conductor(), &reminder_chain());
    let session = editor.open_session().await;
    let next_update = async |editor: &mut Editor| {
        let message = editor.next_message().await.expect("an update");
        assert_eq!(message["method"], "session/update", "{message}");
        assert_eq!(
            message["params"]["sessionId"],
            session.as_str(),
            "{message}"
        );
        message["params"]["update"].clone()
    };
    let answer = editor.prompt(&session, "/later 0ms hello there").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let prompt = next_update(&mut editor).await;
    assert_eq!(
        (
            &prompt["sessionUpdate"],
            &prompt["content"]["text"],
            &prompt["_meta"]
        ),
        (
            &json!("user_message_chunk"),
            &json!("hello there"),
            &json!({"sacp": {"from": "proxy"}})
        ),
        "{prompt}"
    );
    let echo = next_update(&mut editor).await;
    assert_eq!(echo["content"]["text"], "hello there", "{echo}");
    let ended = next_update(&mut editor).await;
    assert_eq!(
        ended["content"]["text"], "later: the turn ended (end_turn)",
        "{ended}"
    );

    editor.prompt(&session, "/later 0ms wait").await;
    let prompt = next_update(&mut editor).await;
    assert_eq!(prompt["content"]["text"], "wait", "{prompt}");
    let waiting = next_update(&mut editor).await;
    assert_eq!(waiting["content"]["text"], "waiting", "{waiting}");
    editor
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    let ended = next_update(&mut editor).await;
    assert_eq!(
        ended["content"]["text"], "later: the turn ended (cancelled)",
        "{ended}"
    );
    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn a_malformed_reminder_is_refused_saying_how_it_is_written() {
    let mut editor = Editor::start(conductor(), &reminder_chain());
    let session = editor.open_session().await;
    let answer = editor.prompt(&session, "/remind soon stretch").await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("usage: /remind DELAY TEXT")),
        "{answer}"
    );
    editor.close_and_expect_a_clean_exit().await;
}

/// 100 sessions, each a turn whose agent answers at once and then speaks 100 times: 10,000
/// updates between turns, all delivered, each session's in order, none before its answer.
#[tokio::test]
async fn ten_thousand_updates_between_turns_in_a_hundred_sessions_keep_their_order() {
    const SESSIONS: usize = 100;
    const AFTER: usize = 100;
    let mut editor = Editor::start(conductor(), &flat_chain(2));
    let mut sessions = vec![editor.open_session().await];
    while sessions.len() < SESSIONS {
        sessions.push(editor.new_session().await);
    }
    let mut asked: HashMap<Value, String> = HashMap::new();
    for session in &sessions {
        let id = editor.send_prompt(session, &format!("then {AFTER}")).await;
        asked.insert(id, session.clone());
    }
    let mut answered: HashMap<String, bool> = HashMap::new();
    let mut after: HashMap<String, usize> = HashMap::new();
    let mut updates = 0;
    while updates < SESSIONS * AFTER || answered.len() < SESSIONS {
        let message = editor
            .next_message()
            .await
            .unwrap_or_else(|| panic!("the chain ended after {updates} updates"));
        if message.get("method").is_none() {
            let session = asked
                .get(&message["id"])
                .expect("an answer to a prompt sent");
            assert_eq!(message["result"]["stopReason"], "end_turn", "{message}");
            assert!(
                answered.insert(session.clone(), true).is_none(),
                "{message}"
            );
            continue;
        }
        let session = message["params"]["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            answered.contains_key(&session),
            "an update of {session} overtook its turn's answer: {message}"
        );
        let n = after.entry(session.clone()).or_default();
        *n += 1;
        assert_eq!(
            text_of(&message),
            format!("after {n}"),
            "session {session}: out of order"
        );
        updates += 1;
    }
    assert!(after.values().all(|n| *n == AFTER), "{after:?}");
    editor.close_and_expect_a_clean_exit().await;
}

/// What a v2 editor saw of `sessions` until each one's `after N` and the idle update after it:
/// per session, a line per update (`running`, `idle end_turn`, `user`, or the text) in order.
async fn v2_until_spoken(
    editor: &mut Editor,
    sessions: &[(&str, u32)],
) -> HashMap<String, Vec<String>> {
    let last: Vec<(&str, String)> = sessions
        .iter()
        .map(|(s, n)| (*s, format!("after {n}")))
        .collect();
    v2_until_said(editor, &last).await
}

/// What a v2 editor saw of each session until it was told `text` and an idle update after
/// it: per session, a line per update (`running`, `idle end_turn`, `user`, or the text).
async fn v2_until_said(
    editor: &mut Editor,
    last: &[(&str, String)],
) -> HashMap<String, Vec<String>> {
    let mut seen: HashMap<String, Vec<String>> = HashMap::new();
    let done = |seen: &HashMap<String, Vec<String>>| {
        last.iter().all(|(s, text)| {
            let lines = seen.get(*s).map(Vec::as_slice).unwrap_or_default();
            let at = lines.iter().rposition(|l| l == text);
            at.is_some_and(|at| lines[at..].iter().any(|l| l.starts_with("idle")))
        })
    };
    while !done(&seen) {
        let message = editor.next_message().await.expect("the chain's output");
        if message.get("method").is_none() {
            continue;
        }
        assert_eq!(message["method"], "session/update", "{message}");
        let session = message["params"]["sessionId"].as_str().unwrap().to_owned();
        let update = &message["params"]["update"];
        let line = match update["sessionUpdate"].as_str().unwrap() {
            "state_update" => match update["stopReason"].as_str() {
                Some(reason) => format!("idle {reason}"),
                None => update["state"].as_str().unwrap().to_owned(),
            },
            "user_message" => "user".to_owned(),
            _ => text_of(&message).to_owned(),
        };
        seen.entry(session).or_default().push(line);
    }
    seen
}

/// ACP v2: an agent that goes on speaking after its turn's idle update (the test agent's
/// `then N`); the editor sees the conductor's `running` in front of what it says and an idle
/// update after it, so that the session is never idle while it speaks; each session only its
/// own. A v1 editor of the same chain sees the updates alone.
#[tokio::test]
async fn a_v2_editor_sees_running_then_idle_around_what_is_said_between_turns() {
    let args = vec![
        "agent".to_owned(),
        passthrough(),
        format!("{} --protocol 1,2", agent()),
    ];
    let mut editor = Editor::start(conductor(), &args);
    editor.initialize_v2().await;
    let a = editor.new_session().await;
    let b = editor.new_session().await;
    editor.send_prompt(&a, "then 3").await;
    editor.send_prompt(&b, "then 2").await;
    let seen = v2_until_spoken(&mut editor, &[(&a, 3), (&b, 2)]).await;
    for (session, n) in [(&a, 3), (&b, 2)] {
        let lines = &seen[session.as_str()];
        // The turn, as the agent ran it.
        assert_eq!(
            lines[..3],
            ["user", "running", "idle end_turn"],
            "{session}: {lines:?}"
        );
        // Then every `after` inside a running state, the last word idle.
        let mut running = false;
        for line in &lines[3..] {
            match line.as_str() {
                "running" => running = true,
                l if l.starts_with("idle") => running = false,
                said => assert!(running, "{session}: {said:?} while idle: {lines:?}"),
            }
        }
        assert!(!running, "{session} ends idle: {lines:?}");
        let said: Vec<&String> = lines.iter().filter(|l| l.starts_with("after")).collect();
        let expected: Vec<String> = (1..=n).map(|i| format!("after {i}")).collect();
        assert_eq!(
            said,
            expected.iter().collect::<Vec<_>>(),
            "{session}: only its own, in order"
        );
    }
    editor.close_and_expect_a_clean_exit().await;

    let mut v1 = Editor::start(conductor(), &args);
    let session = v1.open_session().await;
    let answer = v1.prompt(&session, "then 2").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    for i in 1..=2 {
        let after = v1.next_message().await.expect("after");
        assert_eq!(text_of(&after), format!("after {i}"), "{after}");
        assert_ne!(after["params"]["update"]["sessionUpdate"], "state_update");
    }
    v1.close_and_expect_a_clean_exit().await;
}

/// The reminder proxy in a v2 chain: its own turn (`/remind`) told as a v2 turn, then, after
/// it, the reminder between `running` and idle, each session only its own; the next turn's
/// output comes after it.
#[tokio::test]
async fn under_v2_a_reminder_comes_between_running_and_idle_in_its_own_session() {
    let args = vec![
        "agent".to_owned(),
        example("reminder-proxy"),
        passthrough(),
        format!("{} --protocol 2", agent()),
    ];
    let mut editor = Editor::start(conductor(), &args);
    editor.initialize_v2().await;
    let a = editor.new_session().await;
    let b = editor.new_session().await;
    editor.send_prompt(&a, "/remind 300ms alpha").await;
    editor.send_prompt(&b, "/remind 100ms beta").await;
    let last = [
        (a.as_str(), "reminder: alpha".to_owned()),
        (b.as_str(), "reminder: beta".to_owned()),
    ];
    let seen = v2_until_said(&mut editor, &last).await;
    for (session, text) in &last {
        let lines = &seen[*session];
        assert_eq!(
            lines,
            &[
                "user",
                "running",
                "idle end_turn",
                "running",
                text.as_str(),
                "idle end_turn"
            ],
            "{session}: the proxy's turn, then its reminder inside running and idle"
        );
    }
    // The next turn's output comes after it.
    editor.send_prompt(&a, "hello").await;
    let next = v2_until_said(&mut editor, &[(a.as_str(), "hello".to_owned())]).await;
    assert_eq!(next[&a], ["user", "running", "hello", "idle end_turn"]);
    editor.close_and_expect_a_clean_exit().await;
}
