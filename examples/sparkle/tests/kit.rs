//! Sparkle's logic in process, with `sacp::testing`: the embodiment turn before a session's
//! first prompt, its tools listed and called, later prompts untouched, sessions at once.

use sacp::testing::{ScriptedAgent, Step, TestChain};
use serde_json::json;
use sparkle::{EMBODIMENT_PROMPT as EMBODY, Sparkle};

/// What the editor sees of an embodiment turn: its tool call, and the agent's words as
/// Sparkle's thoughts.
const EMBODIED: [&str; 4] = [
    "tool_call call-1 \"sparkle.embody_sparkle\" in_progress",
    "tool_call_update call-1 completed",
    "thought: [sparkle] embody_sparkle: be kind",
    "thought: [sparkle] ok",
];
const SAVED: &str = r#"{"insights":[{"topic":"t","insight":"i","tags":[]}]}"#;

#[tokio::test]
async fn sparkle_embodies_each_session_once_and_keeps_its_notebook() -> sacp::Result<()> {
    let call = |name: &str, args| Step::call_tool(name, args);
    let agent = ScriptedAgent::new().on_prompt(move |text| match text {
        EMBODY => vec![call("embody_sparkle", json!({})), Step::say("ok")],
        "note" => vec![call("save_insight", json!({"topic": "t", "insight": "i"}))],
        "notes" => vec![Step::list_tools(), call("list_insights", json!({}))],
        other => vec![Step::say(other)],
    });
    let chain = TestChain::new().proxy(Sparkle::new("be kind"));
    let chain = chain.agent(agent).start().await?;
    let (first, second) = (chain.new_session().await?, chain.new_session().await?);
    // Both sessions' first prompts at once: each gets its own embodiment turn first.
    let (a, b) = (first.prompt("hello"), second.prompt("hi"));
    for (turn, said) in [(a.await?, "hello"), (b.await?, "hi")] {
        let said = format!("message: {said}");
        assert_eq!(turn.lines(), [&EMBODIED[..], &[said.as_str()]].concat());
    }
    // Later prompts pass untouched; the agent got each prompt once, as it was.
    first.prompt("again").await?.assert_text("again");
    let prompts = chain.agent::<ScriptedAgent>().prompts();
    let count = |text: &str| prompts.iter().filter(|(_, p)| p == text).count();
    assert_eq!((count(EMBODY), count("again"), prompts.len()), (2, 1, 5));
    // The notebook is the session's own.
    first.prompt("note").await?;
    let notes = first.prompt("notes").await?.text();
    assert!(notes.starts_with("tools of sparkle: embody_sparkle, save_insight, list_insights"));
    assert!(notes.contains(SAVED), "{notes}");
    let others = second.prompt("notes").await?.text();
    assert!(others.contains(r#"{"insights":[]}"#), "{others}");
    chain.close().await?;
    Ok(())
}
