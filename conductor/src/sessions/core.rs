//! The core of one session: every decision about it, in one place, with no I/O — no lock, no
//! task, no clock, no connection. The quinn-proto shape, as `ChainCore` is for a chain: the
//! session adapter (`session.rs`) holds a [`SessionCore`] behind its lock, tells it what
//! happened, and does what it hands back.
//!
//! What it owns: the session's [`Record`] (what the editor side saw, in order, within its
//! bound), the clients attached and where each is in the record, the answers each is owed at
//! their places in it, the running turn and the prompts queued behind it ([`Turns`]), the
//! agent's requests waiting for an editor and who is to answer each, and whether the session
//! is closed.
//!
//! **Events** (its methods): a client attached ([`SessionCore::attach`],
//! [`SessionCore::join`]) or left ([`SessionCore::detach`]); a client prompted
//! ([`SessionCore::admit`], [`SessionCore::prompted`]), cancelled
//! ([`SessionCore::withdraw`]) or took what it was sent ([`SessionCore::delivered`]); the
//! chain sent an update ([`SessionCore::append`]), a request for an editor
//! ([`SessionCore::ask`]) or a turn's end ([`SessionCore::turn_ended`]); the journal gave the
//! session back ([`SessionCore::restore`]); the session closed or moved to another conductor;
//! and the time, [`SessionCore::tick`] (see `clock.rs`): its one input of time.
//!
//! **What it hands out**: each client's next batch in the record's order ([`Out`]: a
//! notification, an answer it is owed, a request of the agent's, from
//! [`SessionCore::take`]); an entry one client may be sent straight away
//! ([`Appended::Direct`]); the clients to wake or to drop; and, drained after every event,
//! what to write to the journal ([`SessionCore::unjournaled`]), the bytes its record took
//! and freed ([`SessionCore::bytes_moved`]) and whether the deliveries have something new
//! ([`SessionCore::woken`]); and from a tick, the requests nobody was there to answer and
//! whether the session expired (`Ticked`). `C` is the adapter's handle of a client, `R` what an answer is
//! given through: a `Responder` in the conductor, plain numbers in the model test.
//!
//! Memory is bounded in bytes per session and for all sessions ([`Room`]): delivered entries
//! are forgotten, oldest turns first, to stay within them; undelivered ones are kept, and so
//! is the turn going on while no client is attached, and [`SessionCore::append`] says
//! [`Appended::Full`] instead — which is how a session streaming to nobody slows its agent.

mod clock;
mod terms;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use sacp::jsonrpc::{Error, RawJson};
use serde_json::Value;

use super::ask::Ask;
use super::notices::{
    HISTORY_LEFT_OUT, SESSION_MOVED, current_state, history, left_out_params, moved_params, shown,
};
use super::position::positioned;
use super::record::{Entry, Record};
use super::turns::{Admit, Head, Turns};
use super::who::HistoryPolicy;

use self::clock::Clock;
pub(super) use self::clock::{Deadlines, Ticked};
pub(super) use self::terms::{Appended, Asker, Client, Detached, From, Out, Queue, Room, Taken};
use self::terms::{Attached, Owed, due, render};

/// At most this many entries are taken for a client at once.
const BATCH: usize = 512;

/// One session: see the module docs.
#[derive(Debug)]
pub(super) struct SessionCore<C, R> {
    /// The id the editor knows it by.
    id: Arc<str>,
    /// This life of its record, in the positions its clients are told (see `position.rs`).
    life: u64,
    record: Record,
    /// Entries before this reached a client once.
    delivered: u64,
    attached: Vec<Attached<C, R>>,
    closed: bool,
    turns: Turns<Asker<R>>,
    /// The result that began it (`session/new`, `load`, `resume`, `fork`), for a client that
    /// takes it up with `session/load`.
    setup: Option<RawJson>,
    /// The first entry not yet handed to the journal.
    unjournaled: u64,
    /// Bytes the record took and freed since the adapter last asked.
    grew: usize,
    freed: usize,
    /// The record's end, when it grew for the deliveries since the adapter last asked.
    woken: Option<u64>,
    deadlines: Deadlines,
    clock: Clock,
}

