//! Server-sent events as ACP uses them (REMOTE.md §2.9): each event one `data:` line of JSON;
//! an idle stream gets a `:` comment now and then.

use bytes::Bytes;

use crate::jsonrpc::Message;

/// An event carrying `message` (its JSON written straight into the event).
pub(crate) fn event(message: &Message) -> Bytes {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"data: ");
    message.encode_into(&mut out);
    out.push(b'\n');
    Bytes::from(out)
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
        assert_eq!(
            events(&[&event(&message)[..]]),
            [r#"{"jsonrpc":"2.0","method":"m"}"#]
        );
        let mut parser = Parser::new(4);
        assert!(parser.feed(b"data: 12345\n", &mut Vec::new()).is_err());
    }
}
