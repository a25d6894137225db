//! Our proxies under the other SDKs' conductors, `cargo install`ed from the registry:
//! symposium's `sacp-conductor` 11.0.0 and `agent-client-protocol-conductor` 5.0.0. Prompts
//! stream in order, a permission request crosses the chain both ways, and Sparkle's tools reach
//! the agent where that conductor gives MCP servers to it.

use crate::chain::sparkle_keeps;
use crate::common::*;
use crate::peers::*;

/// `CONDUCTOR agent <our pass-through> <Sparkle> <test agent>`, driven through a turn, a
/// stream and a permission request; what the agent said of its MCP servers (`tools`).
async fn our_chain_under(conductor: &str, agent: String) -> (Editor, String, Vec<String>) {
    let args = ["agent".to_owned(), passthrough(), example("sparkle"), agent];
    let mut editor = Editor::start(conductor, &args);
    let session = editor.open_session().await;
    // Sparkle takes part in the first prompt (it embodies); the stream comes after it.
    let done = editor.prompt(&session, "hello").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let id = editor.send_prompt(&session, "stream 20").await;
    expect_stream(&mut editor, &id, 20, "").await;
    editor.prompt(&session, "permission").await;
    assert_eq!(said(&editor), ["permission: allow"]);
    editor.prompt(&session, "tools").await;
    let tools = said(&editor);
    (editor, session, tools)
}

/// Ends the foreign conductor (neither exits at the end of its stdin) and checks that our
/// components, which do, left nothing behind.
async fn end(mut editor: Editor) {
    editor.close_stdin();
    let _ = editor.child.start_kill();
    let _ = editor.exit().await;
    editor.assert_no_process_left().await;
}

#[tokio::test]
async fn our_proxies_run_under_sacp_conductor_11_and_sparkles_tools_reach_its_agent() {
    let Some(conductor) = installed("sacp-conductor", "11.0.0", "sacp-conductor") else {
        return;
    };
    let (mut editor, session, tools) = our_chain_under(&conductor, agent()).await;
    // Its conductor bridges MCP over ACP for the agent itself (over HTTP): Sparkle answers
    // its `_mcp/connect` and `_mcp/message`s.
    assert_eq!(
        tools,
        ["sparkle: embody_sparkle, save_insight, list_insights (over http)"]
    );
    sparkle_keeps(&mut editor, &session, "ours under theirs").await;
    end(editor).await;
}

#[tokio::test]
async fn our_proxies_run_under_agent_client_protocol_conductor_5() {
    let Some(conductor) = installed(
        "agent-client-protocol-conductor",
        "5.0.0",
        "agent-client-protocol-conductor",
    ) else {
        return;
    };
    // That conductor gives MCP servers over ACP only to an agent that declares
    // `mcpCapabilities.acp`: the test agent by default sees none ...
    let (editor, _, tools) = our_chain_under(&conductor, agent()).await;
    assert_eq!(tools, ["no MCP servers"]);
    end(editor).await;
    // ... and with `--mcp-rfd` (the SDK's stateless MCP client) it calls Sparkle's tools
    // with `mcp/message`, Sparkle declaring and serving them the RFD's way.
    let rfd_agent = format!("{} --mcp-rfd", quoted(&agent()));
    let (mut editor, session, tools) = our_chain_under(&conductor, rfd_agent).await;
    assert_eq!(
        tools,
        ["sparkle: embody_sparkle, save_insight, list_insights"]
    );
    sparkle_keeps(&mut editor, &session, "stateless").await;
    // A tool's own error is an MCP result with `isError`, not a failed delivery.
    editor
        .prompt(&session, r#"call sparkle save_insight {"wrong":1}"#)
        .await;
    let failed = said(&editor);
    assert!(
        failed[0].starts_with("sparkle.save_insight failed: "),
        "{failed:?}"
    );
    end(editor).await;
}
