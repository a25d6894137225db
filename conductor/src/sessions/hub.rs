//! The editor-facing hub: one editor's connection to what holds its sessions. The session
//! layer (`--listen`, `--share`: each network connection a client of its chains) and the
//! session router (`conductor route`: one editor, a backend per workspace) both stand on it;
//! what differs is the [`Sessions`] behind it.
//!
//! The hub reads what the editor sends, in arrival order, and names it: a method the hub
//! knows (`initialize`, `session/new`, `session/load` and `session/resume`, `session/list`,
//! `session/attach`, `session/detach`), a request or notification about the session its
//! params name (`sessionId`), or one of no session. Each goes to its [`Sessions`] method in
//! its turn — so that a `session/cancel` sent after a prompt reaches the session after it —
//! and a method that has to wait for an answer passes its request on there and then and
//! awaits the answer in a task of its own: nothing an editor sends waits behind another
//! request's answer.

use std::future::Future;
use std::sync::Arc;

use sacp::jsonrpc::{Connection, Error, Handler, Notification, RawJson, Request, Responder, Work};

use super::rewrite::session_of;

/// A request not dealt with, and why: the hub answers it with the error.
pub(crate) type Unanswered = Box<(Responder, Error)>;

/// Leaves `responder` to the hub, to be answered with `e`.
pub(crate) fn fail(responder: Responder, e: Error) -> Result<(), Unanswered> {
    Err(Box::new((responder, e)))
}

/// Answers `responder` with what `answer` gives, from a task of its own — unless the editor
/// cancels the request (`$/cancel_request`, or its connection ends) first: then the work is
/// dropped, and with it whatever it was awaiting (a request to a backend is cancelled there in
/// turn), as a handler's work started with `Work::start` would be.
pub(crate) fn answer_later(
    responder: Responder,
    answer: impl Future<Output = Result<RawJson, Error>> + Send + 'static,
) {
    tokio::spawn(async move {
        let result = tokio::select! {
            result = answer => result,
            () = responder.cancelled() => return,
        };
        responder.answer_raw(result);
    });
}

/// What the editors' requests and notifications go to. Each method is called in the
/// request's turn: it passes the request on (or answers it) before it returns, and leaves
/// waiting for an answer to a task of its own. `editor` is what the hub keeps of the
/// connection the message came on.
pub(crate) trait Sessions: Send + Sync + Sized + 'static {
    /// What is kept of one editor's connection.
    type Editor: Send + Sync + 'static;

    /// `initialize`.
    fn initialize(
        self: Arc<Self>,
        editor: Arc<Self::Editor>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> impl Future<Output = Result<(), Unanswered>> + Send;

    /// `session/new`.
    fn new_session(
        self: Arc<Self>,
        editor: Arc<Self::Editor>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> impl Future<Output = Result<(), Unanswered>> + Send;

    /// `session/load` or `session/resume` (`method`).
    fn load(
        self: Arc<Self>,
        editor: Arc<Self::Editor>,
        method: String,
        params: Option<RawJson>,
        responder: Responder,
    ) -> impl Future<Output = Result<(), Unanswered>> + Send;

    /// `session/list`.
    fn list(
        self: Arc<Self>,
        editor: Arc<Self::Editor>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> impl Future<Output = Result<(), Unanswered>> + Send;

    /// A request about session `id` (a prompt, a fork, a close, …) that is none of the above.
    fn to_session(
        self: Arc<Self>,
        editor: Arc<Self::Editor>,
        id: String,
        method: String,
        params: Option<RawJson>,
        responder: Responder,
    ) -> impl Future<Output = Result<(), Unanswered>> + Send;

    /// A request of no session (`authenticate`, an extension method, …).
    fn unbound(
        self: Arc<Self>,
        editor: Arc<Self::Editor>,
        method: String,
        params: Option<RawJson>,
        responder: Responder,
    ) -> impl Future<Output = Result<(), Unanswered>> + Send;

    /// `session/attach`: by default, a request like any other about its session.
    fn session_attach(
        self: Arc<Self>,
        editor: Arc<Self::Editor>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> impl Future<Output = Result<(), Unanswered>> + Send {
        by_session(self, editor, "session/attach".to_owned(), params, responder)
    }

    /// `session/detach`: by default, a request like any other about its session.
    fn session_detach(
        self: Arc<Self>,
        editor: Arc<Self::Editor>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> impl Future<Output = Result<(), Unanswered>> + Send {
        by_session(self, editor, "session/detach".to_owned(), params, responder)
    }

    /// A notification, about session `id` if its params name one (a `session/cancel`, …).
    fn notify(
        self: Arc<Self>,
        editor: Arc<Self::Editor>,
        id: Option<String>,
        notification: Notification,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

/// A request to [`Sessions::to_session`] when its params name a session, else to
/// [`Sessions::unbound`].
async fn by_session<S: Sessions>(
    sessions: Arc<S>,
    editor: Arc<S::Editor>,
    method: String,
    params: Option<RawJson>,
    responder: Responder,
) -> Result<(), Unanswered> {
    match session_of(params.as_ref()) {
        Some(id) => {
            sessions
                .to_session(editor, id, method, params, responder)
                .await
        }
        None => sessions.unbound(editor, method, params, responder).await,
    }
}

/// Serves `editor`'s connection on `transport` (as an ACP agent), its messages to `sessions`;
/// the connection is given back at once (await [`Connection::closed`] for its end).
pub(crate) fn serve<S: Sessions>(
    sessions: Arc<S>,
    editor: Arc<S::Editor>,
    name: String,
    transport: impl sacp::jsonrpc::Transport,
) -> Connection {
    sacp::agent::builder()
        .name(name)
        .spawn(transport, Hub { sessions, editor })
}

/// The handler of one editor's connection.
struct Hub<S: Sessions> {
    sessions: Arc<S>,
    editor: Arc<S::Editor>,
}

/// Gives `request` to the [`Sessions`] method that takes it.
async fn dispatch<S: Sessions>(
    sessions: Arc<S>,
    editor: Arc<S::Editor>,
    request: Request,
    responder: Responder,
) -> Result<(), Unanswered> {
    let Request { method, params, .. } = request;
    match method.as_str() {
        "initialize" => sessions.initialize(editor, params, responder).await,
        "session/new" => sessions.new_session(editor, params, responder).await,
        "session/load" | "session/resume" => sessions.load(editor, method, params, responder).await,
        "session/list" => sessions.list(editor, params, responder).await,
        "session/attach" => sessions.session_attach(editor, params, responder).await,
        "session/detach" => sessions.session_detach(editor, params, responder).await,
        _ => by_session(sessions, editor, method, params, responder).await,
    }
}

impl<S: Sessions> Handler for Hub<S> {
    type Lane = ();

    fn handle_request(
        &mut self,
        request: Request,
        responder: Responder,
        _cx: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static> {
        let (sessions, editor) = (self.sessions.clone(), self.editor.clone());
        let work = async move {
            if let Err(failed) = dispatch(sessions, editor, request, responder).await {
                let (responder, e) = *failed;
                responder.answer_error(e);
            }
        };
        Work::in_turn(work, ())
    }

    fn handle_notification(
        &mut self,
        notification: Notification,
        _cx: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static> {
        let (sessions, editor) = (self.sessions.clone(), self.editor.clone());
        let work = async move {
            let id = session_of(notification.params.as_ref());
            if let Err(e) = sessions.notify(editor, id, notification).await {
                tracing::debug!("cannot pass a notification on: {e}");
            }
        };
        Work::in_turn(work, ())
    }
}