impl<C: Client, R> SessionCore<C, R> {
    pub(super) fn new(id: Arc<str>, life: u64, deadlines: Deadlines) -> Self {
        SessionCore {
            id,
            life,
            record: Record::default(),
            delivered: 0,
            attached: Vec::new(),
            closed: false,
            turns: Turns::default(),
            setup: None,
            unjournaled: 0,
            grew: 0,
            freed: 0,
            woken: None,
            deadlines,
            clock: Clock::default(),
        }
    }

    /// `params` of a chain's message about this session, its top-level `sessionId` the
    /// editor's (see [`Record::renamed`]).
    pub(super) fn renamed(&mut self, params: &RawJson) -> RawJson {
        self.record.renamed(params, &self.id)
    }

    // --- What the adapter drains after every event.

    /// The entries appended since it last asked, to write to the journal (in order).
    pub(super) fn unjournaled(&mut self) -> impl Iterator<Item = &Entry> {
        let from = self.unjournaled;
        self.unjournaled = self.record.end();
        self.record.since(from).map(|(_, entry)| entry)
    }

    /// The bytes its record took and freed since it last asked.
    pub(super) fn bytes_moved(&mut self) -> (usize, usize) {
        (
            std::mem::take(&mut self.grew),
            std::mem::take(&mut self.freed),
        )
    }

    /// The record's end, if it grew for the deliveries since it last asked.
    pub(super) fn woken(&mut self) -> Option<u64> {
        self.woken.take()
    }

    // --- What it is.

    pub(super) fn is_closed(&self) -> bool {
        self.closed
    }

    /// The sequence number the record's next entry gets.
    pub(super) fn end(&self) -> u64 {
        self.record.end()
    }

    /// The bytes its record holds.
    pub(super) fn bytes(&self) -> usize {
        self.record.bytes()
    }

    /// How many controllers are attached (an observer keeps no session alive and answers
    /// nothing).
    pub(super) fn controllers(&self) -> usize {
        self.attached
            .iter()
            .filter(|a| !a.client.who().is_observer())
            .count()
    }

    /// `{clientId, name?, version?, role}` of every client attached.
    pub(super) fn connected(&self) -> Vec<Value> {
        self.attached
            .iter()
            .map(|a| a.client.who().describe())
            .collect()
    }

    pub(super) fn set_setup(&mut self, result: &RawJson) {
        if self.setup.is_none() {
            self.setup = Some(result.clone());
        }
    }

    pub(super) fn setup(&self) -> Option<RawJson> {
        self.setup.clone()
    }

    // --- Turns.

    /// A prompt of client `att` (on `connection`): its turn begins now, waits for the running
    /// one, or is refused (see `turns.rs`).
    pub(super) fn admit(&mut self, att: u64, connection: &str, responder: R) -> Admit<R> {
        let asker = Asker {
            att,
            connection: connection.to_owned(),
            responder,
        };
        let attached = &self.attached;
        match self
            .turns
            .admit(att, asker, |a| attached.iter().any(|x| x.client.id() == a))
        {
            Admit::Now(turn) => Admit::Now(turn),
            Admit::Busy(asker) => Admit::Busy(asker.responder),
            Admit::Queued(ticket, asker) => Admit::Queued(ticket, asker.responder),
        }
    }

    /// Where client `att`'s prompt queued with `ticket` stands.
    pub(super) fn queued(
        &mut self,
        ticket: u64,
        att: u64,
        connection: &str,
        responder: R,
    ) -> Queue<R> {
        match self.turns.head(ticket, self.closed) {
            Head::Go => Queue::Began(self.turns.begin(
                att,
                Asker {
                    att,
                    connection: connection.to_owned(),
                    responder,
                },
            )),
            Head::Wait => Queue::Wait(responder),
            Head::Withdrawn => Queue::Withdrawn(responder),
        }
    }

    /// Withdraws the prompts client `att` queued (its `session/cancel`): whether it had any.
    pub(super) fn withdraw(&mut self, att: u64) -> bool {
        self.turns.withdraw(att)
    }

    /// The asker of turn `turn`, if the turn has not ended yet.
    pub(super) fn take_turn(&mut self, turn: u64) -> Option<Asker<R>> {
        self.turns.take(turn)
    }

    /// The askers of every turn in flight, which end now.
    pub(super) fn take_turns(&mut self) -> Vec<Asker<R>> {
        self.turns.take_all()
    }

    /// Whether a turn runs, whoever began it (its client may have left: the turn is the
    /// session's).
    pub(super) fn running(&self) -> bool {
        self.turns.running()
    }

