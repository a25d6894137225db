//! The trace's `flow` keys: which hops are one message's.
//!
//! A message that reaches a proxy waits in that proxy's queue (per direction) until the proxy
//! sends something on in the same direction: the same method with the same params (a hash of
//! them) is that message passed on unchanged; failing that, the oldest one of the same method
//! and session is it, transformed. A response has its request's flow (by the `pair` of the hop
//! it answers). Queues are bounded: a proxy that swallows messages only ages them out.

use std::collections::{HashMap, VecDeque};

use sacp::protocol::routing::{Conn, Dir, Node};

/// How many messages may wait per proxy and direction.
const WAITING: usize = 1024;
/// How far into a proxy's queue a message it passes on is looked for.
const LOOK_AHEAD: usize = 16;
/// How many requests may wait for their response before the oldest are forgotten.
const UNANSWERED: usize = 1 << 16;

/// A fast hash of a payload's text (8 bytes a step, as rustc's `FxHasher`): it tells a
/// message passed on unchanged from others, not an adversary's collisions (a collision only
/// links two hops that did not belong together in the trace).
pub(super) fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mix = |hash: u64, word: u64| (hash.rotate_left(5) ^ word).wrapping_mul(K);
    let mut chunks = bytes.chunks_exact(8);
    let mut hash = bytes.len() as u64;
    for chunk in &mut chunks {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        hash = mix(hash, u64::from_le_bytes(word));
    }
    let mut last = [0; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    mix(hash, u64::from_le_bytes(last))
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
    /// Messages that reached a proxy, by its position and their direction.
    waiting: HashMap<(usize, bool), VecDeque<Arrival>>,
    /// Requests sent on, by their `pair` key.
    requests: HashMap<(Conn, i64), u64>,
}

impl Flows {
    /// The flow of one hop of a message of `kind` (see the module).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn flow(
        &mut self,
        hop: &super::HopOf,
        kind: &str,
        method: &str,
        session: Option<&str>,
        content: u64,
    ) -> u64 {
        let down = hop.dir == Dir::Down;
        if kind == "response" || kind == "error" {
            return match hop.key.and_then(|key| self.requests.remove(&key)) {
                Some(flow) => flow,
                None => self.fresh(),
            };
        }
        let method = hash(method.as_bytes());
        let session = session.map_or(0, |s| hash(s.as_bytes()));
        let passed_on = match hop.from {
            Node::Component(p) => self.waiting.get_mut(&(p, down)).and_then(|queue| {
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
                let queue = self.waiting.entry((q, down)).or_default();
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
        if kind == "request"
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
