//! The trace's `flow` keys: which hops are one message's.
//!
//! A message that reaches a proxy waits in that proxy's queue (per direction) until the proxy
//! sends something on in the same direction: the same method with the same params (a hash of
//! them) is that message passed on unchanged; failing that, the oldest one of the same method
//! and session is it, transformed. A response has its request's flow (by the `pair` of the hop
//! it answers). Queues are bounded: a proxy that swallows messages only ages them out.

use std::collections::VecDeque;

use sacp::protocol::routing::{Conn, Dir, Node};

use super::record::MessageLine;

/// How many messages may wait per proxy and direction. A healthy chain has thousands in
/// flight before a slow proxy (the conductor holds up to 4 MiB of them going down, 256 KiB a
/// proxy going up, and the pipes and the proxy some more): a queue that forgot the oldest of
/// them would link each hop after it to the wrong message. 32 bytes each, kept while a
/// backlog lasts.
const WAITING: usize = 1 << 16;
/// A queue that drained keeps room for this many.
const KEPT: usize = 1024;
/// How far into a proxy's queue a message it passes on is looked for.
const LOOK_AHEAD: usize = 16;
/// How many requests may wait for their response before the oldest are forgotten.
const UNANSWERED: usize = 1 << 16;

/// A fast hash of a payload's text: it tells a message passed on unchanged from others, not
/// an adversary's collisions (a collision only links two hops that did not belong together in
/// the trace).
pub(super) fn hash(bytes: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x517c_c1b7_2722_0a95).hash_one(bytes)
}

#[derive(Debug)]
struct Arrival {
    method: u64,
    session: u64,
    content: u64,
    flow: u64,
}

#[derive(Debug, Default)]
pub(super) struct Flows {
    next: u64,
    /// Messages that reached a proxy, at `2 × its position + 1 when going down`.
    waiting: Vec<VecDeque<Arrival>>,
    /// Requests sent on, by their `pair` key.
    requests: foldhash::HashMap<(Conn, i64), u64>,
}

/// The queue of `position` for messages going `down` (or up).
fn queue_of(position: usize, down: bool) -> usize {
    2 * position + usize::from(down)
}

impl Flows {
    /// The flow of one hop of a message (see the module); `method` is its method's [`hash`].
    pub(super) fn flow(&mut self, hop: &MessageLine, method: u64, session: Option<&[u8]>) -> u64 {
        let down = hop.dir == Dir::Down;
        if hop.kind.answers() {
            return match hop.key().and_then(|key| self.requests.remove(&key)) {
                Some(flow) => flow,
                None => self.fresh(),
            };
        }
        let session = session.map_or(0, hash);
        let content = hop.content().unwrap_or(0);
        let passed_on = match hop.from() {
            Node::Component(p) => self.waiting.get_mut(queue_of(p, down)).and_then(|queue| {
                // A proxy passes messages on about in the order they came: the one it passes
                // on now is among the oldest few waiting.
                let candidates = || queue.iter().take(LOOK_AHEAD);
                let exact = candidates().position(|a| a.content == content && a.method == method);
                let index = exact.or_else(|| {
                    candidates().position(|a| a.method == method && a.session == session)
                })?;
                let flow = queue.remove(index).map(|a| a.flow);
                if queue.capacity() > KEPT && queue.len() < queue.capacity() / 4 {
                    queue.shrink_to(KEPT.max(2 * queue.len()));
                }
                flow
            }),
            _ => None,
        };
        let flow = passed_on.unwrap_or_else(|| self.fresh());
        if let Node::Component(q) = hop.to() {
            // What reaches the agent going down stops there.
            let ends = down && q == hop.agent() && !hop.proxy_mode();
            if !ends {
                let at = queue_of(q, down);
                if self.waiting.len() <= at {
                    self.waiting.resize_with(at + 1, VecDeque::new);
                }
                let queue = &mut self.waiting[at];
                if queue.len() == WAITING {
                    queue.pop_front();
                }
                queue.push_back(Arrival {
                    method,
                    session,
                    content,
                    flow,
                });
            }
        }
        if hop.kind == super::record::MessageKind::Request
            && let Some(key) = hop.key()
        {
            if self.requests.len() >= UNANSWERED {
                self.requests.clear();
            }
            self.requests.insert(key, flow);
        }
        flow
    }

    fn fresh(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
}

#[cfg(test)]
mod tests {
    use sacp::jsonrpc::Message;
    use sacp::protocol::routing::{Dir, Hop, Node};

    use super::Flows;
    use crate::trace::record::{Batch, Line};

    /// One hop of update `i` (every update differs) from `from` to `to`, going up.
    fn hop(batch: &mut Batch, i: usize, from: usize, to: usize) {
        let line = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"text":"chunk {i}"}}}}}}"#
        );
        let message = Message::parse(line.as_bytes()).expect("a notification");
        let hop = Hop {
            from: Node::Component(from),
            to: Node::Component(to),
            dir: Dir::Up,
            answers: None,
            key: None,
        };
        batch.message(std::time::Duration::ZERO, &hop, 3, false, &message, false);
    }

    fn flow(flows: &mut Flows, batch: &Batch) -> u64 {
        let Some(Line::Message(m)) = batch.lines.last() else {
            panic!("a message line");
        };
        let method = m.method(batch).unwrap_or_default();
        flows.flow(m, super::hash(method), m.session(batch))
    }

    #[test]
    fn a_proxy_thousands_of_messages_behind_still_links_each_to_its_own() {
        // The agent (3) sends 20,000 updates before proxy 2 passes on the first.
        let (mut flows, mut batch) = (Flows::default(), Batch::with_capacity(16));
        let sent: Vec<u64> = (0..20_000)
            .map(|i| {
                batch.clear();
                hop(&mut batch, i, 3, 2);
                flow(&mut flows, &batch)
            })
            .collect();
        for (i, sent) in sent.into_iter().enumerate() {
            batch.clear();
            hop(&mut batch, i, 2, 1);
            assert_eq!(flow(&mut flows, &batch), sent, "update {i}");
        }
        // Proxy 2's queue drained and let its room go (proxy 1's holds all 20,000).
        let drained = &flows.waiting[super::queue_of(2, false)];
        assert!(drained.is_empty() && drained.capacity() <= super::KEPT);
    }
}
