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

/// The alignment `O_DIRECT` needs: the largest logical block size of common devices.
const BLOCK: usize = 4096;

/// Through the cache: when the buffer holds this much, what fills whole [`ALIGN`] blocks of
/// the file is written out.
const WRITE_AT: usize = 128 * 1024;

/// Writes through the cache (but a flush's) end on a multiple of this in the file. The page
/// cache takes whole blocks for much less CPU: on this project's VM, `dd` wrote 512 MiB to
/// ext4 in 193 ms of CPU in 64 KiB blocks, and in 272 ms in blocks of 65,000 bytes.
const ALIGN: u64 = 64 * 1024;

/// Directly: when the buffer holds this much, its whole blocks are written out.
const DIRECT_AT: usize = 512 * 1024;

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
/// writeback batches them. In a fourth run, of 18 generations, it was 0.943x idle and 0.893x
/// beside busy loops against 0.929x and 0.892x through the cache: under load, direct writes
/// measured 0.850–0.893x in four runs, the cache 0.892–0.975x in six. A chain traced beside a
/// build is the case a trace must not make worse.
pub(super) fn direct_from_env() -> bool {
    std::env::var("SACP_TRACE_DIRECT").is_ok_and(|v| v.trim() == "1")
}

#[derive(Debug)]
pub(super) struct Sink {
    file: File,
    how: How,
    /// `O_DIRECT` is set on the descriptor now.
    direct_set: bool,
    /// The lines made and not yet written: `out[pad..]`. The writer appends to it.
    pub(super) out: Vec<u8>,
    pad: usize,
    /// Where `out[pad]` goes in the file.
    offset: u64,
}

impl Sink {
    /// A sink for `file`: direct writes only when `direct` (see [`direct_from_env`]).
    pub(super) fn new(file: File, direct: bool) -> Sink {
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
        let mut sink = Sink {
            file,
            how,
            direct_set: false,
            out: Vec::new(),
            pad: 0,
            offset: 0,
        };
        sink.out.reserve(sink.usual_capacity());
        sink.align();
        sink
    }

    /// What the buffer holds at most, but for a large payload.
    fn usual_capacity(&self) -> usize {
        match self.how {
            How::Direct => DIRECT_AT + 2 * BLOCK + 16 * 1024,
            How::Stream | How::Cached => WRITE_AT + 16 * 1024,
        }
    }

    fn made(&self) -> usize {
        self.out.len() - self.pad
    }

    /// A line was made: writes out what is due.
    pub(super) fn line_made(&mut self) {
        match self.how {
            How::Direct if self.made() >= DIRECT_AT => self.write_blocks(),
            How::Stream | How::Cached if self.made() >= WRITE_AT => {
                // Up to the last block boundary the buffer reaches.
                let end = self.offset + self.made() as u64;
                self.write_cached((end - end % ALIGN - self.offset) as usize);
            }
            _ => {}
        }
    }

    /// Into the file with everything made.
    pub(super) fn flush(&mut self) {
        if self.how == How::Direct {
            self.write_blocks();
        }
        // The rest (a partial block, when direct) through the cache.
        self.write_cached(self.made());
        let usual = self.usual_capacity();
        if self.out.capacity() > 4 * usual {
            // A large payload made it grow: let it go.
            self.out.drain(..self.pad);
            self.pad = 0;
            self.out.shrink_to(usual);
            self.align();
        }
    }

    /// Writes the first `n` bytes made through the cache; the rest stays.
    fn write_cached(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.set_direct(false);
        let bytes = &self.out[self.pad..self.pad + n];
        let written = match self.how {
            How::Stream => self.file.write_all(bytes),
            How::Cached | How::Direct => self.file.write_all_at(bytes, self.offset),
        };
        if let Err(e) = written {
            tracing::warn!("cannot write the trace file: {e}");
        }
        self.consumed(n);
    }

    /// Writes what is made up to the last block boundary of the file it reaches: the rest of
    /// a block a flush began through the cache, then whole blocks around it. A file system
    /// that refuses a direct write is written through the cache from then on.
    fn write_blocks(&mut self) {
        let block = BLOCK as u64;
        let end = self.offset + self.made() as u64;
        let last = end - end % block;
        if last <= self.offset {
            return;
        }
        let upto = (last - self.offset) as usize;
        let head = ((block - self.offset % block) % block) as usize;
        self.align();
        if head > 0 {
            self.set_direct(false);
            let bytes = &self.out[self.pad..self.pad + head];
            if let Err(e) = self.file.write_all_at(bytes, self.offset) {
                tracing::warn!("cannot write the trace file: {e}");
            }
        }
        if upto > head {
            let at = self.offset + head as u64;
            let blocks = self.pad + head..self.pad + upto;
            let refused = !self.set_direct(true)
                || match self.file.write_all_at(&self.out[blocks.clone()], at) {
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
                self.set_direct(false);
                if let Err(e) = self.file.write_all_at(&self.out[blocks], at) {
                    tracing::warn!("cannot write the trace file: {e}");
                }
            }
        }
        self.consumed(upto);
    }

    fn consumed(&mut self, n: usize) {
        self.offset += n as u64;
        self.out.drain(self.pad..self.pad + n);
        // What is left is at most a block or so: moving it is cheap now.
        self.align();
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
    use super::{BLOCK, DIRECT_AT, How, Sink};

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
            let mut sink = Sink::new(file, true);
            let how = sink.how;
            let mut expected = Vec::new();
            for i in 0..40_000usize {
                let line = format!("{{\"seq\":{i},\"pad\":\"{}\"}}\n", "x".repeat(i % 300));
                sink.out.extend_from_slice(line.as_bytes());
                expected.extend_from_slice(line.as_bytes());
                sink.line_made();
                if i % 997 == 0 || i % 997 == 1 {
                    sink.flush();
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
            sink.flush();
            assert!(
                std::fs::read(&path).expect("read") == expected,
                "{how:?} in {dir:?}"
            );
            assert!(sink.pad < BLOCK);
            assert_eq!(how == How::Direct, sink.how == How::Direct, "{dir:?}");
            let _ = std::fs::remove_file(&path);
        }
    }
}
