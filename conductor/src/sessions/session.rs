//! One session of the layer: the adapter around its [`SessionCore`] (`core.rs`), which
//! decides everything about it — this file does the I/O the core hands back: a task per
//! attachment sends a client its batches, the producer waits for room, one timekeeper task
//! tells the core the time ([`keep_time`]) and refuses the requests and ends the session it
//! says to, and the journal is written what the core appended.
//!
//! Everything a client gets of a session goes through its attachment's task, in the record's
//! order: notifications, the answers to its own requests about the session (each placed in the
//! record where it belongs: a prompt's answer where its turn ends, a loaded session's after its
//! replay), and the agent's requests. So an answer never overtakes what the session streamed
//! before it, and a client that attaches late gets the record from its oldest entry held, then
//! the live stream, with nothing twice and nothing missing. When one client is attached and
//! has everything, an update goes to it straight from the chain's task, past no other task.
//!
//! Memory is bounded in bytes per session ([`Limits::record`]) and per layer
//! ([`Limits::records`]); while the record has no room, [`Session::append`] waits — which is
//! how a session streaming to nobody slows its agent (the chain's connection stops being
//! read) and never loses an update of the turn a returning client takes up.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use sacp::jsonrpc::{Connection, Error, RawJson, Responder};
use sacp::protocol::content::Accepts;
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use super::Limits;
use super::ask::Ask;
pub(super) use super::core::From;
use super::core::{
    Appended, Asker, Client, Deadlines, Detached, Out, Queue, Room, SessionCore, Ticked,
};
use super::notices::{DETACHED, detached_params};
use super::turns::Admit;
use super::who::{HistoryPolicy, Who};
use crate::journal::Journal;
use crate::lock::lock;

mod journal;

pub(crate) use self::journal::history_of;

/// What the layer does with a session that had no controller and nothing new for the
/// detached timeout: ends it.
pub(crate) type OnIdle = Box<dyn Fn(Arc<Session>) + Send + Sync>;

/// What every session of a layer shares: the limits, the bytes all records hold, the clock
/// their deadlines are told, and what ends a session that expired.
pub(crate) struct Shared {
    pub(super) limits: Limits,
    /// Where every session's entries are written as they come, if anywhere.
    pub(super) journal: Option<Journal>,
    total: AtomicUsize,
    /// Woken whenever a record frees bytes or a client takes entries.
    room: Notify,
    /// What the sessions' deadlines count from (tokio's clock: paused in a test, it stands).
    epoch: tokio::time::Instant,
    on_idle: OnIdle,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("limits", &self.limits)
            .field("held", &self.held())
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub(super) fn new(limits: Limits, journal: Option<Journal>, on_idle: OnIdle) -> Shared {
        Shared {
            limits,
            journal,
            total: AtomicUsize::new(0),
            room: Notify::new(),
            epoch: tokio::time::Instant::now(),
            on_idle,
        }
    }

    /// The bytes all records hold.
    pub(crate) fn held(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    fn room(&self) -> Room {
        Room {
            record: self.limits.record,
            records: self.limits.records,
            held: self.held(),
        }
    }

    fn deadlines(&self) -> Deadlines {
        Deadlines {
            ask: self.limits.ask_timeout,
            detached: self.limits.detached_timeout,
        }
    }
}

/// A client's hold on a session: its connection, and how it is told a turn ended.
#[derive(Debug)]
pub(crate) struct Attachment {
    pub(super) id: u64,
    pub(super) conn: Connection,
    /// Whether the client speaks ACP v1 (see [`Client::v1`]).
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
    /// The content its client takes: what the session streams is adapted to it as it is sent
    /// (see `sacp::protocol::content`; the chain itself transforms nothing for the layer).
    takes: Arc<Accepts>,
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
        takes: Arc<Accepts>,
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
            takes,
        })
    }

    /// `params` of a `method` message for its client, their content made what it takes.
    pub(super) fn adapted(&self, method: &str, params: RawJson) -> RawJson {
        match sacp::protocol::content::adapt(method, &params, &self.takes) {
            Some((adapted, _)) => adapted,
            None => params,
        }
    }
}

impl Client for Arc<Attachment> {
    fn id(&self) -> u64 {
        self.id
    }

    fn v1(&self) -> bool {
        self.v1
    }

    fn takes(&self) -> Option<&Accepts> {
        Some(&self.takes)
    }

    fn positions(&self) -> bool {
        self.positions
    }

