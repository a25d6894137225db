//! ACP over the network (feature `remote`), in one process: a [`Server`] serving a scripted
//! agent, reached by a scripted editor over each profile, and the server's answers to what it
//! must refuse.

mod refusals;
mod tls;
mod turns;

use sacp::remote::{Remote, RemoteTransport, Server};
use sacp::testing::{ScriptedAgent, within};

/// A server on an ephemeral loopback port, serving a new copy of `agent` per connection.
pub(crate) async fn serve(
    agent: ScriptedAgent,
    build: impl FnOnce(sacp::remote::ServerBuilder) -> sacp::remote::ServerBuilder,
) -> (String, String, sacp::remote::Shutdown) {
    let server = build(Server::builder().token("t0ken"))
        .bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = server.url();
    let token = server.token().to_owned();
    let shutdown = server.shutdown_handle();
    tokio::spawn(server.serve(move |connection| {
        let agent = agent.clone();
        async move {
            let _ = sacp::agent::serve(agent, connection).await;
        }
    }));
    (url, token, shutdown)
}

/// `url` with the WebSocket scheme.
pub(crate) fn ws(url: &str) -> String {
    url.replacen("http", "ws", 1)
}

pub(crate) async fn connect(url: &str, token: &str) -> RemoteTransport {
    within(
        "the connection to the server",
        Remote::new(url)
            .header("Authorization", &format!("Bearer {token}"))
            .unwrap()
            .connect(),
    )
    .await
    .expect("connect")
}
