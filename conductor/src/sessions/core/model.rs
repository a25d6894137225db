//! A model-based property test of [`SessionCore`]: random sequences of clients attaching
//! (from the start, from now, from a cursor, by `session/attach` with each history policy;
//! as controllers or observers), detaching, being shed for taking nothing, taking what they
//! are sent, prompting, cancelling, answering the agent's requests; of the chain streaming,
//! asking and ending turns; of the conductor restarting from its journal; of time passing
//! (told, never waited for) — checked against a small model after every step:
//!
//! - every client sees the session's updates in the record's order, each once, none missing
//!   from where it attached to where it reached, and after resuming from a cursor none it had;
//! - every answer a client is owed (a prompt's, an attach's) is given exactly once — to the
//!   connection that asked, or dropped with a client that left — and one turn runs at a time;
//! - an observer is never sent what only a controller may answer, and counts as no controller;
//! - the journal is handed every entry once, in order, and a restart restores it whole;
//! - the record stays within its bound, and the bytes it reports moving add up to what it
//!   holds;
//! - a request of the agent's is refused exactly when it waited its deadline since it came and
//!   since the last controller left, the session expires exactly when it had no controller
//!   and nothing new for its deadline, and each tick names the earliest deadline pending.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use proptest::prelude::*;
use sacp::jsonrpc::{Error, Id, RawJson};

use super::super::ask::{Ask, Requester};
use super::super::position::parse;
use super::super::record::{Entry, update_method};
use super::super::turns::Admit;
use super::super::who::{HistoryPolicy, Role, Who};
use super::*;

/// The bound of the record in the model: small, so that forgetting and a full record are
/// common.
const RECORD: usize = 2_000;
const CLIENTS: usize = 3;
/// The deadlines in the model (its time is told, so they cost nothing to wait out).
const DEADLINES: Deadlines = Deadlines {
    ask: Duration::from_secs(1),
    detached: Duration::from_secs(3),
};

#[derive(Debug, Clone)]
struct Seat {
    id: u64,
    v1: bool,
    who: Who,
}

impl Client for Seat {
    fn id(&self) -> u64 {
        self.id
    }
    fn v1(&self) -> bool {
        self.v1
    }
    fn positions(&self) -> bool {
        true
    }
    fn who(&self) -> &Who {
        &self.who
    }
}

/// A chain that is never there: an ask's answer goes nowhere.
#[derive(Debug)]
struct NoChain;

