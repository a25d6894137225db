//! [`TestChain`]: proxies between a scripted editor and an agent, in one process, routed by the
//! conductor's own chain core.
//!
//! The kit's conductor is `sacp-chain`'s chain without processes: one in-memory channel per
//! component, and one event loop that drives the chain's state machine, the conductor's own
//! [`ChainCore`](crate::protocol::routing::ChainCore) — it tells it what arrives, what ends and
//! the time, writes what it delivers, in order, recording every delivery in the
//! [`Transcript`], and closes what it says to close. So ids are rewritten per hop,
//! `initialize` offers and checks the proxy capability, successor envelopes wrap and unwrap,
//! `_mcp/*` messages reach the proxy that owns the server, and a chain ends — exactly as in a
//! real chain: a component that fails ends it as the conductor's ends (what it sent before
//! passes the proxies in front of it first, then each request in flight gets an error naming
//! it, and nothing more of the chain reaches the editor); an editor that leaves gets its
//! requests' answers for a while, then the components' inputs close in chain order.
//! [`RunningChain::kill`] (and the scripted agent's `Step::crash`) end a component as a
//! process that dies would end. `conductor/tests/chain/parity.rs` runs the same scenarios
//! through this chain and through the conductor binary and compares every hop. What it leaves
//! out is the process side: spawning, signals, stderr, and the MCP bridges (the scripted agent
//! speaks MCP over ACP itself, so none is needed); its components' connections are the only
//! sign of their end (see [`life`](crate::protocol::routing::life)).

use std::any::Any;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::jsonrpc::{
    Channel, Connection, Error, Inbound, Message, MessageReader, MessageWriter, Transport, channel,
};
use crate::protocol::routing::life::{Action, Sign, Timing};
use crate::protocol::routing::{ChainCore, Delivery, Dir, EDITOR, Hop, Node, RoutingTable};
use crate::proxy::Proxy;

use super::agent::ScriptedAgent;
use super::editor::{ScriptedEditor, Session};
use super::patience::within;
use super::transcript::{Record, Transcript};

/// How many messages may wait for one connection's writer before the event loop waits.
const OUTBOX: usize = 256;

/// How many items from the readers may wait for the event loop before the readers wait.
const INBOX: usize = 64;

type Start = Box<dyn FnOnce(Channel) -> Connection + Send>;

/// One component of a [`TestChain`]: its name, its value (for [`RunningChain::proxy`]) and how
/// to start it.
struct Member {
    name: String,
    value: Arc<dyn Any + Send + Sync>,
    start: Start,
    /// Ends it as a crash would (see [`RunningChain::kill`]).
    kill: CancellationToken,
}

/// A chain under test, before it starts: proxies in chain order, then an agent, behind a
/// [`ScriptedEditor`].
///
/// ```
/// use sacp::testing::{ScriptedAgent, Step, TestChain};
///
/// # #[derive(Default)] struct Redactor;
/// # #[sacp::proxy] impl Redactor {}
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> sacp::Result<()> {
/// let chain = TestChain::new()
///     .proxy(Redactor::default())
///     .agent(ScriptedAgent::new().script([Step::say("hello"), Step::say(" world")]))
///     .start()
///     .await?;
/// let session = chain.new_session().await?;
/// let turn = session.prompt("hi").await?;
/// assert_eq!(turn.text(), "hello world");
/// chain.close().await?;
/// # Ok(()) }
/// ```
pub struct TestChain {
    proxies: Vec<Member>,
    agent: Option<Member>,
    editor: ScriptedEditor,
}

impl Default for TestChain {
    fn default() -> Self {
        TestChain::new()
    }
}

impl std::fmt::Debug for TestChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.proxies.iter().map(|m| m.name.as_str()).collect();
        f.debug_struct("TestChain")
            .field("proxies", &names)
            .field("agent", &self.agent.as_ref().map(|m| m.name.as_str()))
            .finish_non_exhaustive()
    }
}

/// The short name of a type, for the transcript: `Redactor`, not `my_crate::Redactor`.
fn short_name<T>() -> String {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base).to_owned()
}

impl TestChain {
    /// An empty chain: add proxies with [`TestChain::proxy`] and an agent with
    /// [`TestChain::agent`] (a [`ScriptedAgent::new`] when none is given).
    pub fn new() -> TestChain {
        TestChain {
            proxies: Vec::new(),
            agent: None,
            editor: ScriptedEditor::new(),
        }
    }