    fn who(&self) -> &Who {
        &self.who
    }
}

type Core = SessionCore<Arc<Attachment>, Responder>;

/// A notification as the chain sent it, for [`Session::append`].
#[derive(Debug)]
pub(super) struct Wire {
    /// Its method, sent on as it is to a client taking it straight away.
    pub(super) method: String,
    /// Whether its params still have the chain's top-level `sessionId`, to be renamed as
    /// they are recorded.
    pub(super) rename: bool,
}

/// The claim on sending to a client straight away, outside its delivery task.
type Sending = tokio::sync::OwnedMutexGuard<()>;

fn claim(att: &Arc<Attachment>) -> Option<Sending> {
    att.sending.clone().try_lock_owned().ok()
}

/// One session: see the module docs.
#[derive(Debug)]
pub(crate) struct Session {
    /// The id the editor knows it by.
    pub(crate) id: String,
    /// The id its chain knows it by.
    pub(crate) own: String,
    shared: Arc<Shared>,
    core: Mutex<Core>,
    /// The record's end, sent whenever it grows for the deliveries.
    appended: watch::Sender<u64>,
    /// How many controllers are attached (what its timekeeper watches).
    attached: watch::Sender<usize>,
    /// Bumped when a turn ends, a queued prompt is withdrawn or the session closes: what a
    /// queued prompt waits on.
    turn_changed: watch::Sender<u64>,
    /// The number its next entry gets in the journal.
    journaled: AtomicU64,
    /// The epoch under which this conductor holds it in the journal: 1 for a session born
    /// here, a claim's for one taken from the journal.
    epoch: AtomicU64,
    /// Its id as the journal's records carry it (shared, not copied for each).
    key: Arc<str>,
    /// This life of its record, in the positions its clients are told (see `position.rs`).
    pub(super) life: u64,
    /// Where it began (`{cwd, mcpServers}`), kept while a journal writes it down: what its
    /// subagents' sessions began in too.
    place: Mutex<Option<Value>>,
    /// A subagent's session restored from the journal, which its agent holds as a session of
    /// its own: closed at the agent when its parent is (the agent would not know to).
    pub(super) close_with_parent: AtomicBool,
}

impl Session {
    pub(super) fn new(id: String, own: String, shared: Arc<Shared>) -> Arc<Session> {
        let life = new_life();
        let key: Arc<str> = Arc::from(id.as_str());
        let deadlines = shared.deadlines();
        let session = Arc::new(Session {
            life,
            core: Mutex::new(SessionCore::new(key.clone(), life, deadlines)),
            key,
            id,
            own,
            shared,
            appended: watch::channel(0).0,
            attached: watch::channel(0).0,
            turn_changed: watch::channel(0).0,
            journaled: AtomicU64::new(0),
            epoch: AtomicU64::new(1),
            place: Mutex::default(),
            close_with_parent: AtomicBool::new(false),
        });
        tokio::spawn(keep_time(
            Arc::downgrade(&session),
            session.appended.subscribe(),
            session.attached.subscribe(),
        ));
        session
    }

    /// Tells the core an event, then does what it leaves to do after every event: the
    /// journal is written what it appended, the layer's count of bytes moves, the deliveries
    /// and the producers waiting for room are woken.
    fn with<T>(&self, event: impl FnOnce(&mut Core, Room) -> T) -> T {
        let mut core = lock(&self.core);
        let out = event(&mut core, self.shared.room());
        for entry in core.unjournaled() {
            self.journal(entry);
        }
        let (grew, freed) = core.bytes_moved();
        if grew > 0 {
            self.shared.total.fetch_add(grew, Ordering::Relaxed);
        }
        if freed > 0 {
            self.shared.total.fetch_sub(freed, Ordering::Relaxed);
            self.shared.room.notify_waiters();
        }
        if let Some(end) = core.woken() {
            self.appended.send_replace(end);
        }
        out
    }

    /// Tells the watchers how many controllers are attached now.
    fn count(&self, core: &Core) {
        self.attached.send_replace(core.controllers());
    }

    /// A prompt of attachment `att`: its turn begins now, waits for the running one, or is
    /// refused (see `turns.rs`).
    pub(super) fn admit(&self, att: &Attachment, responder: Responder) -> Admit<Responder> {
        self.with(|core, _| core.admit(att.id, &att.who.connection, responder))
    }

