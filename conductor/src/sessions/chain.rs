//! A chain as the layer sees it: the queue on which the layer is its editor (see `port.rs`),
//! the layer's requests waiting for the chain's answers, the chain's requests waiting for an
//! editor's (the sessions that live in it are in the layer's table, `table.rs`); and what the
//! chain sends — notifications and requests about a session go to that session (its record,
//! its clients), anything else to the client that started the chain.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use sacp::jsonrpc::{
    CANCEL_REQUEST_METHOD, Error, Id, Message, Notification, RawJson, Request, Response,
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::ask::{Ask, Requester};
use super::attach::Who;
use super::client::Client;
use super::port::{Port, QUEUE};
use super::record::{UPDATE, update_method};
use super::session::Wire;
use super::{Layer, Note};
use crate::lock::lock;

/// What starts a chain for a client.
pub(crate) trait Starter: Send + Sync + 'static {
    /// Starts a chain for the client `client` (its connection's id), with `editor` as its
    /// editor's transport.
    fn start(&self, client: &str, editor: Port) -> Started;
}

/// A chain started for the layer.
pub(crate) struct Started {
    /// The chain's life: completes when it ended.
    pub(crate) life: Pin<Box<dyn Future<Output = ()> + Send>>,
    /// Where the chain hears who attaches to its sessions (for its trace), if it listens.
    pub(crate) notes: Option<mpsc::Sender<Note>>,
}

/// An answer the layer waits for from the chain.
pub(super) type Waiting = oneshot::Receiver<Result<RawJson, Error>>;

/// What takes the chain's answer to one of the layer's requests.
enum Waiter {
    /// A task that waits for it.
    Task(oneshot::Sender<Result<RawJson, Error>>),
    /// What to do with it, there and then (in the chain's writer task: it must not wait).
    Then(Box<dyn FnOnce(Result<RawJson, Error>) + Send>),
}

impl Waiter {
    fn take(self, result: Result<RawJson, Error>) {
        match self {
            Waiter::Task(task) => {
                let _ = task.send(result);
            }
            Waiter::Then(then) => then(result),
        }
    }
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Waiter::Task(_) => "Waiter::Task",
            Waiter::Then(_) => "Waiter::Then",
        })
    }
}

/// The chain's answer (an error if the chain ended first).
pub(super) async fn answer_of(waiting: Waiting) -> Result<RawJson, Error> {
    waiting
        .await
        .unwrap_or_else(|_| Err(Error::internal_error("the session's chain has ended")))
}

/// One chain: see the module docs.
#[derive(Debug)]
pub(crate) struct ChainLink {
    /// Its part of the editor's ids of its sessions (`own@tag`).
    pub(crate) tag: String,
    /// What the layer sends the chain.
    to_chain: mpsc::Sender<Message>,
    /// Cancelled when the layer closes its side: the chain's editor has left.
    closed: CancellationToken,
    /// The layer's requests to the chain, by the id they went with.
    pending: Mutex<foldhash::HashMap<i64, Waiter>>,
    next_id: AtomicI64,
    /// The chain's requests for an editor, by their id: a `$/cancel_request` of one drops it.
    asks: Mutex<HashMap<Id, Weak<Ask>>>,
    /// The client that started it, while it is connected.
    origin: Mutex<Option<Weak<Client>>>,
    /// The first `initialize` it answered: what was asked (see [`init_key`]) and its answer,
    /// which a later client asking the same is given without a chain of its own.
    initialized: Mutex<Option<(serde_json::Value, RawJson)>>,
    /// Where it hears who attaches to its sessions.
    notes: Mutex<Option<mpsc::Sender<Note>>>,
    /// Its sessions (by its own ids) being restored with `session/load`: what the chain sends
    /// about them until the load's answer is a replay of what the layer has already.
    restoring: Mutex<Vec<String>>,
    /// How many of them: the chain's every notification looks at this, not the lock.
    restorations: std::sync::atomic::AtomicUsize,
}

