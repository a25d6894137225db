//! The session layer: between editors' connections and chains. Connections attach to
//! sessions; sessions live in chains; a chain lives as long as its sessions (and the
//! connection that started it), not as long as the connection that started it alone.
//!
//! `conductor agent --listen` stands on it (see `listen.rs`): every network connection is a
//! client of the layer ([`client`]), read by the editor-facing hub ([`hub`], which the session
//! router stands on too), and the layer is the editor of every chain
//! ([`chain::ChainLink`]), a connection's own started at its `initialize` — or, when a live
//! chain answered the same `initialize` already (a client coming back for its sessions), that
//! answer is the client's and its own chain starts only once it asks for something a session
//! of another chain cannot give (a new session, say). What a connection
//! owns stays with it — its JSON-RPC ids, its requests in flight — and what a session owns is
//! the layer's: its record of what the editor side saw, the clients attached to it, the
//! answers they are owed, its turns, the agent's requests waiting for an editor. Every
//! decision about those is one state machine's, with no I/O ([`core::SessionCore`]); the
//! session's adapter ([`session::Session`]) holds it behind one lock and does what it hands
//! back, and the modules are layered so (`cargo xtask layers`): what a client is ([`who`]),
//! positions, turns, an agent's request ([`ask`]), the record, what the layer says itself
//! ([`notices`]), the core, the session's adapter, then the connections' adapters.
//!
//! - **Ids.** The editor knows a session as `own@tag`: the chain's own id, and the chain's
//!   tag, twelve random hex digits — so that two chains' agents that number their sessions
//!   alike (`session-1`) never give a client the same id, and an id from another conductor
//!   never names a session here. Ids are rewritten both ways wherever they travel
//!   ([`rewrite`]); an update's top-level id by a scan of its text, without a parse.
//!   Every session is in one [`table`], by the editor's id and by its chain's own: the same
//!   table the session router (`conductor route`) keeps its backends' sessions in, and the
//!   same rewriting.
//! - **A dropped connection detaches, it does not end.** Its sessions go on: the turn in
//!   progress, the chain, the agent process. What they stream is kept in their records; the
//!   requests the agent makes of an editor wait for one ([`ask`]), at most
//!   [`Limits::ask_timeout`] while no client is attached, then get what an editor that
//!   refuses would answer. A session with no client and nothing new for
//!   [`Limits::detached_timeout`] ends; a chain with no session and no client of its own ends
//!   as a chain ends when its editor leaves (its grace, `SIGTERM`, nothing left).
//! - **Taking a session back.** `session/load` (or `session/resume`) of a session live here
//!   attaches the connection to it instead of reaching the agent: the layer answers, after
//!   replaying the record as the agent's own load would (for `load`; `resume` replays
//!   nothing), then the live stream follows. A turn the dropped connection started ends for
//!   the new one (v1) with the layer's `_sacp/turn_ended` notification
//!   (`{"sessionId", "stopReason"}`, or `{"sessionId", "error"}`), which a client that does
//!   not know it ignores without missing anything else; the agent's own answer goes to the
//!   connection that asked, if it is still there. An id of this layer's shape whose chain is
//!   not here gets `-32002` naming it — with `data.heldBy` when another conductor sharing the
//!   journal holds it (see [`restore`]) —; any other id is passed to the client's own chain (an
//!   agent's own saved session), claimed in the journal first.
//! - **Memory** is bounded in bytes ([`Limits::record`] per session, [`Limits::records`] for
//!   the layer): see [`session`].

mod ask;
mod attach;
mod chain;
mod client;
mod core;
pub(crate) mod hub;
mod notices;
mod offers;
mod port;
mod position;
mod record;
mod requests;
mod restore;
pub(crate) mod rewrite;
mod session;
pub(crate) mod table;
mod turns;
mod who;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sacp::jsonrpc::{Error, RawJson};

use self::chain::ChainLink;
pub(crate) use self::chain::{Started, Starter};
use self::client::Client;
pub(crate) use self::port::Port;
use self::rewrite::Place;
use self::session::{Attachment, From, Session, Shared};
use self::table::Table;
use crate::journal::Journal;
use crate::lock::lock;

