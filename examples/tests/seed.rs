//! The seed proxy in process with `sacp::testing`, whose chain adapts a history to the agent as
//! the conductor does: the test agent (which cannot take one) is told it in a prompt of the
//! chain's own that the editor never sees, and a load replays the given history.

use sacp::protocol::history::MARK;
use sacp::testing::{TestChain, line};
use sacp_examples::seed::Seed;
use sacp_examples::test_agent::TestAgent;
use serde_json::json;

fn conversation() -> serde_json::Value {
    json!([
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Use tabs."}},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Tabs it is."}},
    ])
}

#[tokio::test]
async fn a_seeded_session_is_told_to_the_agent_and_replayed_as_given() -> sacp::Result<()> {
    let seed = Seed::from_json(&conversation().to_string()).map_err(sacp::Error::internal_error)?;
    let chain = TestChain::new()
        .proxy(seed)
        .agent(TestAgent::default().in_process())
        .start()
        .await?;
    let session = chain.new_session().await?;
    assert!(session.updates().is_empty(), "{:?}", session.updates());
    let told: Vec<String> = chain
        .transcript()
        .of("session/prompt")
        .into_iter()
        .filter(|r| r.from == "conductor")
        .map(|r| {
            r.payload["prompt"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(told.len(), 1, "one prompt of the chain's own");
    assert!(
        told[0].starts_with(MARK) && told[0].contains("Tabs it is."),
        "{}",
        told[0]
    );
    session.prompt("hello").await?.assert_text("hello");

    // The editor's log of the session goes on: the replay is what follows the turn.
    let before = session.updates().len();
    let loaded = chain.editor().load_session(session.id().clone()).await?;
    let replay: Vec<String> = loaded.updates()[before..].iter().map(line).collect();
    assert_eq!(
        replay,
        [
            "user: Use tabs.",
            "message: Tabs it is.",
            "user: hello",
            "message: hello"
        ],
        "the given history, then the editor's turn; never the chain's prompt"
    );
    chain.close().await?;
    Ok(())
}