impl ChainLink {
    /// Starts a chain for `client` with `starter`; `layer` hears what it sends, and of its end.
    pub(super) fn start(
        layer: &Arc<Layer>,
        starter: &dyn Starter,
        client: &Arc<Client>,
    ) -> Arc<ChainLink> {
        let (to_chain, queue) = mpsc::channel(QUEUE);
        let link = Arc::new(ChainLink {
            tag: uuid::Uuid::new_v4().simple().to_string()[..12].to_owned(),
            to_chain,
            closed: CancellationToken::new(),
            pending: Mutex::default(),
            next_id: AtomicI64::new(1),
            asks: Mutex::default(),
            origin: Mutex::new(Some(Arc::downgrade(client))),
            initialized: Mutex::default(),
            notes: Mutex::default(),
            restoring: Mutex::default(),
            restorations: std::sync::atomic::AtomicUsize::new(0),
        });
        let port = Port::new(
            queue,
            link.closed.clone(),
            Arc::downgrade(layer),
            Arc::downgrade(&link),
        );
        let Started { life, notes } = starter.start(&client.name, port);
        *lock(&link.notes) = notes;
        let watched = (Arc::downgrade(layer), link.clone());
        layer.lives.spawn(async move {
            life.await;
            let (layer, link) = watched;
            link.ended();
            if let Some(layer) = layer.upgrade() {
                layer.chain_ended(&link);
            }
        });
        link
    }