    /// Waits for the turn of the prompt queued with `ticket`: its number once it began, or
    /// the responder back if the prompt was withdrawn (its client cancelled, the session
    /// closed).
    pub(super) async fn queued_turn(
        &self,
        ticket: u64,
        att: &Attachment,
        mut responder: Responder,
    ) -> Result<u64, Responder> {
        let mut changed = self.turn_changed.subscribe();
        loop {
            changed.borrow_and_update();
            match self.with(|core, _| core.queued(ticket, att.id, &att.who.connection, responder)) {
                Queue::Began(turn) => return Ok(turn),
                Queue::Withdrawn(responder) => {
                    self.turn_changed.send_modify(|n| *n += 1);
                    return Err(responder);
                }
                Queue::Wait(back) => responder = back,
            }
            if changed.changed().await.is_err() {
                return Err(responder);
            }
        }
    }

    /// Withdraws the prompts attachment `att` queued (its `session/cancel`).
    pub(super) fn withdraw(&self, att: u64) {
        if self.with(|core, _| core.withdraw(att)) {
            self.turn_changed.send_modify(|n| *n += 1);
        }
    }

    /// The asker of turn `turn`, if the turn has not ended yet.
    pub(super) fn take_turn(&self, turn: u64) -> Option<Asker<Responder>> {
        let asker = self.with(|core, _| core.take_turn(turn));
        self.turn_changed.send_modify(|n| *n += 1);
        asker
    }

    /// The askers of every turn in flight, which end now.
    pub(super) fn take_turns(&self) -> Vec<Asker<Responder>> {
        let askers = self.with(|core, _| core.take_turns());
        self.turn_changed.send_modify(|n| *n += 1);
        askers
    }

    /// Whether a turn runs, whoever began it.
    pub(super) fn turns_in_flight(&self) -> bool {
        lock(&self.core).running()
    }

    pub(super) fn set_setup(&self, result: &RawJson) {
        lock(&self.core).set_setup(result);
    }

    pub(super) fn setup(&self) -> Option<RawJson> {
        lock(&self.core).setup()
    }

    /// Attaches a client from `from` on, and starts its delivery (see
    /// [`SessionCore::attach`]). Whether it could attach (not to a closed session).
    pub(super) fn attach(
        self: &Arc<Self>,
        att: Arc<Attachment>,
        from: From,
        first: Option<(Responder, Result<RawJson, Error>, From)>,
    ) -> bool {
        let attached = self.with(|core, _| {
            let attached = core.attach(att.clone(), from, first);
            self.count(core);
            attached
        });
        match attached {
            Ok(()) => {
                tokio::spawn(self.clone().deliver(att));
                true
            }
            Err(responder) => {
                if let Some(responder) = responder {
                    responder.answer_error(self.gone());
                }
                false
            }
        }
    }

    /// Attaches `att` by `session/attach` with `policy` (see [`SessionCore::join`]), answered
    /// with what `answer` makes of its history and the clients connected. Whether it could
    /// attach (not to a closed session).
    pub(super) fn join(
        self: &Arc<Self>,
        att: Arc<Attachment>,
        policy: HistoryPolicy,
        answer: impl FnOnce(Option<Vec<Value>>, Vec<Value>) -> Result<RawJson, Error>,
        responder: Responder,
    ) -> bool {
        let joined = self.with(|core, _| {
            let joined = core.join(att.clone(), policy, answer, responder);
            self.count(core);
            joined
        });
        match joined {
            Ok(()) => {
                att.poke.notify_one();
                tokio::spawn(self.clone().deliver(att));
                true
            }
            Err(responder) => {
                responder.answer_error(self.gone());
                false
            }
        }
    }

    /// Detaches a client (see [`SessionCore::detach`]). Whether no controller is attached any
    /// more.
    pub(super) fn detach(&self, att: u64) -> bool {
        let (gone, left) = self.with(|core, _| {
            let gone = core.detach(att);
            self.count(core);
            (gone, core.controllers())
        });
        if let Some(gone) = gone {
            let_go(gone);
        }
        left == 0
    }

    /// Owes client `att` an answer at the record's end as it is now (after everything the
    /// session streamed before it), for a request about the session.
    pub(super) fn answer(&self, att: u64, responder: Responder, result: Result<RawJson, Error>) {
        match self.with(|core, _| core.answer(att, responder, result)) {
            Ok(client) => client.poke.notify_one(),
            // It left: nobody to answer.
            Err(responder) => drop(responder),
        }
    }

