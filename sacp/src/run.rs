//! [`run`]: the runtime a component's `main` needs, natively and as a WebAssembly component.

use std::future::Future;

/// Runs `future` to completion on a tokio runtime of one thread, the kind a proxy or an agent
/// on stdio needs, and returns its output: a `main` that builds the same program natively and
/// for WebAssembly (`wasm32-wasip2`, a WASI 0.2 component).
///
/// Natively it is tokio's current-thread runtime with every driver the crate's features
/// enable. As a component it is the runtime that waits for standard input when it has nothing
/// else to do (WASI 0.2 gives tokio no reactor); under `#[tokio::main]` a component still
/// works, but looks for input only every 10 ms while it waits.
///
/// ```no_run
/// struct PassThrough;
///
/// #[sacp::proxy]
/// impl PassThrough {}
///
/// fn main() -> sacp::Result<()> {
///     sacp::run(sacp::proxy::serve_stdio(PassThrough))
/// }
/// ```
///
/// # Panics
///
/// When the runtime cannot be built (the operating system refused its resources).
pub fn run<F: Future>(future: F) -> F::Output {
    #[cfg(all(target_os = "wasi", target_env = "p2"))]
    {
        crate::jsonrpc::transport::block_on(future)
    }
    #[cfg(not(all(target_os = "wasi", target_env = "p2")))]
    {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot build the tokio runtime: {e}"))
            .block_on(future)
    }
}