    /// Adds a proxy after the ones added before (a `#[sacp::proxy]` or a hand-written
    /// [`Proxy`]). Reach it after the run with [`RunningChain::proxy`].
    pub fn proxy<P: Proxy>(mut self, proxy: P) -> TestChain {
        let proxy = Arc::new(proxy);
        let served = proxy.clone();
        self.proxies.push(Member {
            name: short_name::<P>(),
            value: proxy,
            start: Box::new(move |channel| crate::proxy::spawn(served, channel)),
            kill: CancellationToken::new(),
        });
        self
    }

    /// The agent at the end of the chain (a [`ScriptedAgent`], or any `#[sacp::agent]`).
    /// Reach it after the run with [`RunningChain::agent`].
    pub fn agent<A: Agent>(mut self, agent: A) -> TestChain {
        let agent = Arc::new(agent);
        let served = agent.clone();
        let kill = CancellationToken::new();
        if let Some(scripted) = (agent.as_ref() as &dyn Any).downcast_ref::<ScriptedAgent>() {
            // Its `Step::crash` is the kit's kill.
            scripted.killed_by(kill.clone());
        }
        self.agent = Some(Member {
            name: short_name::<A>(),
            value: agent,
            start: Box::new(move |channel| crate::agent::spawn(served, channel)),
            kill,
        });
        self
    }

    /// The editor, with its policies for permission requests and files
    /// ([`ScriptedEditor::new`] by default).
    pub fn editor(mut self, editor: ScriptedEditor) -> TestChain {
        self.editor = editor;
        self
    }

    /// Starts the chain and initializes it as an editor would (see
    /// [`ScriptedEditor::initialize`]).
    pub async fn start(self) -> Result<RunningChain, Error> {
        let chain = self.spawn();
        chain.editor.initialize().await?;
        Ok(chain)
    }

    /// Starts the chain without initializing it: the test sends `initialize` itself.
    pub fn spawn(mut self) -> RunningChain {
        let agent = self
            .agent
            .take()
            .unwrap_or_else(|| TestChain::new().agent(ScriptedAgent::new()).agent.unwrap());
        let members: Vec<Member> = self.proxies.into_iter().chain([agent]).collect();
        let names: Vec<String> = members.iter().map(|m| m.name.clone()).collect();
        let transcript = Transcript::default();

        let (inbox_tx, inbox) = mpsc::channel(INBOX);
        let mut outboxes = Vec::new();
        let mut tasks = Vec::new();
        // The editor's connection first, then each component's, in chain order.
        let (editor_end, ours) = channel();
        let editor = self.editor.connect(editor_end);
        let (reader, writer) = ours.split();
        tasks.push(read(
            EDITOR,
            reader,
            inbox_tx.clone(),
            CancellationToken::new(),
        ));
        outboxes.push(Some(write(writer)));
        let mut components = Vec::new();
        let mut values = Vec::new();
        for (i, member) in members.into_iter().enumerate() {
            let (theirs, ours) = channel();
            let kill = member.kill;
            components.push(Component {
                name: member.name.clone(),
                connection: (member.start)(theirs),
                kill: kill.clone(),
            });
            values.push((member.name, member.value));
            let (reader, writer) = ours.split();
            tasks.push(read(i + 1, reader, inbox_tx.clone(), kill));
            outboxes.push(Some(write(writer)));
        }
        drop(inbox_tx);
        // In-process components: their connection's end is the only sign of theirs.
        let signs = names
            .iter()
            .map(|_| Sign::Connection { url: None })
            .collect();
        let conductor = Conductor {
            core: ChainCore::new(RoutingTable::new(names.clone()), signs, Timing::default()),
            names,
            outboxes,
            transcript: transcript.clone(),
        };
        tasks.push(tokio::spawn(conductor.run(inbox)));
        RunningChain {
            editor,
            members: values,
            components,
            transcript,
            tasks,
        }
    }
}

/// Reads `conn`'s messages into the event loop's inbox, then says the connection ended. Once
/// `killed`, it takes what the component had sent before, then ends as a crashed process's
/// pipe does.
fn read<R: MessageReader>(
    conn: usize,
    mut reader: R,
    inbox: mpsc::Sender<(usize, Option<Inbound>)>,
    killed: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let item = tokio::select! {
                biased;
                () = killed.cancelled() => {
                    // Only what is there already: polled once each, never awaited.
                    match tokio::time::timeout(std::time::Duration::ZERO, reader.read()).await {
                        Ok(Ok(Some(item))) => Some(item),
                        _ => None,
                    }
                }
                item = reader.read() => item.ok().flatten(),
            };
            let end = item.is_none();
            if inbox.send((conn, item)).await.is_err() || end {
                return;
            }
        }
    })
}

