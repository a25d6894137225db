//! The router at work: the editor's side, the backends' side, and the table between them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::json;

use super::backend::Backend;
use super::ids::{own_of, tag};
use super::rewrite::translate_paths;
use super::table::Table;
use super::{Config, Launcher, Workspace};
use crate::sessions::hub::{self, Sessions, Unanswered, answer_later, fail};
use crate::sessions::rewrite::{Place, rename_sessions, session_of, with_session};
use sacp::jsonrpc::{
    Connection, Error, Handler, Notification, PendingResponse, RawJson, Request, Responder,
    Transport, Work,
};

use crate::lock::lock as locked;

/// A workspace's live backend, if any; locked while one is started.
type Slot = tokio::sync::Mutex<Option<Arc<Backend>>>;

/// The router's state.
struct Router {
    config: Config,
    launcher: Box<dyn Launcher>,
    editor: OnceLock<Connection>,
    /// The editor's `initialize` params, for every backend.
    init_params: Mutex<Option<RawJson>>,
    /// The editor's `authenticate` params, for every backend started after it.
    auth_params: Mutex<Option<RawJson>>,
    /// One slot per workspace root: the live backend, started once.
    slots: Mutex<HashMap<PathBuf, Arc<Slot>>>,
    /// Every session, by the editor's id.
    table: Mutex<Table>,
}

/// Runs the router on `transport` (its editor) until the editor closes it; then every backend
/// is stopped.
pub async fn serve(
    config: Config,
    launcher: impl Launcher,
    transport: impl Transport,
) -> Result<(), Error> {
    let router = Arc::new(Router {
        config,
        launcher: Box::new(launcher),
        editor: OnceLock::new(),
        init_params: Mutex::default(),
        auth_params: Mutex::default(),
        slots: Mutex::default(),
        table: Mutex::default(),
    });
    let editor = hub::serve(router.clone(), Arc::new(()), "editor".to_owned(), transport);
    let _ = router.editor.set(editor.clone());
    let closed = editor.closed().await;
    router.stop_all();
    closed
}

impl Router {
    fn editor(&self) -> Result<&Connection, Error> {
        self.editor
            .get()
            .ok_or_else(|| Error::internal_error("the editor is not connected"))
    }

    fn live_backends(&self) -> Vec<Arc<Backend>> {
        let mut seen: Vec<Arc<Backend>> = locked(&self.table).backends();
        seen.retain(|b| !b.is_dead());
        for slot in locked(&self.slots).values() {
            if let Ok(slot) = slot.try_lock()
                && let Some(backend) = slot.as_ref()
                && !backend.is_dead()
                && !seen.iter().any(|b| Arc::ptr_eq(b, backend))
            {
                seen.push(backend.clone());
            }
        }
        seen
    }

    fn stop_all(&self) {
        for backend in self.live_backends() {
            if let Some(conn) = backend.conn.get() {
                conn.close();
            }
            backend.process.stop();
        }
    }