    /// `params` of a chain's message about this session, its top-level `sessionId` the
    /// editor's (see [`SessionCore::renamed`]).
    pub(super) fn renamed(&self, params: &RawJson) -> RawJson {
        lock(&self.core).renamed(params)
    }

    /// Appends a notification about the session, waiting while the record has no room for it
    /// (see the module docs). Dropped if the session is closed. A notification the chain sent
    /// comes with its [`Wire`]: the method a caught-up client is sent, and whether its params
    /// are still to be renamed.
    pub(super) async fn append(
        &self,
        method: Arc<str>,
        params: RawJson,
        echo: Option<u64>,
        wire: Option<Wire>,
    ) {
        let mut rename = wire.as_ref().is_some_and(|w| w.rename);
        let mut update = (method, params);
        // Waiting for room is armed only once there was none (arming costs on every update).
        let mut room = None;
        loop {
            if let Some(room) = room.as_mut() {
                let room: &mut std::pin::Pin<Box<tokio::sync::futures::Notified<'_>>> = room;
                room.as_mut().enable();
            }
            let (method, params) = update;
            let appended = self.with(|core, room| {
                let params = if rename {
                    core.renamed(&params)
                } else {
                    params
                };
                core.append(method, params, echo, room, claim)
            });
            match appended {
                Appended::Closed | Appended::Queued => return,
                // The one client takes it now, from here: no task is woken for it.
                Appended::Direct(att, sending, out) => {
                    if let Some((method, params)) = out {
                        let method = wire.map_or_else(|| method.to_string(), |w| w.method);
                        let params = att.adapted(&method, params);
                        let _ = att.conn.notify_raw(method, Some(params)).await;
                    }
                    drop(sending);
                    return;
                }
                Appended::Full(method, params) => {
                    // Renamed already.
                    rename = false;
                    update = (method, params);
                    match room.take() {
                        Some(armed) => {
                            // No room freed for a while: a client that takes nothing holds it.
                            let stall = self.shared.limits.stall;
                            if tokio::time::timeout(stall, armed).await.is_err() {
                                self.shed_stalled();
                            }
                        }
                        None => room = Some(Box::pin(self.shared.room.notified())),
                    }
                }
            }
        }
    }

    /// The record is full and nothing was freed for [`Limits::stall`]: the clients the core
    /// finds furthest behind are detached and told so with `_sacp/detached`.
    fn shed_stalled(&self) {
        let shed = self.with(|core, room| {
            let shed = core.shed_stalled(room);
            self.count(core);
            shed
        });
        self.shared.room.notify_waiters();
        for gone in shed {
            let att = gone.client.clone();
            let_go(gone);
            tracing::warn!(session = %self.id, client = %att.who.id, "a client took nothing of a full record for {}: detached", humantime::format_duration(self.shared.limits.stall));
            let params = detached_params(&self.id);
            tokio::spawn(async move {
                let _ = att.conn.notify_raw(DETACHED, Some(params)).await;
            });
        }
    }

    /// A turn ended with `result` (see [`SessionCore::turn_ended`]).
    pub(super) fn turn_ended(
        &self,
        asker: Option<Asker<Responder>>,
        result: Result<RawJson, Error>,
    ) {
        if let Some((responder, result, sending)) =
            self.with(|core, _| core.turn_ended(asker, result, claim))
        {
            responder.answer_raw(result);
            drop(sending);
        }
    }

    /// Records client `echo`'s prompt (`params`, with the editor's ids) for the other clients
    /// and a later replay, waiting while the record has no room.
    pub(super) async fn prompted(&self, mut params: RawJson, echo: u64) {
        loop {
            let room = self.shared.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.with(|core, room| core.prompted(params, echo, room)) {
                Ok(()) => return,
                Err(back) => params = back,
            }
            room.await;
        }
    }

    /// Holds a request of the agent's until a client answers it, or the deadline passes with
    /// no controller attached (see [`keep_time`]).
    pub(super) fn ask(&self, ask: Arc<Ask>) {
        if !self.with(|core, _| core.ask(ask.clone())) {
            ask.refuse(&format!("the session {} is closed", self.id));
        }
    }

    /// Tells every client, after what was queued for it, that the conductor `by` holds the
    /// session now.
    pub(super) fn moved(&self, by: &str) {
        self.with(|core, _| core.moved(by));
    }