/// A connection's writer, fed in order from a bounded queue; closing the queue closes it.
fn write<W: MessageWriter>(mut writer: W) -> mpsc::Sender<Message> {
    let (tx, mut rx) = mpsc::channel::<Message>(OUTBOX);
    tokio::spawn(async move {
        let mut batch = Vec::new();
        while let Some(message) = rx.recv().await {
            batch.push(message);
            while let Ok(more) = rx.try_recv() {
                batch.push(more);
            }
            if writer.write(&mut batch).await.is_err() {
                return;
            }
        }
        let _ = writer.close().await;
    });
    tx
}

/// The kit's conductor: the chain's state machine (the conductor's) and the writers, driven
/// by one loop that decides nothing of the chain's life: it tells the machine what arrived,
/// what ended and the time, writes what it delivers, and closes what it says to close. No
/// signal reaches an in-process component; it ends when its input closes.
struct Conductor {
    core: ChainCore,
    names: Vec<String>,
    /// One per connection; `None` once closed.
    outboxes: Vec<Option<mpsc::Sender<Message>>>,
    transcript: Transcript,
}

/// Tokio's clock, as the machine takes it (a test may pause it).
fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

impl Conductor {
    async fn run(mut self, mut inbox: mpsc::Receiver<(usize, Option<Inbound>)>) {
        let mut out = Vec::new();
        loop {
            let wake = self.core.next_wake();
            let due = async {
                match wake {
                    Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                next = inbox.recv() => match next {
                    Some((conn, Some(inbound))) => self.core.inbound(conn, [inbound], now()),
                    Some((conn, None)) => self.core.closed(conn, None, now()),
                    None => return,
                },
                () = due => self.core.tick(now()),
            }
            self.act(&mut out).await;
        }
    }

    /// Writes what the machine delivered and does what it asks, until it has nothing more
    /// (a write that fails is news to it, which may ask for more).
    async fn act(&mut self, out: &mut Vec<Delivery>) {
        loop {
            self.core.poll_deliveries(out);
            let mut acted = !out.is_empty();
            self.deliver(out).await;
            while let Some(action) = self.core.poll_action() {
                acted = true;
                match action {
                    Action::CloseInput(position) => {
                        if let Some(outbox) = self.outboxes.get_mut(position) {
                            outbox.take();
                        }
                    }
                    Action::Failing { why, .. } => tracing::error!("{why}"),
                    Action::Signal(..) | Action::Ending => {}
                }
            }
            if !acted {
                return;
            }
        }
    }

    /// Writes and records what the machine delivered, in order, each run of messages to the
    /// editor as the machine puts them ([`ChainCore::to_editor`]: a v2 session's state around
    /// what is said between turns).
    async fn deliver(&mut self, out: &mut Vec<Delivery>) {
        let mut written = Vec::with_capacity(out.len());
        let mut run: Vec<Delivery> = Vec::new();
        for delivery in out.drain(..) {
            if delivery.conn == EDITOR {
                run.push(delivery);
                continue;
            }
            written.extend(self.editor_run(&mut run));
            written.push(delivery);
        }
        written.extend(self.editor_run(&mut run));
        for delivery in written {
            let names = &self.names;
            let name = |node: Node| match node {
                Node::Client => "editor".to_owned(),
                Node::Component(p) => names[p - 1].clone(),
                Node::Outer => "successor".to_owned(),
                Node::Conductor => "conductor".to_owned(),
                Node::Bridge => "bridge".to_owned(),
            };
            self.transcript.push(Record::of(&delivery, &name));
            self.send(delivery.conn, delivery.message).await;
        }
    }

    /// A run of deliveries to the editor, with what the core puts among them (its own, from
    /// the conductor).
    fn editor_run(&mut self, run: &mut Vec<Delivery>) -> Vec<Delivery> {
        if run.is_empty() {
            return Vec::new();
        }
        let mut messages: Vec<Message> = run.iter().map(|d| d.message.clone()).collect();
        self.core.to_editor(&mut messages);
        let mut originals = run.drain(..).peekable();
        let mut deliveries = Vec::with_capacity(messages.len());
        for message in messages {
            match originals.next_if(|d| d.message == message) {
                Some(original) => deliveries.push(original),
                None => deliveries.push(Delivery {
                    conn: EDITOR,
                    message,
                    hop: Hop {
                        from: Node::Conductor,
                        to: Node::Client,
                        dir: Dir::Up,
                        answers: None,
                        key: None,
                    },
                }),
            }
        }
        deliveries
    }

    async fn send(&mut self, conn: usize, message: Message) {
        if let Some(Some(outbox)) = self.outboxes.get(conn)
            && outbox.send(message).await.is_err()
        {
            self.outboxes[conn] = None;
            let error = "its connection no longer reads".to_owned();
            self.core.write_failed(conn, error, now());
        }
    }
}

/// A component of a running chain: its connection, and how to end it as a crash would.
struct Component {
    name: String,
    connection: Connection,
    kill: CancellationToken,
}

/// A running [`TestChain`]: its editor, its components, and the transcript.
pub struct RunningChain {
    editor: ScriptedEditor,
    members: Vec<(String, Arc<dyn Any + Send + Sync>)>,
    /// Each component, in chain order.
    components: Vec<Component>,
    transcript: Transcript,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for RunningChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.members.iter().map(|m| m.0.as_str()).collect();
        f.debug_struct("RunningChain")
            .field("components", &names)
            .finish_non_exhaustive()
    }
}