    async fn notify(&self, id: Option<String>, method: &str, params: Option<RawJson>) {
        let Some(id) = id else {
            tracing::debug!(method, "dropped a notification without a session");
            return;
        };
        let Some(backend) = locked(&self.table).get(&id).map(|e| e.chain.clone()) else {
            tracing::debug!(method, session = %id, "dropped a notification for an unknown session");
            return;
        };
        let sent = match (self.to_backend(params), backend.conn()) {
            (Ok(params), Ok(conn)) => conn.notify_raw(method, params).await,
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
        if let Err(e) = sent {
            tracing::debug!(method, "cannot pass a notification on: {e}");
        }
    }

    /// The editor's params or result with every session id the backend's own.
    fn to_backend(&self, raw: Option<RawJson>) -> Result<Option<RawJson>, Error> {
        let Some(raw) = raw else { return Ok(None) };
        let table = locked(&self.table);
        rename_sessions(raw, |id, _| table.get(id).map(|e| e.own.clone())).map(Some)
    }

    /// `backend`'s params or result with every session id the editor's: the sessions it
    /// names for the first time (a new session, a fork, a subagent, …) are learned on the
    /// way, a subagent as a child of the message's session.
    fn to_editor(
        &self,
        backend: &Arc<Backend>,
        raw: Option<RawJson>,
    ) -> Result<Option<RawJson>, Error> {
        let Some(raw) = raw else { return Ok(None) };
        let mut table = locked(&self.table);
        let mut parent: Option<String> = None;
        rename_sessions(raw, |own, place| {
            let id = match place {
                Place::Child => table.learn(backend, own, parent.as_deref()),
                _ => table.learn(backend, own, None),
            };
            if place == Place::Session {
                parent = Some(id.clone());
            }
            Some(id)
        })
        .map(Some)
    }

    /// Answers `initialize` itself, from the configuration: no backend starts for it (a
    /// backend runs for a workspace a session asked for, and may only be able to run there).
    /// The editor's params are kept for each backend it starts.
    async fn initialize(self: Arc<Self>, params: Option<RawJson>) -> Result<RawJson, Error> {
        *locked(&self.init_params) = params;
        self.config.initialize_result()
    }

    /// Passes `authenticate` to every live backend, and keeps it for the ones started later.
    async fn authenticate(&self, params: Option<RawJson>) -> Result<RawJson, Error> {
        *locked(&self.auth_params) = params.clone();
        let mut answer = RawJson::to_raw(&json!({}))?;
        for backend in self.live_backends() {
            answer = backend
                .conn()?
                .request_raw("authenticate", params.clone())
                .await?;
        }
        Ok(answer)
    }

    /// The live backend of `workspace`, started (and initialized) if there is none, claimed
    /// for a request that may give it a session.
    async fn backend(self: &Arc<Self>, workspace: Workspace) -> Result<Claimed, Error> {
        let slot = locked(&self.slots)
            .entry(workspace.root.clone())
            .or_default()
            .clone();
        let mut slot = slot.lock().await;
        if let Some(backend) = slot.as_ref()
            && backend.claim().is_some()
        {
            return Ok(Claimed {
                router: self.clone(),
                backend: backend.clone(),
            });
        }
        // Starting it and replaying the editor's `initialize` (and `authenticate`) have a
        // deadline: this workspace's `session/new`s wait on its slot meanwhile, nobody else
        // does.
        let deadline = self.config.start_timeout();
        let mut stage = "start";
        let mut started: Option<Arc<Backend>> = None;
        let starting = async {
            let launched = self.launcher.launch(&workspace).await?;
            let backend = Arc::new(Backend::new(workspace.clone(), launched.process));
            started = Some(backend.clone());
            let conn = self.connect(&backend, launched.transport);
            // The editor's `initialize` (and `authenticate`, if it came), replayed.
            let init = locked(&self.init_params).clone();
            let auth = locked(&self.auth_params).clone();
            stage = "answer `initialize`";
            conn.request_raw("initialize", init).await?;
            if auth.is_some() {
                stage = "answer `authenticate`";
                conn.request_raw("authenticate", auth).await?;
            }
            Ok::<_, Error>(backend)
        };
        let outcome = tokio::time::timeout(deadline, starting).await;
        let backend = match outcome {
            Ok(Ok(backend)) => backend,
            Ok(Err(e)) => {
                let Some(backend) = started else {
                    return Err(e);
                };
                let failure = if e.is_peer_closed() {
                    backend.failure().await
                } else {
                    backend.failure_with(&e)
                };
                backend.process.stop();
                return Err(failure);
            }
            Err(_) => {
                if let Some(backend) = &started {
                    if let Some(conn) = backend.conn.get() {
                        conn.close();
                    }
                    backend.process.stop();
                }
                return Err(Error::internal_error(format!(
                    "the backend of workspace {:?} (`{}`) did not {stage} within {}",
                    workspace.name,
                    workspace.shown_command(),
                    humantime::format_duration(deadline)
                ))
                .with_data(serde_json::json!({
                    "workspace": workspace.name,
                    "root": workspace.root,
                    "command": workspace.shown_command(),
                })));
            }
        };
        *slot = Some(backend.clone());
        backend.claim();
        Ok(Claimed {
            router: self.clone(),
            backend,
        })
    }

    /// Connects to a started backend, and watches for its end.
    fn connect(
        self: &Arc<Self>,
        backend: &Arc<Backend>,
        transport: super::BackendTransport,
    ) -> Connection {
        let conn = Connection::builder()
            .name(format!("backend {}", backend.workspace.name))
            .spawn(
                transport,
                BackendSide {
                    router: Arc::downgrade(self),
                    backend: backend.clone(),
                },
            );
        let _ = backend.conn.set(conn.clone());
        let watcher = (Arc::downgrade(self), backend.clone(), conn.clone());
        tokio::spawn(async move {
            let (router, backend, conn) = watcher;
            let _ = conn.closed().await;
            let how = backend.process.ended().await;
            tracing::info!(workspace = %backend.workspace.name, "the backend {how}");
            backend.set_ended(how);
            if let Some(router) = router.upgrade() {
                router.forget(&backend);
            }
        });
        conn
    }

    /// Drops a backend that ended, and its sessions.
    fn forget(&self, backend: &Arc<Backend>) {
        locked(&self.table).forget_backend(backend);
    }

    /// The session `id` is over, and its subagents with it: a backend left without sessions
    /// ends.
    fn session_ended(&self, id: &str) {
        let touched = locked(&self.table).close(id);
        for (backend, left) in touched {
            if left == 0 && backend.retire_if_unused(None) {
                tracing::info!(workspace = %backend.workspace.name, "its last session ended: stopping the backend");
                if let Some(conn) = backend.conn.get() {
                    conn.close();
                }
                backend.process.stop();
            }
        }
    }

    /// Stops `backend` after the idle timeout if nothing claimed it and no session came or
    /// went since `epoch`.
    fn idle_check(&self, backend: &Arc<Backend>, epoch: u64) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let backend = backend.clone();
        let idle = self.config.idle_timeout();
        runtime.spawn(async move {
            tokio::time::sleep(idle).await;
            if backend.retire_if_unused(Some(epoch)) {
                tracing::info!(workspace = %backend.workspace.name, "idle: stopping the backend");
                if let Some(conn) = backend.conn.get() {
                    conn.close();
                }
                backend.process.stop();
            }
        });
    }