    /// Sends the chain a request (in order with everything sent before it, waiting for room):
    /// its answer, to wait for.
    pub(super) async fn request(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> Result<Waiting, Error> {
        let (tx, rx) = oneshot::channel();
        self.send_request(method.into(), params, Waiter::Task(tx))
            .await?;
        Ok(rx)
    }

    /// [`ChainLink::request`], its answer handed to `then` as it comes, with no task waiting
    /// for it (`then` runs in the chain's writer task: it must not wait).
    pub(super) async fn request_then(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
        then: impl FnOnce(Result<RawJson, Error>) + Send + 'static,
    ) -> Result<(), Error> {
        self.send_request(method.into(), params, Waiter::Then(Box::new(then)))
            .await
    }

    async fn send_request(
        &self,
        method: String,
        params: Option<RawJson>,
        waiter: Waiter,
    ) -> Result<(), Error> {
        let (id, request) = self.register(method, params, waiter);
        if self.to_chain.send(request).await.is_err() || self.closed.is_cancelled() {
            lock(&self.pending).remove(&id);
            return Err(self.gone());
        }
        Ok(())
    }

    /// A request of the layer's to the chain, its answer awaited by `waiter`: its id, and the
    /// message to send.
    fn register(&self, method: String, params: Option<RawJson>, waiter: Waiter) -> (i64, Message) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.pending).insert(id, waiter);
        let request = Message::Request(Request {
            id: Id::Number(id),
            method,
            params,
        });
        (id, request)
    }

    /// Sends the chain a notification (in order, waiting for room).
    pub(super) async fn notify(
        &self,
        method: impl Into<String>,
        params: Option<RawJson>,
    ) -> Result<(), Error> {
        let notification = Message::Notification(Notification {
            method: method.into(),
            params,
        });
        if self.closed.is_cancelled() || self.to_chain.send(notification).await.is_err() {
            return Err(self.gone());
        }
        Ok(())
    }

    /// Answers the chain's request `id`. An answer never waits behind the queue: when it is
    /// full, the answer goes from a task of its own.
    pub(super) fn answer(&self, id: Id, result: Result<RawJson, Error>) {
        lock(&self.asks).remove(&id);
        let response = Message::Response(match result {
            Ok(raw) => Response::ok(id, raw),
            Err(e) => Response::error(id, &e),
        });
        if let Err(mpsc::error::TrySendError::Full(response)) = self.to_chain.try_send(response) {
            let to_chain = self.to_chain.clone();
            tokio::spawn(async move {
                let _ = to_chain.send(response).await;
            });
        }
    }

    /// The chain's answer to the layer's request `id`.
    fn answered(&self, response: Response) {
        let Id::Number(id) = response.id else { return };
        let waiter = lock(&self.pending).remove(&id);
        if let Some(waiter) = waiter {
            waiter.take(response.into_result());
        }
    }

    /// The chain ended: what the layer waits for from it fails.
    fn ended(&self) {
        self.closed.cancel();
        let waiters: Vec<_> = lock(&self.pending).drain().map(|(_, w)| w).collect();
        for waiter in waiters {
            waiter.take(Err(self.gone()));
        }
    }

    fn gone(&self) -> Error {
        Error::internal_error("the session's chain has ended")
    }

    /// The client that started it, while it is connected.
    pub(super) fn origin(&self) -> Option<Arc<Client>> {
        lock(&self.origin).as_ref().and_then(Weak::upgrade)
    }

    /// Its client went away.
    pub(super) fn orphan(&self) {
        *lock(&self.origin) = None;
    }

    /// Its answer to an `initialize` that asked `asked` (see [`init_key`]).
    pub(super) fn set_initialized(&self, asked: serde_json::Value, answer: &RawJson) {
        let mut initialized = lock(&self.initialized);
        if initialized.is_none() {
            *initialized = Some((asked, answer.clone()));
        }
    }

    /// Its agent's answer to the first `initialize` (what the agent offers), if it gave one.
    pub(super) fn agent_answer(&self) -> Option<RawJson> {
        lock(&self.initialized)
            .as_ref()
            .map(|(_, answer)| answer.clone())
    }

    /// Its answer to an `initialize` that asked what `asked` asks, if it gave one.
    pub(super) fn initialized_for(&self, asked: &serde_json::Value) -> Option<RawJson> {
        lock(&self.initialized)
            .as_ref()
            .filter(|(was, _)| was == asked)
            .map(|(_, answer)| answer.clone())
    }

    /// Sends the chain an `initialize` answered already by another chain (a client's that was
    /// deferred), before anything else: its first message, into its empty queue. Its answer is
    /// kept, for the next client asking the same.
    pub(super) fn initialize_first(self: &Arc<Self>, params: Option<RawJson>) {
        let asked = init_key(params.as_ref());
        let link = self.clone();
        let then = move |result: Result<RawJson, Error>| match result {
            Ok(answer) => link.set_initialized(asked, &answer),
            Err(e) => {
                tracing::warn!(chain = %link.tag, "the chain refused the client's initialize: {e}")
            }
        };
        let (id, request) = self.register(
            "initialize".to_owned(),
            params,
            Waiter::Then(Box::new(then)),
        );
        if self.to_chain.try_send(request).is_err() {
            lock(&self.pending).remove(&id);
            tracing::warn!(chain = %self.tag, "cannot initialize the chain: it has ended");
        }
    }

    /// Marks its session `own` as being restored (`on`), or not any more.
    pub(super) fn restoring(&self, own: &str, on: bool) {
        let mut restoring = lock(&self.restoring);
        if on {
            restoring.push(own.to_owned());
        } else if let Some(i) = restoring.iter().position(|r| r == own) {
            restoring.remove(i);
        }
        self.restorations
            .store(restoring.len(), std::sync::atomic::Ordering::Release);
    }

    /// Whether a message with `params` is about a session being restored.
    fn is_restoring(&self, params: Option<&RawJson>) -> bool {
        if self.restorations.load(std::sync::atomic::Ordering::Acquire) == 0 {
            return false;
        }
        let restoring = lock(&self.restoring);
        params
            .and_then(|p| p.plain_str("sessionId"))
            .is_some_and(|own| restoring.iter().any(|r| r == own))
    }

    /// Tells the chain (its trace) what client `who` did with `session`: `event`, and for an
    /// answer the request's `method`.
    pub(super) fn note(&self, session: &str, event: &'static str, who: &Who, method: Option<&str>) {
        if let Some(notes) = &*lock(&self.notes) {
            let note = Note {
                session: session.to_owned(),
                event,
                connection: who.connection.clone(),
                client: who.id.clone(),
                role: who.role.name(),
                method: method.map(str::to_owned),
            };
            if notes.try_send(note).is_err() {
                tracing::debug!(session, event, "the chain's trace did not take a note");
            }
        }
    }

    /// Ends the chain: the layer closes its side, which the chain takes as its editor
    /// leaving.
    pub(super) fn close(&self) {
        self.closed.cancel();
    }
}

