//! One session of the layer: its [`Record`], the clients attached to it, the answers they are
//! owed, and the requests it holds for an editor.
//!
//! Everything a client gets of a session goes through one task per attachment, in the
//! record's order: notifications, the answers to its own requests about the session (each
//! placed in the record where it belongs: a prompt's answer where its turn ends, a loaded
//! session's after its replay), and the agent's requests. So an answer never overtakes what
//! the session streamed before it, and a client that attaches late gets the record from its
//! oldest entry held, then the live stream, with nothing twice and nothing missing.
//!
//! Memory is bounded in bytes per session ([`Limits::record`]) and per layer
//! ([`Limits::records`]): delivered entries are forgotten, oldest turns first, to stay within
//! them; undelivered ones are kept, and so is the turn going on while no client is attached,
//! and [`Session::append`] waits for room instead — which is how a session streaming to
//! nobody slows its agent (the chain's connection stops being read) and never loses an
//! update of the turn a returning client takes up.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sacp::jsonrpc::{Connection, Error, RawJson, Responder};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use super::Limits;
use super::ask::Ask;
use super::attach::Who;
use super::chain::update_method;
use super::position::positioned;
use super::record::{Entry, LeftOut, Record};
use super::turns::{Admit, Head, Turns};
use crate::journal::Journal;
use crate::lock::lock;

/// The method of the layer's notification that a turn ended (see the module docs of
/// `sessions`).
pub(crate) const TURN_ENDED: &str = "_sacp/turn_ended";
/// The method of the layer's notice that a replay leaves the session's oldest entries out.
pub(crate) const HISTORY_LEFT_OUT: &str = "_sacp/history_left_out";

/// The method of the layer's notice that a client was detached from a session because it
/// took nothing while the session's record was full.
pub(crate) const DETACHED: &str = "_sacp/detached";

/// The method of the layer's notice that another conductor sharing the journal took the
/// session over: `{"sessionId", "heldBy"}`, the conductor a client loads it from now.
pub(crate) const SESSION_MOVED: &str = "_sacp/session_moved";

/// At most this many entries are taken for a client at once.
const BATCH: usize = 512;

mod join;
mod journal;

pub(crate) use self::journal::history_of;

/// What every session of a layer shares: the limits, and the bytes all records hold.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(super) limits: Limits,
    /// Where every session's entries are written as they come, if anywhere.
    pub(super) journal: Option<Journal>,
    total: AtomicUsize,
    /// Woken whenever a record frees bytes or a client takes entries.
    room: Notify,
}

impl Shared {
    pub(super) fn new(limits: Limits, journal: Option<Journal>) -> Shared {
        Shared {
            limits,
            journal,
            total: AtomicUsize::new(0),
            room: Notify::new(),
        }
    }

    /// The bytes all records hold.
    pub(crate) fn held(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }
}

/// A client's hold on a session: its connection, and how it is told a turn ended.
#[derive(Debug)]
pub(crate) struct Attachment {
    pub(super) id: u64,
    pub(super) conn: Connection,
    /// Whether the client speaks ACP v1: it learns of a turn it did not start ending from the
    /// layer's `_sacp/turn_ended` (v2 agents say so themselves, with a `state_update`).
    pub(super) v1: bool,
    /// Whether its client asked for each notification's position (see `position.rs`).
    pub(super) positions: bool,
    /// Who it is to the other clients, and what it may do.
    pub(super) who: Who,
    poke: Notify,
    stop: CancellationToken,
    /// Held while entries are being sent to it: by its delivery task, or by an append that
    /// sends one straight away.
    sending: Arc<tokio::sync::Mutex<()>>,
}

impl Attachment {
    /// Whether it was detached (by its client, or for taking nothing).
    pub(super) fn is_stopped(&self) -> bool {
        self.stop.is_cancelled()
    }

    pub(super) fn new(
        id: u64,
        conn: Connection,
        v1: bool,
        positions: bool,
        who: Who,
    ) -> Arc<Attachment> {
        Arc::new(Attachment {
            id,
            conn,
            v1,
            positions,
            who,
            poke: Notify::new(),
            stop: CancellationToken::new(),
            sending: Arc::default(),
        })
    }
}

/// Where an attachment starts in the record.
#[derive(Debug, Clone, Copy)]
pub(super) enum From {
    /// Its oldest entry held: a replay, then the live stream.
    Oldest,
    /// What comes next: the live stream only.
    Now,
    /// The entry with this sequence number (or the oldest held, if it is older): a client's
    /// cursor (see `position.rs`).
    At(u64),
}

/// An answer a client is owed at a place in the record: once it has got every entry before
/// `at`, before the entry at `at`.
#[derive(Debug)]
struct Owed {
    at: u64,
    responder: Responder,
    result: Result<RawJson, Error>,
    /// A `session/update` it is sent just before the answer: a v2 client's current
    /// `state_update` after a load's or resume's replay.
    preface: Option<RawJson>,
}

