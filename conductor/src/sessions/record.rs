//! A session's record: what the editor side of the session saw, in order, kept within a bound
//! in bytes — the history a returning or late client is replayed, and what the session
//! streams while no client takes it.
//!
//! Every entry has a sequence number; a client's place in the record is the number of the
//! next entry it is to get. The record forgets from the front only what every attached client
//! has got and some client got once ("delivered"), and only whole turns while it can (a turn
//! ends with its [`Entry::TurnEnded`]); what it forgets is counted, so that a replay can say
//! how much it leaves out. What no client has got is never forgotten: while it fills the
//! bound, the session's producer waits (see `session.rs`).

use std::collections::VecDeque;
use std::sync::{Arc, LazyLock};

use sacp::jsonrpc::{Arena, RawJson};

use super::ask::Ask;

/// The method nearly every notification of a session has, shared rather than made again.
pub(super) const UPDATE: &str = "session/update";
static UPDATE_METHOD: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from(UPDATE));

/// The method of a session's updates, shared.
pub(super) fn update_method() -> Arc<str> {
    UPDATE_METHOD.clone()
}

/// What an entry costs besides its payload (its place in the queue, its method's name).
const ENTRY_OVERHEAD: usize = 64;

/// One thing the editor side of a session saw.
#[derive(Debug, Clone)]
pub(super) enum Entry {
    /// A notification about the session (`session/update`, or any other naming it), with the
    /// editor's session ids in it. `echo` is the attachment whose own words it shows (a
    /// prompt's text as `user_message_chunk`s), which does not get it live.
    Notification {
        method: Arc<str>,
        params: RawJson,
        echo: Option<u64>,
    },
    /// A client's prompt (its params, with the editor's ids), which every other client — and a
    /// replay — gets as the `user_message_chunk`s an agent's own replay would show.
    Prompt { params: RawJson, echo: Option<u64> },
    /// A turn ended with this answer: every client but the one that asked (`asker`, which gets
    /// the answer itself) is told with the layer's `_sacp/turn_ended`. A failure is boxed: an
    /// error is three times the size of an answer, and every entry of a record is as large as
    /// its largest kind (see [`Entry::turn_ended`]).
    TurnEnded {
        result: Result<RawJson, Box<sacp::jsonrpc::Error>>,
        asker: Option<u64>,
    },
    /// A request of the agent's for an editor.
    Ask(Arc<Ask>),
}

impl Entry {
    /// The end of a turn with `result`, answered to `asker`'s client if given.
    pub(super) fn turn_ended(
        result: Result<RawJson, sacp::jsonrpc::Error>,
        asker: Option<u64>,
    ) -> Entry {
        Entry::TurnEnded {
            result: result.map_err(Box::new),
            asker,
        }
    }

    fn size(&self) -> usize {
        ENTRY_OVERHEAD
            + match self {
                Entry::Notification { params, .. } | Entry::Prompt { params, .. } => params.len(),
                Entry::TurnEnded { result, .. } => result.as_ref().map_or(64, RawJson::len),
                Entry::Ask(ask) => ask.size(),
            }
    }

    /// The entry as the record keeps it: a prompt's params and a turn's answer in bytes of
    /// their own. Both arrive as slices of the buffer their line was read into (a chain's, a
    /// client's); kept as they came, one small answer kept a whole read buffer alive, and the
    /// record of a long session grew by every buffer its chain read. A notification is kept
    /// as it is: renamed to the editor's ids, it is already a copy — its own bytes, or the
    /// record's arena's ([`Record::renamed`]).
    fn kept(self) -> Entry {
        match self {
            Entry::Prompt { params, echo } => Entry::Prompt {
                params: params.unshared(),
                echo,
            },
            Entry::TurnEnded {
                result: Ok(result),
                asker,
            } => Entry::TurnEnded {
                result: Ok(result.unshared()),
                asker,
            },
            entry => entry,
        }
    }