/// What an `initialize` asks, for telling whether two ask the same: its params without
/// `clientInfo` (v2: `info`), which names the client and changes nothing a chain answers.
pub(super) fn init_key(params: Option<&RawJson>) -> serde_json::Value {
    let mut asked = params
        .and_then(|p| p.parse::<serde_json::Value>().ok())
        .unwrap_or(serde_json::Value::Null);
    if let Some(asked) = asked.as_object_mut() {
        // v1 names the client `clientInfo`, v2 `info`.
        asked.remove("clientInfo");
        asked.remove("info");
    }
    asked
}

impl Requester for ChainLink {
    fn answer(&self, id: Id, result: Result<RawJson, Error>) {
        ChainLink::answer(self, id, result);
    }

    fn note(&self, session: &str, event: &'static str, who: &Who, method: Option<&str>) {
        ChainLink::note(self, session, event, who, method);
    }
}

impl Layer {
    /// One message of `link`'s chain for its editor (see `port.rs`): an answer to the layer,
    /// or a notification or request for a session's clients (waiting while its record has no
    /// room), or for the client that started the chain.
    pub(super) async fn take_from_chain(&self, link: &Arc<ChainLink>, message: Message) {
        match message {
            Message::Response(response) => link.answered(response),
            Message::Notification(notification) => self.chain_notified(link, notification).await,
            Message::Request(request) => self.chain_asked(link, request),
        }
    }

    async fn chain_notified(&self, link: &Arc<ChainLink>, notification: Notification) {
        if notification.method == CANCEL_REQUEST_METHOD {
            // The chain gave up a request of its own: nobody needs to answer it any more.
            let id = notification
                .params
                .as_ref()
                .and_then(|p| p.parse::<CancelParams>().ok())
                .map(|c| c.id);
            let ask = id.and_then(|id| lock(&link.asks).remove(&id));
            if let Some(ask) = ask.and_then(|a| a.upgrade()) {
                ask.cancelled();
            }
            return;
        }
        if link.is_restoring(notification.params.as_ref()) {
            return;
        }
        // The record keeps the method shared; a caught-up client is sent the one the chain
        // read (no copy of it).
        let shared = |method: &str| {
            if method == UPDATE {
                update_method()
            } else {
                Arc::from(method)
            }
        };
        // The common case (an update whose one id is its top-level `sessionId`): renamed as
        // it is recorded, under the session's one lock.
        if let Some(params) = &notification.params
            && let Some(session) = self.plainly_about(link, params, None)
        {
            let wire = Wire {
                method: notification.method,
                rename: true,
            };
            let method = shared(&wire.method);
            session
                .append(method, params.clone(), None, Some(wire))
                .await;
            return;
        }
        match self.renamed_everywhere(link, notification.params, None) {
            Ok((Some(session), params)) => {
                let params = params.unwrap_or_else(RawJson::null);
                let wire = Wire {
                    method: notification.method,
                    rename: false,
                };
                let method = shared(&wire.method);
                session.append(method, params, None, Some(wire)).await;
            }
            Ok((None, params)) => {
                let client = link.origin().and_then(|c| c.conn().cloned());
                if let Some(client) = client {
                    let _ = client.notify_raw(notification.method, params).await;
                }
            }
            Err(e) => tracing::debug!("cannot pass a notification on: {e}"),
        }
    }

    fn chain_asked(&self, link: &Arc<ChainLink>, request: Request) {
        let Request { id, method, params } = request;
        match self.chain_to_editor(link, params) {
            Ok((Some(session), params)) => {
                let params = params.unwrap_or_else(RawJson::null);
                let requester: Weak<dyn Requester> = Arc::downgrade(link) as Weak<ChainLink>;
                let ask = Arc::new(Ask::new(method, params, id.clone(), requester));
                lock(&link.asks).insert(id, Arc::downgrade(&ask));
                session.ask(ask);
            }
            Ok((None, params)) => match link.origin().and_then(|c| c.conn().cloned()) {
                Some(client) => {
                    let pending = client.request_raw(method, params);
                    let link = link.clone();
                    tokio::spawn(async move { link.answer(id, pending.await) });
                }
                None => link.answer(
                    id,
                    Err(Error::internal_error(format!(
                        "no editor is connected to answer {method}"
                    ))),
                ),
            },
            Err(e) => link.answer(id, Err(e)),
        }
    }
}

/// The params of `$/cancel_request`.
#[derive(serde::Deserialize)]
struct CancelParams {
    id: Id,
}
