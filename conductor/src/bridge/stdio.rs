//! The stdio bridge's conductor side (spec §4): a loopback listener per entry, where the
//! agent's `conductor mcp PORT` processes connect.
//!
//! A connection's first line must be the entry's secret; one without it is reset at once
//! (the bridge process reports the refusal) and never produces `_mcp/connect`. After it, the
//! socket carries newline-delimited MCP JSON-RPC: each connection is one MCP connection over
//! ACP, from `_mcp/connect` to `_mcp/disconnect` when the socket closes or the entry ends.

use std::sync::Arc;
use std::time::Duration;

use sacp::jsonrpc::{
    ByteStream, Inbound, Message, MessageReader, MessageWriter, Response, Transport,
};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::Entry;
use super::hub::{Hub, ToClient};

/// How long a bridge process has to present its secret.
const HELLO: Duration = Duration::from_secs(10);
/// The longest first line read as a secret.
const MAX_SECRET: usize = 1024;

/// Serves the entry's listener until the entry ends.
pub(super) async fn serve(listener: TcpListener, entry: Arc<Entry>, hub: Hub) {
    loop {
        let accepted = tokio::select! {
            () = entry.ended.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((socket, _)) => {
                let entry = entry.clone();
                let hub = hub.clone();
                tokio::spawn(connection(socket, entry, hub));
            }
            Err(e) => {
                tracing::warn!(entry = %entry.name, "cannot accept a bridge connection: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn connection(socket: TcpStream, entry: Arc<Entry>, hub: Hub) {
    let (read, write) = socket.into_split();
    let mut read = BufReader::new(read);
    let mut hello = Vec::new();
    let said = tokio::time::timeout(
        HELLO,
        (&mut read)
            .take(MAX_SECRET as u64)
            .read_until(b'\n', &mut hello),
    )
    .await;
    let presented = hello.strip_suffix(b"\n").unwrap_or(&hello);
    let presented = presented.strip_suffix(b"\r").unwrap_or(presented);
    if !matches!(said, Ok(Ok(_))) || !entry.secret_is(presented) {
        tracing::warn!(
            entry = %entry.name,
            "refused a connection to the MCP bridge that did not present its secret"
        );
        if let Ok(socket) = read.into_inner().reunite(write) {
            let _ = socket.set_zero_linger();
        }
        return;
    }
    let (link, mut from_owner) = match hub.connect(&entry.acp_url, entry.session_id()).await {
        Ok(connected) => connected,
        Err(e) => {
            tracing::warn!(entry = %entry.name, "the MCP server refused the connection: {e}");
            return;
        }
    };
    tracing::debug!(entry = %entry.name, connection = link.id(), "stdio bridge connected");
    let (mut reader, mut writer) = ByteStream::new(read, write).split();
    let answers = link.to_client();
    let writing = tokio::spawn(async move {
        let mut batch = Vec::new();
        let mut items = Vec::new();
        while from_owner.recv_many(&mut items, 64).await > 0 {
            batch.extend(items.drain(..).map(|item: ToClient| item.message));
            if let Err(e) = writer.write(&mut batch).await {
                tracing::debug!("cannot write to the MCP bridge: {e}");
                return;
            }
        }
    });
    loop {
        let read = tokio::select! {
            () = entry.ended.cancelled() => break,
            read = reader.read() => read,
        };
        let message = match read {
            Ok(Some(Inbound::Message(message))) => message,
            Ok(Some(Inbound::Invalid { id, error })) => {
                let _ = answers
                    .send(ToClient {
                        message: Message::Response(Response::error(id, &error)),
                        related: None,
                    })
                    .await;
                continue;
            }
            Ok(Some(Inbound::BadResponse { id, error })) => {
                tracing::warn!(%id, "the agent's MCP client sent a bad response: {error}");
                continue;
            }
            Ok(None) => break,
            Err(e) => {
                tracing::debug!("cannot read from the MCP bridge: {e}");
                break;
            }
        };
        link.pass_on(message, &answers).await;
    }
    drop(answers);
    link.close().await;
    writing.abort();
}
