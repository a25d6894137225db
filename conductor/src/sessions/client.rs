//! A client of the layer: one editor's connection, what it sends, and what it holds — its own
//! chain (started at its `initialize`) and its attachments to sessions.
//!
//! Its connection is served by the editor-facing hub (`hub.rs`), which gives the layer each
//! message in its turn: a request is passed on to its chain there and then (so that a
//! `session/cancel` sent after a prompt reaches the chain after it), and its answer awaited in
//! a task of its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use sacp::jsonrpc::{Connection, Error, Notification, RawJson, Responder};
use sacp::protocol::content::Accepts;
use serde_json::{Map, Value};

use super::chain::{ChainLink, answer_of, init_key};
use super::hub::{Sessions, answer_later};
use super::offers::{self, Offers};
use super::position::{self, Cursor};
use super::rewrite::{self, Place, session_of, with_session};
use super::session::{Attachment, From, Session};
use super::{Layer, split_id};
use crate::journal::Claim;
use crate::lock::lock;

/// A session a client is attached to, and its attachment.
type Held = (Arc<Session>, Arc<Attachment>);

/// One editor's connection to the layer.
#[derive(Debug)]
pub(crate) struct Client {
    /// Its connection's id, for logs and its chain's trace.
    pub(super) name: String,
    conn: OnceLock<Connection>,
    /// Its own chain, from its `initialize` on.
    chain: Mutex<Option<Arc<ChainLink>>>,
    /// Whether it speaks ACP v1 (until its `initialize` says otherwise).
    v1: AtomicBool,
    /// Whether its `initialize` asked for positions (see `position.rs`).
    positions: AtomicBool,
    /// Its attachments, by the session's id.
    attachments: Mutex<foldhash::HashMap<String, Held>>,
    /// The `clientInfo` of its `initialize`.
    info: Mutex<Option<Value>>,
    /// The answer to its `initialize`.
    answer: Mutex<Option<RawJson>>,
    /// Its `initialize`'s params, while it has no chain: it was answered with a live chain's
    /// answer to the same, and its own chain is asked first thing once it needs one.
    deferred_init: Mutex<Option<Option<RawJson>>>,
    /// The content it takes, by its `initialize` (see `sacp::protocol::content`).
    takes: Mutex<Arc<Accepts>>,
}

impl Client {
    pub(super) fn new(name: String) -> Arc<Client> {
        Arc::new(Client {
            name,
            conn: OnceLock::new(),
            chain: Mutex::default(),
            v1: AtomicBool::new(true),
            positions: AtomicBool::new(false),
            attachments: Mutex::default(),
            info: Mutex::default(),
            answer: Mutex::default(),
            deferred_init: Mutex::default(),
            takes: Mutex::new(Arc::new(Accepts::acp_default())),
        })
    }

    pub(super) fn set_conn(&self, conn: Connection) {
        let _ = self.conn.set(conn);
    }

    pub(super) fn conn(&self) -> Option<&Connection> {
        self.conn.get()
    }

    pub(super) fn is_v1(&self) -> bool {
        self.v1.load(Ordering::Relaxed)
    }

    /// The `initialize` answer it got: what its chain's agent offers.
    pub(super) fn initialized(&self) -> Option<RawJson> {
        lock(&self.answer).clone()
    }

    /// Its protocol version, from the `initialize` answer it got (kept).
    fn set_version(&self, answer: &RawJson) {
        *lock(&self.answer) = Some(answer.clone());
        let version = answer
            .parse::<Map<String, Value>>()
            .ok()
            .and_then(|a| a.get("protocolVersion").and_then(Value::as_u64));
        self.v1
            .store(version.is_none_or(|v| v < 2), Ordering::Relaxed);
    }

    /// Its chain, made by `start` if it has none.
    pub(super) fn chain_or(&self, start: impl FnOnce() -> Arc<ChainLink>) -> Arc<ChainLink> {
        lock(&self.chain).get_or_insert_with(start).clone()
    }

    /// Whether it was initialized without a chain and has none yet.
    pub(super) fn deferred(&self) -> bool {
        lock(&self.deferred_init).is_some()
    }

    /// Its deferred `initialize`'s params, once: its chain is starting.
    pub(super) fn take_deferred_init(&self) -> Option<Option<RawJson>> {
        lock(&self.deferred_init).take()
    }

    pub(super) fn take_chain(&self) -> Option<Arc<ChainLink>> {
        lock(&self.chain).take()
    }

