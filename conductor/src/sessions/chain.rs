//! A chain as the layer sees it: the connection on which the layer is its editor, the
//! sessions that live in it, and what it sends — notifications and requests about a session
//! go to that session (its record, its clients), anything else to the client that started the
//! chain.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, Weak};

use sacp::jsonrpc::{
    Channel, Connection, Error, Handler, Notification, RawJson, Request, Responder, Work,
};

use super::ask::Ask;
use super::client::Client;
use super::session::Session;
use super::{Layer, Note};
use crate::lock::lock;

/// What starts a chain for a client.
pub(crate) trait Starter: Send + Sync + 'static {
    /// Starts a chain for the client `client` (its connection's id).
    fn start(&self, client: &str) -> Started;
}

/// A chain started for the layer.
pub(crate) struct Started {
    /// On which the layer is the chain's editor.
    pub(crate) transport: Channel,
    /// The chain's life: completes when it ended.
    pub(crate) life: Pin<Box<dyn Future<Output = ()> + Send>>,
    /// Where the chain hears who attaches to its sessions (for its trace), if it listens.
    pub(crate) notes: Option<tokio::sync::mpsc::Sender<Note>>,
}

/// One chain: see the module docs.
#[derive(Debug)]
pub(crate) struct ChainLink {
    /// Its part of the editor's ids of its sessions (`own@tag`).
    pub(crate) tag: String,
    conn: OnceLock<Connection>,
    /// The client that started it, while it is connected.
    origin: Mutex<Option<Weak<Client>>>,
    /// Its sessions, by its own ids.
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Its answer to the first `initialize`.
    initialized: Mutex<Option<RawJson>>,
    /// Where it hears who attaches to its sessions.
    notes: Option<tokio::sync::mpsc::Sender<Note>>,
}

impl ChainLink {
    /// Starts a chain for `client` with `starter`; `layer` hears what it sends, and of its end.
    pub(super) fn start(
        layer: &Arc<Layer>,
        starter: &dyn Starter,
        client: &Arc<Client>,
    ) -> Arc<ChainLink> {
        let tag = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        let Started {
            transport,
            life,
            notes,
        } = starter.start(&client.name);
        let link = Arc::new(ChainLink {
            tag,
            conn: OnceLock::new(),
            origin: Mutex::new(Some(Arc::downgrade(client))),
            sessions: Mutex::default(),
            initialized: Mutex::default(),
            notes,
        });
        let conn = Connection::builder()
            .name(format!("the chain of {}", client.name))
            .spawn(
                transport,
                ChainSide {
                    layer: Arc::downgrade(layer),
                    link: Arc::downgrade(&link),
                },
            );
        let _ = link.conn.set(conn);
        let watched = (Arc::downgrade(layer), link.clone());
        layer.lives.spawn(async move {
            life.await;
            let (layer, link) = watched;
            if let Some(layer) = layer.upgrade() {
                layer.chain_ended(&link);
            }
        });
        link
    }

    pub(super) fn conn(&self) -> Result<&Connection, Error> {
        self.conn
            .get()
            .ok_or_else(|| Error::internal_error("the chain is not connected"))
    }

    /// Its session `own`.
    pub(super) fn session(&self, own: &str) -> Option<Arc<Session>> {
        lock(&self.sessions).get(own).cloned()
    }

    pub(super) fn sessions(&self) -> Vec<Arc<Session>> {
        lock(&self.sessions).values().cloned().collect()
    }

    pub(super) fn insert(&self, session: &Arc<Session>) {
        lock(&self.sessions).insert(session.own.clone(), session.clone());
    }

    /// Forgets `session`; whether the chain has sessions left.
    pub(super) fn remove(&self, session: &Session) -> bool {
        let mut sessions = lock(&self.sessions);
        if sessions
            .get(&session.own)
            .is_some_and(|s| std::ptr::eq(&**s, session))
        {
            sessions.remove(&session.own);
        }
        !sessions.is_empty()
    }