impl Requester for NoChain {
    fn answer(&self, _: Id, _: Result<RawJson, Error>) {}
    fn note(&self, _: &str, _: &'static str, _: &Who, _: Option<&str>) {}
}

#[derive(Debug, Clone, Copy)]
enum How {
    Oldest,
    Now,
    /// From the cursor of the last update it got (or the start, with none).
    Resume,
    Join(HistoryPolicy),
}

#[derive(Debug, Clone)]
enum Op {
    Attach {
        client: usize,
        how: How,
        observer: bool,
        v1: bool,
    },
    Detach(usize),
    Update {
        text: usize,
        echo: Option<usize>,
    },
    Prompt(usize),
    EndTurn(bool),
    Cancel(usize),
    Take(usize),
    Ask(bool),
    Answer(usize),
    Stall,
    Restart,
    Close,
    /// Time passes (milliseconds).
    Wait(u64),
    /// Time passes to the next deadline the last tick named.
    ToNext,
}

fn op() -> impl Strategy<Value = Op> {
    let client = 0..CLIENTS;
    let how = prop_oneof![
        Just(How::Oldest),
        Just(How::Now),
        Just(How::Resume),
        Just(How::Join(HistoryPolicy::Full)),
        Just(How::Join(HistoryPolicy::PendingOnly)),
        Just(How::Join(HistoryPolicy::None)),
    ];
    prop_oneof![
        4 => (client.clone(), how, prop::bool::weighted(0.25), any::<bool>()).prop_map(
            |(client, how, observer, v1)| Op::Attach { client, how, observer, v1 }
        ),
        2 => client.clone().prop_map(Op::Detach),
        10 => (0..400usize, prop::option::weighted(0.2, client.clone()))
            .prop_map(|(text, echo)| Op::Update { text, echo }),
        3 => client.clone().prop_map(Op::Prompt),
        2 => any::<bool>().prop_map(Op::EndTurn),
        1 => client.clone().prop_map(Op::Cancel),
        10 => client.clone().prop_map(Op::Take),
        2 => any::<bool>().prop_map(Op::Ask),
        2 => client.prop_map(Op::Answer),
        1 => Just(Op::Stall),
        1 => Just(Op::Restart),
        1 => Just(Op::Close),
        2 => (0..2_500u64).prop_map(Op::Wait),
        1 => Just(Op::ToNext),
    ]
}

/// What the model knows of one client (one connection, attached or not).
#[derive(Debug, Default)]
struct Known {
    /// Its attachment now.
    seat: Option<Seat>,
    /// The first entry it is to get in this attachment, and how far it reached.
    start: u64,
    reached: u64,
    /// The updates it got in this attachment, by sequence number.
    seen: BTreeSet<u64>,
    /// The position of the last update it got in this life of the record.
    last: Option<u64>,
    /// It must be told that its replay leaves the beginning out.
    expect_left_out: bool,
    /// The agent's requests it was sent.
    asks: Vec<Arc<Ask>>,
}

struct Model {
    core: SessionCore<Seat, u64>,
    life: u64,
    next_att: u64,
    clients: Vec<Known>,
    /// Every update appended in this life: its sequence number and the attachment it echoes.
    updates: BTreeMap<u64, Option<u64>>,
    /// Answers owed, each by its token: the connection (client index) it is owed to.
    owed: BTreeMap<u64, usize>,
    next_token: u64,
    /// The running turn (its number), and the prompts queued: ticket, client, token.
    running: Option<u64>,
    queued: Vec<(u64, usize, u64)>,
    /// What the journal was handed, in order.
    journal: Vec<Entry>,
    /// The bytes the core said its record took, less what it said it freed.
    held: i64,
    asks: Vec<Arc<Ask>>,
    /// The asks the record took in this life.
    asked: u64,
    /// The time, and when each ask came (as `asks`).
    now: Duration,
    asked_at: Vec<Duration>,
    /// Since when no controller is attached, and since when the record has not grown.
    alone_since: Option<Duration>,
    grown: (u64, Duration),
    /// The next deadline the last tick named.
    next: Option<Duration>,
}

impl Model {
    fn new() -> Model {
        Model {
            core: SessionCore::new(Arc::from("s@t"), 1, DEADLINES),
            life: 1,
            next_att: 1,
            clients: (0..CLIENTS).map(|_| Known::default()).collect(),
            updates: BTreeMap::new(),
            owed: BTreeMap::new(),
            next_token: 0,
            running: None,
            queued: Vec::new(),
            journal: Vec::new(),
            held: 0,
            asks: Vec::new(),
            asked: 0,
            now: Duration::ZERO,
            asked_at: Vec::new(),
            alone_since: None,
            grown: (0, Duration::ZERO),
            next: None,
        }
    }

    fn room(&self) -> Room {
        Room {
            record: RECORD,
            records: usize::MAX,
            held: self.core.bytes(),
        }
    }

    fn token(&mut self, client: usize) -> u64 {
        self.next_token += 1;
        self.owed.insert(self.next_token, client);
        self.next_token
    }

    /// Answer `token` was given (to `to`, when it went to a client).
    fn answered(&mut self, token: u64, to: Option<usize>) {
        let owner = self.owed.remove(&token);
        assert!(owner.is_some(), "answer {token} given twice or never owed");
        if let Some(to) = to {
            assert_eq!(owner, Some(to), "answer {token} went to another connection");
        }
    }

    fn att(&self, client: usize) -> Option<u64> {
        self.clients[client].seat.as_ref().map(|s| s.id)
    }

