//! A whole chain in the conductor's process: `Chain::proxy` and `Chain::agent`, driven by
//! `sacp::testing`'s scripted editor through the conductor library — and no stdio bridge
//! made of the test binary when nobody named a `conductor` executable.

use sacp::jsonrpc::channel;
use sacp::mcp::ToolCx;
use sacp::testing::{ScriptedAgent, ScriptedEditor, Step, within};
use sacp_conductor::{Chain, Exit, Options};
use serde_json::json;

/// Offers one tool.
struct Greeter;

/// Derived through `sacp`'s re-exports: this crate has no `schemars` of its own.
#[derive(sacp::serde::Deserialize, sacp::schemars::JsonSchema)]
#[serde(crate = "sacp::serde")]
#[schemars(crate = "sacp::schemars")]
struct Name {
    /// Who to greet.
    name: String,
}

#[sacp::proxy(mcp_name = "greeter")]
impl Greeter {
    /// Greets someone.
    #[tool]
    async fn greet(&self, input: Name, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(format!("hello, {}", input.name))
    }
}

#[tokio::test]
async fn an_in_process_agent_gets_the_proxys_tools_over_acp() -> sacp::Result<()> {
    let agent = ScriptedAgent::new()
        .script([Step::list_tools()])
        .script([Step::call_tool("greet", json!({"name": "ada"}))]);
    let chain = Chain::new().proxy(Greeter).agent(agent.clone());
    let (ours, theirs) = channel();
    let conductor = tokio::spawn(sacp_conductor::run(chain, Options::default(), theirs));
    let editor = ScriptedEditor::new().connect(ours);
    editor.initialize().await?;
    let session = editor.new_session().await?;
    session
        .prompt("list")
        .await?
        .assert_text("tools of greeter: greet");
    let turn = session.prompt("call").await?;
    turn.assert_lines([
        "tool_call call-1 \"greeter.greet\" in_progress",
        "tool_call_update call-1 completed",
        "message: greet: hello, ada",
    ]);
    assert_eq!(agent.prompts().len(), 2);
    editor.connection().close();
    let exit = within("the conductor to end", conductor).await.unwrap();
    assert_eq!(exit, Exit::Clean);
    Ok(())
}

#[tokio::test]
async fn without_a_conductor_executable_no_stdio_bridge_is_made() -> sacp::Result<()> {
    // An agent that speaks neither MCP over ACP nor HTTP needs a stdio bridge: a program to
    // run as `conductor mcp PORT`. Nobody named one, so there is none — rather than this
    // test binary started as one.
    let agent = ScriptedAgent::new().mcp_over_acp(false);
    let chain = Chain::new().proxy(Greeter).agent(agent.clone());
    let (ours, theirs) = channel();
    let conductor = tokio::spawn(sacp_conductor::run(chain, Options::default(), theirs));
    let editor = ScriptedEditor::new().connect(ours);
    editor.initialize().await?;
    editor.new_session().await?;
    let servers = serde_json::to_value(&agent.sessions()[0].mcp_servers).unwrap();
    let entry = &servers[0];
    assert_eq!(entry["type"], "http", "{servers}");
    assert!(
        entry["url"].as_str().unwrap().starts_with("acp:"),
        "{servers}"
    );
    let me = std::env::current_exe().unwrap();
    assert!(
        !servers.to_string().contains(&*me.to_string_lossy()),
        "{servers}"
    );
    editor.connection().close();
    within("the conductor to end", conductor).await.unwrap();
    Ok(())
}