    /// The client that started it, while it is connected.
    pub(super) fn origin(&self) -> Option<Arc<Client>> {
        lock(&self.origin).as_ref().and_then(Weak::upgrade)
    }

    /// Its client went away.
    pub(super) fn orphan(&self) {
        *lock(&self.origin) = None;
    }

    /// Whether nothing keeps it: no client of its own, no session.
    pub(super) fn unused(&self) -> bool {
        self.origin().is_none() && lock(&self.sessions).is_empty()
    }

    pub(super) fn set_initialized(&self, answer: &RawJson) {
        let mut initialized = lock(&self.initialized);
        if initialized.is_none() {
            *initialized = Some(answer.clone());
        }
    }

    /// Tells the chain (its trace) that `connection` attached to or left `session`.
    pub(super) fn note(&self, session: &str, event: &'static str, connection: &str) {
        if let Some(notes) = &self.notes {
            let note = Note {
                session: session.to_owned(),
                event,
                connection: connection.to_owned(),
            };
            if notes.try_send(note).is_err() {
                tracing::debug!(session, event, "the chain's trace did not take a note");
            }
        }
    }

    /// Ends the chain: the layer closes its side, which the chain takes as its editor
    /// leaving.
    pub(super) fn close(&self) {
        if let Some(conn) = self.conn.get() {
            conn.close();
        }
    }
}

/// The method nearly every notification of a session has, shared rather than made again.
const UPDATE: &str = "session/update";
static UPDATE_METHOD: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from(UPDATE));

/// The method of a session's updates, shared.
pub(super) fn update_method() -> Arc<str> {
    UPDATE_METHOD.clone()
}

/// What a chain sends.
struct ChainSide {
    layer: Weak<Layer>,
    link: Weak<ChainLink>,
}

impl ChainSide {
    fn parts(&self) -> Option<(Arc<Layer>, Arc<ChainLink>)> {
        Some((self.layer.upgrade()?, self.link.upgrade()?))
    }
}

impl Handler for ChainSide {
    type Lane = ();

    fn handle_request(
        &mut self,
        request: Request,
        responder: Responder,
        _cx: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static> {
        let parts = self.parts();
        let work = async move {
            let Some((layer, link)) = parts else {
                responder.answer_error(Error::internal_error("the session layer has stopped"));
                return;
            };
            match layer.chain_to_editor(&link, request.params) {
                Ok((Some(session), params)) => {
                    let params = params.unwrap_or_else(RawJson::null);
                    session.ask(Arc::new(Ask::new(request.method, params, responder)));
                }
                Ok((None, params)) => match link.origin().and_then(|c| c.conn().cloned()) {
                    Some(client) => client
                        .request_raw(request.method, params)
                        .relay_to(responder),
                    None => responder.answer_error(Error::internal_error(format!(
                        "no editor is connected to answer {}",
                        request.method
                    ))),
                },
                Err(e) => responder.answer_error(e),
            }
        };
        // In its turn: after what the chain sent before it.
        Work::in_turn(work, ())
    }

    fn handle_notification(
        &mut self,
        notification: Notification,
        _cx: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static> {
        let parts = self.parts();
        let work = async move {
            let Some((layer, link)) = parts else { return };
            match layer.chain_to_editor(&link, notification.params) {
                Ok((Some(session), params)) => {
                    let params = params.unwrap_or_else(RawJson::null);
                    let method = if notification.method == UPDATE {
                        UPDATE_METHOD.clone()
                    } else {
                        Arc::from(notification.method)
                    };
                    session.append(method, params, None).await;
                }
                Ok((None, params)) => {
                    let client = link.origin().and_then(|c| c.conn().cloned());
                    if let Some(client) = client {
                        let _ = client.notify_raw(notification.method, params).await;
                    }
                }
                Err(e) => tracing::debug!("cannot pass a notification on: {e}"),
            }
        };
        Work::in_turn(work, ())
    }
}
