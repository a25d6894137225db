//! [`ScriptedEditor`]: the client in front of a [`TestChain`](super::TestChain), with its
//! sessions, their turns, and its answers to what the agent asks of it.

use std::collections::{BTreeMap, HashMap};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::oneshot;

use crate::acp::{
    CancelNotification, ClientCapabilities, ContentBlock, FileSystemCapabilities,
    InitializeRequest, InitializeResponse, LoadSessionRequest, NewSessionRequest,
    PermissionOptionKind, PromptRequest, ReadTextFileRequest, ReadTextFileResponse,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionId, SessionNotification, SessionUpdate, TextContent,
    WriteTextFileRequest, WriteTextFileResponse,
};
use crate::jsonrpc::{Connection, Error, Methods, Transport};
use crate::lock::lock;

use super::patience::within;
use super::turn::TurnSeen;

type Chooser = Arc<dyn Fn(&RequestPermissionRequest) -> RequestPermissionOutcome + Send + Sync>;

/// How the editor answers `session/request_permission`.
#[derive(Clone)]
pub enum Permission {
    /// Picks the first option of this kind (the first option when there is none of it).
    Choose(PermissionOptionKind),
    /// Answers `cancelled`, as an editor whose user dismissed the prompt.
    Dismiss,
    /// Answers what the closure returns.
    With(Chooser),
}

impl std::fmt::Debug for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Permission::Choose(kind) => write!(f, "Choose({kind:?})"),
            Permission::Dismiss => f.write_str("Dismiss"),
            Permission::With(_) => f.write_str("With(..)"),
        }
    }
}

impl Permission {
    fn answer(&self, request: &RequestPermissionRequest) -> RequestPermissionOutcome {
        let pick = |kind: &PermissionOptionKind| {
            request
                .options
                .iter()
                .find(|o| &o.kind == kind)
                .or_else(|| request.options.first())
                .map(|o| {
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                        o.option_id.clone(),
                    ))
                })
                .unwrap_or(RequestPermissionOutcome::Cancelled)
        };
        match self {
            Permission::Choose(kind) => pick(kind),
            Permission::Dismiss => RequestPermissionOutcome::Cancelled,
            Permission::With(choose) => choose(request),
        }
    }
}

/// What the editor was sent and what it answered, shared by its clones.
struct State {
    connection: OnceLock<Connection>,
    permission: Mutex<Permission>,
    /// The files it can read (`fs/read_text_file`), and the ones written to it.
    files: Mutex<BTreeMap<String, String>>,
    /// Every `session/request_permission` it got, with what it answered.
    asked: Mutex<Vec<(RequestPermissionRequest, RequestPermissionOutcome)>>,
    /// Every `fs/write_text_file` it got.
    writes: Mutex<Vec<WriteTextFileRequest>>,
    /// The updates of each session, in arrival order.
    sessions: Mutex<HashMap<String, Arc<Log>>>,
}

/// One session's updates as they arrived, and its prompts not sent yet.
#[derive(Default)]
pub(super) struct Log {
    pub(super) updates: Mutex<Vec<SessionUpdate>>,
    /// Woken at every update.
    pub(super) arrived: tokio::sync::Notify,
    /// One per prompt whose task has not sent it yet: a cancel goes out after them.
    unsent: Mutex<Vec<oneshot::Receiver<()>>>,
}

impl Log {
    pub(super) fn len(&self) -> usize {
        lock(&self.updates).len()
    }

    pub(super) fn since(&self, from: usize) -> Vec<SessionUpdate> {
        lock(&self.updates)
            .get(from..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }
}

/// The editor of a [`TestChain`](super::TestChain): it initializes the chain, opens sessions,
/// prompts and cancels, and answers the agent's requests by policy — permissions
/// ([`ScriptedEditor::permission`]) and files ([`ScriptedEditor::file`]; writes are kept).
/// Clones share it.
///
/// Configure it before the chain starts, with [`TestChain::editor`](super::TestChain::editor):
///
/// ```no_run
/// use sacp::acp::PermissionOptionKind;
/// use sacp::testing::{Permission, ScriptedEditor, TestChain};
///
/// let editor = ScriptedEditor::new()
///     .permission(Permission::Choose(PermissionOptionKind::RejectOnce))
///     .file("/work/notes.md", "# Notes");
/// let chain = TestChain::new().editor(editor);
/// # let _ = chain;
/// ```
#[derive(Clone)]
pub struct ScriptedEditor(Arc<State>);

impl std::fmt::Debug for ScriptedEditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedEditor")
            .field("permission", &*lock(&self.0.permission))
            .finish_non_exhaustive()
    }
}

impl Default for ScriptedEditor {
    fn default() -> Self {
        ScriptedEditor::new()
    }
}