    /// Whether it may be forgotten once delivered: an ask still waiting for its answer is
    /// sent again to the next client, so it stays.
    fn may_go(&self) -> bool {
        match self {
            Entry::Ask(ask) => ask.is_answered(),
            _ => true,
        }
    }
}

/// How much of a session's beginning its record no longer holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct LeftOut {
    /// Whole turns forgotten.
    pub(super) turns: u64,
    /// Entries forgotten (those turns' and, in a turn too long for the bound, its oldest).
    pub(super) entries: u64,
}

/// The entries of one session, oldest first.
#[derive(Debug, Default)]
pub(super) struct Record {
    entries: Chunks<(Entry, usize)>,
    /// The sequence number of the oldest entry held.
    first: u64,
    /// What the entries held take.
    bytes: usize,
    left_out: LeftOut,
    renames: Renames,
}

/// Where a session's messages are written with the editor's id (see [`Record::renamed`]).
#[derive(Debug)]
struct Renames(Arena);

impl Default for Renames {
    fn default() -> Self {
        Renames(Arena::new(32 * 1024))
    }
}

impl Record {
    /// `params` of a chain's message whose one session id is its top-level `sessionId`, with
    /// the editor's id `id` in its place: written into the record's own arena, beside the
    /// session's other messages — renaming costs no allocation of its own, and what the
    /// record keeps holds nothing of another session's alive.
    pub(super) fn renamed(&mut self, params: &RawJson, id: &str) -> RawJson {
        params
            .with_plain_str_in("sessionId", id, &mut self.renames.0)
            .unwrap_or_else(|| params.clone())
    }

    /// The sequence number the next entry gets.
    pub(super) fn end(&self) -> u64 {
        self.first + self.entries.len() as u64
    }

    /// The sequence number of the oldest entry held.
    pub(super) fn first(&self) -> u64 {
        self.first
    }

    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(super) fn left_out(&self) -> LeftOut {
        self.left_out
    }

    /// Appends `entry`: its sequence number and its size.
    pub(super) fn push(&mut self, entry: Entry) -> (u64, usize) {
        let entry = entry.kept();
        let size = entry.size();
        let seq = self.end();
        self.entries.push_back((entry, size));
        self.bytes += size;
        (seq, size)
    }

    /// The entries from `seq` on (from the oldest held, if `seq` is older), with their
    /// sequence numbers.
    pub(super) fn since(&self, seq: u64) -> impl Iterator<Item = (u64, &Entry)> {
        let skip = seq.saturating_sub(self.first);
        let from = self.first + skip;
        self.entries
            .from(usize::try_from(skip).unwrap_or(usize::MAX))
            .enumerate()
            .map(move |(i, (entry, _))| (from + i as u64, entry))
    }

    /// The newest entry held that `pred` takes, searched from the end.
    pub(super) fn newest(&self, pred: impl Fn(&Entry) -> bool) -> Option<&Entry> {
        self.entries
            .chunks
            .iter()
            .rev()
            .flat_map(|chunk| chunk.iter().rev())
            .map(|(entry, _)| entry)
            .find(|entry| pred(entry))
    }

    /// Forgets entries older than `below` until the record takes at most `limit` bytes: as
    /// few of the oldest as that needs, or, when `whole_turns`, only whole turns (through a
    /// turn's end). Stops at an ask still waiting. One pass over the entries it forgets (for
    /// `whole_turns`, on to the end of the turn they end in). Returns the bytes freed.
    pub(super) fn forget(&mut self, below: u64, limit: usize, whole_turns: bool) -> usize {
        let before = self.bytes;
        if before <= limit {
            return 0;
        }
        // How many may go, and how many make up whole turns.
        let (mut reach, mut turns, mut freed) = (0, 0, 0);
        for (i, (entry, size)) in self.entries.iter().enumerate() {
            if self.first + i as u64 >= below || !entry.may_go() {
                break;
            }
            freed += size;
            reach = i + 1;
            let ends_turn = matches!(entry, Entry::TurnEnded { .. });
            if ends_turn {
                turns = reach;
            }
            if before - freed <= limit && (ends_turn || !whole_turns) {
                break;
            }
        }
        let count = if whole_turns { turns } else { reach };
        for (entry, size) in std::iter::from_fn(|| self.entries.pop_front()).take(count) {
            self.bytes -= size;
            self.left_out.entries += 1;
            if matches!(entry, Entry::TurnEnded { .. }) {
                self.left_out.turns += 1;
            }
        }
        self.first += count as u64;
        before - self.bytes
    }
}

