//! Where the writer's lines go: a buffer it makes them in, and the file they are written to —
//! around the page cache where the file system allows it.
//!
//! What a trace costs a busy chain is mostly the kernel's work on its bytes: measured at N = 3
//! with the chain bench's trace rounds, a trace to `/dev/null` cost 0.971x of the untraced
//! throughput, the same lines to a file on ext4 0.92x. Through the page cache every byte is
//! copied into a cached page and written back by the kernel later; with `O_DIRECT` the device
//! reads the writer's buffer itself. On this project's VM, writing 512 MiB (and syncing it)
//! took 20–27 ticks of CPU through the cache in 64 KiB writes, 20–22 with `O_DIRECT` in
//! 64 KiB writes, 6–7 in 512 KiB writes and 5–9 in 1 MiB ones: so, with
//! `SACP_TRACE_DIRECT=1` (see [`direct_from_env`] for why not by default), whole blocks go out
//! directly, [`DIRECT_AT`] at a time.
//!
//! `O_DIRECT` wants the buffer's address, the file offset and the length aligned to the
//! device's blocks ([`BLOCK`]). The buffer keeps a few bytes of padding in front so that the
//! blocks of the file are blocks in memory too. A flush (lines due in the file now, for a
//! viewer or a reader) writes the whole blocks directly and the rest through the cache, and
//! the next write finishes that block through the cache too: no block is written both ways (a
//! direct write over a cached page waits for that page to be written back first). Only on a
//! regular file of a local block file system (ext2/3/4, XFS,
//! Btrfs, F2FS): on a network file system every direct write waits for the server. Anything
//! else (a pipe, a device, tmpfs, NFS), or a direct write the file system refuses, is written
//! through the cache as before.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{Receiver, SyncSender};

use tokio::sync::watch;

use super::writer::Scheduling;

/// The alignment `O_DIRECT` needs: the largest logical block size of common devices.
const BLOCK: usize = 4096;

/// Through the cache or into a pipe: when the buffer holds this much, it is handed to the
/// file's thread (what fills whole [`BLOCK`]s of a regular file).
const WRITE_AT: usize = 128 * 1024;

/// Directly: when the buffer holds this much, its whole blocks are handed to the file's
/// thread. On this project's VM, writing 512 MiB directly took 20–22 ticks of CPU in 64 KiB
/// writes, 6–7 in 512 KiB and 5–9 in 1 MiB ones.
const DIRECT_AT: usize = 1024 * 1024;

/// `statfs` magic numbers of the local block file systems written directly.
const DIRECT_FILE_SYSTEMS: [u32; 4] = [
    0xEF53,      // ext2, ext3, ext4
    0x5846_5342, // XFS
    0x9123_683E, // Btrfs
    0xF2F5_2010, // F2FS
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    /// A pipe or a device: written in sequence.
    Stream,
    /// A regular file, through the page cache, at known offsets.
    Cached,
    /// A regular file, whole blocks around the page cache (see the module).
    Direct,
}

/// Whether a trace file may be written directly: `SACP_TRACE_DIRECT=1`. Not by default: in the
/// chain bench's trace rounds (N = 3, three runs of 6 generations) direct writes took the
/// idle machine from 0.92x to 0.942–0.951x of the untraced throughput, but beside two busy
/// loops from 0.897–0.975x (five runs, four at 0.9x or more) to 0.850–0.868x, and the traced
/// chain's CPU per update from 1.09–1.16x to 1.14–1.23x its untraced one: on this VM each
/// direct write is a device notification and an interrupt the busy cores pay for, where
/// writeback batches them. A chain traced beside a build is the case a trace must not make
/// worse.
pub(super) fn direct_from_env() -> bool {
    std::env::var("SACP_TRACE_DIRECT").is_ok_and(|v| v.trim() == "1")
}

/// The file's side: what the file's thread is asked to do, in order.
#[derive(Debug)]
enum Job {
    /// Write `buf[start..start + len]` at `offset` (see [`FileThread::write`]).
    Write {
        buf: Vec<u8>,
        start: usize,
        len: usize,
        offset: u64,
    },
    /// Everything before is in the file: the first `seq` lines.
    Done {
        seq: u64,
        done: Option<tokio::sync::oneshot::Sender<()>>,
    },
}

