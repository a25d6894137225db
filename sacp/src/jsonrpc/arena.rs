//! Payloads made one after another, written back to back into shared buffers.

use bytes::{Bytes, BytesMut};

/// Where payloads made one after another are written back to back: each is a shared slice of
/// one buffer, so making one costs no allocation of its own (a buffer costs one, or two when
/// its first payload is split off), and cloning one counts a reference. The first buffer is
/// small (1 KiB), each next one twice the last, up to the arena's size: an arena that makes
/// few payloads holds little.
///
/// For a stream of payloads kept about as long as each other — a session's updates with
/// their ids rewritten, say. A payload kept much longer than the rest keeps its whole buffer
/// alive: [`RawJson::unshared`](super::RawJson::unshared) copies it out. See
/// [`RawJson::with_plain_str_in`](super::RawJson::with_plain_str_in).
///
/// ```
/// use sacp::jsonrpc::{Arena, RawJson};
///
/// let mut arena = Arena::new(16 * 1024);
/// let update = RawJson::from_string(r#"{"sessionId":"s1","update":{}}"#).unwrap();
/// let renamed = update.with_plain_str_in("sessionId", "s1@tag", &mut arena).unwrap();
/// assert_eq!(renamed.as_str(), r#"{"sessionId":"s1@tag","update":{}}"#);
/// ```
#[derive(Debug)]
pub struct Arena {
    buffer: BytesMut,
    /// The size of the next buffer.
    next: usize,
    size: usize,
}

impl Arena {
    /// An arena of buffers of up to `size` bytes (a payload larger than that gets one of its
    /// own).
    pub fn new(size: usize) -> Arena {
        let size = size.max(1);
        Arena {
            buffer: BytesMut::new(),
            next: size.min(Self::FIRST),
            size,
        }
    }

    /// The size of the first buffer, at most.
    const FIRST: usize = 1024;

    /// The bytes `write` appends to the buffer it is given (about `hint` bytes). A buffer
    /// with no room left is written from its start again when nothing written in it is held
    /// any more; else a new one is taken.
    pub(crate) fn bytes(&mut self, hint: usize, write: impl FnOnce(&mut BytesMut)) -> Bytes {
        if self.buffer.capacity() < hint {
            self.buffer.reserve(self.next.max(hint));
            self.next = self.next.saturating_mul(2).min(self.size);
        }
        write(&mut self.buffer);
        self.buffer.split().freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::super::RawJson;
    use super::*;

    #[test]
    fn payloads_share_one_buffer_until_it_is_full() {
        let mut arena = Arena::new(64);
        let update = RawJson::from_string(r#"{"sessionId":"a","n":1}"#).unwrap();
        let first = update
            .with_plain_str_in("sessionId", "a@1", &mut arena)
            .unwrap();
        let second = update
            .with_plain_str_in("sessionId", "a@2", &mut arena)
            .unwrap();
        assert_eq!(first.as_str(), r#"{"sessionId":"a@1","n":1}"#);
        assert_eq!(second.as_str(), r#"{"sessionId":"a@2","n":1}"#);
        // Back to back in one buffer.
        let gap = second.as_bytes().as_ptr() as usize - first.as_bytes().as_ptr() as usize;
        assert_eq!(gap, first.len());
        // The third does not fit what is left of 64 bytes: a buffer of its own.
        let third = update
            .with_plain_str_in("sessionId", "a@3", &mut arena)
            .unwrap();
        assert_eq!(third.as_str(), r#"{"sessionId":"a@3","n":1}"#);
        let end = second.as_bytes().as_ptr() as usize + second.len();
        assert_ne!(third.as_bytes().as_ptr() as usize, end);
    }

    #[test]
    fn a_payload_larger_than_a_buffer_gets_its_own_and_escapes_as_usual() {
        let mut arena = Arena::new(8);
        let update = RawJson::from_string(r#"{"sessionId":"a","text":"long enough"}"#).unwrap();
        let renamed = update
            .with_plain_str_in("sessionId", "quote \" and \\ back", &mut arena)
            .unwrap();
        assert_eq!(
            renamed.as_str(),
            r#"{"sessionId":"quote \" and \\ back","text":"long enough"}"#
        );
        let value: serde_json::Value = renamed.parse().unwrap();
        assert_eq!(value["sessionId"], "quote \" and \\ back");
        assert!(
            update
                .with_plain_str_in("missing", "x", &mut arena)
                .is_none()
        );
    }
}
