//! The conductor's life: start the chain, route until something ends it, end it cleanly.
//!
//! One event loop owns the [`RoutingTable`] and every forwarding decision. Connection tasks hand it
//! what they read ([`crate::endpoint`]); it routes each message and queues the result on the
//! destination's writer, so between any two peers messages keep the order they were sent in.
//! The MCP bridges ([`crate::bridge`]) are one more connection; the loop shows them the
//! session setups it sends the agent (to bridge their `acp:` entries) and the agent's answers
//! (to learn the sessions).
//!
//! **Ending.** Every decision of a chain's life is made by its state machine,
//! [`ChainCore`] (see `sacp::protocol::routing::life`), which `sacp::testing`'s chain drives
//! too; this loop tells it what happened and when, and does what it asks: closes inputs,
//! signals process groups, adds a failing component's last stderr lines to its error. The
//! chain ends when:
//! - the editor closes the conductor's stdin: the requests it still has in flight get up to
//!   [`Options::eof_grace`] (default 1 s) to be answered — `printf '<initialize>' | conductor
//!   agent …` gets its answer — and those still unanswered then get an error saying that the
//!   editor closed the connection. Then the components' stdins are closed one after another,
//!   in chain order: each component gets up to 400 ms to pass on what it still had and close
//!   its output before the next one's stdin closes, so that what the editor sent just before
//!   it left (a `session/cancel`, say) reaches the agent before its stdin closes. Then the
//!   components get 400 ms to exit, then `SIGTERM`, then [`Options::term_grace`] (default 3 s)
//!   to save their work and exit — agents people run save their session on `SIGTERM` rather
//!   than at the end of stdin — then `SIGKILL`. The exit status is 0. (An editor that stops
//!   reading the conductor's stdout ends the chain the same way, without the grace.)
//! - a component exits or closes its stdout: every request the editor has in flight is
//!   answered with an error naming the component, how it ended and its last stderr lines, and
//!   nothing the chain sends after that reaches the editor; the other components get
//!   `SIGTERM`, then `SIGKILL`. The conductor exits with that component's status (128 + the
//!   signal if a signal killed it; 1 if it only closed its stdout), as the agent it stands for
//!   would. (The conductor waits up to 200 ms after the first sign, exit or end of output, for
//!   the other one, so that what a component wrote before it exited is still delivered, and
//!   the error can say how it ended; and what it sent before it ended gets up to 250 ms to
//!   pass the proxies in front of it, so its last words come before the error.)
//! - a component refuses the proxy capability (§3): the editor's `initialize` gets the error,
//!   and the chain ends as above, with exit status 1 (the conductor's own failures are 1);
//! - `SIGTERM`, `SIGINT` or `SIGHUP`: as above, with exit status 128 + the signal.
//!
//! Answers still owed to a slow editor get [`Options::flush_timeout`] (default 5 s) to be
//! written. Every component's process group is killed at the end, so nothing a component
//! started outlives the conductor; and run by the `conductor` binary, components die with it
//! even when it is killed with `SIGKILL` (see `launch.rs`).

use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::Signal;
use sacp::jsonrpc::{ByteStream, Message, Transport};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::account::{Account, Charge};
use crate::bridge::Bridges;
use crate::chain::BridgeMode;
use crate::chain::Chain;
use crate::endpoint::{self, Event, Out, Outbox};
use crate::process::{self, Tail};
use crate::trace::{self, Trace};
use crate::versions::{Negotiated, Versions};
use sacp::protocol::routing::{ChainCore, Conn, Delivery, Dir, EDITOR, Node, RoutingTable};

mod ending;
mod failure;
mod start;

pub use self::failure::Failure;

use self::ending::{Member, now};
pub use self::start::{run, run_stdio};

