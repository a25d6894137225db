//! A proxy that forwards everything, written with symposium's `sacp` 11 as its users write one.

use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), sacp::Error> {
    sacp::Proxy
        .builder()
        .name("s11-passthrough")
        .connect_to(sacp::ByteStreams::new(
            tokio::io::stdout().compat_write(),
            tokio::io::stdin().compat(),
        ))
        .await
}