impl ScriptedEditor {
    /// An editor that allows what it is asked once (the first `allow_once` option), has no
    /// files, and keeps what is written to it.
    pub fn new() -> ScriptedEditor {
        ScriptedEditor(Arc::new(State {
            connection: OnceLock::new(),
            permission: Mutex::new(Permission::Choose(PermissionOptionKind::AllowOnce)),
            files: Mutex::default(),
            asked: Mutex::default(),
            writes: Mutex::default(),
            sessions: Mutex::default(),
        }))
    }

    /// How it answers permission requests from now on.
    pub fn permission(self, permission: Permission) -> ScriptedEditor {
        *lock(&self.0.permission) = permission;
        self
    }

    /// A file it can read to the agent.
    pub fn file(self, path: impl Into<String>, content: impl Into<String>) -> ScriptedEditor {
        lock(&self.0.files).insert(path.into(), content.into());
        self
    }

    /// Connects the editor to an agent on `transport` — what [`TestChain`](super::TestChain)
    /// does with its own conductor; use it directly in front of anything else that speaks ACP
    /// as an agent: the conductor library run in-process (`sacp_conductor::run`), or a
    /// process's stdio (`ByteStream::new(child_stdout, child_stdin)`).
    pub fn connect(self, transport: impl Transport) -> ScriptedEditor {
        let state = self.0.clone();
        let methods = Methods::new()
            .on_notification({
                let state = state.clone();
                move |n: SessionNotification, _cx| {
                    let log = state.log(&n.session_id.0);
                    // Recorded in the lane's turn (not as it is read), so that an answer
                    // that came before it is taken first.
                    async move {
                        lock(&log.updates).push(n.update);
                        log.arrived.notify_waiters();
                        Ok(())
                    }
                }
            })
            .on_request({
                let state = state.clone();
                move |req: RequestPermissionRequest, _cx| {
                    let outcome = lock(&state.permission).answer(&req);
                    lock(&state.asked).push((req, outcome.clone()));
                    async move { Ok(RequestPermissionResponse::new(outcome)) }
                }
            })
            .on_request({
                let state = state.clone();
                move |req: ReadTextFileRequest, _cx| {
                    let content = lock(&state.files).get(&req.path).cloned();
                    async move {
                        match content {
                            Some(content) => Ok(ReadTextFileResponse::new(content)),
                            None => Err(Error::new(
                                i64::from(crate::acp::ErrorCode::RESOURCE_NOT_FOUND.0),
                                format!("the scripted editor has no file {}", req.path),
                            )),
                        }
                    }
                }
            })
            .on_request({
                let state = state.clone();
                move |req: WriteTextFileRequest, _cx| {
                    lock(&state.files).insert(req.path.clone(), req.content.clone());
                    lock(&state.writes).push(req);
                    async { Ok(WriteTextFileResponse::new()) }
                }
            });
        let connection = Connection::builder()
            .name("the chain")
            .spawn(transport, methods);
        let _ = state.connection.set(connection);
        self
    }

    /// The connection to the chain, for what the methods here do not cover.
    ///
    /// # Panics
    /// Before the chain started.
    pub fn connection(&self) -> &Connection {
        self.0
            .connection
            .get()
            .expect("the scripted editor is connected once its chain has started")
    }

    /// Sends `initialize` as an editor does: protocol version 1, file reading and writing
    /// offered.
    pub async fn initialize(&self) -> Result<InitializeResponse, Error> {
        let capabilities = ClientCapabilities::default().fs(FileSystemCapabilities::default()
            .read_text_file(true)
            .write_text_file(true));
        let request = InitializeRequest::new(crate::acp::ProtocolVersion::from(1))
            .client_capabilities(capabilities);
        self.initialize_with(request).await
    }

    /// Sends this `initialize`.
    pub async fn initialize_with(
        &self,
        request: InitializeRequest,
    ) -> Result<InitializeResponse, Error> {
        within(
            "the answer to `initialize`",
            self.connection().request(request),
        )
        .await
    }

    /// Opens a session in `/` with no MCP servers of the editor's.
    pub async fn new_session(&self) -> Result<Session, Error> {
        self.new_session_with(NewSessionRequest::new("/", Vec::new()))
            .await
    }

    /// Opens a session with this `session/new`.
    pub async fn new_session_with(&self, request: NewSessionRequest) -> Result<Session, Error> {
        let answer = within(
            "the answer to `session/new`",
            self.connection().request(request),
        )
        .await?;
        Ok(Session {
            editor: self.clone(),
            log: self.0.log(&answer.session_id.0),
            id: answer.session_id,
        })
    }

    /// Takes up session `id` with `session/load` (in `/`, with no MCP servers of the
    /// editor's): the session, whose updates from the replay on are kept as those of a session
    /// it opened.
    pub async fn load_session(&self, id: impl Into<SessionId>) -> Result<Session, Error> {
        let id = id.into();
        let log = self.0.log(&id.0);
        within(
            "the answer to `session/load`",
            self.connection()
                .request(LoadSessionRequest::new(Vec::new(), "/", id.clone())),
        )
        .await?;
        Ok(Session {
            editor: self.clone(),
            log,
            id,
        })
    }

