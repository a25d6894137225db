//! Entry points of the fuzz targets (`fuzz/` in the repository), behind the `fuzzing` feature:
//! each runs one of the crate's parsers on arbitrary input and checks what it promises. Not
//! part of the API.

use std::pin::pin;
use std::task::{Context, Poll, Waker};

use crate::jsonrpc::framing::{Frame, LineReader};

/// The line reader (newline-delimited stdio and byte streams): `data` read in one go and read
/// in pieces cut as `cuts` says gives the same lines and the same refusals of lines that are
/// too long; no line holds a `\n`, is blank or is longer than `max`.
pub fn framing(data: &[u8], cuts: &[u8], max: usize) {
    let whole = frames(data, &[], max);
    let pieces = frames(data, cuts, max);
    assert_eq!(whole, pieces, "the lines depend on how the reads were cut");
    for line in whole.iter().flatten() {
        assert!(!line.contains(&b'\n'), "a line holds a newline");
        assert!(line.len() <= max, "a line is longer than the limit");
        assert!(!line.iter().all(u8::is_ascii_whitespace), "a blank line");
    }
}

/// The frames of `data` (`None`: a line refused as too long), read in pieces of
/// `cuts[i] + 1` bytes (all at once when `cuts` is empty).
fn frames(data: &[u8], cuts: &[u8], max: usize) -> Vec<Option<Vec<u8>>> {
    let pieces = Pieces {
        data,
        cuts,
        next: 0,
    };
    let mut reader = LineReader::new(pieces, max);
    let mut out = Vec::new();
    loop {
        // The reader never waits: its input is all there.
        let mut cx = Context::from_waker(Waker::noop());
        let frame = match pin!(reader.next_frame()).poll(&mut cx) {
            Poll::Ready(Ok(frame)) => frame,
            Poll::Ready(Err(e)) => panic!("reading a slice failed: {e}"),
            Poll::Pending => panic!("reading a slice waited"),
        };
        match frame {
            None => return out,
            Some(Frame::Line(line)) => out.push(Some(line.to_vec())),
            Some(Frame::TooLong { .. }) => out.push(None),
        }
    }
}

/// A slice read in pieces.
struct Pieces<'a> {
    data: &'a [u8],
    cuts: &'a [u8],
    next: usize,
}

impl tokio::io::AsyncRead for Pieces<'_> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let mut n = self.data.len().min(buf.remaining());
        if !self.cuts.is_empty() {
            n = n.min(usize::from(self.cuts[self.next % self.cuts.len()]) + 1);
            self.next += 1;
        }
        let (now, rest) = self.data.split_at(n);
        buf.put_slice(now);
        self.data = rest;
        Poll::Ready(Ok(()))
    }
}

/// The remote transports' server-sent events parser (the HTTP client's streams): the same
/// events and the same last event id, or the same refusal, however the stream was cut; no
/// event's data is longer than `max`.
#[cfg(feature = "remote")]
pub fn sse(data: &[u8], cuts: &[u8], max: usize) {
    let whole = sse_events(data, &[], max);
    let pieces = sse_events(data, cuts, max);
    assert_eq!(whole, pieces, "the events depend on how the stream was cut");
    if let Ok((events, _)) = &whole {
        assert!(
            events.iter().all(|e| e.len() <= max),
            "an event over the limit"
        );
    }
}

#[cfg(feature = "remote")]
fn sse_events(data: &[u8], cuts: &[u8], max: usize) -> Result<(Vec<Vec<u8>>, Option<String>), ()> {
    let mut parser = crate::remote::sse::Parser::new(max);
    let mut events = Vec::new();
    let mut rest = data;
    let mut next = 0;
    while !rest.is_empty() {
        let n = if cuts.is_empty() {
            rest.len()
        } else {
            let n = usize::from(cuts[next % cuts.len()]) + 1;
            next += 1;
            n.min(rest.len())
        };
        let (now, later) = rest.split_at(n);
        parser.feed(now, &mut events).map_err(|_| ())?;
        rest = later;
    }
    let events = events.iter().map(|e| e.to_vec()).collect();
    Ok((events, parser.last_id().map(str::to_owned)))
}