    // --- Clients.

    /// Attaches `client` from `from` on. `first` is an answer it is owed (`session/new`'s, a
    /// load's): before everything it gets (`From::Oldest`), or after the record as it is now
    /// (`From::Now`: after a load's replay). A closed session takes nobody: `first`'s
    /// responder comes back.
    #[allow(clippy::type_complexity)]
    pub(super) fn attach(
        &mut self,
        client: C,
        from: From,
        first: Option<(R, Result<RawJson, Error>, From)>,
    ) -> Result<(), Option<R>> {
        if self.closed {
            return Err(first.map(|(responder, _, _)| responder));
        }
        // ACP v2: a load or resume is answered after the session's current state.
        let v2_setup = !client.v1() && matches!(&first, Some((_, Ok(_), From::Now)));
        let preface = v2_setup.then(|| current_state(&self.record, &self.id, self.running()));
        let cursor = match from {
            From::Oldest => self.record.first(),
            From::Now => self.record.end(),
            From::At(seq) => seq.clamp(self.record.first(), self.record.end()),
        };
        let mut owed = VecDeque::new();
        if let Some((responder, result, at)) = first {
            let at = match at {
                From::Oldest | From::At(_) => cursor,
                From::Now => self.record.end(),
            };
            owed.push_back(Owed {
                at,
                responder,
                result,
                preface,
            });
        }
        self.attached.push(Attached {
            client,
            cursor,
            owed,
            told_left_out: false,
            resend: Vec::new(),
        });
        Ok(())
    }

    /// Attaches `client` as `session/attach` asks (`policy`): answered (through `responder`)
    /// with what `answer` makes of the history its policy gives and the clients connected,
    /// then the agent's requests still waiting (unless it asked for no history), then
    /// everything the session streams from now on. A closed session takes nobody.
    pub(super) fn join(
        &mut self,
        client: C,
        policy: HistoryPolicy,
        answer: impl FnOnce(Option<Vec<Value>>, Vec<Value>) -> Result<RawJson, Error>,
        responder: R,
    ) -> Result<(), R> {
        if self.closed {
            return Err(responder);
        }
        let history = match policy {
            HistoryPolicy::Full => {
                Some(history(&self.record, &self.id, client.v1(), client.takes()))
            }
            HistoryPolicy::PendingOnly => Some(
                self.record
                    .since(0)
                    .filter_map(|(_, entry)| match entry {
                        Entry::Ask(ask) if !ask.is_answered() => {
                            Some(shown(&ask.method, &ask.params, client.takes()))
                        }
                        _ => None,
                    })
                    .collect(),
            ),
            HistoryPolicy::None => None,
        };
        let resend = match policy {
            HistoryPolicy::None => Vec::new(),
            _ => self
                .record
                .since(0)
                .filter_map(|(_, entry)| match entry {
                    Entry::Ask(ask)
                        if !ask.is_answered() && ask.is_for(client.who(), client.id()) =>
                    {
                        Some(ask.clone())
                    }
                    _ => None,
                })
                .collect(),
        };
        let result = answer(history, self.connected());
        let end = self.record.end();
        self.attached.push(Attached {
            client,
            cursor: end,
            owed: [Owed {
                at: end,
                responder,
                result,
                preface: None,
            }]
            .into(),
            told_left_out: true,
            resend,
        });
        Ok(())
    }

    /// Detaches client `att`, if attached: it gets nothing more of the session, the answers
    /// it was owed go, the requests of the agent's only it was to answer go to another
    /// controller.
    pub(super) fn detach(&mut self, att: u64) -> Option<Detached<C, R>> {
        let i = self.attached.iter().position(|a| a.client.id() == att)?;
        let gone = self.attached.remove(i);
        let heirs = self.hand_on(att);
        Some(Detached {
            client: gone.client,
            owed: gone.owed.into_iter().map(|o| o.responder).collect(),
            heirs,
        })
    }