    async fn new_session(self: Arc<Self>, params: Option<RawJson>) -> Result<RawJson, Error> {
        let params = params.ok_or_else(|| Error::invalid_params("session/new needs params"))?;
        let cwd = cwd_of(&params)?;
        let workspace = self.config.workspace_for(Path::new(&cwd))?;
        let backend = self.backend(workspace).await?;
        let params = match &backend.workspace.paths {
            Some(paths) => translate_paths(params, paths)?,
            None => params,
        };
        let result = self.ask(&backend, "session/new", Some(params)).await?;
        if session_of(Some(&result)).is_none() {
            return Err(Error::internal_error(
                "the backend's session/new has no sessionId",
            ));
        }
        self.to_editor(&backend, Some(result))?
            .ok_or_else(|| Error::internal_error("no result"))
    }

    /// `session/load` and `session/resume`: of a session the router has (on a live backend),
    /// or of one the editor kept — from an earlier router, or from a backend that ended — on
    /// the backend of the workspace its `cwd` names, under the backend's own id (see
    /// [`super::ids`]).
    async fn load(
        self: Arc<Self>,
        method: &str,
        params: Option<RawJson>,
    ) -> Result<RawJson, Error> {
        let params =
            params.ok_or_else(|| Error::invalid_params(format!("{method} needs params")))?;
        let id = session_of(Some(&params))
            .ok_or_else(|| Error::invalid_params(format!("{method} needs a sessionId")))?;
        let known = locked(&self.table)
            .get(&id)
            .filter(|e| !e.chain.is_dead())
            .map(|e| (e.chain.clone(), e.own.clone()));
        let (backend, own, _claim) = match known {
            Some((backend, own)) => (backend, own, None),
            None => {
                let cwd = cwd_of(&params)?;
                let workspace = self.config.workspace_for(Path::new(&cwd))?;
                let own = own_of(&id, &tag(&workspace.name)).to_owned();
                let claimed = self.backend(workspace).await?;
                let backend = claimed.backend.clone();
                // Learned before the backend answers: the history it replays first is the
                // editor's session's.
                locked(&self.table).adopt(&id, &backend, &own);
                (backend, own, Some(claimed))
            }
        };
        // Under the backend's own id (added if the editor's params lacked one), with the
        // paths as the backend sees them.
        let mut params = with_session(Some(params), &own)?;
        if let Some(paths) = &backend.workspace.paths {
            params = params.map(|raw| translate_paths(raw, paths)).transpose()?;
        }
        let result = self.ask(&backend, method, params).await?;
        self.to_editor(&backend, Some(result))?
            .ok_or_else(|| Error::internal_error("no result"))
    }