/// The writer's side: the buffer it makes lines in, and the file's thread that writes the
/// filled ones. A write (through the page cache or around it, or into a pipe nobody reads)
/// never holds up the making of lines while a spare buffer is left: [`BUFFERS`] of them.
#[derive(Debug)]
pub(super) struct Sink {
    how: How,
    /// The lines made and not yet handed to the file's thread: `out[pad..]`. The writer
    /// appends to it.
    pub(super) out: Vec<u8>,
    pad: usize,
    /// Where `out[pad]` goes in the file.
    offset: u64,
    /// To the file's thread (`None` once it is gone: what is made then is let go).
    jobs: Option<SyncSender<Job>>,
    /// Buffers the file's thread is done with.
    free: Receiver<Vec<u8>>,
    /// Buffers made so far (at most [`BUFFERS`]).
    buffers: usize,
}

/// How many buffers a sink has: one being filled, the others being written or waiting.
const BUFFERS: usize = 3;

impl Sink {
    /// A sink for `file`: direct writes only when `direct` (see [`direct_from_env`]). The
    /// file's thread, scheduled like the writer, says in `written` how many lines are in the
    /// file.
    pub(super) fn new(
        file: File,
        direct: bool,
        written: watch::Sender<u64>,
        scheduling: Scheduling,
    ) -> Sink {
        let regular = file.metadata().is_ok_and(|m| m.is_file());
        let local = rustix::fs::fstatfs(&file).is_ok_and(|fs| {
            // `f_type` is signed and of the platform's width: the magic is its low 32 bits.
            DIRECT_FILE_SYSTEMS.contains(&(fs.f_type as u32))
        });
        let how = match (regular, local && direct) {
            (false, _) => How::Stream,
            (true, false) => How::Cached,
            (true, true) => How::Direct,
        };
        let (jobs, queue) = std::sync::mpsc::sync_channel(BUFFERS);
        let (freed, free) = std::sync::mpsc::sync_channel(BUFFERS);
        let thread = FileThread {
            file,
            how,
            direct_set: false,
            written,
            freed,
        };
        let spawned = std::thread::Builder::new()
            .name("trace-file".into())
            .spawn(move || {
                scheduling.apply();
                thread.run(queue)
            });
        let jobs = match spawned {
            Ok(_) => Some(jobs),
            Err(e) => {
                tracing::warn!("cannot start the trace file's thread: {e}");
                None
            }
        };
        let mut sink = Sink {
            how,
            out: Vec::with_capacity(usual_capacity(how)),
            pad: 0,
            offset: 0,
            jobs,
            free,
            buffers: 1,
        };
        sink.align();
        sink
    }

    fn made(&self) -> usize {
        self.out.len() - self.pad
    }

    /// A line was made: hands over what is due.
    pub(super) fn line_made(&mut self) {
        let at = match self.how {
            How::Direct => DIRECT_AT,
            How::Stream | How::Cached => WRITE_AT,
        };
        if self.made() < at {
            return;
        }
        let len = match self.how {
            How::Stream => self.made(),
            // Up to the last block boundary of the file the buffer reaches: the rest of that
            // block waits for its other lines.
            How::Cached | How::Direct => {
                let end = self.offset + self.made() as u64;
                (end - end % BLOCK as u64 - self.offset) as usize
            }
        };
        self.hand_over(len);
    }

    /// Hands everything made to the file's thread, then tells `done` (and the viewer, by
    /// `written`) once the first `seq` lines are in the file. Returns at once.
    pub(super) fn flush(&mut self, seq: u64, done: Option<tokio::sync::oneshot::Sender<()>>) {
        self.hand_over(self.made());
        self.send(Job::Done { seq, done });
    }

    /// Hands the first `len` bytes made to the file's thread; the rest moves to the front of
    /// another buffer (a block at most, but after a flush).
    fn hand_over(&mut self, len: usize) {
        if len == 0 {
            return;
        }
        let mut full = self.spare();
        std::mem::swap(&mut self.out, &mut full);
        let (start, offset) = (self.pad, self.offset);
        self.pad = 0;
        self.offset += len as u64;
        self.align();
        self.out.extend_from_slice(&full[start + len..]);
        full.truncate(start + len);
        self.send(Job::Write {
            buf: full,
            start,
            len,
            offset,
        });
    }