    fn step(&mut self, op: &Op) {
        match *op {
            Op::Attach {
                client,
                how,
                observer,
                v1,
            } => self.attach(client, how, observer, v1),
            Op::Detach(client) => {
                if let Some(att) = self.att(client) {
                    let gone = self.core.detach(att).expect("attached");
                    self.let_go(client, gone.owed);
                }
            }
            Op::Update { text, echo } => self.update(text, echo),
            Op::Prompt(client) => self.prompt(client),
            Op::EndTurn(failed) => self.end_turn(failed),
            Op::Cancel(client) => {
                let Some(seat) = self.clients[client].seat.clone() else {
                    return;
                };
                if seat.who.is_observer() {
                    return;
                }
                self.core.withdraw(seat.id);
                self.end_turn(false);
            }
            Op::Take(client) => self.take(client),
            Op::Ask(for_one) => self.ask(for_one),
            Op::Answer(client) => {
                let known = &self.clients[client];
                let Some(seat) = &known.seat else { return };
                if seat.who.is_observer() {
                    return;
                }
                if let Some(ask) = known.asks.iter().find(|a| !a.is_answered()) {
                    assert!(ask.answer(RawJson::to_raw(&serde_json::json!({}))));
                }
            }
            Op::Stall => {
                for gone in self.core.shed_stalled(self.room()) {
                    let client = self.index(gone.client.id);
                    self.let_go(client, gone.owed);
                }
            }
            Op::Restart => self.restart(),
            Op::Close => self.close(),
            Op::Wait(ms) => self.now += Duration::from_millis(ms),
            Op::ToNext => {
                if let Some(next) = self.next {
                    self.now = next;
                }
            }
        }
        self.drain();
        self.tick(matches!(op, Op::ToNext) && self.next.is_some());
        self.drain();
        self.check();
    }

    fn close(&mut self) {
        for ask in self.core.close() {
            ask.refuse("closed");
        }
        self.poll_queue();
    }

    /// The adapter's timekeeper wakes: the core is told the time. What it hands back is
    /// checked against when each wait began in the model; `due` says a deadline falls now.
    fn tick(&mut self, due: bool) {
        let controllers = self
            .clients
            .iter()
            .filter(|k| k.seat.as_ref().is_some_and(|s| !s.who.is_observer()))
            .count();
        let closed = self.core.is_closed();
        let alone = controllers == 0 && !closed;
        self.alone_since = if alone {
            Some(self.alone_since.unwrap_or(self.now))
        } else {
            None
        };
        if self.core.end() != self.grown.0 {
            self.grown = (self.core.end(), self.now);
        }
        let ticked = self.core.tick(self.now);
        let mut want_next: Option<Duration> = None;
        let mut pending = |at: Duration| want_next = Some(want_next.map_or(at, |n| n.min(at)));
        // Each ask waiting is refused once it has waited its deadline since it came and since
        // the last controller left; not before.
        for (ask, at) in self.asks.iter().zip(&self.asked_at) {
            let refused = ticked.refuse.iter().any(|r| Arc::ptr_eq(r, ask));
            if ask.is_answered() && !refused {
                continue;
            }
            let due_at = self.alone_since.map(|a| a.max(*at) + DEADLINES.ask);
            let is_due = due_at.is_some_and(|d| self.now >= d);
            assert_eq!(refused, is_due, "ask at {at:?}, now {:?}", self.now);
            if let (Some(d), false) = (due_at, is_due) {
                pending(d);
            }
        }
        for ask in &ticked.refuse {
            ask.refuse("no editor");
        }
        let expires_at = self
            .alone_since
            .map(|a| a.max(self.grown.1) + DEADLINES.detached);
        let expired = expires_at.is_some_and(|e| self.now >= e);
        assert_eq!(ticked.expired, expired, "now {:?}", self.now);
        if let (Some(e), false) = (expires_at, expired) {
            pending(e);
        }
        if !expired {
            assert_eq!(ticked.next, want_next, "the next deadline");
        }
        assert_eq!(ticked.alone, alone);
        if due {
            assert!(
                expired || !ticked.refuse.is_empty(),
                "a tick at the deadline it named did nothing"
            );
        }
        self.next = ticked.next;
        if expired {
            // The layer ends the session.
            self.close();
        }
    }