/// A queue kept in chunks of [`Chunks::CHUNK`] items: it grows by a chunk, never by copying
/// what it holds (a record of a long session holds many entries, and a queue that doubles
/// copies them all and touches twice the memory each time it grows).
#[derive(Debug)]
struct Chunks<T> {
    /// None empty; every one but the first and the last full. Items go out of the first and
    /// into the last.
    chunks: VecDeque<VecDeque<T>>,
}

impl<T> Default for Chunks<T> {
    fn default() -> Self {
        Chunks {
            chunks: VecDeque::new(),
        }
    }
}

impl<T> Chunks<T> {
    const CHUNK: usize = 256;

    fn len(&self) -> usize {
        match (self.chunks.front(), self.chunks.back()) {
            (Some(first), Some(last)) if self.chunks.len() > 1 => {
                first.len() + (self.chunks.len() - 2) * Self::CHUNK + last.len()
            }
            (Some(only), _) => only.len(),
            _ => 0,
        }
    }

    fn push_back(&mut self, item: T) {
        match self.chunks.back_mut() {
            Some(last) if last.len() < Self::CHUNK => last.push_back(item),
            _ => {
                let mut chunk = VecDeque::with_capacity(Self::CHUNK);
                chunk.push_back(item);
                self.chunks.push_back(chunk);
            }
        }
    }

    fn pop_front(&mut self) -> Option<T> {
        let first = self.chunks.front_mut()?;
        let item = first.pop_front();
        if first.is_empty() {
            self.chunks.pop_front();
        }
        item
    }