    /// Every permission request it got, with what it answered, in arrival order.
    pub fn permission_requests(&self) -> Vec<(RequestPermissionRequest, RequestPermissionOutcome)> {
        lock(&self.0.asked).clone()
    }

    /// Every `fs/write_text_file` it got, in arrival order.
    pub fn writes(&self) -> Vec<WriteTextFileRequest> {
        lock(&self.0.writes).clone()
    }
}

impl State {
    fn log(&self, session: &str) -> Arc<Log> {
        lock(&self.sessions)
            .entry(session.to_owned())
            .or_default()
            .clone()
    }
}

/// One session of the [`ScriptedEditor`]. Clones share it.
#[derive(Clone)]
pub struct Session {
    editor: ScriptedEditor,
    id: SessionId,
    log: Arc<Log>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The session's id, as the agent gave it.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// Sends a prompt of one text block. It is sent at once; await the [`PendingTurn`] for the
    /// [`TurnSeen`] — the updates that arrived between the prompt and its answer, exactly, and
    /// the answer.
    pub fn prompt(&self, text: impl Into<String>) -> PendingTurn {
        self.prompt_with(vec![ContentBlock::Text(TextContent::new(text.into()))])
    }

    /// Sends a prompt of these blocks (see [`Session::prompt`]).
    pub fn prompt_with(&self, blocks: Vec<ContentBlock>) -> PendingTurn {
        let connection = self.editor.connection().clone();
        let request = PromptRequest::new(self.id.clone(), blocks);
        let log = self.log.clone();
        let (sent_tx, sent_rx) = oneshot::channel();
        lock(&log.unsent).push(sent_rx);
        let (tx, rx) = oneshot::channel();
        // Sent and awaited in a task of the connection's own: the answer then holds the
        // updates that came after it until this task has taken the turn's, so the cut is
        // exact (see `jsonrpc::hold`).
        let sender = connection.clone();
        connection.spawn(async move {
            let from = log.len();
            let answer = sender.request(request);
            let _ = sent_tx.send(());
            let answer = answer.await;
            let updates = log.since(from);
            let _ = tx.send(answer.map(|response| TurnSeen::new(updates, response, log, from)));
        });
        PendingTurn { rx, connection }
    }

    /// Sends `session/cancel` for this session (after the prompts sent before it).
    pub async fn cancel(&self) -> Result<(), Error> {
        let unsent = std::mem::take(&mut *lock(&self.log.unsent));
        for sent in unsent {
            let _ = within("the prompt to be sent", sent).await;
        }
        within(
            "room to send `session/cancel`",
            self.editor
                .connection()
                .notify(CancelNotification::new(self.id.clone())),
        )
        .await
    }

    /// Every update of this session so far, in arrival order.
    pub fn updates(&self) -> Vec<SessionUpdate> {
        self.log.since(0)
    }

    /// Waits until an update for which `found` holds has arrived (or had already), and returns
    /// it; fails the test after [`PATIENCE`](super::PATIENCE), naming `what`. The wait wakes
    /// at each update, never on a timer:
    ///
    /// ```no_run
    /// # async fn f(session: sacp::testing::Session) {
    /// let turn = session.prompt("wait");
    /// session
    ///     .until_update("the turn's start", |u| sacp::testing::line(u) == "message: waiting")
    ///     .await;
    /// session.cancel().await.unwrap();
    /// # }
    /// ```
    pub async fn until_update(
        &self,
        what: &str,
        mut found: impl FnMut(&SessionUpdate) -> bool,
    ) -> SessionUpdate {
        within(what, async {
            let mut seen = 0;
            loop {
                // Registered before looking, so that an update between the look and the wait
                // still wakes it.
                let arrived = self.log.arrived.notified();
                let updates = self.log.since(seen);
                seen += updates.len();
                if let Some(update) = updates.into_iter().find(|u| found(u)) {
                    return update;
                }
                arrived.await;
            }
        })
        .await
    }
}

/// A prompt on its way; await it for its [`TurnSeen`] (failing the test after
/// [`PATIENCE`](super::PATIENCE)).
#[derive(Debug)]
pub struct PendingTurn {
    rx: oneshot::Receiver<Result<TurnSeen, Error>>,
    /// The editor's connection, for why it ended when it ends first.
    connection: Connection,
}

impl IntoFuture for PendingTurn {
    type Output = Result<TurnSeen, Error>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<TurnSeen, Error>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            match within("the answer to `session/prompt`", self.rx).await {
                Ok(turn) => turn,
                Err(_) => {
                    // The connection gave up on the prompt's task: say why it ended.
                    let why = match within("the connection's end", self.connection.closed()).await {
                        Err(e) => e.message,
                        Ok(()) => "it was closed".to_owned(),
                    };
                    Err(Error::internal_error(format!(
                        "the editor's connection ended before the prompt was answered: {why}"
                    )))
                }
            }
        })
    }
}