    fn update(&mut self, text: usize, echo: Option<usize>) {
        let echo = echo.and_then(|c| self.att(c));
        let params = update(text, echo.is_some());
        let (seq, before) = (self.core.end(), self.core.bytes());
        let appended = self
            .core
            .append(update_method(), params, echo, self.room(), |_| Some(()));
        if matches!(appended, Appended::Queued | Appended::Direct(..)) {
            // Within its bound, but for one entry larger than the bound alone.
            assert!(
                before == 0 || self.core.bytes() <= RECORD,
                "the record holds {} of {RECORD}",
                self.core.bytes()
            );
        }
        match appended {
            Appended::Closed | Appended::Full(..) => {}
            Appended::Queued => {
                self.updates.insert(seq, echo);
            }
            Appended::Direct(seat, (), out) => {
                self.updates.insert(seq, echo);
                let client = self.index(seat.id);
                self.clients[client].reached = seq + 1;
                if let Some((method, params)) = out {
                    self.got(client, Out::Notify(method, params));
                } else {
                    assert_eq!(echo, Some(seat.id), "a direct update went missing");
                }
            }
        }
    }

    fn prompt(&mut self, client: usize) {
        let Some(seat) = self.clients[client].seat.clone() else {
            return;
        };
        if seat.who.is_observer() {
            return;
        }
        let token = self.token(client);
        match self.core.admit(seat.id, &seat.who.connection, token) {
            Admit::Now(turn) => {
                assert!(self.running.is_none(), "two turns at once");
                self.running = Some(turn);
                let prompt = RawJson::to_raw(&serde_json::json!({
                    "sessionId": "s@t",
                    "prompt": [{"type": "text", "text": "hi"}],
                }))
                .expect("json");
                let _ = self.core.prompted(prompt, seat.id, self.room());
            }
            Admit::Busy(token) => self.answered(token, Some(client)),
            Admit::Queued(ticket, token) => self.queued.push((ticket, client, token)),
        }
    }

    fn ask(&mut self, for_one: bool) {
        let method = if for_one {
            "fs/read_text_file"
        } else {
            "session/request_permission"
        };
        let params = RawJson::to_raw(&serde_json::json!({"sessionId": "s@t"}));
        let none: Weak<dyn Requester> = Weak::<NoChain>::new();
        let ask = Arc::new(Ask::new(
            method.into(),
            params.expect("json"),
            Id::from(self.asks.len() as i64),
            none,
        ));
        self.asks.push(ask.clone());
        self.asked_at.push(self.now);
        if self.core.ask(ask.clone()) {
            self.asked += 1;
        } else {
            ask.refuse("closed");
        }
    }

    fn attach(&mut self, client: usize, how: How, observer: bool, v1: bool) {
        if self.clients[client].seat.is_some() {
            return;
        }
        let seat = Seat {
            id: self.next_att,
            v1,
            who: Who {
                id: format!("client-{client}"),
                connection: format!("connection-{client}"),
                info: None,
                role: if observer {
                    Role::Observer
                } else {
                    Role::Controller
                },
            },
        };
        self.next_att += 1;
        let token = self.token(client);
        let first = self.core.record.first();
        let end = self.core.end();
        let requested = match how {
            How::Oldest => Some(0),
            How::Resume => Some(self.clients[client].last.map_or(0, |l| l + 1)),
            How::Now | How::Join(_) => None,
        };
        let result = match how {
            How::Join(policy) => self
                .core
                .join(
                    seat.clone(),
                    policy,
                    |_, _| RawJson::to_raw(&serde_json::json!({})),
                    token,
                )
                .map_err(Some),
            How::Oldest => self.core.attach(
                seat.clone(),
                From::Oldest,
                Some((token, RawJson::to_raw(&serde_json::json!({})), From::Oldest)),
            ),
            How::Now => self.core.attach(
                seat.clone(),
                From::Now,
                Some((token, RawJson::to_raw(&serde_json::json!({})), From::Now)),
            ),
            How::Resume => self.core.attach(
                seat.clone(),
                From::At(requested.unwrap_or(0)),
                Some((token, RawJson::to_raw(&serde_json::json!({})), From::At(0))),
            ),
        };
        match result {
            Ok(()) => {
                let start = requested.map_or(end, |r| r.clamp(first, end));
                let known = &mut self.clients[client];
                known.seat = Some(seat);
                known.start = start;
                known.reached = start;
                known.seen.clear();
                known.asks.clear();
                known.expect_left_out = requested.is_some_and(|r| r < first);
                if !matches!(how, How::Resume) {
                    known.last = None;
                }
            }
            Err(token) => {
                assert!(self.core.is_closed());
                self.answered(token.expect("its responder back"), Some(client));
            }
        }
    }

