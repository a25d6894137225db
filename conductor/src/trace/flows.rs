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

/// How many messages may wait per proxy and direction.
const WAITING: usize = 1024;
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
    pub(super) fn flow(
        &mut self,
        hop: &MessageLine,
        method: u64,
        session: Option<&[u8]>,
        content: u64,
    ) -> u64 {
        let down = hop.dir == Dir::Down;
        if hop.kind.answers() {
            return match hop.key.and_then(|key| self.requests.remove(&key)) {
                Some(flow) => flow,
                None => self.fresh(),
            };
        }
        let session = session.map_or(0, hash);
        let passed_on = match hop.from {
            Node::Component(p) => self.waiting.get_mut(queue_of(p, down)).and_then(|queue| {
                // A proxy passes messages on about in the order they came: the one it passes
                // on now is among the oldest few waiting.
                let candidates = || queue.iter().take(LOOK_AHEAD);
                let exact = candidates().position(|a| a.content == content && a.method == method);
                let index = exact.or_else(|| {
                    candidates().position(|a| a.method == method && a.session == session)
                })?;
                queue.remove(index).map(|a| a.flow)
            }),
            _ => None,
        };
        let flow = passed_on.unwrap_or_else(|| self.fresh());
        if let Node::Component(q) = hop.to {
            // What reaches the agent going down stops there.
            let ends = down && q == hop.agent && !hop.proxy_mode;
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
        if hop.kind == super::record::Kind::Request
            && let Some(key) = hop.key
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