/// What a client did with a session of a chain — attached, left, prompted, cancelled,
/// answered a request of the agent's: what the chain's trace records (`"type": "session"`),
/// so that a trace says which client sent what.
#[derive(Debug, Clone)]
pub(crate) struct Note {
    /// The session, by the editor's id.
    pub(crate) session: String,
    /// `attached`, `detached`, `prompted`, `cancelled`, `answered`, or how the session was
    /// restored from the journal (`restored by session/resume`, `restored by session/load`,
    /// `restored with its history`).
    pub(crate) event: &'static str,
    /// The client's connection.
    pub(crate) connection: String,
    /// The client's id (its own, or its connection's).
    pub(crate) client: String,
    /// `controller` or `observer`.
    pub(crate) role: &'static str,
    /// For `answered`: the method of the request it answered.
    pub(crate) method: Option<String>,
}

/// Where a chain hears its [`Note`]s, for its trace: handed to the conductor's loop in its
/// options (which are cloned, hence the cell), taken once.
#[derive(Debug, Clone)]
pub(crate) struct Notes(Arc<Mutex<Option<tokio::sync::mpsc::Receiver<Note>>>>);

impl Notes {
    /// A chain's notes (its sender is the layer's): at most `bound` wait for its loop;
    /// beyond that they are dropped, as the trace drops what it cannot keep up with.
    pub(crate) fn channel(bound: usize) -> (tokio::sync::mpsc::Sender<Note>, Notes) {
        let (tx, rx) = tokio::sync::mpsc::channel(bound);
        (tx, Notes(Arc::new(Mutex::new(Some(rx)))))
    }

    pub(crate) fn take(&self) -> Option<tokio::sync::mpsc::Receiver<Note>> {
        lock(&self.0).take()
    }
}

/// Closes the session `own` at `link`'s agent, in the background; what the agent answers
/// changes nothing here (the session has ended in the layer already).
fn close_at_agent(link: Arc<ChainLink>, own: String) {
    let Ok(params) = RawJson::to_raw(&serde_json::json!({"sessionId": own})) else {
        return;
    };
    tokio::spawn(async move {
        if let Ok(waiting) = link.request("session/close", Some(params)).await
            && let Err(e) = chain::answer_of(waiting).await
        {
            tracing::debug!(
                session = own,
                "the agent did not close a restored subagent's session: {e}"
            );
        }
    });
}

/// `-32002`: the session is not held here (ACP's "resource not found").
pub(crate) const NOT_HERE: i64 = -32002;

/// The session layer's bounds and deadlines.
#[derive(Debug, Clone)]
pub struct Limits {
    pub(crate) record: usize,
    pub(crate) records: usize,
    pub(crate) detached_timeout: Duration,
    pub(crate) ask_timeout: Duration,
    pub(crate) stall: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            record: 32 << 20,
            records: 256 << 20,
            detached_timeout: Duration::from_secs(30 * 60),
            ask_timeout: Duration::from_secs(5 * 60),
            stall: Duration::from_secs(1),
        }
    }
}

impl Limits {
    /// The bytes one session's record may hold (default 32 MiB): what it streamed that no
    /// client has taken yet, and as much of its history as fits.
    pub fn record(mut self, bytes: usize) -> Limits {
        self.record = bytes.max(1);
        self
    }

    /// The bytes all sessions' records may hold together (default 256 MiB).
    pub fn records(mut self, bytes: usize) -> Limits {
        self.records = bytes.max(1);
        self
    }

    /// How long a session with no client attached and nothing new lives on (default 30
    /// minutes).
    pub fn detached_timeout(mut self, value: Duration) -> Limits {
        self.detached_timeout = value;
        self
    }

    /// How long a session whose record is full waits for its clients before it detaches
    /// those furthest behind (when another client is further on; default 1 second).
    pub fn stall(mut self, value: Duration) -> Limits {
        self.stall = value;
        self
    }

    /// How long a request of the agent's for an editor waits while no client is attached
    /// (default 5 minutes).
    pub fn ask_timeout(mut self, value: Duration) -> Limits {
        self.ask_timeout = value;
        self
    }
}

