//! The README's main job: a scripted editor runs `conductor agent sparkle test-agent`, the
//! binaries of this workspace, as its agent, and prints the conversation: its prompts, what
//! the agent streams back, its tool calls, and which MCP bridge carried them. The test agent
//! knows nothing of MCP over ACP, so it reaches Sparkle's tools through the conductor's stdio
//! bridge (`conductor mcp PORT`, started by the agent's own MCP client, rmcp).
//!
//! ```text
//! cargo run -p sacp-examples --bin chain-demo
//! ```
//!
//! The editor is built with the SDK too: a `sacp::jsonrpc::Connection` over the conductor's
//! pipes, with typed handlers for what the agent asks of it (`session/request_permission`,
//! `fs/read_text_file`) and for the `session/update`s it streams.

#![allow(clippy::print_stdout)]

use std::process::{ExitCode, Stdio};
use std::time::Duration;

use sacp::acp::{
    ClientCapabilities, ContentBlock, FileSystemCapabilities, InitializeRequest, NewSessionRequest,
    PromptRequest, ReadTextFileRequest, ReadTextFileResponse, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome,
    SessionNotification, SessionUpdate, TextContent,
};
use sacp::jsonrpc::{ByteStream, Connection, Methods};

const PATIENCE: Duration = Duration::from_secs(20);

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    sacp_examples::init_logging();
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chain-demo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Waits for an answer from the chain, within [`PATIENCE`].
async fn ask<T>(
    what: &str,
    answer: impl std::future::IntoFuture<Output = sacp::Result<T>>,
) -> Result<T, String> {
    match tokio::time::timeout(PATIENCE, answer).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(format!("{what} failed: {e}")),
        Err(_) => Err(format!("{what} timed out")),
    }
}

async fn run() -> Result<(), String> {
    let dir = sacp_examples::bins::built(&["sacp-chain", "sacp-examples", "sacp-sparkle"])?;
    let bin = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let args = ["agent".to_owned(), bin("sparkle"), bin("test-agent")];
    println!("$ conductor {}\n", args.join(" "));
    let mut conductor = tokio::process::Command::new(bin("conductor"))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the conductor: {e}"))?;
    let pipes = ByteStream::new(
        conductor.stdout.take().ok_or("no stdout")?,
        conductor.stdin.take().ok_or("no stdin")?,
    );
    let editor = Connection::builder()
        .name("conductor")
        .spawn(pipes, editor());

    println!("editor -> initialize");
    let capabilities =
        ClientCapabilities::default().fs(FileSystemCapabilities::default().read_text_file(true));
    let init = ask(
        "initialize",
        editor.request(InitializeRequest::new(1).client_capabilities(capabilities)),
    )
    .await?;
    println!("        <- protocol version {}", init.protocol_version.0);

    println!("editor -> session/new");
    let session = ask(
        "session/new",
        editor.request(NewSessionRequest::new("/tmp", vec![])),
    )
    .await?;
    println!(
        "        <- session {} (Sparkle added its `sparkle` MCP server on the way)",
        session.session_id
    );

    for (text, why) in [
        (
            "Hello! Who are you?",
            "the session's first prompt: Sparkle embodies the agent first",
        ),
        (
            r#"call sparkle save_insight {"topic":"chains","insight":"proxies compose","tags":["sacp"]}"#,
            "a tool with a structured input",
        ),
        ("call sparkle list_insights {}", "the session's notebook"),
        ("permission", "the agent asks the editor, through Sparkle"),
    ] {
        println!("\neditor -> session/prompt {text:?}   ({why})");
        let prompt = vec![ContentBlock::Text(TextContent::new(text))];
        let request = PromptRequest::new(session.session_id.clone(), prompt);
        let done = ask("session/prompt", editor.request(request)).await?;
        println!("        <- stop reason {:?}", done.stop_reason);
    }

    println!("\neditor closes the conductor's stdin");
    editor.close();
    let status = tokio::time::timeout(PATIENCE, conductor.wait())
        .await
        .map_err(|_| "the conductor did not exit")?
        .map_err(|e| format!("cannot wait for the conductor: {e}"))?;
    println!("conductor exited: {status}");
    status
        .success()
        .then_some(())
        .ok_or_else(|| format!("the conductor failed ({status})"))
}

/// A content block as the demo prints it; the bridge the agent's MCP client went through shows
/// at the end of a tool's result (`[over stdio; …]`).
fn shown(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => {
            let via = ["stdio", "http"]
                .into_iter()
                .find(|via| text.text.contains(&format!("[over {via};")));
            match via {
                Some(via) => format!(
                    "{:?}\n           (through the conductor's {via} MCP bridge)",
                    text.text
                ),
                None => format!("{:?}", text.text),
            }
        }
        other => format!("{other:?}"),
    }
}

/// What the scripted editor does when the agent side talks to it.
fn editor() -> Methods {
    Methods::new()
        .on_notification(|n: SessionNotification, _| async move {
            match n.update {
                SessionUpdate::AgentMessageChunk(chunk) => {
                    println!("        <- agent says {}", shown(&chunk.content));
                }
                SessionUpdate::AgentThoughtChunk(chunk) => {
                    println!("        <- agent thinks {}", shown(&chunk.content));
                }
                SessionUpdate::ToolCall(call) => {
                    println!("        <- agent calls the tool {}", call.title);
                }
                SessionUpdate::ToolCallUpdate(update) => {
                    if let Some(status) = update.status {
                        println!("        <- the tool call is {status:?}");
                    }
                }
                _ => {}
            }
            Ok(())
        })
        .on_request(|req: RequestPermissionRequest, _| async move {
            let title = req.tool_call.title.unwrap_or_default();
            println!("        <- agent asks permission to {title:?}; editor allows");
            let selected = SelectedPermissionOutcome::new("allow".to_owned());
            Ok(RequestPermissionResponse::new(
                RequestPermissionOutcome::Selected(selected),
            ))
        })
        .on_request(|req: ReadTextFileRequest, _| async move {
            println!(
                "        <- agent reads {}; editor answers from its buffer",
                req.path
            );
            Ok(ReadTextFileResponse::new("notes from the editor's buffer"))
        })
}