    async fn list(&self, params: Option<RawJson>) -> Result<RawJson, Error> {
        let mut all = Vec::new();
        for backend in self.live_backends() {
            let Ok(conn) = backend.conn() else { continue };
            let listed = match conn.request_raw("session/list", params.clone()).await {
                Ok(result) => self.to_editor(&backend, Some(result)),
                Err(e) => Err(e),
            };
            match listed.and_then(|r| {
                r.ok_or_else(|| Error::internal_error("no result"))?
                    .parse::<serde_json::Map<String, serde_json::Value>>()
            }) {
                Ok(mut result) => {
                    if let Some(serde_json::Value::Array(sessions)) = result.remove("sessions") {
                        all.extend(sessions);
                    }
                }
                Err(e) => tracing::debug!(workspace = %backend.workspace.name, "session/list: {e}"),
            }
        }
        RawJson::to_raw(&json!({ "sessions": all }))
    }

    /// A request about session `id` (a prompt, a fork, …), sent to its backend under the
    /// backend's own ids, in the editor's order: its answer to await
    /// ([`Router::session_answer`]).
    fn send_to_session(
        &self,
        method: &str,
        params: Option<RawJson>,
        id: &str,
    ) -> Result<Sent, Error> {
        let backend = locked(&self.table)
            .get(id)
            .map(|e| e.chain.clone())
            .ok_or_else(|| Error::invalid_params(format!("unknown session {id:?}")))?;
        if backend.is_dead() {
            return Ok((backend, None));
        }
        let params = self.to_backend(params)?;
        let pending = backend.conn()?.request_raw(method, params);
        Ok((backend, Some(pending)))
    }

    /// The answer to a request about session `id` ([`Router::send_to_session`]), under the
    /// editor's ids (a fork's new session learned); if the backend ended meanwhile, the error
    /// names it.
    async fn session_answer(
        &self,
        (backend, pending): Sent,
        method: &str,
        id: &str,
    ) -> Result<RawJson, Error> {
        let Some(pending) = pending else {
            return Err(backend.failure().await);
        };
        let result = match pending.await {
            Err(e) if e.is_peer_closed() || backend.is_dead() => Err(backend.failure().await),
            other => other,
        }?;
        if matches!(method, "session/close" | "session/delete") {
            self.session_ended(id);
            return Ok(result);
        }
        self.to_editor(&backend, Some(result))?
            .ok_or_else(|| Error::internal_error("no result"))
    }

    /// A request to `backend`; if it ended meanwhile, the error names it.
    async fn ask(
        &self,
        backend: &Backend,
        method: &str,
        params: Option<RawJson>,
    ) -> Result<RawJson, Error> {
        if backend.is_dead() {
            return Err(backend.failure().await);
        }
        match backend.conn()?.request_raw(method, params).await {
            Err(e) if e.is_peer_closed() || backend.is_dead() => Err(backend.failure().await),
            other => other,
        }
    }
}

/// A request sent to a session's backend, and its answer to come (none: the backend had ended).
type Sent = (Arc<Backend>, Option<PendingResponse<RawJson>>);

/// A backend claimed by [`Router::backend`]; releasing the claim arms the idle timer when
/// it leaves the backend unused.
struct Claimed {
    router: Arc<Router>,
    backend: Arc<Backend>,
}

impl std::ops::Deref for Claimed {
    type Target = Arc<Backend>;