/// The layer: see the module docs.
pub(crate) struct Layer {
    shared: Arc<Shared>,
    starter: Box<dyn Starter>,
    /// Every session, by the editor's id and by its chain's.
    sessions: Mutex<Table<ChainLink, Arc<Session>>>,
    /// Every live chain, by its tag.
    chains: Mutex<HashMap<String, Arc<ChainLink>>>,
    /// Ids of attachments.
    next: AtomicU64,
    /// Every chain's life, until it ended.
    lives: tokio_util::task::TaskTracker,
    /// Sessions that ended here lately, and why: what a later `session/load` of one is told.
    ended: Mutex<Ended>,
}

/// The sessions that ended last (at most [`Ended::KEPT`]), by the editor's id, with why.
#[derive(Debug, Default)]
struct Ended {
    order: std::collections::VecDeque<String>,
    why: HashMap<String, &'static str>,
}

impl Ended {
    const KEPT: usize = 4096;

    fn insert(&mut self, id: &str, why: &'static str) {
        if self.why.insert(id.to_owned(), why).is_none() {
            self.order.push_back(id.to_owned());
        }
        while self.order.len() > Self::KEPT {
            if let Some(old) = self.order.pop_front() {
                self.why.remove(&old);
            }
        }
    }
}

impl std::fmt::Debug for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Layer")
            .field("sessions", &lock(&self.sessions).len())
            .field("chains", &lock(&self.chains).len())
            .finish_non_exhaustive()
    }
}

impl Layer {
    pub(crate) fn new(
        limits: Limits,
        journal: Option<Journal>,
        starter: impl Starter,
    ) -> Arc<Layer> {
        let layer = Arc::new_cyclic(|me: &std::sync::Weak<Layer>| {
            let me = me.clone();
            let on_idle = Box::new(move |session: Arc<Session>| {
                if let Some(layer) = me.upgrade() {
                    layer.expired(&session);
                }
            });
            Layer {
                shared: Arc::new(Shared::new(limits, journal, on_idle)),
                starter: Box::new(starter),
                sessions: Mutex::default(),
                chains: Mutex::default(),
                next: AtomicU64::new(1),
                lives: tokio_util::task::TaskTracker::new(),
                ended: Mutex::default(),
            }
        });
        layer.watch_deposed();
        layer
    }

