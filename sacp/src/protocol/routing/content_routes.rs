//! Rich content on the routes (see [`crate::protocol::content`]): what each position takes,
//! learned from the `initialize` exchange on its hop, and what reaches it adapted to that.
//!
//! Going **up**, position `p` (the editor at `0`, or a proxy) takes what it declared in the
//! `initialize` it sent down: the editor, its declaration or ACP's default; a proxy (or, in
//! proxy mode, the outer conductor), its declaration or everything. Going **down**, position
//! `p` takes what its `initialize` answer says: the agent, its prompt capabilities and its
//! declaration; a proxy, its declaration or everything. A position whose `initialize` has not
//! passed yet takes everything.

use super::*;
use crate::protocol::content::{self, Accepts};

/// How many [`Transformed`] wait to be taken at most (a driver that never takes them keeps
/// no more).
const KEPT: usize = 1024;

/// One block the chain transformed on its way to a hop, for a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transformed {
    /// The message it was in.
    pub method: String,
    /// Whom it was on its way to, and which way it went.
    pub to: Node,
    pub dir: Dir,
    /// The media type it had (`text/html`, `image/png`).
    pub from: String,
    /// The kind of block it became: `text` or `resource_link`.
    pub into: &'static str,
}

/// What each position takes, both ways, and what was transformed since it was last taken.
#[derive(Debug, Default)]
pub(super) struct Contents {
    /// By position: what it takes from below (going up).
    up: Vec<Option<Accepts>>,
    /// By position: what it takes from above (going down).
    down: Vec<Option<Accepts>>,
    transformed: Vec<Transformed>,
}

fn set(slots: &mut Vec<Option<Accepts>>, position: usize, accepts: Accepts) {
    if slots.len() <= position {
        slots.resize(position + 1, None);
    }
    slots[position] = Some(accepts);
}

impl RoutingTable {
    /// Position `from` sent `initialize` down with `params`: what it takes going up.
    pub(super) fn note_client_content(&mut self, from: usize, params: Option<&RawJson>) {
        let accepts = if from == 0 && !self.proxy_mode {
            Accepts::of_client(params)
        } else {
            params
                .and_then(Accepts::declared)
                .unwrap_or_else(Accepts::everything)
        };
        set(&mut self.contents.up, from, accepts);
    }

    /// The component at `position` answered `initialize` with `result`: what it takes going
    /// down.
    pub(super) fn note_answer_content(&mut self, position: usize, result: &RawJson) {
        let agent = position == self.n() && !self.proxy_mode;
        let accepts = if agent {
            Accepts::of_agent(result)
        } else {
            Accepts::declared(result).unwrap_or_else(Accepts::everything)
        };
        set(&mut self.contents.down, position, accepts);
    }

    /// What position `to` takes going `dir`, once it is known.
    pub fn takes(&self, to: usize, dir: Dir) -> Option<&Accepts> {
        let slots = match dir {
            Dir::Up => &self.contents.up,
            Dir::Down => &self.contents.down,
        };
        slots.get(to)?.as_ref()
    }

    /// A message on its way: its content made what its target takes.
    pub(super) fn adapt_content(&mut self, resolved: &mut Resolved) {
        let (Some(params), Some(takes)) = (
            resolved.params.as_ref(),
            self.takes(resolved.to, resolved.dir),
        ) else {
            return;
        };
        let Some((adapted, done)) = content::adapt(&resolved.method, params, takes) else {
            return;
        };
        resolved.params = Some(adapted);
        let to = self.node(resolved.to);
        for one in done {
            if self.contents.transformed.len() >= KEPT {
                break;
            }
            tracing::debug!(method = %resolved.method, from = %one.from, into = one.into, "transformed content for a hop that does not take it");
            self.contents.transformed.push(Transformed {
                method: resolved.method.clone(),
                to,
                dir: resolved.dir,
                from: one.from,
                into: one.into,
            });
        }
    }

    /// What the chain transformed since this was last called.
    pub fn take_transformed(&mut self) -> Vec<Transformed> {
        std::mem::take(&mut self.contents.transformed)
    }
}