impl RunningChain {
    /// The editor in front of the chain.
    pub fn editor(&self) -> &ScriptedEditor {
        &self.editor
    }

    /// A new session with the editor's defaults (see [`ScriptedEditor::new_session`]).
    pub async fn new_session(&self) -> Result<Session, Error> {
        self.editor.new_session().await
    }

    /// The first proxy of type `P`, as it is now (its counters, its notebooks).
    ///
    /// # Panics
    /// When the chain has no proxy of that type.
    pub fn proxy<P: Proxy>(&self) -> &P {
        self.find::<P>()
    }

    /// The agent, as it is now (a [`ScriptedAgent`]'s records).
    ///
    /// # Panics
    /// When the agent is of another type.
    pub fn agent<A: Agent>(&self) -> &A {
        self.find::<A>()
    }

    fn find<T: 'static>(&self) -> &T {
        self.members
            .iter()
            .find_map(|(_, value)| value.downcast_ref::<T>())
            .unwrap_or_else(|| {
                let names: Vec<&str> = self.members.iter().map(|m| m.0.as_str()).collect();
                panic!(
                    "the chain has no component of type {}; it has {names:?}",
                    std::any::type_name::<T>()
                )
            })
    }

    /// Every message delivered so far, hop by hop.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// Ends the first component of type `T` as a crash would: what it sent before still
    /// reaches the chain, then its connection ends without another word (it gets no chance
    /// to answer what it was handling). The chain then fails as the conductor's does when a
    /// component process dies: once the proxies in front have passed on what it said (see
    /// [`Settling`](crate::protocol::routing::Settling)), each request in flight gets an error
    /// naming it, and nothing more of the chain reaches the editor.
    ///
    /// # Panics
    /// When the chain has no component of that type.
    pub fn kill<T: 'static>(&self) {
        let index = self
            .members
            .iter()
            .position(|(_, value)| value.is::<T>())
            .unwrap_or_else(|| {
                panic!(
                    "the chain has no component of type {}",
                    std::any::type_name::<T>()
                )
            });
        // Its reader stops; the loop then closes its input, as the conductor closes a dead
        // process's stdin (whatever it says from then on, nobody reads).
        self.components[index].kill.cancel();
    }

    /// Ends the chain as an editor that quits does: closes its connection, then waits for every
    /// component to end (failing the test after [`PATIENCE`](super::PATIENCE)). An error names
    /// a component whose connection failed.
    pub async fn close(self) -> Result<Transcript, Error> {
        self.editor.connection().close();
        let mut failed = None;
        for Component {
            name, connection, ..
        } in &self.components
        {
            let ended = within(&format!("{name} to end"), connection.closed()).await;
            if let Err(e) = ended {
                failed.get_or_insert(e.with_data(serde_json::json!({ "component": name })));
            }
        }
        for task in &self.tasks {
            task.abort();
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(self.transcript.clone()),
        }
    }
}

impl Drop for RunningChain {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        for component in &self.components {
            component.connection.close();
        }
        self.editor.connection().close();
    }
}