    /// Every item, oldest first.
    fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }

    /// The items from the `skip`th on, found without walking those before it.
    fn from(&self, skip: usize) -> impl Iterator<Item = &T> {
        let (chunk, offset) = match self.chunks.front() {
            Some(first) if skip < first.len() => (0, skip),
            Some(first) if skip < self.len() => {
                let rest = skip - first.len();
                (1 + rest / Self::CHUNK, rest % Self::CHUNK)
            }
            _ => (self.chunks.len(), 0),
        };
        self.chunks
            .range(chunk..)
            .enumerate()
            .flat_map(move |(k, items)| items.range(if k == 0 { offset } else { 0 }..))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(n: usize) -> Entry {
        Entry::Notification {
            method: Arc::from("session/update"),
            params: RawJson::from_string(format!("{{\"n\":\"{}\"}}", "x".repeat(n))).unwrap(),
            echo: None,
        }
    }

    fn end() -> Entry {
        Entry::turn_ended(RawJson::from_string("{}"), None)
    }

    /// Whether `part` lies inside `whole`'s bytes.
    fn inside(part: &RawJson, whole: &RawJson) -> bool {
        let range = whole.as_bytes().as_ptr_range();
        range.contains(&part.as_bytes().as_ptr())
    }

    #[test]
    fn a_prompt_and_an_answer_are_kept_without_the_buffer_they_came_in() {
        let line = RawJson::from_string(
            r#"{"result":{"stopReason":"end_turn"},"params":{"prompt":[]},"pad":"xxxx"}"#,
        )
        .unwrap();
        let answer = line.member("result").unwrap();
        let params = line.member("params").unwrap();
        assert!(inside(&answer, &line) && inside(&params, &line));
        let mut record = Record::default();
        record.push(Entry::turn_ended(Ok(answer), None));
        record.push(Entry::Prompt { params, echo: None });
        let kept: Vec<&Entry> = record.since(0).map(|(_, e)| e).collect();
        let Entry::TurnEnded {
            result: Ok(answer), ..
        } = kept[0]
        else {
            panic!("a turn's end: {:?}", kept[0]);
        };
        let Entry::Prompt { params, .. } = kept[1] else {
            panic!("a prompt: {:?}", kept[1]);
        };
        assert_eq!(answer.as_str(), r#"{"stopReason":"end_turn"}"#);
        assert_eq!(params.as_str(), r#"{"prompt":[]}"#);
        assert!(!inside(answer, &line) && !inside(params, &line));
    }

    #[test]
    fn an_entry_is_no_larger_than_a_notification_needs() {
        // Every entry of a record is as large as its largest kind: a failure inline made
        // each 128 bytes.
        assert!(
            std::mem::size_of::<Entry>() <= 72,
            "{}",
            std::mem::size_of::<Entry>()
        );
    }

    #[test]
    fn chunks_keep_order_and_find_every_place() {
        let mut chunks = Chunks::default();
        let n = 3 * Chunks::<usize>::CHUNK + 17;
        for i in 0..n {
            chunks.push_back(i);
        }
        let first: Vec<usize> = std::iter::from_fn(|| chunks.pop_front()).take(5).collect();
        assert_eq!(first, vec![0, 1, 2, 3, 4]);
        assert_eq!(chunks.len(), n - 5);
        for skip in [0, 1, 250, 251, 252, 507, 508, 600, n - 6, n - 5, n] {
            let expected: Vec<usize> = (5 + skip..n).collect();
            let got: Vec<usize> = chunks.from(skip).copied().collect();
            assert_eq!(got, expected, "from {skip}");
        }
        for _ in 0..Chunks::<usize>::CHUNK {
            chunks.pop_front();
        }
        assert_eq!(chunks.iter().next(), Some(&261));
        assert_eq!(chunks.len(), n - 261);
        while chunks.pop_front().is_some() {}
        assert_eq!(chunks.len(), 0);
        assert_eq!(chunks.from(0).count(), 0);
        chunks.push_back(7);
        assert_eq!(chunks.from(0).copied().collect::<Vec<_>>(), vec![7]);
    }

    #[test]
    fn whole_turns_go_first_and_are_counted() {
        let mut record = Record::default();
        for _ in 0..3 {
            record.push(update(100));
            record.push(update(100));
            record.push(end());
        }
        let full = record.bytes();
        // Two turns' worth over: the two oldest turns go, whole.
        let one_turn = full / 3;
        record.forget(record.end(), full - one_turn - 1, true);
        assert_eq!(
            record.left_out(),
            LeftOut {
                turns: 2,
                entries: 6
            }
        );
        assert_eq!(record.first(), 6);
        assert_eq!(record.since(0).count(), 3);
    }

    #[test]
    fn nothing_newer_than_what_was_delivered_goes() {
        let mut record = Record::default();
        for _ in 0..10 {
            record.push(update(100));
        }
        // A turn going on is kept whole when asked to.
        record.forget(4, 0, true);
        assert_eq!(record.first(), 0);
        // Only the first four were delivered: a tight limit forgets only them.
        record.forget(4, 0, false);
        assert_eq!(record.first(), 4);
        assert_eq!(
            record.left_out(),
            LeftOut {
                turns: 0,
                entries: 4
            }
        );
        // A turn going on: as few of its oldest entries as the limit needs.
        let held = record.bytes();
        record.forget(record.end(), held - 1, false);
        assert_eq!(record.first(), 5);
        assert_eq!(record.since(7).next().map(|(seq, _)| seq), Some(7));
    }
}