/// At the end, how long open trace viewer pages may take to get the last lines.
const VIEWER_CATCH_UP: Duration = Duration::from_secs(2);
/// Components' stderr lines that may wait for the trace.
const STDERR_TAP: usize = 4096;
/// What the conductor does besides routing, set with its builder methods on
/// `Options::default()`:
///
/// ```no_run
/// use std::time::Duration;
///
/// let options = sacp_conductor::Options::default()
///     .trace("/tmp/chain.jsonl")
///     .eof_grace(Duration::from_secs(2));
/// # drop(options);
/// ```
#[derive(Debug, Clone)]
pub struct Options {
    pub(crate) trace: Option<PathBuf>,
    pub(crate) trace_payloads: bool,
    pub(crate) serve: Option<std::net::SocketAddr>,
    pub(crate) eof_grace: Duration,
    pub(crate) flush_timeout: Duration,
    pub(crate) term_grace: Duration,
    pub(crate) launcher: Option<PathBuf>,
    pub(crate) mcp_bridge: Option<BridgeMode>,
    pub(crate) bridge_program: Option<PathBuf>,
    pub(crate) connection: Option<String>,
    /// Who attaches to the chain's sessions, when the session layer serves it (for the
    /// trace).
    pub(crate) notes: Option<crate::sessions::Notes>,
}

impl Options {
    /// Writes one JSON line per message per hop to this file.
    pub fn trace(mut self, value: impl Into<PathBuf>) -> Options {
        self.trace = Some(value.into());
        self
    }

    /// Includes payloads in the trace.
    pub fn trace_payloads(mut self, value: bool) -> Options {
        self.trace_payloads = value;
        self
    }

    /// Serves the live trace viewer on this address (port 0: any free port), printing its URL
    /// with a token on stderr. Records payloads; without [`Options::trace`] the trace goes to
    /// a file of its own in the temporary directory, removed at the end.
    pub fn serve(mut self, value: std::net::SocketAddr) -> Options {
        self.serve = Some(value);
        self
    }

    /// After the editor closed stdin, how long its requests in flight may still be answered
    /// before the chain is shut down. Default 1 s.
    pub fn eof_grace(mut self, value: Duration) -> Options {
        self.eof_grace = value;
        self
    }

    /// At the end, how long answers still owed to the editor may take to be written. Default
    /// 5 s.
    pub fn flush_timeout(mut self, value: Duration) -> Options {
        self.flush_timeout = value;
        self
    }

    /// At a clean end (the editor closed stdin), how long components get between `SIGTERM` and
    /// `SIGKILL`, to save their sessions. Default 3 s.
    pub fn term_grace(mut self, value: Duration) -> Options {
        self.term_grace = value;
        self
    }

    /// Starts each component through this executable's launcher (`conductor __launch`), so
    /// that components die with the conductor even when it is killed. `None` starts them
    /// directly. The `conductor` binary sets its own path.
    pub fn launcher(mut self, value: impl Into<PathBuf>) -> Options {
        self.launcher = Some(value.into());
        self
    }

    /// How the proxies' MCP servers reach an agent that does not speak MCP over ACP; `None`
    /// takes the chain's ([`Chain::mcp_bridge`]), else [`BridgeMode::Auto`].
    pub fn mcp_bridge(mut self, value: BridgeMode) -> Options {
        self.mcp_bridge = Some(value);
        self
    }

    /// The `conductor` executable that stdio bridges run as `conductor mcp PORT`; `None`
    /// takes [`Options::launcher`]. With neither, there is no stdio bridge (a program that
    /// embeds the conductor is not one, and a test binary certainly not): an agent that
    /// needs one keeps the `acp:` entry, with an error in the log saying what to set.
    /// [`Chain::run_as_program`](crate::Chain::run_as_program) and the `conductor` binary set
    /// their own executable.
    pub fn bridge_program(mut self, value: impl Into<PathBuf>) -> Options {
        self.bridge_program = Some(value.into());
        self
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            trace: None,
            trace_payloads: false,
            serve: None,
            eof_grace: Duration::from_secs(1),
            flush_timeout: Duration::from_secs(5),
            term_grace: Duration::from_secs(3),
            launcher: None,
            mcp_bridge: None,
            bridge_program: None,
            connection: None,
            notes: None,
        }
    }
}

/// How the conductor ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Exit {
    /// The editor closed its side.
    Clean,
    /// A component ended the chain; why, and the exit status it leaves (its own).
    Ended {
        /// Which component, and how it ended.
        why: String,
        /// Its exit status, or 128 + the signal that killed it, or 1 when it only closed its
        /// output.
        status: u8,
    },
    /// The conductor failed; why.
    Failed(Failure),
    /// A signal stopped the conductor.
    Signalled(i32),
}