    /// Ends every chain, as when their editors leave (a chain that heard the conductor's
    /// `SIGTERM` ends on its own), and waits for them, `within` at most.
    pub(crate) async fn finish(&self, within: Duration) {
        self.lives.close();
        for link in self.chains() {
            link.close();
        }
        if tokio::time::timeout(within, self.lives.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "chains still ending after {}",
                humantime::format_duration(within)
            );
        }
    }

    /// Serves one client's connection until it ends; then it detaches from its sessions.
    pub(crate) async fn serve(
        self: &Arc<Self>,
        name: String,
        transport: impl sacp::jsonrpc::Transport,
    ) {
        let client = Client::new(name);
        let conn = hub::serve(
            self.clone(),
            client.clone(),
            format!("editor {}", client.name),
            transport,
        );
        client.set_conn(conn.clone());
        let _ = conn.closed().await;
        self.client_left(&client);
    }

    fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// A new attachment of `client`, as a controller under its connection's name.
    fn attachment(&self, client: &Client) -> Result<Arc<Attachment>, Error> {
        let who = attach::Who {
            id: client.name.clone(),
            connection: client.name.clone(),
            info: client.info(),
            role: attach::Role::Controller,
        };
        self.attachment_as(client, who)
    }

    /// A new attachment of `client`, as `who`.
    fn attachment_as(&self, client: &Client, who: attach::Who) -> Result<Arc<Attachment>, Error> {
        let conn = client
            .conn()
            .ok_or_else(|| Error::internal_error("the client is not connected"))?;
        Ok(Attachment::new(
            self.next_id(),
            conn.clone(),
            client.is_v1(),
            client.wants_positions(),
            who,
            client.takes(),
        ))
    }

    /// The chain of `client`, started if it has none. A client whose `initialize` was
    /// answered without a chain has it replayed to its chain first, the answer kept for the
    /// next such client.
    fn own_chain(self: &Arc<Self>, client: &Arc<Client>) -> Arc<ChainLink> {
        client.chain_or(|| {
            let link = ChainLink::start(self, &*self.starter, client);
            lock(&self.chains).insert(link.tag.clone(), link.clone());
            if let Some(params) = client.take_deferred_init() {
                tracing::info!(client = %client.name, chain = %link.tag, "starting the client's chain: its initialize first");
                link.initialize_first(params);
            }
            link
        })
    }

    fn session(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.sessions).get(id).map(|e| e.value.clone())
    }

    /// `link`'s session `own`.
    fn session_in(&self, link: &Arc<ChainLink>, own: &str) -> Option<Arc<Session>> {
        lock(&self.sessions).own(link, own).map(|e| e.value.clone())
    }

    /// `link`'s sessions.
    fn sessions_in(&self, link: &Arc<ChainLink>) -> Vec<Arc<Session>> {
        lock(&self.sessions)
            .of_chain(link)
            .map(|e| e.value.clone())
            .collect()
    }

    /// Whether nothing keeps `link`: no client of its own, no session.
    fn unused(&self, link: &Arc<ChainLink>) -> bool {
        link.origin().is_none() && lock(&self.sessions).count(link) == 0
    }

    fn chain(&self, tag: &str) -> Option<Arc<ChainLink>> {
        lock(&self.chains).get(tag).cloned()
    }

    fn chains(&self) -> Vec<Arc<ChainLink>> {
        lock(&self.chains).values().cloned().collect()
    }

    /// The session `own` of `link`: the one the layer has, or a new one (named `own@tag`,
    /// or `editor_id` when given: an id the editor chose), attached to the client that
    /// started the chain when it is born from the chain's own message; a subagent's session
    /// is entered as `parent`'s child, and ends when `parent` is closed. Whether it is new.
    fn learn(
        &self,
        link: &Arc<ChainLink>,
        own: &str,
        editor_id: Option<&str>,
        parent: Option<&str>,
    ) -> (Arc<Session>, bool) {
        let mut sessions = lock(&self.sessions);
        if let Some(known) = sessions.own(link, own) {
            return (known.value.clone(), false);
        }
        let id = editor_id.map_or_else(|| format!("{own}@{}", link.tag), str::to_owned);
        let session = Session::new(id.clone(), own.to_owned(), self.shared.clone());
        let parent = parent.map(str::to_owned);
        let displaced = sessions.insert(id, link, own.to_owned(), parent, session.clone());
        drop(sessions);
        // An editor's id is learned only when no session has it, so nothing should be
        // displaced; should one be, it ends rather than live on unknown to the table.
        for old in displaced {
            tracing::warn!(session = %old.value.id, "a session's id was taken again: the session that had it ends");
            old.value.close();
        }
        (session, true)
    }

    /// A message of `link`'s, with the editor's ids: the session it is about (learned if it
    /// is new, and then attached to the chain's own client), and its params.
    fn chain_to_editor(
        &self,
        link: &Arc<ChainLink>,
        params: Option<RawJson>,
    ) -> Result<(Option<Arc<Session>>, Option<RawJson>), Error> {
        self.chain_to_editor_for(link, params, None)
    }

    /// [`Layer::chain_to_editor`], a new session attached to `client` (an answer of the chain's
    /// to that client: a fork) rather than to the chain's own client.
    fn chain_to_editor_for(
        &self,
        link: &Arc<ChainLink>,
        params: Option<RawJson>,
        client: Option<&Arc<Client>>,
    ) -> Result<(Option<Arc<Session>>, Option<RawJson>), Error> {
        if let Some(plain) = &params
            && let Some(session) = self.plainly_about(link, plain, client)
        {
            let renamed = session.renamed(plain);
            return Ok((Some(session), Some(renamed)));
        }
        self.renamed_everywhere(link, params, client)
    }

    /// [`Layer::chain_to_editor_for`] for a message that is not [`Layer::plainly_about`] one
    /// session: every place an id can stand, renamed.
    fn renamed_everywhere(
        &self,
        link: &Arc<ChainLink>,
        params: Option<RawJson>,
        client: Option<&Arc<Client>>,
    ) -> Result<(Option<Arc<Session>>, Option<RawJson>), Error> {
        let Some(params) = params else {
            return Ok((None, None));
        };
        let mut about: Option<Arc<Session>> = None;
        let renamed = rewrite::rename_sessions(params, |own, place| match place {
            Place::Session => {
                let session = self.learn_from_chain(link, own, client, None);
                let id = session.id.clone();
                about = Some(session);
                Some(id)
            }
            // The message's own session comes first: a new child is learned as its.
            Place::Child => {
                let child = self.learn_from_chain(link, own, client, about.as_ref());
                Some(child.id.clone())
            }
            Place::Peer => self.session_in(link, own).map(|s| s.id.clone()),
            Place::Listed => Some(format!("{own}@{}", link.tag)),
        })?;
        Ok((about, Some(renamed)))
    }

    /// The session a message of `link`'s is about when its one id is its top-level
    /// `sessionId`, plain — the fast way: nothing else to rename, nothing parsed —; learned
    /// (and attached to `client`) if it is new.
    fn plainly_about(
        &self,
        link: &Arc<ChainLink>,
        params: &RawJson,
        client: Option<&Arc<Client>>,
    ) -> Option<Arc<Session>> {
        let own = params.plain_str("sessionId")?;
        if rewrite::has_other_places(params) {
            return None;
        }
        Some(self.learn_from_chain(link, own, client, None))
    }

    /// [`Layer::learn`] for an id the chain names (a subagent of `parent`, if given): a new
    /// session is attached to `client`, or else to the chain's own client, from its very
    /// first entry; a new subagent's is journaled as its parent's child.
    fn learn_from_chain(
        &self,
        link: &Arc<ChainLink>,
        own: &str,
        client: Option<&Arc<Client>>,
        parent: Option<&Arc<Session>>,
    ) -> Arc<Session> {
        let (session, new) = self.learn(link, own, None, parent.map(|p| p.id.as_str()));
        if new && let Some(parent) = parent {
            session.began_in(parent);
        }
        if new
            && let Some(client) = client.cloned().or_else(|| link.origin())
            && let Ok(att) = self.attachment(&client)
            && session.attach(att.clone(), From::Oldest, None)
        {
            self.attached(&client, &session, &att, Some(link));
        }
        session
    }

    /// `client` holds `session` now (through `att`): it says so to the chain's trace.
    fn attached(
        &self,
        client: &Client,
        session: &Arc<Session>,
        att: &Arc<Attachment>,
        link: Option<&ChainLink>,
    ) {
        client.attached(session, att);
        tracing::info!(session = %session.id, client = %client.name, "attached");
        if let Some(link) = link {
            link.note(&session.id, "attached", &att.who, None);
        }
    }

    /// Ends `session` (`why` it ended, for a later `session/load` of it; `None` when it never
    /// really began: its load failed): its clients get what was queued for them, then nothing
    /// more; a closed session's subagents end with it; its chain ends if nothing else keeps
    /// it.
    fn remove(&self, session: &Arc<Session>, link: &Arc<ChainLink>, why: Option<&'static str>) {
        if let Some(why) = why {
            lock(&self.ended).insert(&session.id, why);
        }
        match why {
            Some(CLOSED) => session.journal_closed(false),
            // Another conductor holds it: this one writes nothing of it any more.
            Some(MOVED) => {}
            _ => session.journal_released(),
        }
        session.close();
        let subagents: Vec<table::Entry<ChainLink, Arc<Session>>> = {
            let mut sessions = lock(&self.sessions);
            let known = sessions
                .get(&session.id)
                .is_some_and(|e| Arc::ptr_eq(&e.value, session));
            match why {
                // A closed session's subagents end with it (theirs too, at any depth).
                Some(CLOSED) if known => sessions.close(&session.id),
                _ if known => sessions.remove(&session.id).into_iter().collect(),
                _ => Vec::new(),
            }
            .into_iter()
            .filter(|e| !Arc::ptr_eq(&e.value, session))
            .collect()
        };
        for table::Entry { value, chain, .. } in subagents {
            lock(&self.ended).insert(&value.id, PARENT_CLOSED);
            value.journal_closed(true);
            value.close();
            if value.close_with_parent.load(Ordering::Relaxed) {
                close_at_agent(chain, value.own.clone());
            }
        }
        if self.unused(link) {
            tracing::info!(chain = %link.tag, "no session and no client left: ending the chain");
            link.close();
        }
    }

    /// The chain of `session`.
    fn link_of(&self, session: &Arc<Session>) -> Option<Arc<ChainLink>> {
        lock(&self.sessions)
            .get(&session.id)
            .filter(|e| Arc::ptr_eq(&e.value, session))
            .map(|e| e.chain.clone())
    }

    /// A client went away: it leaves its sessions (which end after the detached timeout if no
    /// one takes them up), and its chain ends if it has no session.
    fn client_left(self: &Arc<Self>, client: &Arc<Client>) {
        for (session, att) in client.take_attachments() {
            self.left(&session, &att);
        }
        if let Some(link) = client.take_chain() {
            link.orphan();
            if self.unused(&link) {
                link.close();
            }
        }
    }

    /// A client left `session` (its attachment `att`): it says so to the chain's trace, and
    /// the session ends after the detached timeout if no controller takes it up.
    fn left(self: &Arc<Self>, session: &Arc<Session>, att: &Attachment) {
        if let Some(link) = self.link_of(session) {
            link.note(&session.id, "detached", &att.who, None);
        }
        if session.detach(att.id) && !session.is_closed() {
            tracing::info!(session = %session.id, "detached: no controller left");
        }
    }

    /// `session` had no controller and nothing new for the detached timeout: it ends.
    fn expired(&self, session: &Arc<Session>) {
        match self.link_of(session) {
            Some(link) => self.remove(session, &link, Some(IDLE)),
            None => session.close(),
        }
    }

    /// A chain ended: its sessions with it.
    fn chain_ended(&self, link: &Arc<ChainLink>) {
        lock(&self.chains).remove(&link.tag);
        for session in self.sessions_in(link) {
            self.remove(&session, link, Some(CHAIN_ENDED));
        }
    }
}