    pub(super) fn attached(&self, session: &Arc<Session>, att: &Arc<Attachment>) {
        let old =
            lock(&self.attachments).insert(session.id.clone(), (session.clone(), att.clone()));
        if let Some((session, att)) = old {
            session.detach(att.id);
        }
    }

    /// Its attachment to session `id`, unless it was detached.
    pub(super) fn attachment_of(&self, id: &str) -> Option<Arc<Attachment>> {
        lock(&self.attachments)
            .get(id)
            .map(|(_, att)| att.clone())
            .filter(|att| !att.is_stopped())
    }

    /// Its attachment to session `id`, which it leaves.
    pub(super) fn take_attachment(&self, id: &str) -> Option<Held> {
        lock(&self.attachments).remove(id)
    }

    /// The `clientInfo` its `initialize` gave.
    pub(super) fn info(&self) -> Option<Value> {
        lock(&self.info).clone()
    }

    fn set_info(&self, params: Option<&RawJson>) {
        // v1 names the client `clientInfo`, v2 `info`.
        let info = params
            .filter(|p| p.as_str().contains("Info\"") || p.as_str().contains("\"info\""))
            .and_then(|p| p.parse::<Map<String, Value>>().ok())
            .and_then(|mut p| p.remove("clientInfo").or_else(|| p.remove("info")));
        *lock(&self.info) = info;
        // v1 names its capabilities `clientCapabilities`, v2 `capabilities`.
        let positions = params
            .and_then(|p| {
                p.member_at(&["clientCapabilities", "_meta", "sacp", "positions"])
                    .or_else(|| p.member_at(&["capabilities", "_meta", "sacp", "positions"]))
            })
            .is_some_and(|p| p.as_str() == "true");
        self.positions.store(positions, Ordering::Relaxed);
        *lock(&self.takes) = Arc::new(Accepts::of_client(params));
    }

    /// The content it takes (ACP's default until its `initialize` declares otherwise).
    pub(super) fn takes(&self) -> Arc<Accepts> {
        lock(&self.takes).clone()
    }

    /// Whether its `initialize` asked for each notification's position.
    pub(super) fn wants_positions(&self) -> bool {
        self.positions.load(Ordering::Relaxed)
    }

    pub(super) fn take_attachments(&self) -> Vec<Held> {
        lock(&self.attachments)
            .drain()
            .map(|(_, pair)| pair)
            .collect()
    }
}

pub(super) use super::hub::{Unanswered, fail};

/// Where a client taking back `session` (live here) starts in its record: from its cursor,
/// else all of it for a load (`replay`), nothing for a resume.
fn replay_from(session: &Session, cursor: Option<Cursor>, replay: bool) -> Result<From, Error> {
    Ok(match cursor {
        None if replay => From::Oldest,
        None => From::Now,
        Some(Cursor::Start) => From::Oldest,
        Some(Cursor::After { life, seq }) => {
            if life != session.life || seq >= session.end() {
                return Err(unknown_position(&session.id, life, seq));
            }
            From::At(seq + 1)
        }
    })
}

/// The `-32602` for a cursor whose position names no entry of the session's record now.
fn unknown_position(id: &str, life: u64, seq: u64) -> Error {
    let at = position::position(life, seq);
    Error::invalid_params(format!(
        "the session {id} has no position {at}: it is of another life of the session (a \
         conductor before this one), or past its end; resume with {{\"type\": \"start\"}}"
    ))
    .with_data(serde_json::json!({"sessionId": id, "position": at}))
}

/// The layer under each client's connection: the hub gives it what a client sends (see
/// `hub.rs`); requests about a session go to that session's chain, whichever chain it is, and
/// the answer comes back through the session (see `session.rs`), after what the session
/// streamed before it; a request of no session goes to the client's own chain.
impl Sessions for Layer {
    type Editor = Client;

    async fn initialize(
        self: Arc<Self>,
        client: Arc<Client>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        Layer::initialize(&self, &client, params, responder).await
    }

    async fn new_session(
        self: Arc<Self>,
        client: Arc<Client>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        Layer::new_session(&self, &client, params, responder).await
    }

    async fn load(
        self: Arc<Self>,
        client: Arc<Client>,
        method: String,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        Layer::load(&self, &client, method, params, responder).await
    }

    async fn list(
        self: Arc<Self>,
        _client: Arc<Client>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        Layer::list(&self, params, responder).await;
        Ok(())
    }

    async fn session_attach(
        self: Arc<Self>,
        client: Arc<Client>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        self.attach_request(&client, params, responder);
        Ok(())
    }

