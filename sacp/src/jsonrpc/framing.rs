//! Newline-delimited framing with a maximum line length.
//!
//! Lines are cut out of one growing buffer without copying: each line handed out is a `Bytes`
//! that shares the buffer, and the payloads parsed from it share it too. A line longer than
//! the maximum is dropped as it streams in (its bytes are not kept), reported once, and
//! reading goes on with the next line.

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The default maximum line length: 64 MiB.
pub const DEFAULT_MAX_LINE_LENGTH: usize = 64 * 1024 * 1024;

const READ_CHUNK: usize = 64 * 1024;
/// A line longer than this gets the rest of the buffer moved to a buffer of its own.
const SHRINK_ABOVE: usize = 1024 * 1024;

/// One frame read from the stream.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A line, without its `\n` (and without a `\r` before it).
    Line(Bytes),
    /// A line longer than the maximum was dropped; `len` is its length.
    TooLong { len: usize },
}

/// Reads newline-delimited frames from an `AsyncRead`.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    inner: R,
    buf: BytesMut,
    /// How much of `buf` is known to hold no `\n`.
    scanned: usize,
    /// Bytes of an oversized line dropped so far, while `Some`.
    discarding: Option<usize>,
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub(crate) fn new(inner: R, max: usize) -> Self {
        LineReader {
            inner,
            buf: BytesMut::with_capacity(READ_CHUNK),
            scanned: 0,
            discarding: None,
            max,
        }
    }

    /// The next frame, or `None` at the end of the stream. Blank lines are skipped. A last
    /// line without a final `\n` still counts.
    pub(crate) async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            if let Some(frame) = self.take_buffered() {
                if matches!(&frame, Frame::Line(line) if line.len() > SHRINK_ABOVE)
                    && self.buf.len() <= SHRINK_ABOVE
                {
                    // After a huge line, start over in a buffer of our own: what is left of the
                    // old one shares its allocation, which would otherwise stay alive (at the
                    // size of the huge line) for as long as this reader reads.
                    let rest = self.buf.split();
                    self.buf = BytesMut::with_capacity(READ_CHUNK.max(rest.len()));
                    self.buf.extend_from_slice(&rest);
                }
                return Ok(Some(frame));
            }
            self.buf.reserve(READ_CHUNK);
            if self.inner.read_buf(&mut self.buf).await? == 0 {
                return Ok(self.take_rest());
            }
        }
    }

    /// A complete frame from the buffer, if there is one.
    fn take_buffered(&mut self) -> Option<Frame> {
        loop {
            let Some(pos) = memchr::memchr(b'\n', &self.buf[self.scanned..]) else {
                self.scanned = self.buf.len();
                // (One byte more than the limit may still be a line's: the CR of its CRLF.)
                if self.buf.len() > self.max.saturating_add(1) || self.discarding.is_some() {
                    // Over the limit with no end in sight: drop what we have, remember how much.
                    *self.discarding.get_or_insert(0) += self.buf.len();
                    self.buf.clear();
                    self.scanned = 0;
                }
                return None;
            };
            let end = self.scanned + pos;
            let mut line = self.buf.split_to(end + 1);
            self.scanned = 0;
            line.truncate(end);
            if line.last() == Some(&b'\r') {
                line.truncate(end - 1);
            }
            if let Some(dropped) = self.discarding.take() {
                return Some(Frame::TooLong { len: dropped + end });
            }
            if line.len() > self.max {
                return Some(Frame::TooLong { len: line.len() });
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(Frame::Line(line.freeze()));
        }
    }

    /// What is left at the end of the stream.
    fn take_rest(&mut self) -> Option<Frame> {
        if let Some(dropped) = self.discarding.take() {
            return Some(Frame::TooLong {
                len: dropped + self.buf.len(),
            });
        }
        let mut rest = self.buf.split();
        self.scanned = 0;
        // A last line ending in CR without its LF ends like every other line.
        if rest.last() == Some(&b'\r') {
            rest.truncate(rest.len() - 1);
        }
        if rest.iter().all(u8::is_ascii_whitespace) {
            None
        } else if rest.len() > self.max {
            Some(Frame::TooLong { len: rest.len() })
        } else {
            Some(Frame::Line(rest.freeze()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<String> {
        let mut r = LineReader::new(input, max);
        let mut out = Vec::new();
        while let Some(f) = r.next_frame().await.unwrap() {
            out.push(match f {
                Frame::Line(l) => String::from_utf8(l.to_vec()).unwrap(),
                Frame::TooLong { len } => format!("<too long: {len}>"),
            });
        }
        out
    }

    /// Reads a slice `n` bytes at a time.
    struct Trickle<'a>(&'a [u8], usize);

    impl tokio::io::AsyncRead for Trickle<'_> {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let n = self.1.min(self.0.len()).min(buf.remaining());
            let (now, rest) = self.0.split_at(n);
            buf.put_slice(now);
            self.0 = rest;
            std::task::Poll::Ready(Ok(()))
        }
    }

    /// Found by the `framing` fuzz target: a line of exactly the limit ending in CRLF, read
    /// up to its CR before its LF came, was dropped as too long (read at once, it was a line).
    #[tokio::test]
    async fn a_line_at_the_limit_with_crlf_is_a_line_however_it_is_read() {
        let input = b"abcd\r\nefgh\r\n";
        for n in 1..=input.len() {
            let mut r = LineReader::new(Trickle(input, n), 4);
            let mut lines = Vec::new();
            while let Some(f) = r.next_frame().await.unwrap() {
                match f {
                    Frame::Line(l) => lines.push(String::from_utf8(l.to_vec()).unwrap()),
                    Frame::TooLong { len } => panic!("read {n} at a time: too long ({len})"),
                }
            }
            assert_eq!(lines, ["abcd", "efgh"], "read {n} at a time");
        }
    }

    #[tokio::test]
    async fn splits_lines_and_skips_blank_ones() {
        assert_eq!(
            frames(b"a\r\n\n  \nbc\nlast", 100).await,
            ["a", "bc", "last"]
        );
    }

    #[tokio::test]
    async fn drops_oversized_lines_and_keeps_going() {
        let mut input = b"ok1\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 300_000));
        input.extend(b"\nok2\n");
        assert_eq!(
            frames(&input, 1000).await,
            ["ok1", "<too long: 300000>", "ok2"]
        );
    }

    #[tokio::test]
    async fn a_line_exactly_at_the_limit_is_kept() {
        let mut input = vec![b'y'; 10];
        input.push(b'\n');
        assert_eq!(frames(&input, 10).await, ["yyyyyyyyyy"]);
        input.insert(0, b'y');
        assert_eq!(frames(&input, 10).await, ["<too long: 11>"]);
    }
}
