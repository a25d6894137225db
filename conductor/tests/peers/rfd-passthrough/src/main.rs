//! A proxy that forwards everything, written with `agent-client-protocol` 5 as its users write
//! one.

use agent_client_protocol::{Proxy, Stdio};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), agent_client_protocol::Error> {
    Proxy.v1().connect_to(Stdio::new()).await
}