    async fn session_detach(
        self: Arc<Self>,
        client: Arc<Client>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        self.detach_request(&client, params, responder);
        Ok(())
    }

    async fn to_session(
        self: Arc<Self>,
        client: Arc<Client>,
        id: String,
        method: String,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        // A session neither here nor of a chain here: deleted from the journal.
        if method == "session/delete"
            && self.session(&id).is_none()
            && split_id(&id).is_some_and(|(_, tag)| self.chain(tag).is_none())
        {
            self.forget(id, responder);
            return Ok(());
        }
        Layer::to_session(&self, &client, method, params, &id, responder).await
    }

    async fn unbound(
        self: Arc<Self>,
        client: Arc<Client>,
        method: String,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        let link = self.own_chain(&client);
        match link.request(method, params).await {
            Ok(waiting) => {
                answer_later(responder, answer_of(waiting));
                Ok(())
            }
            Err(e) => fail(responder, e),
        }
    }

    /// To its session's chain, or to the client's own chain.
    async fn notify(
        self: Arc<Self>,
        client: Arc<Client>,
        id: Option<String>,
        notification: Notification,
    ) -> Result<(), Error> {
        let Notification { method, params } = notification;
        match id {
            Some(id) => {
                let session = self
                    .session(&id)
                    .ok_or_else(|| Error::invalid_params(format!("unknown session {id:?}")))?;
                let att = client.attachment_of(&id);
                if let Some(att) = &att
                    && att.who.is_observer()
                {
                    tracing::info!(session = %id, client = %att.who.id, %method, "an observer's notification is dropped");
                    return Ok(());
                }
                let link = self.link_of(&session).ok_or_else(|| self.not_here(&id))?;
                if method == "session/cancel"
                    && let Some(att) = &att
                {
                    link.note(&id, "cancelled", &att.who, None);
                    session.withdraw(att.id);
                }
                let params = with_session(params, &session.own)?;
                link.notify(method, params).await
            }
            None => {
                let link = lock(&client.chain).clone();
                let link = link.or_else(|| client.deferred().then(|| self.own_chain(&client)));
                match link {
                    Some(link) => link.notify(method, params).await,
                    None => Ok(()),
                }
            }
        }
    }
}

impl Layer {
    /// `initialize`: answered with a live chain's answer to the same (see [`init_key`]), so
    /// that a client coming back for its sessions starts no chain of its own until it needs one
    /// (see [`Layer::own_chain`]); else it starts the client's chain and passes it on, and the
    /// chain's answer is the client's.
    async fn initialize(
        self: &Arc<Self>,
        client: &Arc<Client>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        client.set_info(params.as_ref());
        // The chain's editor is the layer, which takes every content and adapts what it sends
        // each client to what that client declared: the chain transforms nothing for its first
        // client, and clients that differ only in what they take share a chain's answer.
        let params = params.map(|p| Accepts::everything().declare_in(&p).unwrap_or(p));
        let asked = init_key(params.as_ref());
        let chainless = lock(&client.chain).is_none() && !client.deferred();
        let known = chainless
            .then(|| self.chains().iter().find_map(|l| l.initialized_for(&asked)))
            .flatten();
        if let Some(answer) = known {
            tracing::info!(client = %client.name, "initialize answered as a live chain answered it: no chain started yet");
            client.set_version(&answer);
            *lock(&client.deferred_init) = Some(params);
            responder.answer_raw(Ok(offers::served(answer)));
            return Ok(());
        }
        let link = self.own_chain(client);
        let waiting = match link.request("initialize", params).await {
            Ok(waiting) => waiting,
            Err(e) => return fail(responder, e),
        };
        let client = client.clone();
        tokio::spawn(async move {
            let result = answer_of(waiting).await;
            if let Ok(answer) = &result {
                link.set_initialized(asked, answer);
                client.set_version(answer);
            }
            responder.answer_raw(result.map(offers::served));
        });
        Ok(())
    }

