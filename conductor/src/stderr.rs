//! The conductor's stderr: its own log and every component's stderr, copied line by line,
//! written by a thread of its own through a bounded queue, so that an editor that does not
//! read the conductor's stderr can never hold up routing.
//!
//! A line that finds the queue full is dropped and counted; the next line that gets through
//! is preceded by a note saying how many were dropped. At the end, [`finish`] waits a moment
//! for the queue to drain — and no longer: a stderr that nobody reads must not keep the
//! conductor from exiting. (`tracing-appender`'s non-blocking writer was the obvious choice, but
//! its guard reports a full queue at shutdown with `println!`, on stdout, which is the protocol
//! channel here.)
//!
//! Nothing in the process writes to the real stderr but that thread: [`init`] gives the thread
//! a duplicate of file descriptor 2 and puts a pipe in its place, which a second thread drains
//! into the same queue. A raw `eprintln!`, a panic message or a library's diagnostic (anything
//! that writes to fd 2) then costs its writer a pipe write that the drain takes at once, never
//! a wait for the editor to read: it is one more line of the one non-blocking path.
//!
//! Library users who never call [`init`] get what they set up themselves: the copying then
//! writes to the process's stderr directly.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::Duration;

/// Lines that may wait for stderr.
const QUEUE_LINES: usize = 4096;

/// A line written to fd 2 without its end is passed on in pieces of this much.
const LONGEST_LINE: usize = 64 * 1024;

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

/// Starts the writer thread; from now on `write_line`, the log and whatever the process
/// writes to fd 2 go through it. Where the descriptors cannot be had (none left, say), the
/// writer writes to fd 2 itself and raw writes go there directly, as before `init`.
pub fn init() {
    let real: Option<OwnedFd> = rustix::io::fcntl_dupfd_cloexec(std::io::stderr(), 3).ok();
    let (queue, lines) = mpsc::sync_channel(QUEUE_LINES);
    let out: Box<dyn Write + Send> = match &real {
        Some(fd) => match fd.try_clone() {
            Ok(fd) => Box::new(File::from(fd)),
            Err(_) => Box::new(std::io::stderr()),
        },
        None => Box::new(std::io::stderr()),
    };
    let started = std::thread::Builder::new()
        .name("stderr".into())
        .spawn(move || run(lines, out));
    if started.is_err() {
        return;
    }
    let _ = SINK.set(Sink {
        queue,
        dropped: AtomicUsize::new(0),
        unreported: AtomicUsize::new(0),
    });
    if real.is_some() {
        drain_fd_2();
    }
}

/// Puts a pipe in the place of fd 2, read by a thread that passes each line it reads to
/// [`write_line`].
fn drain_fd_2() {
    let Ok((read, write)) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) else {
        return;
    };
    let drain = std::thread::Builder::new()
        .name("stderr-drain".into())
        .spawn(move || drain(File::from(read)));
    if drain.is_ok() {
        // fd 2 is the pipe from now on (without close-on-exec, as a stderr is).
        let _ = rustix::stdio::dup2_stderr(&write);
    }
}

fn drain(mut pipe: File) {
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = vec![0; 16 * 1024];
    loop {
        let n = match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        pending.extend_from_slice(&chunk[..n]);
        let mut start = 0;
        while let Some(end) = memchr::memchr(b'\n', &pending[start..]) {
            write_line(pending[start..start + end + 1].to_vec());
            start += end + 1;
        }
        pending.drain(..start);
        if pending.len() >= LONGEST_LINE {
            let mut piece = std::mem::take(&mut pending);
            piece.push(b'\n');
            write_line(piece);
        }
    }
}

fn run(lines: Receiver<Item>, mut stderr: Box<dyn Write + Send>) {
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