    /// The requests of the agent's that only client `gone` was to answer, and did not, go to
    /// the controller attached longest (or to whichever takes them next): that controller,
    /// to wake.
    fn hand_on(&mut self, gone: u64) -> Vec<C> {
        let next = self
            .attached
            .iter()
            .position(|a| !a.client.who().is_observer());
        let mut heirs = Vec::new();
        for (_, entry) in self.record.since(0) {
            if let Entry::Ask(ask) = entry
                && !ask.is_answered()
                && ask.target() == Some(gone)
            {
                match next {
                    Some(i) => {
                        let heir = &mut self.attached[i];
                        ask.set_target(Some(heir.client.id()));
                        heir.resend.push(ask.clone());
                        heirs.push(heir.client.clone());
                    }
                    None => ask.set_target(None),
                }
            }
        }
        heirs
    }

    /// The record is full and nothing was freed for a while: the clients furthest behind,
    /// when another is further on, stopped taking what they are sent. They are detached, so
    /// that they hold back neither the other clients nor the agent (each with the clients
    /// that inherit its requests). When every client is as far behind, nobody is: the agent
    /// waits for them, as for one slow client.
    pub(super) fn shed_stalled(&mut self, room: Room) -> Vec<Detached<C, R>> {
        let (Some(min), Some(max)) = (
            self.attached.iter().map(|a| a.cursor).min(),
            self.attached.iter().map(|a| a.cursor).max(),
        ) else {
            return Vec::new();
        };
        if min == max {
            return Vec::new();
        }
        let mut shed = Vec::new();
        while let Some(i) = self.attached.iter().position(|a| a.cursor == min) {
            let id = self.attached[i].client.id();
            shed.extend(self.detach(id));
        }
        self.forget_what_can_go(room, 0);
        shed
    }

    /// Owes client `att` an answer at the record's end as it is now (after everything the
    /// session streamed before it), for a request about the session: the client, to wake;
    /// the responder back if it is not attached.
    pub(super) fn answer(
        &mut self,
        att: u64,
        responder: R,
        result: Result<RawJson, Error>,
    ) -> Result<C, R> {
        let at = self.record.end();
        match self.attached.iter_mut().find(|a| a.client.id() == att) {
            Some(attached) => {
                attached.owed.push_back(Owed {
                    at,
                    responder,
                    result,
                    preface: None,
                });
                Ok(attached.client.clone())
            }
            None => Err(responder),
        }
    }

    // --- What the chain sends.

    /// A notification about the session from the chain (`echo`: the client whose own words
    /// it shows). It goes straight to the one client when that client has everything, is owed
    /// nothing, and `claim` gets its claim on sending (see [`Appended::Direct`]).
    pub(super) fn append<G>(
        &mut self,
        method: Arc<str>,
        params: RawJson,
        echo: Option<u64>,
        room: Room,
        claim: impl FnOnce(&C) -> Option<G>,
    ) -> Appended<C, G> {
        if self.closed {
            return Appended::Closed;
        }
        if !self.fits(room, 64 + params.len()) {
            return Appended::Full(method, params);
        }
        match self.direct(None, claim) {
            Some((client, guard)) => {
                let seq = self.record.end();
                let out = (echo != Some(client.id())).then(|| {
                    let sent = if client.positions() {
                        positioned(&params, self.life, seq)
                    } else {
                        params.clone()
                    };
                    (method.clone(), sent)
                });
                self.push_quietly(Entry::Notification {
                    method,
                    params,
                    echo,
                });
                self.delivered = self.record.end();
                Appended::Direct(client, guard, out)
            }
            None => {
                self.push(Entry::Notification {
                    method,
                    params,
                    echo,
                });
                Appended::Queued
            }
        }
    }

    /// Client `echo`'s prompt (`params`, with the editor's ids), for the other clients and a
    /// later replay: recorded (or dropped, the session closed), or back while the record has no
    /// room.
    pub(super) fn prompted(
        &mut self,
        params: RawJson,
        echo: u64,
        room: Room,
    ) -> Result<(), RawJson> {
        if self.closed {
            return Ok(());
        }
        if !self.fits(room, 64 + params.len()) {
            return Err(params);
        }
        let entry = Entry::Prompt {
            params,
            echo: Some(echo),
        };
        // Nothing in it for the one client that prompted: when it has everything else, it
        // moves past it, and no delivery is woken.
        let end = self.record.end();
        match &mut self.attached[..] {
            [only] if only.client.id() == echo && only.cursor == end => {
                only.cursor = end + 1;
                self.push_quietly(entry);
            }
            _ => {
                self.push(entry);
            }
        }
        Ok(())
    }