    /// `session/new`, on the client's chain; the client is attached to the new session.
    async fn new_session(
        self: &Arc<Self>,
        client: &Arc<Client>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        let link = self.own_chain(client);
        let history = given_history(params.as_ref());
        let asked = params.clone();
        let waiting = match link.request("session/new", params).await {
            Ok(waiting) => waiting,
            Err(e) => return fail(responder, e),
        };
        let (layer, client) = (self.clone(), client.clone());
        tokio::spawn(async move {
            let answer = match answer_of(waiting).await {
                Ok(answer) => answer,
                Err(e) => return responder.answer_error(e),
            };
            let Some(own) = session_of(Some(&answer)) else {
                return responder.answer_raw(Ok(answer));
            };
            let (session, _) = layer.learn(&link, &own, None, None);
            session.set_setup(&answer);
            session.began(&own, &super::restore::setup_of(asked.as_ref(), &answer));
            let renamed =
                with_session(Some(answer), &session.id).map(|a| a.unwrap_or_else(RawJson::null));
            match client.attachment_of(&session.id) {
                // Attached already, by an update the chain sent before its answer.
                Some(att) => {
                    record_history(&session, &history, att.id).await;
                    session.answer(att.id, responder, renamed)
                }
                None if !history.is_empty() => {
                    let att = match layer.attachment(&client) {
                        Ok(att) => att,
                        Err(e) => return responder.answer_error(e),
                    };
                    record_history(&session, &history, att.id).await;
                    let owed = Some((responder, renamed, From::Oldest));
                    if session.attach(att.clone(), From::Oldest, owed) {
                        layer.attached(&client, &session, &att, layer.link_of(&session).as_deref());
                    }
                }
                None => layer.attach(
                    &client,
                    &session,
                    From::Oldest,
                    responder,
                    renamed,
                    From::Oldest,
                ),
            }
        });
        Ok(())
    }

    /// Attaches `client` to `session` from `from` on, owing it `result` at `at`.
    pub(super) fn attach(
        &self,
        client: &Arc<Client>,
        session: &Arc<Session>,
        from: From,
        responder: Responder,
        result: Result<RawJson, Error>,
        at: From,
    ) {
        let att = match self.attachment(client) {
            Ok(att) => att,
            Err(e) => return responder.answer_error(e),
        };
        if session.attach(att.clone(), from, Some((responder, result, at))) {
            self.attached(client, session, &att, self.link_of(session).as_deref());
        }
    }

    /// `session/load` and `session/resume`: of a session live here, the client is attached
    /// to it (and the layer answers); of one of a chain here that the layer does not hold (an
    /// id from a `session/list`), or of an id that is not the layer's, the chain is asked.
    async fn load(
        self: &Arc<Self>,
        client: &Arc<Client>,
        method: String,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        let Some(id) = session_of(params.as_ref()) else {
            let e = Error::invalid_params(format!("{method} needs a sessionId"));
            return fail(responder, e);
        };
        let cursor = match position::cursor_of(&method, params.as_ref()) {
            Ok(cursor) => cursor,
            Err(e) => return fail(responder, e),
        };
        let replay = method == "session/load";
        if let Some(session) = self.session(&id) {
            let answer = load_answer(session.setup());
            let from = match replay_from(&session, cursor, replay) {
                Ok(from) => from,
                Err(e) => return fail(responder, e),
            };
            self.attach(client, &session, from, responder, answer, From::Now);
            return Ok(());
        }
        // A position names an entry of a life of the session that is over (a conductor before
        // this one, or this one's before the session ended): not one to replay from.
        if let Some(Cursor::After { life, seq }) = cursor {
            return fail(responder, unknown_position(&id, life, seq));
        }
        let replay = replay || cursor == Some(Cursor::Start);
        // A session that ended here (its chain gone, or no client took it back in time) comes
        // back from the journal, which numbers its entries on from where they were — even
        // while its chain lives: a load through the chain would start the session's record,
        // and its journal, again from nothing. So does one of a conductor before this one (its
        // id names no chain here).
        if self.restorable(&id) {
            self.restore_or_refuse(client, id, replay, responder);
            return Ok(());
        }
        let (link, own) = match split_id(&id) {
            Some((own, tag)) => match self.chain(tag) {
                Some(link) => (link, own.to_owned()),
                None => return fail(responder, self.not_here(&id)),
            },
            None => (self.own_chain(client), id.clone()),
        };
        // The layer's answer says it loads and resumes whatever the agent offers: an id it does
        // not hold goes to an agent that can take it back, and is not here otherwise.
        let offers = Offers::of(
            link.agent_answer()
                .or_else(|| client.initialized())
                .as_ref(),
        );
        if !(if replay { offers.load } else { offers.resume }) {
            return fail(responder, self.not_here(&id));
        }
        let params = match with_session(params, &own) {
            Ok(params) => params,
            Err(e) => return fail(responder, e),
        };
        // Held here from now on (or refused, held by another conductor sharing the journal).
        let epoch = match &self.shared.journal {
            Some(journal) => match journal.claim(&id, true).await {
                Ok(Claim::Taken { epoch, .. }) => Some(epoch),
                Ok(Claim::Held { by }) => return fail(responder, super::held_error(&id, &by)),
                Ok(Claim::Unknown | Claim::Closed { .. }) => None,
                Err(e) => return fail(responder, Error::internal_error(e.to_string())),
            },
            None => None,
        };
        // Learned before the chain answers: the history it replays first is the session's.
        let (session, _) = self.learn(&link, &own, Some(&id), None);
        if let Some(epoch) = epoch {
            session.set_epoch(epoch);
        }
        let att = match self.attachment(client) {
            Ok(att) => att,
            Err(e) => return fail(responder, e),
        };
        if session.attach(att.clone(), From::Oldest, None) {
            self.attached(client, &session, &att, Some(&link));
        }
        let asked = params.clone();
        // Whatever the journal kept of an earlier life of this id (a load through a chain of
        // a conductor before this one) gives way to what the agent replays now.
        session.journal_afresh();
        let waiting = match link.request(method, params).await {
            Ok(waiting) => waiting,
            Err(e) => {
                self.remove(&session, &link, None);
                return fail(responder, e);
            }
        };
        let layer = self.clone();
        tokio::spawn(async move {
            match answer_of(waiting).await {
                Ok(answer) => {
                    // A session the layer did not begin is journaled from here on as well.
                    session.began(&own, &super::restore::setup_of(asked.as_ref(), &answer));
                    let mut setup = answer.parse::<Map<String, Value>>().unwrap_or_default();
                    setup.insert("sessionId".into(), Value::String(own));
                    if let Ok(setup) = RawJson::to_raw(&setup) {
                        session.set_setup(&setup);
                    }
                    session.answer(att.id, responder, Ok(answer));
                }
                Err(e) => {
                    responder.answer_error(e);
                    layer.remove(&session, &link, None);
                }
            }
        });
        Ok(())
    }

