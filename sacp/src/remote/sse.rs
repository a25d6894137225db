//! Server-sent events as ACP uses them (see *Server-sent events* in [`crate::remote`]): each event
//! one `data:` line of JSON; an idle stream gets a `:` comment now and then. Our server gives each
//! event an `id:` (after its data, which SSE allows), so that a receiver whose stream broke can
//! resume after the last one it got (`Last-Event-ID`); a parser keeps the last id it read.

use bytes::Bytes;

use crate::jsonrpc::Message;

/// The `data:` line of an event carrying `message`, with room for its `id:` line
/// ([`with_id`]).
pub(crate) fn data(message: &Message) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"data: ");
    message.encode_into(&mut out);
    out.reserve(24);
    out
}

/// Ends the event begun by [`data`] with its `id:` line.
pub(crate) fn with_id(mut data: Vec<u8>, id: u64) -> Bytes {
    use std::io::Write as _;
    let _ = write!(data, "id: {id}\n\n");
    Bytes::from(data)
}

/// The keep-alive comment.
pub(crate) const KEEP_ALIVE: &[u8] = b":\n\n";

/// Reads events from a byte stream, as the TypeScript SDK's client does: lines end in LF, CRLF
/// or CR; a BOM at a line's start is skipped; `data:` lines (one space after the colon
/// dropped) make the event, joined with `\n`; a blank line ends it; every other line is
/// ignored.
#[derive(Debug)]
pub(crate) struct Parser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    /// The last `id:` read (SSE's last event ID buffer).
    last_id: Option<String>,
    /// The previous byte was a CR (its LF, if one follows, ends nothing more).
    after_cr: bool,
    max: usize,
}

/// An event's data was longer than the limit.
#[derive(Debug)]
pub(crate) struct TooLong(pub(crate) usize);

impl Parser {
    /// A parser refusing events of more than `max` bytes of data.
    pub(crate) fn new(max: usize) -> Parser {
        Parser {
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            last_id: None,
            after_cr: false,
            max,
        }
    }

    /// Feeds `chunk`; the data of each event it completes goes to `events`.
    pub(crate) fn feed(
        &mut self,
        mut chunk: &[u8],
        events: &mut Vec<Bytes>,
    ) -> Result<(), TooLong> {
        while !chunk.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if chunk[0] == b'\n' {
                    chunk = &chunk[1..];
                    continue;
                }
            }
            // A line of any kind past the limit is refused, whole or in pieces alike.
            match memchr::memchr2(b'\n', b'\r', chunk) {
                Some(at) => {
                    self.line.extend_from_slice(&chunk[..at]);
                    self.after_cr = chunk[at] == b'\r';
                    chunk = &chunk[at + 1..];
                    self.check_line()?;
                    self.end_line(events)?;
                }
                None => {
                    self.line.extend_from_slice(chunk);
                    chunk = &[];
                    self.check_line()?;
                }
            }
        }
        Ok(())
    }

    /// Forgets a line or event it was in the middle of (the stream broke there), keeping the
    /// last event id: what a resumed stream continues from.
    pub(crate) fn broken(&mut self) {
        self.line.clear();
        self.data.clear();
        self.has_data = false;
        self.after_cr = false;
    }

    /// The last event id the stream gave (what a receiver sends as `Last-Event-ID` to resume
    /// after it).
    pub(crate) fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The line so far is no longer than an event's data may be, with its field name.
    fn check_line(&self) -> Result<(), TooLong> {
        if self.line.len() > self.max.saturating_add(16) {
            return Err(TooLong(self.line.len()));
        }
        Ok(())
    }

    fn end_line(&mut self, events: &mut Vec<Bytes>) -> Result<(), TooLong> {
        let mut line = &self.line[..];
        if let Some(rest) = line.strip_prefix("\u{feff}".as_bytes()) {
            line = rest;
        }
        if line.is_empty() {
            if self.has_data {
                events.push(Bytes::from(std::mem::take(&mut self.data)));
                self.has_data = false;
            }
        } else if let Some(value) = line.strip_prefix(b"data:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
            if self.data.len() > self.max {
                return Err(TooLong(self.data.len()));
            }
        } else if let Some(value) = line.strip_prefix(b"id:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            // SSE ignores an id with a NUL in it.
            if !value.contains(&0)
                && let Ok(id) = std::str::from_utf8(value)
            {
                self.last_id = Some(id.to_owned());
            }
        }
        self.line.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&[u8]]) -> Vec<String> {
        let mut parser = Parser::new(1024);
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(chunk, &mut out).unwrap();
        }
        out.iter()
            .map(|e| String::from_utf8(e.to_vec()).unwrap())
            .collect()
    }

    /// Found by the `sse` fuzz target: a long line that was not an event's data was refused
    /// when it arrived in pieces and let through when it arrived whole.
    #[test]
    fn a_long_line_is_refused_however_it_arrives() {
        let stream = format!(": {}\n\ndata: x\n\n", "k".repeat(100));
        for n in 1..=stream.len() {
            let mut parser = Parser::new(10);
            let mut out = Vec::new();
            let refused = stream
                .as_bytes()
                .chunks(n)
                .any(|chunk| parser.feed(chunk, &mut out).is_err());
            assert!(refused, "in pieces of {n}");
        }
    }

    #[test]
    fn events_are_read_across_chunks_and_line_endings() {
        assert_eq!(
            events(&[
                b"data: {\"a\"",
                b":1}\n\n:\n\n",
                b"event: x\r\ndata:{}\r\n\r",
                b"\ndata: a\rdata: b\r\r"
            ]),
            ["{\"a\":1}", "{}", "a\nb"]
        );
        let message = Message::Notification(crate::jsonrpc::Notification {
            method: "m".into(),
            params: None,
        });
        let event = with_id(data(&message), 7);
        let mut parser = Parser::new(1024);
        let mut out = Vec::new();
        parser.feed(&event, &mut out).unwrap();
        assert_eq!(out, [&br#"{"jsonrpc":"2.0","method":"m"}"#[..]]);
        assert_eq!(parser.last_id(), Some("7"));
        let mut parser = Parser::new(4);
        assert!(parser.feed(b"data: 12345\n", &mut Vec::new()).is_err());
    }
}