    /// The client index of attachment `att`.
    fn index(&self, att: u64) -> usize {
        self.clients
            .iter()
            .position(|k| k.seat.as_ref().is_some_and(|s| s.id == att))
            .expect("a client the core names is attached")
    }

    fn let_go(&mut self, client: usize, owed: Vec<u64>) {
        for token in owed {
            self.answered(token, Some(client));
        }
        self.clients[client].seat = None;
    }

    fn end_turn(&mut self, failed: bool) {
        let Some(turn) = self.running.take() else {
            return;
        };
        let asker = self.core.take_turn(turn).expect("the running turn's asker");
        let owner = *self.owed.get(&asker.responder).expect("its answer is owed");
        let result = if failed {
            Err(Error::internal_error("failed"))
        } else {
            RawJson::to_raw(&serde_json::json!({"stopReason": "end_turn"}))
        };
        if let Some((token, _, claim)) = self.core.turn_ended(Some(asker), result, |_| Some(())) {
            if claim.is_some() {
                // Straight to its one client: it reached the turn's end.
                let client = self.clients.iter().position(|k| k.seat.is_some());
                let client = client.expect("a client to send to");
                assert_eq!(client, owner);
                self.clients[client].reached = self.core.end();
            }
            self.answered(token, Some(owner));
        }
        self.poll_queue();
    }

    fn poll_queue(&mut self) {
        let queued = std::mem::take(&mut self.queued);
        for (ticket, client, token) in queued {
            let (att, connection) = match &self.clients[client].seat {
                Some(seat) => (seat.id, seat.who.connection.clone()),
                None => (0, format!("connection-{client}")),
            };
            match self.core.queued(ticket, att, &connection, token) {
                Queue::Began(turn) => {
                    assert!(self.running.is_none(), "two turns at once");
                    self.running = Some(turn);
                }
                Queue::Wait(token) => self.queued.push((ticket, client, token)),
                Queue::Withdrawn(token) => self.answered(token, Some(client)),
            }
        }
    }

    fn take(&mut self, client: usize) {
        let Some(att) = self.att(client) else { return };
        let taken = self.core.take(att).expect("attached");
        for out in taken.outs {
            self.got(client, out);
        }
        let known = &mut self.clients[client];
        if known.expect_left_out {
            panic!("client {client} was not told its replay leaves the beginning out");
        }
        known.reached = known.reached.max(taken.upto);
        self.core.delivered(att, taken.upto, self.room());
    }

    /// Client `client` got `out`.
    fn got(&mut self, client: usize, out: Out<u64>) {
        let life = self.life;
        match out {
            Out::Notify(method, params) => {
                let known = &mut self.clients[client];
                if &*method == HISTORY_LEFT_OUT {
                    known.expect_left_out = false;
                    return;
                }
                let Some(position) = params.member_at(&["_meta", "sacp", "position"]) else {
                    // A v2 client's current state before a load's answer: no place of its own.
                    return;
                };
                let position: String = position.parse().expect("a string");
                let (l, seq) = parse(&position).expect("LIFE.SEQ");
                assert_eq!(l, life, "{position}");
                if &*method != "session/update" || !self.updates.contains_key(&seq) {
                    // A turn's end or a prompt shown to a v1 client: in order all the same.
                    assert!(
                        known.last.is_none_or(|l| seq > l),
                        "{seq} after {:?}",
                        known.last
                    );
                    known.last = Some(seq);
                    return;
                }
                assert!(
                    known.last.is_none_or(|l| seq > l),
                    "client {client} got update {seq} after {:?}",
                    known.last
                );
                assert!(seq >= known.start, "update {seq} before its start");
                known.seen.insert(seq);
                known.last = Some(seq);
            }
            Out::Answer(token, _) => self.answered(token, Some(client)),
            Out::Ask(ask) => {
                let known = &mut self.clients[client];
                let seat = known.seat.as_ref().expect("attached");
                assert!(
                    !(ask.for_one() && seat.who.is_observer()),
                    "an observer was sent {}",
                    ask.method
                );
                known.asks.push(ask);
            }
        }
    }