    fn deref(&self) -> &Arc<Backend> {
        &self.backend
    }
}

impl Drop for Claimed {
    fn drop(&mut self) {
        if let Some(epoch) = self.backend.release() {
            self.router.idle_check(&self.backend, epoch);
        }
    }
}

fn cwd_of(params: &RawJson) -> Result<String, Error> {
    #[derive(serde::Deserialize)]
    struct Cwd {
        cwd: String,
    }
    params
        .parse::<Cwd>()
        .map(|c| c.cwd)
        .map_err(|_| Error::invalid_params("the request needs a `cwd`"))
}

/// The router under its editor's connection: the hub gives it what the editor sends (see
/// `sessions/hub.rs`). A request is answered from a task of its own ([`answer_later`]: a
/// `session/new` may start a backend first), a request about a session passed on to its
/// backend in its turn.
impl Sessions for Router {
    type Editor = ();

    async fn initialize(
        self: Arc<Self>,
        _: Arc<()>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        responder.answer_raw(Router::initialize(self, params).await);
        Ok(())
    }

    async fn new_session(
        self: Arc<Self>,
        _: Arc<()>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        answer_later(responder, Router::new_session(self, params));
        Ok(())
    }

    async fn load(
        self: Arc<Self>,
        _: Arc<()>,
        method: String,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        answer_later(responder, async move {
            Router::load(self, &method, params).await
        });
        Ok(())
    }

    async fn list(
        self: Arc<Self>,
        _: Arc<()>,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        answer_later(responder, async move { Router::list(&self, params).await });
        Ok(())
    }

    async fn to_session(
        self: Arc<Self>,
        _: Arc<()>,
        id: String,
        method: String,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        let asked = match self.send_to_session(&method, params, &id) {
            Ok(asked) => asked,
            Err(e) => return fail(responder, e),
        };
        answer_later(responder, async move {
            self.session_answer(asked, &method, &id).await
        });
        Ok(())
    }

    async fn unbound(
        self: Arc<Self>,
        _: Arc<()>,
        method: String,
        params: Option<RawJson>,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        if method != "authenticate" {
            return fail(responder, Error::method_not_found(&method));
        }
        answer_later(responder, async move { self.authenticate(params).await });
        Ok(())
    }

    async fn notify(
        self: Arc<Self>,
        _: Arc<()>,
        id: Option<String>,
        notification: Notification,
    ) -> Result<(), Error> {
        let Notification { method, params } = notification;
        Router::notify(&self, id, &method, params).await;
        Ok(())
    }
}

/// What a backend sends: to the editor, with the editor's session ids.
struct BackendSide {
    router: std::sync::Weak<Router>,
    backend: Arc<Backend>,
}

impl BackendSide {
    fn to_editor(&self, params: Option<RawJson>) -> Result<(Arc<Router>, Option<RawJson>), Error> {
        let router = self
            .router
            .upgrade()
            .ok_or_else(|| Error::internal_error("the router has stopped"))?;
        let params = router.to_editor(&self.backend, params)?;
        Ok((router, params))
    }
}

impl Handler for BackendSide {
    type Lane = ();

    fn handle_request(
        &mut self,
        request: Request,
        responder: Responder,
        _cx: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static> {
        let prepared = self.to_editor(request.params);
        // Sent in its turn (after what the backend sent before it), relayed from a task of
        // its own.
        let work = async move {
            match prepared.and_then(|(router, params)| {
                Ok(router.editor()?.request_raw(request.method, params))
            }) {
                Ok(pending) => pending.relay_to(responder),
                Err(e) => responder.answer_error(e),
            }
        };
        Work::in_turn(work, ())
    }

    fn handle_notification(
        &mut self,
        notification: Notification,
        _cx: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static> {
        let prepared = self.to_editor(notification.params);
        let work = async move {
            let sent = match prepared {
                Ok((router, params)) => match router.editor() {
                    Ok(editor) => editor.notify_raw(notification.method, params).await,
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
            if let Err(e) = sent {
                tracing::debug!("cannot pass a notification to the editor: {e}");
            }
        };
        Work::in_turn(work, ())
    }
}
