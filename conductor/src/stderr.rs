//! The conductor's stderr: its own log and every component's relayed stderr, written by a
//! thread of its own through a bounded queue, so that an editor that does not read the
//! conductor's stderr can never hold up routing.
//!
//! A line that finds the queue full is dropped and counted; the next line that gets through
//! is preceded by a note saying how many were dropped. At the end, [`finish`] waits a moment
//! for the queue to drain — and no longer: a stderr that nobody reads must not keep the
//! conductor from exiting. (`tracing-appender`'s non-blocking writer was the obvious choice, but
//! its guard reports a full queue at shutdown with `println!`, on stdout, which is the protocol
//! channel here.)
//!
//! Library users who never call [`init`] get what they set up themselves: the relay then
//! writes to the process's stderr directly.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::Duration;

/// Lines that may wait for stderr.
const QUEUE_LINES: usize = 4096;

enum Item {
    Line(Vec<u8>),
    /// Everything before this has been written: tell the sender.
    Flushed(mpsc::Sender<()>),
}

struct Sink {
    queue: SyncSender<Item>,
    dropped: AtomicUsize,
    /// Dropped lines not reported yet.
    unreported: AtomicUsize,
}

static SINK: OnceLock<Sink> = OnceLock::new();

/// Starts the writer thread; from now on [`write_line`] and the log go through it.
pub fn init() {
    let (queue, lines) = mpsc::sync_channel(QUEUE_LINES);
    let started = std::thread::Builder::new()
        .name("stderr".into())
        .spawn(move || run(lines));
    if started.is_ok() {
        let _ = SINK.set(Sink {
            queue,
            dropped: AtomicUsize::new(0),
            unreported: AtomicUsize::new(0),
        });
    }
}

fn run(lines: Receiver<Item>) {
    let mut stderr = std::io::stderr().lock();
    for item in lines {
        match item {
            // Nobody to tell if stderr is gone.
            Item::Line(line) => {
                let _ = stderr.write_all(&line);
            }
            Item::Flushed(tell) => {
                let _ = stderr.flush();
                let _ = tell.send(());
            }
        }
    }
}

/// Writes one line (ending in `\n`) to stderr without ever waiting: dropped, and counted, when
/// stderr is not keeping up.
pub(crate) fn write_line(line: Vec<u8>) {
    let Some(sink) = SINK.get() else {
        let _ = std::io::stderr().write_all(&line);
        return;
    };
    let unreported = sink.unreported.swap(0, Ordering::Relaxed);
    if unreported > 0 {
        let note = format!(
            "[conductor] {unreported} stderr lines were dropped (stderr is not read fast enough)\n"
        );
        if sink.queue.try_send(Item::Line(note.into_bytes())).is_err() {
            sink.unreported.fetch_add(unreported, Ordering::Relaxed);
        }
    }
    match sink.queue.try_send(Item::Line(line)) {
        Ok(()) => {}
        Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
            sink.dropped.fetch_add(1, Ordering::Relaxed);
            sink.unreported.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// How many lines were dropped so far.
pub fn dropped() -> usize {
    SINK.get().map_or(0, |s| s.dropped.load(Ordering::Relaxed))
}

/// Gives what is queued up to `patience` to reach stderr.
pub fn finish(patience: Duration) {
    let Some(sink) = SINK.get() else { return };
    let (tell, told) = mpsc::channel();
    if sink.queue.try_send(Item::Flushed(tell)).is_ok() {
        let _ = told.recv_timeout(patience);
    }
}

/// The writer the log (`tracing`) uses: one line per event, through the queue.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        write_line(buf.to_vec());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;

    fn make_writer(&'a self) -> LogWriter {
        LogWriter
    }
}