    /// A turn ended with `result`: the asker gets it as the prompt's answer — in the record's
    /// order, through its attachment, or through its connection's attachment now (it detached
    /// and attached again), or, its connection attached to the session no more, at once — and
    /// every other v1 client a `_sacp/turn_ended`, in the record's order. What is to be
    /// answered at once comes back (with the one client's claim on sending, when the answer
    /// goes straight to it).
    #[allow(clippy::type_complexity)]
    pub(super) fn turn_ended<G>(
        &mut self,
        asker: Option<Asker<R>>,
        result: Result<RawJson, Error>,
        claim: impl FnOnce(&C) -> Option<G>,
    ) -> Option<(R, Result<RawJson, Error>, Option<G>)> {
        if self.closed {
            // Nothing more is streamed: the asker's answer has nothing to wait for.
            return asker.map(|asker| (asker.responder, result, None));
        }
        let Some(asker) = asker else {
            self.push(Entry::turn_ended(result, None));
            return None;
        };
        let now = self
            .attached
            .iter()
            .find(|a| a.client.id() == asker.att)
            .or_else(|| {
                self.attached
                    .iter()
                    .find(|a| a.client.who().connection == asker.connection)
            })
            .map(|a| a.client.id());
        let Some(id) = now else {
            // Not attached (it detached): answered on its connection now; the other clients
            // are told the turn ended.
            self.push(Entry::turn_ended(result.clone(), None));
            return Some((asker.responder, result, None));
        };
        let entry = Entry::turn_ended(result.clone(), Some(id));
        // The asker alone, with everything: it is answered now, from here.
        if let Some((_, guard)) = self.direct(Some(id), claim) {
            self.push_quietly(entry);
            self.delivered = self.record.end();
            return Some((asker.responder, result, Some(guard)));
        }
        let seq = self.push(entry);
        if let Some(attached) = self.attached.iter_mut().find(|a| a.client.id() == id) {
            attached.owed.push_back(Owed {
                at: seq,
                responder: asker.responder,
                result,
                preface: None,
            });
        }
        None
    }

    /// Holds a request of the agent's until a client answers it: `false` if the session is
    /// closed (the caller refuses it). One for one controller goes to the client whose prompt
    /// began the running turn, else the controller attached longest.
    pub(super) fn ask(&mut self, ask: Arc<Ask>) -> bool {
        if self.closed {
            return false;
        }
        if ask.for_one() {
            let controller = |id: u64| {
                self.attached
                    .iter()
                    .any(|a| a.client.id() == id && !a.client.who().is_observer())
            };
            let target = self
                .turns
                .first_asker()
                .filter(|id| controller(*id))
                .or_else(|| {
                    self.attached
                        .iter()
                        .find(|a| !a.client.who().is_observer())
                        .map(|a| a.client.id())
                });
            ask.set_target(target);
        }
        self.clock.asked(ask.clone());
        self.push(Entry::Ask(ask));
        true
    }

    /// Tells every client, after what was queued for it, that the conductor `by` holds the
    /// session now.
    pub(super) fn moved(&mut self, by: &str) {
        if !self.closed {
            self.push(Entry::Notification {
                method: Arc::from(SESSION_MOVED),
                params: moved_params(&self.id, by),
                echo: None,
            });
        }
    }

    /// Closes the session: what was queued for its clients still goes out, nothing more
    /// comes. The requests it held come back, to refuse.
    pub(super) fn close(&mut self) -> Vec<Arc<Ask>> {
        self.closed = true;
        self.clock.stop();
        self.woken = Some(self.record.end());
        self.record
            .since(0)
            .filter_map(|(_, entry)| match entry {
                Entry::Ask(ask) => Some(ask.clone()),
                _ => None,
            })
            .collect()
    }

    /// It is `now` (see `clock.rs`): the requests to refuse, whether the session expired,
    /// when to tick next.
    pub(super) fn tick(&mut self, now: Duration) -> Ticked {
        if self.closed {
            return Ticked::default();
        }
        let alone = self.controllers() == 0;
        self.clock
            .tick(now, self.deadlines, alone, self.record.end())
    }

    // --- The journal.

    /// Fills the record with what the journal kept (`kept`, not written again), then `then`
    /// (written: how an interrupted turn ends).
    pub(super) fn restore(&mut self, kept: Vec<Entry>, then: Vec<Entry>) {
        for entry in kept {
            let (_, size) = self.record.push(entry);
            self.grew += size;
        }
        self.unjournaled = self.record.end();
        for entry in then {
            self.push_quietly(entry);
        }
        self.delivered = self.record.end();
        self.woken = Some(self.record.end());
    }