impl Exit {
    /// The process exit status: 0; the status of the component that ended the chain; 1 for the
    /// conductor's own failures; or 128 + the signal that stopped the conductor.
    pub fn code(&self) -> u8 {
        match self {
            Exit::Clean => 0,
            Exit::Ended { status, .. } => *status,
            Exit::Failed(_) => 1,
            Exit::Signalled(signal) => u8::try_from(128 + signal).unwrap_or(1),
        }
    }

    /// Whether the chain failed (a component or the conductor), as opposed to being ended by
    /// the editor or a signal.
    fn is_failure(&self) -> bool {
        matches!(self, Exit::Ended { .. } | Exit::Failed(_))
    }
}

struct Conductor {
    /// The routing table, and what a failed chain lets through (shared with the test kit).
    core: ChainCore,
    bridges: Bridges,
    /// By position - 1.
    members: Vec<Member>,
    /// By connection; `None` once closed.
    outboxes: Vec<Option<Outbox>>,
    trace: Option<Trace>,
    /// The ACP version each hop negotiated.
    versions: Versions,
    /// The trace file made for the viewer alone: removed at the end.
    scratch_trace: Option<PathBuf>,
    /// The trace viewer (`--serve`).
    viewer: Option<trace::serve::Served>,
    deliveries: Vec<Delivery>,
    /// The conductor's own reason to stop the chain, when it was the first.
    stopped: Option<Exit>,
    /// What travels down and is not written yet (see [`crate::account`]).
    down: Arc<Account>,
    flush_timeout: Duration,
}

impl Conductor {
    async fn run(
        mut self,
        mut events: mpsc::UnboundedReceiver<Event>,
        mut stderr_lines: Option<mpsc::Receiver<(usize, Vec<u8>)>>,
    ) -> Exit {
        let mut signals = match Signals::new() {
            Ok(signals) => signals,
            Err(e) => {
                tracing::error!("cannot listen for signals: {e}");
                self.stop(Exit::Failed(Failure::Signals(Arc::new(e))));
                Signals::none()
            }
        };
        // One timer for the loop's deadlines, moved when the next one changes: a timer made
        // for every wait would be registered and removed again each time the loop waits.
        // (Waited on only while armed, so it starts at any instant.)
        let timer = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(timer);
        let mut armed: Option<Instant> = None;
        loop {
            if self.core.finished() {
                break;
            }
            let wake = self.next_deadline();
            if wake != armed {
                if let Some(at) = wake {
                    timer.as_mut().reset(at);
                }
                armed = wake;
            }
            tokio::select! {
                biased;
                event = events.recv() => match event {
                    Some(event) => self.on_event(event),
                    None => break,
                },
                signal = signals.recv() => {
                    tracing::info!(signal, "stopping on a signal");
                    self.stop(Exit::Signalled(signal));
                }
                Some((position, line)) = recv_some(&mut stderr_lines) => {
                    if let Some(trace) = &mut self.trace {
                        let name = self.core.table().name(position).to_owned();
                        trace.stderr(position, &name, &String::from_utf8_lossy(&line));
                    }
                }
                () = &mut timer, if armed.is_some() => {
                    armed = None;
                    self.core.tick(now());
                    self.act(None);
                }
            }
            // The trace goes to its file when it is due (see `Trace::due`), not after every
            // batch: a write per batch would cost the chain more than the trace itself.
            if let Some(trace) = &mut self.trace
                && trace
                    .due()
                    .is_some_and(|due| due <= std::time::Instant::now())
            {
                trace.flush();
            }
        }
        self.finish().await
    }

