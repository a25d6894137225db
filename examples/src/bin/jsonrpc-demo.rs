//! The JSON-RPC core at work: a client talks to an agent, first in-process over the channel
//! transport, then to a child process (this same binary, run as `jsonrpc-demo agent`) over
//! real pipes. Prints the exchange.
//!
//! ```text
//! cargo run -p sacp-examples --bin jsonrpc-demo
//! ```

#![allow(clippy::print_stdout)]

use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::Duration;

use sacp::jsonrpc::{ByteStream, Connection, Transport, channel};
use sacp_examples::demo::{self, Prompt, Shout, Transcript};

const PATIENCE: Duration = Duration::from_secs(10);

#[tokio::main]
async fn main() -> ExitCode {
    sacp_examples::init_logging();

    if std::env::args().nth(1).as_deref() == Some("agent") {
        // Child mode: the demo agent on stdin/stdout.
        let conn = Connection::builder()
            .name("client")
            .spawn(ByteStream::stdio(), demo::agent());
        return match conn.closed().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!("{e}");
                ExitCode::FAILURE
            }
        };
    }

    println!("== in-process, over the channel transport ==");
    let (agent_end, client_end) = channel();
    let _agent = Connection::builder()
        .name("client")
        .spawn(agent_end, demo::agent());
    if let Err(e) = converse(client_end).await {
        eprintln!("jsonrpc-demo: in-process exchange failed: {e}");
        return ExitCode::FAILURE;
    }

    println!();
    println!("== to a child process, over its stdin/stdout ==");
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("jsonrpc-demo: cannot find my own executable: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut child = match tokio::process::Command::new(&exe)
        .arg("agent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!("jsonrpc-demo: cannot start {}: {e}", exe.display());
            return ExitCode::FAILURE;
        }
    };
    let pid = child.id().unwrap_or_default();
    println!("(spawned {} agent, pid {pid})", exe.display());
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        eprintln!("jsonrpc-demo: the child's pipes are missing");
        return ExitCode::FAILURE;
    };
    if let Err(e) = converse(ByteStream::new(stdout, stdin)).await {
        eprintln!("jsonrpc-demo: exchange with the child failed: {e}");
        return ExitCode::FAILURE;
    }
    match tokio::time::timeout(PATIENCE, child.wait()).await {
        Ok(Ok(status)) => println!("(child exited: {status})"),
        Ok(Err(e)) => eprintln!("jsonrpc-demo: waiting for the child: {e}"),
        Err(_) => eprintln!("jsonrpc-demo: the child did not exit after its stdin closed"),
    }
    ExitCode::SUCCESS
}

/// One client session: two prompts, a shout, then close.
async fn converse(transport: impl Transport) -> Result<(), String> {
    let transcript: Transcript = Arc::default();
    let agent = Connection::builder()
        .name("agent")
        .request_timeout(PATIENCE)
        .spawn(transport, demo::client(transcript.clone(), true));

    for text in ["hello from the client", "streams keep their order"] {
        println!("client -> demo/prompt {text:?}");
        let done = agent
            .request(Prompt { text: text.into() })
            .await
            .map_err(|e| e.to_string())?;
        // Everything the agent sent before its answer has been handled by now.
        for line in demo::take(&transcript) {
            println!("client <- {line}");
        }
        println!(
            "client <- answer: stop_reason={} chunks={}",
            done.stop_reason, done.chunks
        );
    }

    println!("client -> demo/shout \"notifications go both ways\"");
    agent
        .notify(Shout {
            text: "notifications go both ways".into(),
        })
        .await
        .map_err(|e| e.to_string())?;
    // A request after the shout is answered after the shout's echo was sent.
    agent
        .request(Prompt {
            text: String::new(),
        })
        .await
        .map_err(|e| e.to_string())?;
    for line in demo::take(&transcript) {
        if line.starts_with("chunk") {
            println!("client <- {line}");
        }
    }
    agent.close();
    tokio::time::timeout(PATIENCE, agent.closed())
        .await
        .map_err(|_| "the connection did not close".to_owned())?
        .map_err(|e| e.to_string())?;
    Ok(())
}