    fn restart(&mut self) {
        // What was owed dies with the connections and the chain.
        self.owed.clear();
        self.queued.clear();
        let open = self.running.take().is_some();
        let kept: Vec<Entry> = self.journal.clone();
        let kept_len = kept.len() as u64;
        self.life += 1;
        self.core = SessionCore::new(Arc::from("s@t"), self.life, DEADLINES);
        let then = if open {
            vec![Entry::turn_ended(
                RawJson::to_raw(&serde_json::json!({"stopReason": "cancelled"})),
                None,
            )]
        } else {
            Vec::new()
        };
        self.core.restore(kept, then);
        assert_eq!(self.core.end(), kept_len + u64::from(open));
        self.journal.truncate(kept_len as usize);
        self.held = 0;
        self.asked = 0;
        // The new core's waits begin at its first tick.
        self.alone_since = None;
        self.grown = (u64::MAX, self.now);
        self.updates = self
            .core
            .record
            .since(0)
            .filter(|(_, e)| matches!(e, Entry::Notification { .. }))
            .map(|(seq, _)| (seq, None))
            .collect();
        for known in &mut self.clients {
            *known = Known::default();
        }
        for ask in &self.asks {
            ask.refuse("the conductor restarted");
        }
    }

    /// What the adapter drains after every event.
    fn drain(&mut self) {
        for entry in self.core.unjournaled() {
            if !matches!(entry, Entry::Ask(_)) {
                self.journal.push(entry.clone());
            }
        }
        let (grew, freed) = self.core.bytes_moved();
        self.held += grew as i64 - freed as i64;
        self.core.woken();
    }

    fn check(&self) {
        assert_eq!(self.held, self.core.bytes() as i64, "bytes moved add up");
        // The journal was handed every entry but the asks, once, however much the record
        // forgot.
        assert_eq!(self.journal.len() as u64 + self.asked, self.core.end());
        let controllers = self
            .clients
            .iter()
            .filter(|k| k.seat.as_ref().is_some_and(|s| !s.who.is_observer()))
            .count();
        assert_eq!(self.core.controllers(), controllers);
        assert_eq!(self.core.running(), self.running.is_some());
        for (i, known) in self.clients.iter().enumerate() {
            let Some(seat) = &known.seat else { continue };
            // Every update from its start to where it reached, but its own words.
            let want: BTreeSet<u64> = self
                .updates
                .range(known.start..known.reached)
                .filter(|(_, echo)| **echo != Some(seat.id))
                .map(|(seq, _)| *seq)
                .collect();
            let got: BTreeSet<u64> = known.seen.range(..known.reached).copied().collect();
            assert_eq!(got, want, "client {i} from {}", known.start);
        }
    }

    /// Ends every turn and gives every client everything: then nothing is owed any more.
    fn finish(&mut self) {
        while self.running.is_some() || !self.queued.is_empty() {
            if self.running.is_none() {
                self.poll_queue();
                if self.running.is_none() {
                    break;
                }
            }
            self.end_turn(false);
            self.drain();
        }
        for ask in self.core.close() {
            ask.refuse("closed");
        }
        self.poll_queue();
        for _ in 0..64 {
            for client in 0..CLIENTS {
                self.take(client);
            }
            self.drain();
            self.check();
        }
        assert!(self.owed.is_empty(), "answers never given: {:?}", self.owed);
        assert!(
            self.asks.iter().all(|a| a.is_answered()),
            "an ask never answered"
        );
    }
}

/// A `session/update` with `text` bytes of text, its position's place in `_meta` taken by a
/// client's own words or not.
fn update(text: usize, own: bool) -> RawJson {
    let kind = if own {
        "user_message_chunk"
    } else {
        "agent_message_chunk"
    };
    RawJson::to_raw(&serde_json::json!({
        "sessionId": "s@t",
        "update": {"sessionUpdate": kind, "content": {"type": "text", "text": "x".repeat(text)}},
    }))
    .expect("json")
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 10_000,
        max_shrink_iters: 20_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_core_keeps_every_client_whole(ops in prop::collection::vec(op(), 1..80)) {
        let mut model = Model::new();
        for op in &ops {
            model.step(op);
        }
        model.finish();
    }
}
