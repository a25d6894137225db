//! The core's vocabulary: what it knows of a client, where a client starts, the bounds it
//! keeps, and what it hands back.

use std::collections::VecDeque;
use std::sync::Arc;

use sacp::jsonrpc::{Error, RawJson};

use super::super::ask::Ask;
use super::super::notices::{TURN_ENDED, turn_ended_params, user_messages};
use super::super::position::positioned;
use super::super::record::{Entry, update_method};
use super::super::who::Who;

/// What the core knows of an attached client, through the adapter's handle of it.
pub(in crate::sessions) trait Client: Clone {
    /// Its attachment's number, unique in the layer.
    fn id(&self) -> u64;
    /// Whether it speaks ACP v1: it learns of a turn it did not start ending from the
    /// layer's `_sacp/turn_ended` (v2 agents say so themselves, with a `state_update`).
    fn v1(&self) -> bool;
    /// Whether it asked for each notification's position (see `position.rs`).
    fn positions(&self) -> bool;
    /// Who it is to the other clients, and what it may do.
    fn who(&self) -> &Who;
    /// The content it takes, where it said (see `sacp::protocol::content`): what it is given
    /// of the record in an answer is adapted to it, as what it is sent is.
    fn takes(&self) -> Option<&sacp::protocol::content::Accepts> {
        None
    }
}

/// Where an attachment starts in the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::sessions) enum From {
    /// Its oldest entry held: a replay, then the live stream.
    Oldest,
    /// What comes next: the live stream only.
    Now,
    /// The entry with this sequence number (or the oldest held, if it is older): a client's
    /// cursor (see `position.rs`).
    At(u64),
}

/// The bounds a session's record keeps within, and what all sessions' records hold now.
#[derive(Debug, Clone, Copy)]
pub(in crate::sessions) struct Room {
    /// The bytes one session's record may hold.
    pub(in crate::sessions) record: usize,
    /// The bytes all records may hold together.
    pub(in crate::sessions) records: usize,
    /// The bytes all records hold now.
    pub(in crate::sessions) held: usize,
}

/// One thing a client is sent, in the record's order.
#[derive(Debug)]
pub(in crate::sessions) enum Out<R> {
    /// A notification.
    Notify(Arc<str>, RawJson),
    /// The answer to one of its requests.
    Answer(R, Result<RawJson, Error>),
    /// A request of the agent's.
    Ask(Arc<Ask>),
}

/// An answer a client is owed at a place in the record: once it has got every entry before
/// `at`, before the entry at `at`.
#[derive(Debug)]
pub(super) struct Owed<R> {
    pub(super) at: u64,
    pub(super) responder: R,
    pub(super) result: Result<RawJson, Error>,
    /// A `session/update` it is sent just before the answer: a v2 client's current
    /// `state_update` after a load's or resume's replay.
    pub(super) preface: Option<RawJson>,
}

#[derive(Debug)]
pub(super) struct Attached<C, R> {
    pub(super) client: C,
    /// The next entry it gets.
    pub(super) cursor: u64,
    pub(super) owed: VecDeque<Owed<R>>,
    /// Told already that the record left out the session's beginning.
    pub(super) told_left_out: bool,
    /// Requests of the agent's it gets first (before the record from `cursor` on): those
    /// waiting when it attached by `session/attach`, those whose client left.
    pub(super) resend: Vec<Arc<Ask>>,
}

/// Who is owed a turn's end: the attachment whose prompt began it, on its connection.
#[derive(Debug)]
pub(in crate::sessions) struct Asker<R> {
    pub(super) att: u64,
    /// Its connection's id: the attachment the connection has when the turn ends gets it.
    pub(super) connection: String,
    pub(super) responder: R,
}

/// A client's next batch: what it is sent, the record's place it reaches, whether the session
/// is closed (nothing more comes once the batch is empty).
#[derive(Debug)]
pub(in crate::sessions) struct Taken<R> {
    pub(in crate::sessions) outs: Vec<Out<R>>,
    pub(in crate::sessions) upto: u64,
    pub(in crate::sessions) closed: bool,
}

/// What became of an update from the chain.
#[derive(Debug)]
pub(in crate::sessions) enum Appended<C, G> {
    /// The session is closed: dropped.
    Closed,
    /// No room for it (the record holds what its clients did not take): nothing appended, the
    /// update back.
    Full(Arc<str>, RawJson),
    /// Appended; the deliveries take it.
    Queued,
    /// Appended and passed by its one client, which the caller sends it straight away
    /// (holding `G`, the client's claim on sending): unless it is the client's own words.
    Direct(C, G, Option<(Arc<str>, RawJson)>),
}

/// A queued prompt's turn, as it stands.
#[derive(Debug)]
pub(in crate::sessions) enum Queue<R> {
    /// Its turn began: the turn's number.
    Began(u64),
    /// It waits on: its responder back until it is asked again.
    Wait(R),
    /// It was withdrawn (its client cancelled, the session closed).
    Withdrawn(R),
}

/// A client that left: its handle, the answers it was owed (nobody to give them to), and the
/// clients that now hold requests of the agent's it was to answer (to wake).
#[derive(Debug)]
pub(in crate::sessions) struct Detached<C, R> {
    pub(in crate::sessions) client: C,
    pub(in crate::sessions) owed: Vec<R>,
    pub(in crate::sessions) heirs: Vec<C>,
}

/// Moves the answers owed at or before `seq` into `outs`.
pub(super) fn due<R>(owed: &mut VecDeque<Owed<R>>, seq: u64, outs: &mut Vec<Out<R>>) {
    while owed.front().is_some_and(|o| o.at <= seq) {
        if let Some(o) = owed.pop_front() {
            if let Some(preface) = o.preface {
                outs.push(Out::Notify(update_method(), preface));
            }
            outs.push(Out::Answer(o.responder, o.result));
        }
    }
}

/// What `client` is sent of entry `seq` of session `id`'s record (of life `life`), into
/// `outs`: a notification (but its own words), a prompt as the `user_message_chunk`s an
/// agent's replay shows and a turn's end as `_sacp/turn_ended` (to a v1 client that did not
/// send it: a v2 agent says both itself), a request of the agent's not answered yet (where it
/// goes to this client); each notification with its position for a client that asked.
pub(super) fn render<C: Client, R>(
    entry: &Entry,
    seq: u64,
    client: &C,
    (id, life): (&str, u64),
    outs: &mut Vec<Out<R>>,
) {
    let att = client.id();
    let place = |params: RawJson| {
        if client.positions() {
            positioned(&params, life, seq)
        } else {
            params
        }
    };
    match entry {
        Entry::Notification {
            method,
            params,
            echo,
        } => {
            if *echo != Some(att) {
                outs.push(Out::Notify(method.clone(), place(params.clone())));
            }
        }
        Entry::Prompt { params, echo } => {
            if *echo != Some(att) && client.v1() {
                for update in user_messages(id, params) {
                    outs.push(Out::Notify(update_method(), place(update)));
                }
            }
        }
        Entry::TurnEnded { result, asker } => {
            if *asker != Some(att) && client.v1() {
                let params = place(turn_ended_params(id, result));
                outs.push(Out::Notify(Arc::from(TURN_ENDED), params));
            }
        }
        Entry::Ask(ask) => {
            if !ask.is_answered() && ask.is_for(client.who(), att) {
                outs.push(Out::Ask(ask.clone()));
            }
        }
    }
}