    // --- Delivery.

    /// What client `att` gets next (at most [`BATCH`] entries and the answers due among
    /// them), moving its place on; `None` once it is detached.
    pub(super) fn take(&mut self, att: u64) -> Option<Taken<R>> {
        let closed = self.closed;
        let (id, life) = (&self.id, self.life);
        let record = &self.record;
        let me = self.attached.iter_mut().find(|a| a.client.id() == att)?;
        let mut outs = Vec::new();
        if !me.told_left_out {
            me.told_left_out = true;
            let left_out = record.left_out();
            if me.cursor <= record.first() && left_out.entries > 0 {
                outs.push(Out::Notify(
                    Arc::from(HISTORY_LEFT_OUT),
                    left_out_params(id, left_out),
                ));
            }
        }
        if !me.resend.is_empty() {
            due(&mut me.owed, me.cursor, &mut outs);
            for ask in me.resend.drain(..) {
                if !ask.is_answered() {
                    outs.push(Out::Ask(ask));
                }
            }
        }
        let mut upto = me.cursor.max(record.first());
        for (seq, entry) in record.since(me.cursor).take(BATCH) {
            due(&mut me.owed, seq, &mut outs);
            render(entry, seq, &me.client, (id, life), &mut outs);
            upto = seq + 1;
        }
        if upto == record.end() {
            due(&mut me.owed, upto, &mut outs);
        }
        me.cursor = upto;
        Some(Taken { outs, upto, closed })
    }

    /// Client `att` got every entry before `upto`.
    pub(super) fn delivered(&mut self, att: u64, upto: u64, room: Room) {
        if self.attached.iter().any(|a| a.client.id() == att) {
            self.delivered = self.delivered.max(upto);
        }
        self.forget_what_can_go(room, 0);
    }

    // --- Within the record.

    /// Whether the next entry can go straight to its one client (`to`, when given): it is
    /// the only one attached, has got everything, is owed nothing, and `claim` gets its claim
    /// on sending. Its place moves past the entry (which the caller appends).
    fn direct<G>(
        &mut self,
        to: Option<u64>,
        claim: impl FnOnce(&C) -> Option<G>,
    ) -> Option<(C, G)> {
        let end = self.record.end();
        let [only] = &mut self.attached[..] else {
            return None;
        };
        if only.cursor != end
            || !only.owed.is_empty()
            || !only.told_left_out
            || to.is_some_and(|to| to != only.client.id())
        {
            return None;
        }
        let guard = claim(&only.client)?;
        only.cursor = end + 1;
        Some((only.client.clone(), guard))
    }

    /// Makes room for `size` more bytes as far as it can: whether they fit now.
    fn fits(&mut self, room: Room, size: usize) -> bool {
        let room = self.forget_what_can_go(room, size);
        let held = self.record.bytes();
        held == 0 || (held + size <= room.record && room.held + size <= room.records)
    }

    /// Forgets what every attached client has, once some client got it, as far as the
    /// limits ask to make room for `size` more bytes (all of it while the layer is over its
    /// own limit). While no client is attached, only whole turns go: the turn going on stays
    /// whole for the client that takes the session back (its producer waits instead). The
    /// room as it is after.
    fn forget_what_can_go(&mut self, mut room: Room, size: usize) -> Room {
        let below = self
            .attached
            .iter()
            .map(|a| a.cursor)
            .fold(self.delivered, u64::min);
        let limit = if room.held + size > room.records {
            0
        } else {
            room.record.saturating_sub(size)
        };
        let freed = self.record.forget(below, limit, self.attached.is_empty());
        self.freed += freed;
        room.held = room.held.saturating_sub(freed);
        room
    }

    /// Appends and wakes the deliveries: its sequence number.
    fn push(&mut self, entry: Entry) -> u64 {
        let seq = self.push_quietly(entry);
        self.woken = Some(seq + 1);
        seq
    }

    /// Appends without waking anyone: its sequence number.
    fn push_quietly(&mut self, entry: Entry) -> u64 {
        let (seq, size) = self.record.push(entry);
        self.grew += size;
        seq
    }
}

#[cfg(test)]
mod model;