    /// `session/list`: every live chain's sessions, with the editor's ids.
    async fn list(&self, params: Option<RawJson>, responder: Responder) {
        let mut asked = Vec::new();
        for link in self.chains() {
            if let Ok(waiting) = link.request("session/list", params.clone()).await {
                asked.push((link, waiting));
            }
        }
        tokio::spawn(async move {
            let mut all = Vec::new();
            for (link, waiting) in asked {
                let Ok(answer) = answer_of(waiting).await else {
                    continue;
                };
                let renamed = rewrite::rename_sessions(answer, |own, place| {
                    (place == Place::Listed).then(|| format!("{own}@{}", link.tag))
                });
                if let Ok(mut answer) = renamed.and_then(|r| r.parse::<Map<String, Value>>())
                    && let Some(Value::Array(sessions)) = answer.remove("sessions")
                {
                    all.extend(sessions);
                }
            }
            responder.answer_raw(RawJson::to_raw(&serde_json::json!({ "sessions": all })));
        });
    }
}

/// The layer's answer to a `session/load` of a session it holds: what began the session
/// (its modes, models, options), without its id.
pub(super) fn load_answer(setup: Option<RawJson>) -> Result<RawJson, Error> {
    let mut answer = setup
        .and_then(|s| s.parse::<Map<String, Value>>().ok())
        .unwrap_or_default();
    answer.remove("sessionId");
    RawJson::to_raw(&answer)
}

/// The history a `session/new` brings (`_meta.sacp.history`), if any: what the session's
/// record starts with, so that a later `session/load` or attach replays it.
fn given_history(params: Option<&RawJson>) -> Vec<Value> {
    let Some(params) = params.filter(|p| p.as_str().contains("\"history\"")) else {
        return Vec::new();
    };
    let Ok(value) = params.parse::<Value>() else {
        return Vec::new();
    };
    match &value["_meta"]["sacp"][sacp::protocol::history::HISTORY] {
        Value::Array(updates) => updates.clone(),
        _ => Vec::new(),
    }
}

/// Puts a session's given history in its record, as updates of the session that the client
/// which gave it (`echo`) does not get back.
async fn record_history(session: &Session, history: &[Value], echo: u64) {
    for update in history {
        let params = serde_json::json!({"sessionId": session.id, "update": update});
        match RawJson::to_raw(&params) {
            Ok(params) => {
                session
                    .append(super::record::update_method(), params, Some(echo), None)
                    .await
            }
            Err(e) => tracing::error!("cannot record a session's history: {e}"),
        }
    }
}