#[derive(Debug)]
struct Attached {
    att: Arc<Attachment>,
    /// The next entry it gets.
    cursor: u64,
    owed: VecDeque<Owed>,
    /// Told already that the record left out the session's beginning.
    told_left_out: bool,
    /// Requests of the agent's it gets first (before the record from `cursor` on): those
    /// waiting when it attached by `session/attach`, those whose client left.
    resend: Vec<Arc<Ask>>,
}

#[derive(Debug, Default)]
struct State {
    record: Record,
    /// Entries before this reached a client once.
    delivered: u64,
    attached: Vec<Attached>,
    closed: bool,
}

/// Who is owed a turn's end: the attachment whose prompt began it, on its connection.
#[derive(Debug)]
pub(super) struct Asker {
    att: u64,
    /// Its connection's id: the attachment the connection has when the turn ends gets it.
    connection: String,
    responder: Responder,
}

/// What the delivery task does for one entry, outside the lock.
enum Action {
    Notify(Arc<str>, RawJson),
    Answer(Responder, Result<RawJson, Error>),
    Ask(Arc<Ask>),
}

/// One session: see the module docs.
#[derive(Debug)]
pub(crate) struct Session {
    /// The id the editor knows it by.
    pub(crate) id: String,
    /// The id its chain knows it by.
    pub(crate) own: String,
    shared: Arc<Shared>,
    state: Mutex<State>,
    /// The record's end, sent on every append.
    appended: watch::Sender<u64>,
    /// How many controllers are attached (an observer keeps no session alive and answers
    /// nothing).
    attached: watch::Sender<usize>,
    /// The result that began it (`session/new`, `load`, `resume`, `fork`), for a client that
    /// takes it up with `session/load`.
    setup: Mutex<Option<RawJson>>,
    /// The turn that runs and the prompts waiting behind it (see `turns.rs`).
    turns: Mutex<Turns<Asker>>,
    /// Bumped when a turn ends, a queued prompt is withdrawn or the session closes: what a
    /// queued prompt waits on.
    turn_changed: watch::Sender<u64>,
    /// The number its next entry gets in the journal.
    journaled: std::sync::atomic::AtomicU64,
    /// The epoch under which this conductor holds it in the journal: 1 for a session born
    /// here, a claim's for one taken from the journal.
    epoch: std::sync::atomic::AtomicU64,
    /// Its id as the journal's records carry it (shared, not copied for each).
    key: Arc<str>,
    /// This life of its record, in the positions its clients are told (see `position.rs`).
    pub(super) life: u64,
    /// Where it began (`{cwd, mcpServers}`), kept while a journal writes it down: what its
    /// subagents' sessions began in too.
    place: Mutex<Option<serde_json::Value>>,
    /// A subagent's session restored from the journal, which its agent holds as a session of
    /// its own: closed at the agent when its parent is (the agent would not know to).
    pub(super) close_with_parent: std::sync::atomic::AtomicBool,
}