    fn on_event(&mut self, event: Event) {
        match event {
            Event::Inbound(conn, batch) => {
                if conn == self.core.table().agent_conn()
                    && !self.core.failed()
                    && self.bridges.awaits_answers()
                {
                    for inbound in &batch {
                        if let sacp::jsonrpc::Inbound::Message(Message::Response(response)) =
                            inbound
                        {
                            self.bridges.on_answer_from_agent(response);
                        }
                    }
                }
                self.core.inbound(conn, batch, now());
                self.trace_kept();
                self.act(Some(conn));
            }
            Event::Closed(EDITOR, error) => {
                match error {
                    None => tracing::debug!("the editor closed the conductor's stdin"),
                    Some(e) => tracing::warn!("cannot read from the editor: {e}"),
                }
                self.core.closed(EDITOR, None, now());
                self.act(None);
            }
            Event::WriteFailed(EDITOR, e) => {
                tracing::debug!("the editor stopped reading: {e}");
                self.core.write_failed(EDITOR, e.to_string(), now());
                self.act(None);
            }
            Event::Closed(conn, _) | Event::WriteFailed(conn, _)
                if self.core.table().diverted(conn).is_some() =>
            {
                tracing::debug!(conn, "the MCP bridges' connection closed");
            }
            Event::Closed(position, error) => {
                if let Some(e) = &error {
                    tracing::warn!(position, "cannot read from the component: {e}");
                }
                self.core
                    .closed(position, error.map(|e| e.to_string()), now());
                self.act(None);
            }
            Event::WriteFailed(position, e) => {
                tracing::debug!(position, "the component stopped reading: {e}");
                self.core.write_failed(position, e.to_string(), now());
                self.act(None);
            }
            Event::Note(note) => {
                if let Some(trace) = &mut self.trace {
                    trace.session(&note);
                }
            }
            Event::Exited(position, status) => match status {
                Ok(status) => self.member_ended(position, ending::exited(status)),
                Err(e) => {
                    tracing::warn!(position, "cannot wait for the component: {e}");
                    if let Some(trace) = &mut self.trace {
                        let name = self.core.table().name(position).to_owned();
                        let said = format!("cannot be waited for: {e}");
                        trace.exit(position, &name, &said, None, self.core.end().is_none());
                    }
                    let status = std::os::unix::process::ExitStatusExt::from_raw(0);
                    self.core.exited(position, ending::exited(status), now());
                    self.core.closed(position, None, now());
                    self.act(None);
                }
            },
            Event::Ended(position, how) => self.member_ended(position, how),
        }
    }

    /// A component ended (its process exited, or its run in this process ended): the trace
    /// says so, and the machine hears it.
    fn member_ended(&mut self, position: Conn, how: sacp::protocol::routing::life::Exited) {
        if let Some(trace) = &mut self.trace {
            let name = self.core.table().name(position).to_owned();
            trace.exit(
                position,
                &name,
                &how.description,
                how.code,
                self.core.end().is_none(),
            );
        }
        self.core.exited(position, how, now());
        self.act(None);
    }

    /// Says what one hop negotiated: in the log, and in the trace; a warning names the
    /// component whose answer does not fit what it was asked.
    fn negotiated(&mut self, negotiated: &Negotiated) {
        let name = match negotiated.answerer {
            Node::Component(p) => format!("{p}:{}", self.core.table().name(p)),
            _ => "the successor".to_owned(),
        };
        let requested = negotiated.requested;
        match negotiated.answered {
            Ok(answered) if !negotiated.fits() => tracing::warn!(
                "{name} answered ACP version {answered} to an initialize asking for {}: \
                 a version above the one asked for",
                requested.map_or("none".to_owned(), |r| r.to_string()),
            ),
            Ok(answered) => tracing::info!(component = %name, ?requested, answered, "ACP version"),
            Err(code) => tracing::info!(component = %name, ?requested, code, "initialize failed"),
        }
        if let Some(trace) = &mut self.trace {
            trace.version(negotiated, &name);
        }
    }

