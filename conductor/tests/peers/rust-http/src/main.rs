//! The official Rust SDK's remote ACP transport (`agent-client-protocol-http` 5.0), as its
//! users run it:
//!
//! - `rust-http serve -- COMMAND ARGS...`: `AcpHttpServer` on 127.0.0.1 (an ephemeral port),
//!   each ACP connection served by a new agent process (`AcpAgent`); prints the URL;
//! - `rust-http connect URL`: its `HttpClient` (HTTP or WebSocket, by the URL's scheme) as the
//!   agent of whoever runs it on stdio. With `ACP_TOKEN` set it sends
//!   `Authorization: Bearer ACP_TOKEN`.

use agent_client_protocol::{AcpAgent, AcpAgentConfig, ConnectTo, Stdio};
use agent_client_protocol_http::{AcpHttpServer, HttpClient};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["serve", "--", command, rest @ ..] => {
            let config = AcpAgentConfig::new(command).args(rest.iter().map(|s| s.to_string()));
            let app = AcpHttpServer::new(move || AcpAgent::new(config.clone())).into_router();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            println!("http://{}/acp", listener.local_addr()?);
            axum::serve(listener, app).await?;
            Ok(())
        }
        ["connect", url] => {
            let token = std::env::var("ACP_TOKEN").ok();
            let client = HttpClient::builder_with_endpoint(url)
                .configure_http(|http| {
                    let mut headers = reqwest::header::HeaderMap::new();
                    if let Some(token) = &token {
                        let value = format!("Bearer {token}").parse().expect("a header value");
                        headers.insert(reqwest::header::AUTHORIZATION, value);
                    }
                    http.default_headers(headers)
                })
                .build()?;
            client.connect_to(Stdio::new()).await?;
            Ok(())
        }
        _ => {
            eprintln!("usage: rust-http serve -- COMMAND ARGS... | rust-http connect URL");
            std::process::exit(2);
        }
    }
}
