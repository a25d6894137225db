//! Standard input and output of a WebAssembly component (WASI 0.2, `wasm32-wasip2`) as async
//! byte streams: what a proxy built as a component reads its conductor from and writes it to.
//!
//! WASI 0.2 has no reactor tokio could register a stream with, and no thread to block on
//! one. So reading is not blocking, and the waiting is done by the runtime itself: when every
//! task waits and standard input is what the reader waits for, [`crate::run`]'s runtime, on
//! the point of sleeping, blocks on standard input's readiness instead (`wasi:io/poll`, for
//! at most [`TICK`], so that tokio's timers still fire), and wakes the reader. Under a runtime
//! of one's own (`#[tokio::main]`, which has no such hook) the reader looks again every
//! [`TICK`]: it works, with up to that much more latency.
//!
//! Writing blocks the component until the host took the bytes: a conductor reads its
//! components' output as it comes, so this is its back-pressure, as a full pipe is a native
//! process's.

use std::cell::{Cell, RefCell};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use wasip2::io::poll::Pollable;
use wasip2::io::streams::{InputStream, OutputStream, StreamError};

/// The longest a waiting reader sleeps without looking at tokio's timers.
const TICK: Duration = Duration::from_millis(10);

/// The most `wasi:io/streams` writes at once with `blocking-write-and-flush`.
const WRITE_CHUNK: usize = 4096;

struct Stdin {
    /// The stream's readiness: a child of the stream, so dropped first (fields drop in order).
    ready: Pollable,
    stream: InputStream,
}

thread_local! {
    /// The component's standard input, and its readiness.
    static STDIN: Stdin = {
        let stream = wasip2::cli::stdin::get_stdin();
        let ready = stream.subscribe();
        Stdin { ready, stream }
    };
    static STDOUT: OutputStream = wasip2::cli::stdout::get_stdout();
    /// The reader, while it waits for input.
    static WAITING: RefCell<Option<Waker>> = const { RefCell::new(None) };
    /// Whether the runtime waits for input when it has nothing else to do ([`crate::run`]).
    static HOOKED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `future` to completion on a tokio runtime of one thread that, when every task waits,
/// waits for standard input (see the module docs).
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    HOOKED.with(|h| h.set(true));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .on_thread_park(wait_for_input)
        .build()
        .unwrap_or_else(|e| panic!("cannot build the component's runtime: {e}"));
    runtime.block_on(future)
}

/// The runtime is about to sleep: when the reader waits for input, sleep on standard input
/// (or [`TICK`]) instead, and wake the reader, which the runtime then polls rather than
/// sleeping.
fn wait_for_input() {
    let Some(waker) = WAITING.with(|w| w.borrow_mut().take()) else {
        return;
    };
    STDIN.with(|stdin| {
        if !stdin.ready.ready() {
            let tick = wasip2::clocks::monotonic_clock::subscribe_duration(nanos(TICK));
            wasip2::io::poll::poll(&[&stdin.ready, &tick]);
        }
    });
    waker.wake();
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn stream_error(e: StreamError) -> Option<io::Error> {
    match e {
        StreamError::Closed => None,
        StreamError::LastOperationFailed(e) => Some(io::Error::other(e.to_debug_string())),
    }
}

/// Standard input, read without blocking (see the module docs).
#[derive(Debug, Default)]
pub struct StdinReader {
    /// Under a runtime without [`crate::run`]'s hook: when to look again.
    again: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl StdinReader {
    /// Standard input.
    pub fn new() -> StdinReader {
        StdinReader::default()
    }
}

impl AsyncRead for StdinReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            let want = u64::try_from(buf.remaining()).unwrap_or(u64::MAX);
            match STDIN.with(|stdin| stdin.stream.read(want)) {
                Ok(bytes) if bytes.is_empty() => {}
                Ok(bytes) => {
                    buf.put_slice(&bytes);
                    return Poll::Ready(Ok(()));
                }
                // Closed: the end of input.
                Err(e) => return Poll::Ready(stream_error(e).map_or(Ok(()), Err)),
            }
            if HOOKED.with(Cell::get) {
                WAITING.with(|w| *w.borrow_mut() = Some(cx.waker().clone()));
                return Poll::Pending;
            }
            let again = this
                .again
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(TICK)));
            if again.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.again = None;
        }
    }
}

/// Standard output, written through (see the module docs).
#[derive(Debug, Default)]
pub struct StdoutWriter(());

impl StdoutWriter {
    /// Standard output.
    pub fn new() -> StdoutWriter {
        StdoutWriter(())
    }
}

impl AsyncWrite for StdoutWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let chunk = &buf[..buf.len().min(WRITE_CHUNK)];
        Poll::Ready(
            match STDOUT.with(|out| out.blocking_write_and_flush(chunk)) {
                Ok(()) => Ok(chunk.len()),
                Err(e) => Err(stream_error(e).unwrap_or_else(|| io::ErrorKind::BrokenPipe.into())),
            },
        )
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
