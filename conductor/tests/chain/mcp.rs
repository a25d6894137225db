//! MCP over ACP through the real conductor: a proxy's `#[tool]`s called by an agent that speaks
//! `_mcp/*` itself (`test-agent --mcp-acp`), while that proxy's prompt handler awaits the agent.

use serde_json::json;

use crate::common::*;

/// `conductor agent <tool proxies...> "test-agent --mcp-acp"`.
fn chain_with_tools(proxies: &[&str]) -> Vec<String> {
    let mut args = vec!["agent".to_owned()];
    for name in proxies {
        args.push(format!("{} {name}", quoted(&example("tool-proxy"))));
    }
    args.push(format!("{} --mcp-acp", quoted(&agent())));
    args
}

#[tokio::test]
async fn the_agent_calls_a_proxys_tools_while_that_proxy_awaits_it() {
    let mut editor = Editor::start(conductor(), &chain_with_tools(&["tools"]));
    let session = editor.open_session().await;

    let done = editor.prompt(&session, "tools").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(said(&editor), ["tools: echo, add, whoami, status, steps"]);

    // The proxy's prompt handler is awaiting the agent while the agent calls its tool.
    let done = editor.prompt(&session, "call tools status {}").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(
        said(&editor),
        ["tools.status: 1 prompt handler(s) awaiting the agent"]
    );

    editor
        .prompt(&session, r#"call tools add {"a": 2, "b": 40}"#)
        .await;
    assert_eq!(said(&editor), [r#"tools.add: {"sum":42}"#]);
    editor
        .prompt(&session, r#"call tools echo {"wrong": 1}"#)
        .await;
    let failed = said(&editor);
    assert!(
        failed[0].starts_with("tools.echo failed: Invalid params: the arguments of tool echo"),
        "{failed:?}"
    );
    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn each_session_has_its_own_server_and_its_calls_see_their_session() {
    let mut editor = Editor::start(conductor(), &chain_with_tools(&["tools"]));
    let first = editor.open_session().await;
    let second = editor.new_session().await;
    for session in [&first, &second] {
        editor.prompt(session, "call tools whoami {}").await;
        assert_eq!(said(&editor), [format!("tools.whoami: {session}")]);
    }
    editor.close_and_expect_a_clean_exit().await;
}

#[tokio::test]
async fn two_proxies_serve_their_own_tools_and_a_foreign_url_reaches_the_editor() {
    let mut editor = Editor::start(conductor(), &chain_with_tools(&["alpha", "beta"]));
    let session = editor.open_session().await;
    editor.prompt(&session, "tools").await;
    assert_eq!(
        said(&editor),
        [
            "alpha: echo, add, whoami, status, steps",
            "beta: echo, add, whoami, status, steps"
        ],
        "each proxy declared its server, in chain order"
    );
    // alpha's prompt handler and beta's both await the agent during the call.
    editor.prompt(&session, "call alpha status {}").await;
    assert_eq!(
        said(&editor),
        ["alpha.status: 1 prompt handler(s) awaiting the agent"]
    );
    editor
        .prompt(&session, r#"call beta echo {"text": "from beta"}"#)
        .await;
    assert_eq!(said(&editor), ["beta.echo: from beta"]);

    // No proxy owns this URL: the `_mcp/connect` reaches the editor, which has no such server.
    editor
        .prompt(&session, "connect acp:00000000-no-such-server")
        .await;
    let asked = editor
        .transcript
        .iter()
        .find(|l| l.starts_with("asked _mcp/connect "))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        asked,
        format!(
            "asked _mcp/connect {}",
            json!({"acp_url": "acp:00000000-no-such-server", "session_id": session})
        )
    );
    let refused = said(&editor);
    assert!(
        refused[0].starts_with("cannot connect to acp:00000000-no-such-server: Method not found"),
        "{refused:?}"
    );
    editor.close_and_expect_a_clean_exit().await;
}