    /// An empty buffer: one the file's thread is done with, a new one while fewer than
    /// [`BUFFERS`] exist, or else the next one it is done with (the file is behind: the
    /// writer waits, and the loop drops lines rather than wait for it).
    fn spare(&mut self) -> Vec<u8> {
        let usual = usual_capacity(self.how);
        let buf = match self.free.try_recv() {
            Ok(buf) => Some(buf),
            Err(_) if self.buffers < BUFFERS || self.jobs.is_none() => None,
            Err(_) => self.free.recv().ok(),
        };
        match buf {
            // A buffer a large payload made grow is let go.
            Some(mut buf) if buf.capacity() <= 4 * usual => {
                buf.clear();
                buf
            }
            Some(_) => Vec::with_capacity(usual),
            None => {
                self.buffers += 1;
                Vec::with_capacity(usual)
            }
        }
    }

    fn send(&mut self, job: Job) {
        if let Some(jobs) = &self.jobs
            && jobs.send(job).is_err()
        {
            tracing::warn!("the trace file's thread stopped: lines are lost");
            self.jobs = None;
        }
    }

    /// Direct: keeps what is made where its blocks of the file are blocks in memory (the
    /// address of `out[pad]` equals `offset` modulo [`BLOCK`]), moving it when the buffer
    /// was reallocated or the file offset left a block boundary.
    fn align(&mut self) {
        if self.how != How::Direct {
            return;
        }
        loop {
            let to_boundary = self.out.as_ptr().align_offset(BLOCK);
            let want = (self.offset as usize % BLOCK + to_boundary) % BLOCK;
            if want == self.pad {
                return;
            }
            if want > self.pad {
                // May reallocate: then it is measured again.
                self.out
                    .splice(0..0, std::iter::repeat_n(0, want - self.pad));
            } else {
                self.out.drain(..self.pad - want);
            }
            self.pad = want;
        }
    }
}

/// What a buffer holds at most, but for a large payload.
fn usual_capacity(how: How) -> usize {
    match how {
        How::Direct => DIRECT_AT + 2 * BLOCK + 16 * 1024,
        How::Stream | How::Cached => WRITE_AT + BLOCK + 16 * 1024,
    }
}

/// The thread that writes a trace file: the only one that touches it.
struct FileThread {
    file: File,
    how: How,
    /// `O_DIRECT` is set on the descriptor now.
    direct_set: bool,
    written: watch::Sender<u64>,
    /// Buffers go back to the writer here.
    freed: SyncSender<Vec<u8>>,
}

impl FileThread {
    fn run(mut self, jobs: Receiver<Job>) {
        for job in jobs {
            match job {
                Job::Write {
                    buf,
                    start,
                    len,
                    offset,
                } => {
                    self.write(&buf[start..start + len], offset);
                    // The writer makes another one when none is back.
                    let _ = self.freed.try_send(buf);
                }
                Job::Done { seq, done } => {
                    self.written.send_replace(seq);
                    if let Some(done) = done {
                        let _ = done.send(());
                    }
                }
            }
        }
    }

    /// Writes `bytes` at `offset`: in sequence to a pipe or a device; through the cache to a
    /// regular file; directly, the whole blocks of the file it covers (its memory is aligned
    /// like the file, see [`Sink::align`]), with the rest of a block a flush began through
    /// the cache before them, and a flush's partial block after them, through the cache
    /// too. A file system that refuses a direct write is written through the cache from
    /// then on.
    fn write(&mut self, bytes: &[u8], offset: u64) {
        if self.how != How::Direct {
            let written = match self.how {
                How::Stream => self.file.write_all(bytes),
                How::Cached | How::Direct => self.file.write_all_at(bytes, offset),
            };
            if let Err(e) = written {
                tracing::warn!("cannot write the trace file: {e}");
            }
            return;
        }
        let block = BLOCK as u64;
        let head = (((block - offset % block) % block) as usize).min(bytes.len());
        let blocks = (bytes.len() - head) / BLOCK * BLOCK;
        self.cached(&bytes[..head], offset);
        let at = offset + head as u64;
        let whole = &bytes[head..head + blocks];
        if !whole.is_empty() {
            let refused = !self.set_direct(true)
                || match self.file.write_all_at(whole, at) {
                    Ok(()) => false,
                    Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => {
                        tracing::debug!("the trace file takes no direct writes: {e}");
                        true
                    }
                    Err(e) => {
                        tracing::warn!("cannot write the trace file: {e}");
                        false
                    }
                };
            if refused {
                self.how = How::Cached;
                self.cached(whole, at);
            }
        }
        self.cached(&bytes[head + blocks..], at + blocks as u64);
    }