    /// Closes the session: what was queued for its clients still goes out, nothing more
    /// comes, the requests it held are refused.
    pub(super) fn close(&self) {
        for ask in self.with(|core, _| core.close()) {
            ask.refuse(&format!("the session {} was closed", self.id));
        }
        self.shared.room.notify_waiters();
        self.turn_changed.send_modify(|n| *n += 1);
        // Its timekeeper sees it closed and ends.
        self.attached.send_modify(|_| {});
    }

    /// The sequence number the record's next entry gets.
    pub(super) fn end(&self) -> u64 {
        lock(&self.core).end()
    }

    pub(super) fn is_closed(&self) -> bool {
        lock(&self.core).is_closed()
    }

    fn gone(&self) -> Error {
        Error::invalid_params(format!("the session {} is closed", self.id))
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
            let Some(taken) = self.with(|core, _| core.take(att.id)) else {
                return;
            };
            if taken.outs.is_empty() {
                drop(sending);
                if taken.closed {
                    return;
                }
                tokio::select! {
                    _ = appended.changed() => {}
                    () = &mut poked => {}
                    () = att.stop.cancelled() => return,
                }
                continue;
            }
            for out in taken.outs {
                if !perform(&att, out).await {
                    return;
                }
            }
            drop(sending);
            self.with(|core, room| core.delivered(att.id, taken.upto, room));
            self.shared.room.notify_waiters();
        }
    }
}

/// What its record still holds leaves the layer's count with it.
impl Drop for Session {
    fn drop(&mut self) {
        let held = lock(&self.core).bytes();
        self.shared.total.fetch_sub(held, Ordering::Relaxed);
        self.shared.room.notify_waiters();
    }
}

/// A session's timekeeper: it tells the core the time when something its deadlines run from
/// may have changed — a client came or left; while no controller is attached, the record grew
/// (a request of the agent's with it) — and when the next deadline falls, then refuses the
/// requests nobody was there to answer and hands the layer the session that expired. Ends
/// with the session (closed, or gone).
async fn keep_time(
    session: std::sync::Weak<Session>,
    mut appended: watch::Receiver<u64>,
    mut attached: watch::Receiver<usize>,
) {
    loop {
        let Some(me) = session.upgrade() else {
            return;
        };
        let now = me.shared.epoch.elapsed();
        let Ticked {
            refuse,
            expired,
            next,
            alone,
        } = me.with(|core, _| core.tick(now));
        for ask in refuse {
            let why = format!(
                "no editor was attached to session {} for {} to answer its {}",
                me.id,
                humantime::format_duration(me.shared.limits.ask_timeout),
                ask.method
            );
            if ask.refuse(&why) {
                tracing::info!(session = %me.id, method = %ask.method, "{why}: refused");
            }
        }
        if expired {
            tracing::info!(session = %me.id, "no client for {}: ending it", humantime::format_duration(me.shared.limits.detached_timeout));
            let shared = me.shared.clone();
            (shared.on_idle)(me);
            return;
        }
        if me.is_closed() {
            return;
        }
        let deadline = next.map(|next| me.shared.epoch + next);
        drop(me);
        appended.borrow_and_update();
        attached.borrow_and_update();
        tokio::select! {
            () = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            } => {}
            changed = appended.changed(), if alone => if changed.is_err() { return },
            changed = attached.changed() => if changed.is_err() { return },
        }
    }
}

/// A client the core let go: its delivery stops, the answers it was owed go unanswered (its
/// connection is told nothing more of the session), the clients that inherit its requests
/// are woken.
fn let_go(gone: Detached<Arc<Attachment>, Responder>) {
    gone.client.stop.cancel();
    drop(gone.owed);
    for heir in gone.heirs {
        heir.poke.notify_one();
    }
}

/// Does one thing for client `att`; `false` once its connection is gone.
async fn perform(att: &Attachment, out: Out<Responder>) -> bool {
    match out {
        Out::Notify(method, params) => {
            let params = att.adapted(&method, params);
            att.conn.notify_raw(&*method, Some(params)).await.is_ok()
        }
        Out::Answer(responder, result) => {
            responder.answer_raw(result);
            true
        }
        Out::Ask(ask) => {
            let observer = att.who.is_observer().then(|| att.who.id.clone());
            let who = att.who.clone();
            let params = att.adapted(&ask.method, ask.params.clone());
            let pending = att.conn.request_raw(ask.method.clone(), Some(params));
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

/// A number for a new life of a session's record: random, so that a position of a life before
/// (another conductor's, or this one's before a restore) names no entry of this one.
fn new_life() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}