/// Whether `id` is of the shape this layer gives (`own@tag`), and then its parts.
fn split_id(id: &str) -> Option<(&str, &str)> {
    let (own, tag) = id.rsplit_once('@')?;
    let ours = tag.len() == 12 && tag.bytes().all(|b| b.is_ascii_hexdigit());
    ours.then_some((own, tag))
}

/// Why a session ended: its chain did (a component exited, or the conductor stopped it).
const CHAIN_ENDED: &str = "its chain ended";
/// Why a session ended: nobody attached to it for `--detached-timeout`.
const IDLE: &str = "no client took it back within the detached timeout";
/// Why a session ended: a client closed it.
const CLOSED: &str = "it was closed";
/// Why a session ended: it was a subagent's, and the session it ran in was closed.
const PARENT_CLOSED: &str = "the session it was a subagent of was closed";
/// Why a session ended: another conductor sharing the journal took it over (this one had
/// lost its lease meanwhile).
const MOVED: &str = "another conductor took it over";

impl Layer {
    /// Why the session `id` ended here, if it did lately.
    fn why_ended(&self, id: &str) -> Option<&'static str> {
        lock(&self.ended).why.get(id).copied()
    }

    /// The error for a session that is not held here: `-32002` naming it, and saying why
    /// when it ended here lately.
    fn not_here(&self, id: &str) -> Error {
        ended_error(id, self.why_ended(id))
    }
}

/// The error for a session another conductor holds: `-32002` naming it and `data.heldBy`, the
/// name of the conductor (`--instance`) that holds it, where a client loads it (behind a load
/// balancer: the instance its affinity cookie names).
pub(crate) fn held_error(id: &str, by: &str) -> Error {
    Error::new(
        NOT_HERE,
        format!("the session {id} is held by the conductor {by}: load it there"),
    )
    .with_data(serde_json::json!({"sessionId": id, "heldBy": by}))
}

/// The error for a session that is not held here: `-32002` naming it, and saying why when it
/// is known to have ended.
fn ended_error(id: &str, why: Option<&'static str>) -> Error {
    match why {
        Some(why) => Error::new(NOT_HERE, format!("the session {id} has ended: {why}"))
            .with_data(serde_json::json!({"sessionId": id, "ended": why})),
        None => Error::new(
            NOT_HERE,
            format!("the session {id} is not held by this conductor"),
        )
        .with_data(serde_json::json!({"sessionId": id})),
    }
}
