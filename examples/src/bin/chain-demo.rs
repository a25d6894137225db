//! The README's main job: a scripted editor runs `conductor agent passthrough-proxy
//! "prefix-proxy '» '" test-agent`, the binaries of this workspace, as its agent, and prints
//! what it sends and what comes back.
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
use sacp::jsonrpc::{ByteStream, Connection, Router};

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
    let dir = sacp_examples::bins::built(&["sacp-conductor", "sacp-examples"])?;
    let bin = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let args = [
        "agent".to_owned(),
        bin("passthrough-proxy"),
        format!("{} '» '", bin("prefix-proxy")),
        bin("test-agent"),
    ];
    let shown: Vec<String> = args
        .iter()
        .map(|a| {
            if a.contains(' ') {
                format!("{a:?}")
            } else {
                a.clone()
            }
        })
        .collect();
    println!("$ conductor {}\n", shown.join(" "));
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
    println!("        <- session {}", session.session_id);

    for text in [
        "Hello through the chain!",
        "stream 3",
        "permission",
        "read /demo/notes.txt",
    ] {
        println!("editor -> session/prompt {text:?}");
        let prompt = vec![ContentBlock::Text(TextContent::new(text))];
        let request = PromptRequest::new(session.session_id.clone(), prompt);
        let done = ask("session/prompt", editor.request(request)).await?;
        println!("        <- stop reason {:?}", done.stop_reason);
    }

    println!("editor closes the conductor's stdin");
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

/// What the scripted editor does when the agent side talks to it.
fn editor() -> Router {
    Router::new()
        .on_notification(|n: SessionNotification, _| async move {
            if let SessionUpdate::AgentMessageChunk(chunk) = n.update
                && let ContentBlock::Text(text) = chunk.content
            {
                println!("        <- agent says {:?}", text.text);
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