    fn cached(&mut self, bytes: &[u8], offset: u64) {
        if bytes.is_empty() {
            return;
        }
        self.set_direct(false);
        if let Err(e) = self.file.write_all_at(bytes, offset) {
            tracing::warn!("cannot write the trace file: {e}");
        }
    }

    /// Sets or clears `O_DIRECT` on the descriptor; false if it cannot be set.
    fn set_direct(&mut self, on: bool) -> bool {
        if self.direct_set == on {
            return true;
        }
        use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
        let set = fcntl_getfl(&self.file).and_then(|flags| {
            let flags = if on {
                flags | OFlags::DIRECT
            } else {
                flags - OFlags::DIRECT
            };
            fcntl_setfl(&self.file, flags)
        });
        match set {
            Ok(()) => {
                self.direct_set = on;
                true
            }
            Err(e) => {
                tracing::debug!("cannot set O_DIRECT on the trace file: {e}");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{BLOCK, DIRECT_AT, Sink};
    use crate::trace::writer::Scheduling;

    /// Flushes `sink` and waits until the file has it all.
    fn flushed(sink: &mut Sink, seq: u64) {
        let (done, written) = tokio::sync::oneshot::channel();
        sink.flush(seq, Some(done));
        written
            .blocking_recv()
            .expect("the file's thread says done");
    }

    /// Lines of every length, made and flushed at odd moments (and a flush right after one
    /// that wrote nothing), reach the file whole and in order: directly on the temporary
    /// directory's file system when it takes that, through the cache on tmpfs.
    #[test]
    fn every_byte_reaches_the_file_once_and_in_order() {
        let name = format!("sacp-sink-{}.jsonl", std::process::id());
        let mut dirs = vec![std::env::temp_dir()];
        if std::path::Path::new("/dev/shm").is_dir() {
            dirs.push("/dev/shm".into());
        }
        for dir in dirs {
            let path = dir.join(&name);
            let file = std::fs::File::create(&path).expect("create");
            let (written, seen) = tokio::sync::watch::channel(0);
            let mut sink = Sink::new(file, true, written, Scheduling::DEFAULT);
            let how = sink.how;
            let mut expected = Vec::new();
            for i in 0..40_000usize {
                let line = format!("{{\"seq\":{i},\"pad\":\"{}\"}}\n", "x".repeat(i % 300));
                sink.out.extend_from_slice(line.as_bytes());
                expected.extend_from_slice(line.as_bytes());
                sink.line_made();
                if i % 997 == 0 || i % 997 == 1 {
                    flushed(&mut sink, i as u64);
                    assert_eq!(*seen.borrow(), i as u64);
                    let file = std::fs::read(&path).expect("read");
                    assert!(file == expected, "{how:?} in {dir:?}: after line {i}");
                }
                if i == 20_000 {
                    // A large payload makes the buffer grow (and move).
                    let big = format!("{{\"payload\":\"{}\"}}\n", "y".repeat(5 * DIRECT_AT + 17));
                    sink.out.extend_from_slice(big.as_bytes());
                    expected.extend_from_slice(big.as_bytes());
                    sink.line_made();
                }
            }
            flushed(&mut sink, 40_000);
            assert!(
                std::fs::read(&path).expect("read") == expected,
                "{how:?} in {dir:?}"
            );
            assert!(sink.pad < BLOCK && sink.buffers <= super::BUFFERS);
            let _ = std::fs::remove_file(&path);
        }
    }
}