impl Session {
    pub(super) fn new(id: String, own: String, shared: Arc<Shared>) -> Arc<Session> {
        Arc::new(Session {
            life: new_life(),
            key: Arc::from(id.as_str()),
            id,
            own,
            shared,
            state: Mutex::default(),
            appended: watch::channel(0).0,
            attached: watch::channel(0).0,
            setup: Mutex::default(),
            turns: Mutex::default(),
            turn_changed: watch::channel(0).0,
            journaled: std::sync::atomic::AtomicU64::new(0),
            epoch: std::sync::atomic::AtomicU64::new(1),
            place: Mutex::default(),
            close_with_parent: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// A prompt of attachment `att`: its turn begins now, waits for the running one, or is
    /// refused (see `turns.rs`).
    pub(super) fn admit(&self, att: &Attachment, responder: Responder) -> Admit<Responder> {
        let attached: Vec<u64> = lock(&self.state)
            .attached
            .iter()
            .map(|a| a.att.id)
            .collect();
        let asker = Asker {
            att: att.id,
            connection: att.who.connection.clone(),
            responder,
        };
        match lock(&self.turns).admit(att.id, asker, |a| attached.contains(&a)) {
            Admit::Now(turn) => Admit::Now(turn),
            Admit::Busy(asker) => Admit::Busy(asker.responder),
            Admit::Queued(ticket, asker) => Admit::Queued(ticket, asker.responder),
        }
    }

    /// Waits for the turn of the prompt queued with `ticket`: its number once it began, or
    /// the responder back if the prompt was withdrawn (its client cancelled, the session
    /// closed).
    pub(super) async fn queued_turn(
        &self,
        ticket: u64,
        att: &Attachment,
        responder: Responder,
    ) -> Result<u64, Responder> {
        let mut changed = self.turn_changed.subscribe();
        loop {
            changed.borrow_and_update();
            let closed = self.is_closed();
            {
                let mut turns = lock(&self.turns);
                match turns.head(ticket, closed) {
                    Head::Go => {
                        let asker = Asker {
                            att: att.id,
                            connection: att.who.connection.clone(),
                            responder,
                        };
                        return Ok(turns.begin(att.id, asker));
                    }
                    Head::Withdrawn => {
                        drop(turns);
                        self.turn_changed.send_modify(|n| *n += 1);
                        return Err(responder);
                    }
                    Head::Wait => {}
                }
            }
            if changed.changed().await.is_err() {
                return Err(responder);
            }
        }
    }

    /// Withdraws the prompts attachment `att` queued (its `session/cancel`).
    pub(super) fn withdraw(&self, att: u64) {
        if lock(&self.turns).withdraw(att) {
            self.turn_changed.send_modify(|n| *n += 1);
        }
    }

    /// The asker of turn `turn`, if the turn has not ended yet.
    pub(super) fn take_turn(&self, turn: u64) -> Option<Asker> {
        let asker = lock(&self.turns).take(turn);
        self.turn_changed.send_modify(|n| *n += 1);
        asker
    }

    /// The askers of every turn in flight, which end now.
    pub(super) fn take_turns(&self) -> Vec<Asker> {
        let askers = lock(&self.turns).take_all();
        self.turn_changed.send_modify(|n| *n += 1);
        askers
    }

    /// Whether a turn runs, whoever began it (its client may have left: the turn is the
    /// session's).
    pub(super) fn turns_in_flight(&self) -> bool {
        lock(&self.turns).running()
    }

    pub(super) fn set_setup(&self, result: &RawJson) {
        let mut setup = lock(&self.setup);
        if setup.is_none() {
            *setup = Some(result.clone());
        }
    }

    pub(super) fn setup(&self) -> Option<RawJson> {
        lock(&self.setup).clone()
    }

    /// How many controllers are attached.
    pub(crate) fn attached(&self) -> usize {
        *self.attached.borrow()
    }

    /// Attaches a client from `from` on, and starts its delivery. `first` is an answer it is
    /// owed (`session/new`'s, a load's): before everything it gets (`From::Oldest`), or after
    /// the record as it is now (`From::Now`: after a load's replay). Whether it could attach
    /// (not to a closed session).
    pub(super) fn attach(
        self: &Arc<Self>,
        att: Arc<Attachment>,
        from: From,
        first: Option<(Responder, Result<RawJson, Error>, From)>,
    ) -> bool {
        // ACP v2: a load or resume is answered after the session's current state.
        let v2_setup = !att.v1 && matches!(&first, Some((_, Ok(_), From::Now)));
        let running = v2_setup && self.turns_in_flight();
        {
            let mut state = lock(&self.state);
            let preface = v2_setup.then(|| current_state(&state.record, &self.id, running));
            if state.closed {
                if let Some((responder, _, _)) = first {
                    responder.answer_error(self.gone());
                }
                return false;
            }
            let cursor = match from {
                From::Oldest => state.record.first(),
                From::Now => state.record.end(),
                From::At(seq) => seq.clamp(state.record.first(), state.record.end()),
            };
            let mut owed = VecDeque::new();
            if let Some((responder, result, at)) = first {
                let at = match at {
                    From::Oldest | From::At(_) => cursor,
                    From::Now => state.record.end(),
                };
                owed.push_back(Owed {
                    at,
                    responder,
                    result,
                    preface,
                });
            }
            state.attached.push(Attached {
                att: att.clone(),
                cursor,
                owed,
                told_left_out: false,
                resend: Vec::new(),
            });
            self.attached.send_replace(controllers(&state.attached));
        }
        tokio::spawn(self.clone().deliver(att));
        true
    }

    /// Detaches a client: it gets nothing more of the session, the answers it was owed go,
    /// the requests of the agent's only it was to answer go to another controller. Whether no
    /// controller is attached any more.
    pub(super) fn detach(&self, att: u64) -> bool {
        let mut state = lock(&self.state);
        if let Some(i) = state.attached.iter().position(|a| a.att.id == att) {
            let gone = state.attached.remove(i);
            gone.att.stop.cancel();
            self.hand_on(&mut state, att);
        }
        let left = controllers(&state.attached);
        self.attached.send_replace(left);
        left == 0
    }

    /// The requests of the agent's that only client `gone` was to answer, and did not, go to
    /// the controller attached longest (or to whichever takes them next).
    fn hand_on(&self, state: &mut State, gone: u64) {
        let next = state.attached.iter().position(|a| !a.att.who.is_observer());
        let State {
            record, attached, ..
        } = state;
        for (_, entry) in record.since(0) {
            if let Entry::Ask(ask) = entry
                && !ask.is_answered()
                && ask.target() == Some(gone)
            {
                match next {
                    Some(i) => {
                        let heir = &mut attached[i];
                        ask.set_target(Some(heir.att.id));
                        heir.resend.push(ask.clone());
                        heir.att.poke.notify_one();
                    }
                    None => ask.set_target(None),
                }
            }
        }
    }

    /// Owes client `att` an answer at the record's end as it is now (after everything the
    /// session streamed before it), for a request about the session.
    pub(super) fn answer(&self, att: u64, responder: Responder, result: Result<RawJson, Error>) {
        let mut state = lock(&self.state);
        let at = state.record.end();
        match state.attached.iter_mut().find(|a| a.att.id == att) {
            Some(attached) => {
                attached.owed.push_back(Owed {
                    at,
                    responder,
                    result,
                    preface: None,
                });
                attached.att.poke.notify_one();
            }
            // It left: nobody to answer.
            None => drop(responder),
        }
    }

    /// Appends a notification about the session, waiting while the record has no room for it
    /// (see the module docs). Dropped if the session is closed.
    pub(super) async fn append(&self, method: Arc<str>, params: RawJson, echo: Option<u64>) {
        let size = 64 + params.len();
        let mut entry = Some(Entry::Notification {
            method: method.clone(),
            params: params.clone(),
            echo,
        });
        // Waiting for room is armed only once there was none (arming costs on every update).
        let mut room = None;
        loop {
            if let Some(room) = room.as_mut() {
                let room: &mut std::pin::Pin<Box<tokio::sync::futures::Notified<'_>>> = room;
                room.as_mut().enable();
            }
            let appended = {
                let mut state = lock(&self.state);
                if state.closed {
                    return;
                }
                if self.fits(&mut state, size) {
                    let entry = entry.take().expect("appended once");
                    match self.direct(&mut state, None) {
                        Some((att, sending)) => {
                            let (seq, _) = self.push_quietly(&mut state, entry);
                            state.delivered = state.record.end();
                            Some(Some((att, sending, seq)))
                        }
                        None => {
                            self.push(&mut state, entry);
                            Some(None)
                        }
                    }
                } else {
                    None
                }
            };
            match appended {
                // The one client takes it now, from here: no task is woken for it.
                Some(Some((att, sending, seq))) => {
                    if echo != Some(att.id) {
                        let params = if att.positions {
                            positioned(&params, self.life, seq)
                        } else {
                            params
                        };
                        let _ = perform(&att, Action::Notify(method, params)).await;
                    }
                    drop(sending);
                    return;
                }
                Some(None) => return,
                None => match room.take() {
                    Some(armed) => {
                        // No room freed for a while: a client that takes nothing holds it.
                        let stall = self.shared.limits.stall;
                        if tokio::time::timeout(stall, armed).await.is_err() {
                            self.shed_stalled();
                        }
                    }
                    None => room = Some(Box::pin(self.shared.room.notified())),
                },
            }
        }
    }

    /// The record is full and nothing was freed for [`Limits::stall`]: the clients furthest
    /// behind, when another is further on, stopped taking what they are sent. They are
    /// detached (told so with `_sacp/detached`), so that they hold back neither the other
    /// clients nor the agent. When every client is as far behind, nobody is: the agent waits
    /// for them, as for one slow client.
    fn shed_stalled(&self) {
        let shed: Vec<Arc<Attachment>> = {
            let mut state = lock(&self.state);
            let (Some(min), Some(max)) = (
                state.attached.iter().map(|a| a.cursor).min(),
                state.attached.iter().map(|a| a.cursor).max(),
            ) else {
                return;
            };
            if min == max {
                return;
            }
            let mut shed = Vec::new();
            while let Some(i) = state.attached.iter().position(|a| a.cursor == min) {
                let gone = state.attached.remove(i);
                gone.att.stop.cancel();
                self.hand_on(&mut state, gone.att.id);
                shed.push(gone.att);
            }
            self.attached.send_replace(controllers(&state.attached));
            self.forget_what_can_go(&mut state, 0);
            shed
        };
        self.shared.room.notify_waiters();
        for att in shed {
            tracing::warn!(session = %self.id, client = %att.who.id, "a client took nothing of a full record for {}: detached", humantime::format_duration(self.shared.limits.stall));
            let notice = serde_json::json!({
                "sessionId": self.id,
                "reason": "the client took nothing of the session's stream while its record was full",
            });
            if let Ok(params) = RawJson::to_raw(&notice) {
                tokio::spawn(async move {
                    let _ = att.conn.notify_raw(DETACHED, Some(params)).await;
                });
            }
        }
    }

    /// Whether the next entry can go straight to its one client (`to`, when given): it is
    /// the only one attached, has got everything, is owed nothing, and its delivery is not
    /// sending. Its place moves past the entry (which the caller appends and sends, holding
    /// the guard).
    fn direct(
        &self,
        state: &mut State,
        to: Option<u64>,
    ) -> Option<(Arc<Attachment>, tokio::sync::OwnedMutexGuard<()>)> {
        let end = state.record.end();
        let [only] = &mut state.attached[..] else {
            return None;
        };
        if only.cursor != end
            || !only.owed.is_empty()
            || !only.told_left_out
            || to.is_some_and(|to| to != only.att.id)
        {
            return None;
        }
        let sending = only.att.sending.clone().try_lock_owned().ok()?;
        only.cursor = end + 1;
        Some((only.att.clone(), sending))
    }

    /// A turn ended with `result`: the asker gets it as the prompt's answer — in the record's
    /// order, through its attachment, or through its connection's attachment now (it detached
    /// and attached again), or, its connection attached to the session no more, at once —
    /// and every other v1 client a `_sacp/turn_ended`, in the record's order.
    pub(super) fn turn_ended(&self, asker: Option<Asker>, result: Result<RawJson, Error>) {
        let mut state = lock(&self.state);
        if state.closed {
            // Nothing more is streamed: the asker's answer has nothing to wait for.
            if let Some(asker) = asker {
                asker.responder.answer_raw(result);
            }
            return;
        }
        let asker = match asker {
            Some(asker) => {
                let now = state
                    .attached
                    .iter()
                    .find(|a| a.att.id == asker.att)
                    .or_else(|| {
                        state
                            .attached
                            .iter()
                            .find(|a| a.att.who.connection == asker.connection)
                    })
                    .map(|a| a.att.id);
                match now {
                    Some(id) => Some((id, asker.responder)),
                    None => {
                        // Not attached (it detached): answered on its connection now; the
                        // other clients are told the turn ended.
                        let entry = Entry::TurnEnded {
                            result: result.clone(),
                            asker: None,
                        };
                        self.push(&mut state, entry);
                        drop(state);
                        asker.responder.answer_raw(result);
                        return;
                    }
                }
            }
            None => None,
        };
        let asker_id = asker.as_ref().map(|(id, _)| *id);
        let entry = Entry::TurnEnded {
            result: result.clone(),
            asker: asker_id,
        };
        // The asker alone, with everything: it is answered now, from here.
        if let Some((id, responder)) = asker {
            if let Some((_, sending)) = self.direct(&mut state, Some(id)) {
                self.push_quietly(&mut state, entry);
                state.delivered = state.record.end();
                drop(state);
                responder.answer_raw(result);
                drop(sending);
                return;
            }
            let seq = self.push(&mut state, entry);
            if let Some(attached) = state.attached.iter_mut().find(|a| a.att.id == id) {
                attached.owed.push_back(Owed {
                    at: seq,
                    responder,
                    result,
                    preface: None,
                });
            }
            return;
        }
        self.push(&mut state, entry);
    }

    /// Records client `echo`'s prompt (`params`, with the editor's ids) for the other clients
    /// and a later replay, waiting while the record has no room.
    pub(super) async fn prompted(&self, params: RawJson, echo: u64) {
        let size = 64 + params.len();
        loop {
            let room = self.shared.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            {
                let mut state = lock(&self.state);
                if state.closed {
                    return;
                }
                if self.fits(&mut state, size) {
                    let entry = Entry::Prompt {
                        params,
                        echo: Some(echo),
                    };
                    // Nothing in it for the one client that prompted: when it has everything
                    // else, it moves past it, and no delivery is woken.
                    let end = state.record.end();
                    match &mut state.attached[..] {
                        [only] if only.att.id == echo && only.cursor == end => {
                            only.cursor = end + 1;
                            self.push_quietly(&mut state, entry);
                        }
                        _ => {
                            self.push(&mut state, entry);
                        }
                    }
                    return;
                }
            }
            room.await;
        }
    }

    /// Makes room for `size` more bytes as far as it can: whether they fit now.
    fn fits(&self, state: &mut State, size: usize) -> bool {
        self.forget_what_can_go(state, size);
        let limits = &self.shared.limits;
        let held = state.record.bytes();
        held == 0 || (held + size <= limits.record && self.shared.held() + size <= limits.records)
    }

    /// Holds a request of the agent's until a client answers it, or the deadline passes with
    /// no client attached.
    pub(super) fn ask(self: &Arc<Self>, ask: Arc<Ask>) {
        {
            let mut state = lock(&self.state);
            if state.closed {
                ask.refuse(&format!("the session {} is closed", self.id));
                return;
            }
            if ask.for_one() {
                let turn_asker = lock(&self.turns).first_asker();
                let controller = |id: u64| {
                    state
                        .attached
                        .iter()
                        .any(|a| a.att.id == id && !a.att.who.is_observer())
                };
                let target = turn_asker.filter(|id| controller(*id)).or_else(|| {
                    state
                        .attached
                        .iter()
                        .find(|a| !a.att.who.is_observer())
                        .map(|a| a.att.id)
                });
                ask.set_target(target);
            }
            self.push(&mut state, Entry::Ask(ask.clone()));
        }
        tokio::spawn(self.clone().watch_ask(ask));
    }

    /// Tells every client, after what was queued for it, that the conductor `by` holds the
    /// session now.
    pub(super) fn moved(&self, by: &str) {
        let notice = serde_json::json!({"sessionId": self.id, "heldBy": by});
        if let Ok(params) = RawJson::to_raw(&notice) {
            let mut state = lock(&self.state);
            if !state.closed {
                let entry = Entry::Notification {
                    method: Arc::from(SESSION_MOVED),
                    params,
                    echo: None,
                };
                self.push(&mut state, entry);
            }
        }
    }

    /// Closes the session: what was queued for its clients still goes out, nothing more
    /// comes, the requests it held are refused.
    pub(super) fn close(&self) {
        let asks: Vec<Arc<Ask>> = {
            let mut state = lock(&self.state);
            state.closed = true;
            state
                .record
                .since(0)
                .filter_map(|(_, entry)| match entry {
                    Entry::Ask(ask) => Some(ask.clone()),
                    _ => None,
                })
                .collect()
        };
        for ask in asks {
            ask.refuse(&format!("the session {} was closed", self.id));
        }
        self.shared.room.notify_waiters();
        self.appended.send_modify(|_| {});
        self.turn_changed.send_modify(|n| *n += 1);
    }

    /// The sequence number the record's next entry gets.
    pub(super) fn end(&self) -> u64 {
        lock(&self.state).record.end()
    }

    pub(super) fn is_closed(&self) -> bool {
        lock(&self.state).closed
    }

    /// Completes `true` once the session has had no client and nothing new for `timeout`;
    /// `false` if it is closed first.
    pub(super) async fn idle_for(&self, timeout: Duration) -> bool {
        let mut attached = self.attached.subscribe();
        let mut appended = self.appended.subscribe();
        loop {
            if self.is_closed() {
                return false;
            }
            if *attached.borrow_and_update() > 0 {
                if attached.changed().await.is_err() {
                    return false;
                }
                continue;
            }
            appended.borrow_and_update();
            tokio::select! {
                () = tokio::time::sleep(timeout) => return !self.is_closed() && self.attached() == 0,
                _ = attached.changed() => {}
                _ = appended.changed() => {}
            }
        }
    }

    fn gone(&self) -> Error {
        Error::invalid_params(format!("the session {} is closed", self.id))
    }

    /// Appends without waiting (for the small entries that mark a turn's end or hold a
    /// request), and wakes the deliveries; its sequence number.
    fn push(&self, state: &mut State, entry: Entry) -> u64 {
        let (seq, _) = self.push_quietly(state, entry);
        self.appended.send_replace(seq + 1);
        seq
    }

    /// Appends without waking anyone: its sequence number and size.
    fn push_quietly(&self, state: &mut State, entry: Entry) -> (u64, usize) {
        self.journal(&entry);
        let (seq, size) = state.record.push(entry);
        self.shared.total.fetch_add(size, Ordering::Relaxed);
        (seq, size)
    }

    /// Forgets what every attached client has, once some client got it, as far as the
    /// limits ask to make room for `room` more bytes (all of it while the layer is over its
    /// own limit). While no client is attached, only whole turns go: the turn going on stays
    /// whole for the client that takes the session back (its producer waits instead).
    fn forget_what_can_go(&self, state: &mut State, room: usize) {
        let below = state
            .attached
            .iter()
            .map(|a| a.cursor)
            .fold(state.delivered, u64::min);
        let limits = &self.shared.limits;
        let limit = if self.shared.held() + room > limits.records {
            0
        } else {
            limits.record.saturating_sub(room)
        };
        let freed = state.record.forget(below, limit, state.attached.is_empty());
        if freed > 0 {
            self.shared.total.fetch_sub(freed, Ordering::Relaxed);
            self.shared.room.notify_waiters();
        }
    }

    /// Sends client `att` the session, in the record's order, until it is detached or the
    /// session closed and everything owed went out.
    async fn deliver(self: Arc<Self>, att: Arc<Attachment>) {
        let mut appended = self.appended.subscribe();
        loop {
            let poked = att.poke.notified();
            tokio::pin!(poked);
            poked.as_mut().enable();
            appended.borrow_and_update();
            // Taken and sent holding the guard: an entry sent straight from `append` never
            // passes what this batch holds, nor this batch it.
            let sending = att.sending.clone().lock_owned().await;
            let Some((actions, upto, closed)) = self.take(&att) else {
                return;
            };
            if actions.is_empty() {
                drop(sending);
                if closed {
                    return;
                }
                tokio::select! {
                    _ = appended.changed() => {}
                    () = &mut poked => {}
                    () = att.stop.cancelled() => return,
                }
                continue;
            }
            for action in actions {
                if !perform(&att, action).await {
                    return;
                }
            }
            drop(sending);
            self.delivered(&att, upto);
        }
    }

    /// What client `att` gets next (at most [`BATCH`] entries and the answers due among
    /// them), moving its place on; `None` once it is detached.
    fn take(&self, att: &Attachment) -> Option<(Vec<Action>, u64, bool)> {
        let mut state = lock(&self.state);
        let closed = state.closed;
        let State {
            record, attached, ..
        } = &mut *state;
        let me = attached.iter_mut().find(|a| a.att.id == att.id)?;
        let mut actions = Vec::new();
        if !me.told_left_out {
            me.told_left_out = true;
            let left_out = record.left_out();
            if me.cursor <= record.first() && left_out.entries > 0 {
                actions.push(Action::Notify(
                    Arc::from(HISTORY_LEFT_OUT),
                    left_out_params(&self.id, left_out),
                ));
            }
        }
        if !me.resend.is_empty() {
            due(&mut me.owed, me.cursor, &mut actions);
            for ask in me.resend.drain(..) {
                if !ask.is_answered() {
                    actions.push(Action::Ask(ask));
                }
            }
        }
        let mut upto = me.cursor.max(record.first());
        for (seq, entry) in record.since(me.cursor).take(BATCH) {
            due(&mut me.owed, seq, &mut actions);
            match entry {
                Entry::Notification {
                    method,
                    params,
                    echo,
                } => {
                    if *echo != Some(att.id) {
                        let params = if att.positions {
                            positioned(params, self.life, seq)
                        } else {
                            params.clone()
                        };
                        actions.push(Action::Notify(method.clone(), params));
                    }
                }
                // A v2 agent shows the prompt itself (its `user_message` update).
                Entry::Prompt { params, echo } => {
                    if *echo != Some(att.id) && att.v1 {
                        for update in user_messages(&self.id, params) {
                            let update = if att.positions {
                                positioned(&update, self.life, seq)
                            } else {
                                update
                            };
                            actions.push(Action::Notify(update_method(), update));
                        }
                    }
                }
                Entry::TurnEnded { result, asker } => {
                    if *asker != Some(att.id) && att.v1 {
                        let mut params = turn_ended_params(&self.id, result);
                        if att.positions {
                            params = positioned(&params, self.life, seq);
                        }
                        actions.push(Action::Notify(Arc::from(TURN_ENDED), params));
                    }
                }
                Entry::Ask(ask) => {
                    if !ask.is_answered() && ask.is_for(&att.who, att.id) {
                        actions.push(Action::Ask(ask.clone()));
                    }
                }
            }
            upto = seq + 1;
        }
        if upto == record.end() {
            due(&mut me.owed, upto, &mut actions);
        }
        me.cursor = upto;
        Some((actions, upto, closed))
    }

    /// Client `att` got every entry before `upto`.
    fn delivered(&self, att: &Attachment, upto: u64) {
        let mut state = lock(&self.state);
        if state.attached.iter().any(|a| a.att.id == att.id) {
            state.delivered = state.delivered.max(upto);
        }
        self.forget_what_can_go(&mut state, 0);
        drop(state);
        self.shared.room.notify_waiters();
    }

    /// Refuses `ask` once it has waited the deadline with no client attached.
    async fn watch_ask(self: Arc<Self>, ask: Arc<Ask>) {
        let deadline = self.shared.limits.ask_timeout;
        let mut attached = self.attached.subscribe();
        loop {
            if ask.is_answered() || self.is_closed() {
                return;
            }
            if *attached.borrow_and_update() > 0 {
                tokio::select! {
                    _ = attached.changed() => {}
                    () = ask.answered() => return,
                }
                continue;
            }
            tokio::select! {
                () = tokio::time::sleep(deadline) => {
                    let why = format!(
                        "no editor was attached to session {} for {} to answer its {}",
                        self.id,
                        humantime::format_duration(deadline),
                        ask.method
                    );
                    if ask.refuse(&why) {
                        tracing::info!(session = %self.id, method = %ask.method, "{why}: refused");
                    }
                    return;
                }
                _ = attached.changed() => {}
                () = ask.answered() => return,
            }
        }
    }
}

/// What its record still holds leaves the layer's count with it.
impl Drop for Session {
    fn drop(&mut self) {
        let held = lock(&self.state).record.bytes();
        self.shared.total.fetch_sub(held, Ordering::Relaxed);
        self.shared.room.notify_waiters();
    }
}

/// How many of `attached` are controllers.
fn controllers(attached: &[Attached]) -> usize {
    attached.iter().filter(|a| !a.att.who.is_observer()).count()
}

/// Moves the answers owed at or before `seq` into `actions`.
fn due(owed: &mut VecDeque<Owed>, seq: u64, actions: &mut Vec<Action>) {
    while owed.front().is_some_and(|o| o.at <= seq) {
        if let Some(o) = owed.pop_front() {
            if let Some(preface) = o.preface {
                actions.push(Action::Notify(update_method(), preface));
            }
            actions.push(Action::Answer(o.responder, o.result));
        }
    }
}

/// Does one action for client `att`; `false` once its connection is gone.
async fn perform(att: &Attachment, action: Action) -> bool {
    match action {
        Action::Notify(method, params) => att.conn.notify_raw(&*method, Some(params)).await.is_ok(),
        Action::Answer(responder, result) => {
            responder.answer_raw(result);
            true
        }
        Action::Ask(ask) => {
            let observer = att.who.is_observer().then(|| att.who.id.clone());
            let who = att.who.clone();
            let pending = att
                .conn
                .request_raw(ask.method.clone(), Some(ask.params.clone()));
            tokio::spawn(async move {
                tokio::select! {
                    result = pending => match result {
                        // The client went away: the request waits for the next one.
                        Err(e) if e.is_peer_closed() => {}
                        // An observer sees it; its answer changes nothing.
                        _ if observer.is_some() => {
                            tracing::info!(client = ?observer, method = %ask.method, "an observer's answer is not passed on");
                        }
                        result => {
                            ask.answer_by(result, &who);
                        }
                    },
                    // Another client answered first: this one's request is cancelled.
                    () = ask.answered() => {}
                }
            });
            true
        }
    }
}

/// A prompt's content blocks as the `user_message_chunk` updates an agent's own replay gives.
fn user_messages(session: &str, params: &RawJson) -> Vec<RawJson> {
    #[derive(serde::Deserialize)]
    struct Prompt {
        prompt: Vec<Box<serde_json::value::RawValue>>,
    }
    let Ok(prompt) = params.parse::<Prompt>() else {
        return Vec::new();
    };
    prompt
        .prompt
        .into_iter()
        .filter_map(|block| {
            let update = serde_json::json!({
                "sessionId": session,
                "update": {"sessionUpdate": "user_message_chunk", "content": block},
            });
            RawJson::to_raw(&update).ok()
        })
        .collect()
}

/// `_sacp/turn_ended`: `{"sessionId", "stopReason"}`, or `{"sessionId", "error"}` for a
/// prompt that failed.
fn turn_ended_params(session: &str, result: &Result<RawJson, Error>) -> RawJson {
    #[derive(serde::Deserialize)]
    struct Stop {
        #[serde(rename = "stopReason")]
        stop_reason: Option<serde_json::Value>,
    }
    let value = match result {
        Ok(answer) => {
            let stop = answer.parse::<Stop>().ok().and_then(|s| s.stop_reason);
            serde_json::json!({"sessionId": session, "stopReason": stop})
        }
        Err(e) => serde_json::json!({"sessionId": session, "error": e}),
    };
    RawJson::to_raw(&value).unwrap_or_else(|_| RawJson::null())
}

/// `_sacp/history_left_out`: how much of the session's beginning a replay leaves out.
fn left_out_params(session: &str, left_out: LeftOut) -> RawJson {
    let value = serde_json::json!({
        "sessionId": session,
        "turns": left_out.turns,
        "entries": left_out.entries,
    });
    RawJson::to_raw(&value).unwrap_or_else(|_| RawJson::null())
}

/// Session `id`'s current v2 state: the agent's last `state_update` the record holds, else
/// `running` while a turn runs (`running`), else `idle`.
fn current_state(record: &Record, id: &str, running: bool) -> RawJson {
    let last = record.newest(|entry| {
        matches!(entry, Entry::Notification { params, .. }
            if memchr::memmem::find(params.as_bytes(), b"\"state_update\"").is_some()
                && params.member_at(&["update", "sessionUpdate"]).is_some_and(|k| k.as_str() == "\"state_update\""))
    });
    match last {
        Some(Entry::Notification { params, .. }) => params.clone(),
        _ => state_update(id, running),
    }
}

/// A v2 `state_update` of session `id`: `running` while a turn runs, else `idle`.
fn state_update(id: &str, running: bool) -> RawJson {
    let state = if running { "running" } else { "idle" };
    RawJson::to_raw(&serde_json::json!({
        "sessionId": id,
        "update": {"sessionUpdate": "state_update", "state": state},
    }))
    .unwrap_or_else(|_| RawJson::null())
}

/// A number for a new life of a session's record: random, so that a position of a life before
/// (another conductor's, or this one's before a restore) names no entry of this one.
fn new_life() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}
