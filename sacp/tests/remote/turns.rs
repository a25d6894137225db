//! Whole turns over each profile: streamed updates before the answer, a permission round trip,
//! a file read, a cancel — the same as over an in-process channel.

use sacp::acp::StopReason;
use sacp::testing::{ScriptedAgent, ScriptedEditor, Step, within};

use crate::{connect, serve, ws};

fn agent() -> ScriptedAgent {
    ScriptedAgent::new().on_prompt(|text| match text {
        "stream" => (1..=50).map(|i| Step::say(format!("chunk {i}"))).collect(),
        "permission" => vec![Step::ask_permission("write a file"), Step::say(" done")],
        "read" => vec![Step::read_file("/notes.txt")],
        "wait" => vec![Step::say("waiting"), Step::wait_for_cancel()],
        other => vec![Step::say(format!("you said {other}"))],
    })
}

/// The turns every profile must run alike; what each said, in order.
async fn script(editor: ScriptedEditor) -> Vec<String> {
    let mut said = Vec::new();
    within("initialize", editor.initialize()).await.unwrap();
    let session = within("session/new", editor.new_session()).await.unwrap();
    let other = within("a second session/new", editor.new_session())
        .await
        .unwrap();
    for text in ["hello", "stream", "permission", "read"] {
        let turn = within(text, session.prompt(text)).await.unwrap();
        assert_eq!(turn.stop_reason(), &StopReason::EndTurn);
        said.push(turn.text());
    }
    // Two sessions at once; the waiting one is cancelled.
    let waiting = session.prompt("wait");
    let cancel = async {
        // The turn has begun once its first update is in.
        session
            .until_update("the turn's start", |u| {
                sacp::testing::line(u) == "message: waiting"
            })
            .await;
        let other = other.prompt("meanwhile").await.unwrap();
        session.cancel().await.unwrap();
        other
    };
    let (waited, other) = within("the cancelled turn", async {
        tokio::join!(waiting, cancel)
    })
    .await;
    let waited = waited.unwrap();
    assert_eq!(waited.stop_reason(), &StopReason::Cancelled);
    said.push(waited.text());
    said.push(other.text());
    said
}

fn editor() -> ScriptedEditor {
    ScriptedEditor::new().file("/notes.txt", "a note")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_over_websocket_and_http_are_those_of_a_channel() {
    // The reference: the same agent on an in-process channel.
    let (near, far) = sacp::jsonrpc::channel();
    let local = agent();
    tokio::spawn(async move { sacp::agent::serve(local, far).await });
    let expected = script(editor().connect(near)).await;
    assert_eq!(
        expected,
        [
            "you said hello".to_owned(),
            (1..=50).map(|i| format!("chunk {i}")).collect::<String>(),
            "permission: allow done".to_owned(),
            "read: a note".to_owned(),
            "waiting".to_owned(),
            "you said meanwhile".to_owned(),
        ]
    );
    let (url, token, shutdown) = serve(agent(), |b| b).await;
    for url in [ws(&url), url.clone()] {
        let transport = connect(&url, &token).await;
        let said = script(editor().connect(transport)).await;
        assert_eq!(said, expected, "over {url}");
    }
    shutdown.shutdown();
}