    /// Writes out the routing table's deliveries, one batch per connection, in order. What came in
    /// on `from` is charged until it is written: up-traffic to `from`'s reader, down-traffic to
    /// the chain's down account (see [`crate::account`]).
    fn deliver(&mut self, from: Option<Conn>) {
        let up = from
            .and_then(|conn| self.outboxes.get(conn)?.as_ref())
            .map(|outbox| outbox.up.clone());
        let agent = self.core.table().agent_conn();
        let routed_at = self.trace.as_ref().map(Trace::now);
        let transformed = self.core.table_mut().take_transformed();
        if let Some(trace) = &mut self.trace {
            for one in &transformed {
                trace.transformed(self.core.table(), one);
            }
        }
        let mut negotiated = Vec::new();
        let mut deliveries = self.deliveries.drain(..).peekable();
        while let Some(first) = deliveries.next() {
            let conn = first.conn;
            let mut messages = Vec::with_capacity(1 + deliveries.len());
            let (mut up_charge, mut down_charge): (Option<Charge>, Option<Charge>) = (None, None);
            for mut delivery in std::iter::once(first).chain(std::iter::from_fn(|| {
                deliveries.next_if(|d| d.conn == conn)
            })) {
                if conn == agent
                    && let (Some(mcp), Message::Request(request)) =
                        (self.core.table().agent_mcp(), &mut delivery.message)
                {
                    self.bridges.on_request_to_agent(request, mcp);
                }
                if conn == EDITOR
                    && delivery.hop.answers.as_deref() == Some("initialize")
                    && !self.core.table().proxy_mode()
                {
                    crate::auth::offer_terminal(&mut delivery.message);
                }
                if let (Some(trace), Some(t)) = (&mut self.trace, routed_at) {
                    trace.record(t, self.core.table(), &delivery.hop, &delivery.message);
                }
                if let Some(one) = self.versions.observe(&delivery.hop, &delivery.message) {
                    if let (Node::Component(position), Err(_)) = (one.answerer, one.answered) {
                        let name = self.core.table().name(position);
                        crate::versions::name_the_refuser(&mut delivery.message, position, name);
                    }
                    negotiated.push(one);
                }
                if from.is_some() {
                    let (account, charge) = match delivery.hop.dir {
                        Dir::Up => (up.as_ref(), &mut up_charge),
                        Dir::Down => (Some(&self.down), &mut down_charge),
                    };
                    let bytes = endpoint::cost(&delivery.message);
                    match (charge.as_mut(), account) {
                        (Some(charge), _) => charge.add(bytes),
                        (None, Some(account)) => *charge = Some(account.charge(bytes)),
                        (None, None) => {}
                    }
                }
                messages.push(delivery.message);
            }
            if conn == EDITOR {
                self.core.to_editor(&mut messages);
            }
            let out = Out {
                messages,
                charges: up_charge.into_iter().chain(down_charge).collect(),
            };
            match self.outboxes.get(conn).and_then(Option::as_ref) {
                Some(outbox) if outbox.send(out) => {}
                _ => tracing::debug!(conn, "dropped messages for a closed connection"),
            }
        }
        drop(deliveries);
        for one in &negotiated {
            self.negotiated(one);
        }
    }

    /// Traces what the chain kept from everyone (a synthesized history turn's messages from
    /// the agent), as messages to the conductor.
    fn trace_kept(&mut self) {
        let kept = self.core.take_kept();
        let Some(trace) = &mut self.trace else {
            return;
        };
        if kept.is_empty() {
            return;
        }
        let agent = self.core.table().agent_conn();
        let hop = sacp::protocol::routing::Hop {
            from: Node::Component(agent),
            to: Node::Conductor,
            dir: Dir::Up,
            answers: None,
            key: None,
        };
        let t = trace.now();
        for message in &kept {
            trace.record(t, self.core.table(), &hop, message);
        }
    }
}

/// The next item of a receiver that may not be there (then never).
async fn recv_some<T>(receiver: &mut Option<mpsc::Receiver<T>>) -> Option<T> {
    match receiver {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

/// The signals that stop the conductor.
struct Signals(Vec<(i32, tokio::signal::unix::Signal)>);

impl Signals {
    fn new() -> std::io::Result<Signals> {
        let kinds = [
            (Signal::SIGTERM, SignalKind::terminate()),
            (Signal::SIGINT, SignalKind::interrupt()),
            (Signal::SIGHUP, SignalKind::hangup()),
        ];
        let mut listeners = Vec::new();
        for (number, kind) in kinds {
            listeners.push((number as i32, signal(kind)?));
        }
        Ok(Signals(listeners))
    }

    fn none() -> Signals {
        Signals(Vec::new())
    }

    /// The next signal's number.
    async fn recv(&mut self) -> i32 {
        if self.0.is_empty() {
            return std::future::pending().await;
        }
        std::future::poll_fn(|cx| {
            for (number, listener) in &mut self.0 {
                if listener.poll_recv(cx).is_ready() {
                    return std::task::Poll::Ready(*number);
                }
            }
            std::task::Poll::Pending
        })
        .await
    }
}

impl Chain {
    /// Runs the chain as one ACP agent on this process's stdin and stdout (see [`run_stdio`]).
    pub async fn serve_stdio(self, options: Options) -> Exit {
        run_stdio(self, options).await
    }
}
