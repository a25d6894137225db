//! The trace's `flow` keys: which hops are one message's.
//!
//! A message that reaches a proxy waits in that proxy's queue (per direction) until the proxy
//! sends something on in the same direction: the same method with the same params (a hash of
//! them) is that message passed on unchanged; failing that, the oldest one of the same method
//! and session is it, transformed. A response has its request's flow (by the `pair` of the hop
//! it answers). Queues are bounded: a proxy that swallows messages only ages them out.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};

use sacp::protocol::routing::{Conn, Dir, Hop, Node, RoutingTable};

/// How many messages may wait per proxy and direction.
const WAITING: usize = 1024;
/// How many requests may wait for their response before the oldest are forgotten.
const UNANSWERED: usize = 1 << 16;

/// A hash of a payload's text.
pub(super) fn hash(bytes: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

#[derive(Debug)]
struct Arrival {
    method: Box<str>,
    session: Option<Box<str>>,
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
    pub(super) fn flow(
        &mut self,
        router: &RoutingTable,
        hop: &Hop,
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
        let passed_on = match hop.from {
            Node::Component(p) => self.waiting.get_mut(&(p, down)).and_then(|queue| {
                let exact = queue
                    .iter()
                    .position(|a| a.content == content && &*a.method == method);
                let index = exact.or_else(|| {
                    queue
                        .iter()
                        .position(|a| &*a.method == method && a.session.as_deref() == session)
                })?;
                queue.remove(index).map(|a| a.flow)
            }),
            _ => None,
        };
        let flow = passed_on.unwrap_or_else(|| self.fresh());
        if let Node::Component(q) = hop.to {
            // What reaches the agent going down stops there.
            let ends = down && q == router.agent_conn() && !router.proxy_mode();
            if !ends {
                let queue = self.waiting.entry((q, down)).or_default();
                if queue.len() == WAITING {
                    queue.pop_front();
                }
                queue.push_back(Arrival {
                    method: method.into(),
                    session: session.map(Into::into),
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
