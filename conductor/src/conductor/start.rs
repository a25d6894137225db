//! Starting a chain: its components (processes, in-process proxies, servers over the network),
//! the MCP bridges, the trace and its viewer; then the event loop runs it.

use super::*;
use crate::bridge::diversion::{self, McpDiversion};
use sacp::protocol::routing::life::Timing;

/// Runs `chain` as one ACP agent on this process's stdin and stdout.
pub async fn run_stdio(chain: Chain, options: Options) -> Exit {
    run(chain, options, ByteStream::stdio()).await
}

/// Runs `chain` as one ACP agent, talking to the editor over `editor`, until the editor closes
/// it or the chain fails.
pub async fn run(mut chain: Chain, options: Options, editor: impl Transport) -> Exit {
    if let Err(e) = crate::registry::resolve_chain(&mut chain).await {
        let failure = Failure::Registry(Arc::new(e));
        tracing::error!("{failure}");
        return Exit::Failed(failure);
    }
    let (mut trace, scratch) = match open_trace(&options) {
        Ok(opened) => opened,
        Err(failure) => {
            tracing::error!("{failure}");
            return Exit::Failed(failure);
        }
    };
    // Components' stderr lines for the trace: dropped, not waited for, when it lags.
    let (stderr_tap, stderr_lines) = match &trace {
        Some(_) => {
            let (tap, lines) = mpsc::channel(STDERR_TAP);
            (Some(tap), Some(lines))
        }
        None => (None, None),
    };
    let (events_tx, events) = mpsc::unbounded_channel();
    let down = Arc::new(Account::default());
    let mut started = Started {
        members: Vec::new(),
        outboxes: vec![None],
        events: events_tx.clone(),
        down: down.clone(),
    };
    for (index, component) in chain.components.iter().enumerate() {
        if let Err(failure) = started
            .start(index + 1, component, &options, stderr_tap.clone())
            .await
        {
            tracing::error!("{failure}");
            for member in &started.members {
                member.signal(Signal::SIGKILL);
            }
            return Exit::Failed(failure);
        }
    }
    let Started {
        members,
        mut outboxes,
        ..
    } = started;
    let bridges = start_bridges(&chain, &options, &mut outboxes, &events_tx, &down);
    hear_notes(&options, &events_tx);
    outboxes[EDITOR] = Some(endpoint::start(EDITOR, editor, events_tx, down.clone()));
    let viewer = match &mut trace {
        Some(trace) => announce(trace, &chain, &members, &options).await,
        None => None,
    };
    let signs = members.iter().map(Member::sign).collect();
    let timing = Timing::default()
        .with_eof_grace(options.eof_grace)
        .with_term_grace(options.term_grace);
    let conductor = Conductor {
        core: ChainCore::new(routing_table(&chain), signs, timing),
        bridges,
        members,
        outboxes,
        trace,
        scratch_trace: scratch,
        versions: Versions::default(),
        viewer,
        deliveries: Vec::new(),
        stopped: None,
        down,
        flush_timeout: options.flush_timeout,
    };
    // The loop runs as a task of its own, not as the caller's future: a current-thread
    // runtime polls its I/O driver (one `epoll_wait`) each time it comes back to the future it
    // was given, which would be once per routed batch, per hop of an in-process chain.
    match tokio::spawn(conductor.run(events, stderr_lines)).await {
        Ok(exit) => exit,
        Err(e) => {
            let failure = Failure::Loop(e.to_string());
            tracing::error!("{failure}");
            Exit::Failed(failure)
        }
    }
}

/// The trace the options ask for (a viewer needs one, with payloads, to show: a scratch file
/// then, removed at the end, whose path comes second).
fn open_trace(options: &Options) -> Result<(Option<Trace>, Option<PathBuf>), Failure> {
    let (path, scratch) = match (&options.trace, options.serve) {
        (Some(path), _) => (path.clone(), false),
        (None, Some(_)) => (
            std::env::temp_dir().join(format!(
                "sacp-trace-{}-{}.jsonl",
                std::process::id(),
                uuid::Uuid::new_v4().simple()
            )),
            true,
        ),
        (None, None) => return Ok((None, None)),
    };
    let trace =
        Trace::create(&path, options.trace_payloads || options.serve.is_some()).map_err(|e| {
            Failure::Trace {
                path: path.clone(),
                source: Arc::new(e),
            }
        })?;
    Ok((Some(trace), scratch.then_some(path)))
}

/// The chain's components as they start: each one's member and connection, in chain order.
struct Started {
    members: Vec<Member>,
    /// Every connection's outbox, by its number (the editor's, 0, comes last).
    outboxes: Vec<Option<Outbox>>,
    events: mpsc::UnboundedSender<Event>,
    down: Arc<Account>,
}

impl Started {
    /// Starts the component at `position`: a proxy in this process, a server over the
    /// network, or a process.
    async fn start(
        &mut self,
        position: usize,
        component: &crate::chain::Component,
        options: &Options,
        stderr_tap: Option<process::Tap>,
    ) -> Result<(), Failure> {
        if let Some(proxy) = &component.in_process {
            self.in_process(position, proxy);
            tracing::debug!(position, name = %component.name, "started in-process");
        } else if let Some(wasm) = &component.wasm {
            self.wasm(position, component, wasm, stderr_tap).await?;
            tracing::debug!(position, name = %component.name, grants = %wasm.grants(), "started a WebAssembly component");
        } else if let Some(address) = &component.remote {
            // A server over the network: a connection instead of a child.
            let transport = address
                .connect()
                .await
                .map_err(|e| cannot_start(position, component, None, e))?;
            self.connect(position, transport);
            let url = address.display_url();
            tracing::debug!(position, name = %component.name, %url, "connected");
            self.members
                .push(Member::new(None, Tail::default(), Some(url)));
        } else {
            let started =
                process::spawn(position, component, options.launcher.as_deref(), stderr_tap)
                    .map_err(|e| {
                        cannot_start(position, component, Some(component.command_line()), e)
                    })?;
            let pid = started.pid;
            self.process(position, started);
            tracing::debug!(position, name = %component.name, pid, "started");
        }
        Ok(())
    }

    /// A proxy in this process: a channel instead of pipes, a task instead of a child.
    fn in_process(&mut self, position: usize, proxy: &crate::chain::InProcess) {
        let (ours, theirs) = sacp::jsonrpc::channel();
        let task = tokio::spawn(proxy.run(theirs));
        let exited = self.events.clone();
        tokio::spawn(async move {
            use std::os::unix::process::ExitStatusExt;
            let status = match task.await {
                Ok(Ok(())) => ExitStatus::from_raw(0),
                Ok(Err(e)) => {
                    tracing::error!(position, "the in-process proxy failed: {e}");
                    ExitStatus::from_raw(1 << 8)
                }
                Err(e) => {
                    tracing::error!(position, "the in-process proxy panicked: {e}");
                    ExitStatus::from_raw(101 << 8)
                }
            };
            let _ = exited.send(Event::Exited(position, Ok(status)));
        });
        self.connect(position, ours);
        self.members.push(Member::new(None, Tail::default(), None));
    }

    /// A WebAssembly component, in this process: pipes to its stdin and stdout, its stderr
    /// copied as a process's, its run on a thread of its own (which the chain's end stops).
    #[cfg(feature = "wasm")]
    async fn wasm(
        &mut self,
        position: usize,
        component: &crate::chain::Component,
        wasm: &crate::chain::wasm::Wasm,
        tap: Option<process::Tap>,
    ) -> Result<(), Failure> {
        let running = crate::wasm::start(&component.name, wasm, &component.args, &component.env)
            .await
            .map_err(|e| cannot_start(position, component, Some(component.command_line()), e))?;
        let crate::wasm::Running {
            stdin,
            stdout,
            stderr,
            ended,
            stop,
        } = running;
        let tail = Tail::default();
        tokio::spawn(process::copy_stderr(
            stderr,
            format!("[{position} {}] ", component.name),
            tail.clone(),
            tap.map(|tap| (position, tap)),
        ));
        let events = self.events.clone();
        tokio::spawn(async move {
            let how = ended.await.unwrap_or_else(|_| crate::wasm::killed());
            let _ = events.send(Event::Ended(position, how));
        });
        self.connect(position, ByteStream::new(stdout, stdin));
        self.members
            .push(Member::new(None, tail, None).stopped_by(stop));
        Ok(())
    }

    /// A WebAssembly component, in a conductor built without the `wasm` feature: it cannot
    /// start.
    #[cfg(not(feature = "wasm"))]
    #[allow(clippy::unused_async)]
    async fn wasm(
        &mut self,
        position: usize,
        component: &crate::chain::Component,
        _wasm: &crate::chain::wasm::Wasm,
        _tap: Option<process::Tap>,
    ) -> Result<(), Failure> {
        Err(cannot_start(
            position,
            component,
            Some(component.command_line()),
            std::io::Error::other(
                "this conductor was built without WebAssembly components (its `wasm` feature)",
            ),
        ))
    }

    /// A process: its pipes, and its exit watched.
    fn process(&mut self, position: usize, started: process::Process) {
        let process::Process {
            pid,
            mut child,
            stdin,
            stdout,
            tail,
        } = started;
        let exited = self.events.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            let _ = exited.send(Event::Exited(position, status));
        });
        self.connect(position, ByteStream::new(stdout, stdin));
        self.members.push(Member::new(Some(pid), tail, None));
    }

    /// The connection to the component at `position`.
    fn connect(&mut self, position: usize, transport: impl Transport) {
        let outbox = endpoint::start(position, transport, self.events.clone(), self.down.clone());
        self.outboxes.push(Some(outbox));
    }
}

/// Why the component at `position` did not start (`command`: its command line; none for a
/// server over the network).
fn cannot_start(
    position: usize,
    component: &crate::chain::Component,
    command: Option<String>,
    why: std::io::Error,
) -> Failure {
    Failure::Start {
        position,
        name: component.name.clone(),
        command,
        source: Arc::new(why),
    }
}

/// The MCP bridges and, after them, the MCP translator: two more connections, after the
/// components', in the order of the routing table's diversion (see `bridge::diversion`).
fn start_bridges(
    chain: &Chain,
    options: &Options,
    outboxes: &mut Vec<Option<Outbox>>,
    events: &mpsc::UnboundedSender<Event>,
    down: &Arc<Account>,
) -> Bridges {
    let (hub_end, router_end) = sacp::jsonrpc::channel();
    let bridge_conn = outboxes.len();
    debug_assert_eq!(bridge_conn, chain.components.len() + 1 + diversion::BRIDGES);
    outboxes.push(Some(endpoint::start(
        bridge_conn,
        router_end,
        events.clone(),
        down.clone(),
    )));
    let program = options
        .bridge_program
        .clone()
        .or_else(|| options.launcher.clone());
    let (translator_end, router_end) = sacp::jsonrpc::channel();
    let translator_conn = outboxes.len();
    debug_assert_eq!(
        translator_conn,
        chain.components.len() + 1 + diversion::TRANSLATOR
    );
    outboxes.push(Some(endpoint::start(
        translator_conn,
        router_end,
        events.clone(),
        down.clone(),
    )));
    let mode = options.mcp_bridge.or(chain.mcp_bridge).unwrap_or_default();
    Bridges::new(mode, program, hub_end, translator_end)
}

/// The session layer's notes of its clients, passed to the loop for the trace.
fn hear_notes(options: &Options, events: &mpsc::UnboundedSender<Event>) {
    if let Some(mut notes) = options
        .notes
        .as_ref()
        .and_then(crate::sessions::Notes::take)
    {
        let events = events.clone();
        tokio::spawn(async move {
            while let Some(note) = notes.recv().await {
                if events.send(Event::Note(note)).is_err() {
                    return;
                }
            }
        });
    }
}

/// The trace's header (who is in the chain) and, if asked for, its live viewer.
async fn announce(
    trace: &mut Trace,
    chain: &Chain,
    members: &[Member],
    options: &Options,
) -> Option<trace::serve::Served> {
    let described: Vec<trace::Member> = chain
        .components
        .iter()
        .zip(members)
        .enumerate()
        .map(|(i, (component, member))| trace::Member {
            position: i + 1,
            name: component.name.clone(),
            command: component.command_line(),
            dialect: component.dialect.map(|d| d.name().to_owned()),
            pid: member.pid,
            transport: component.remote.as_ref().map(|r| r.transport()),
            url: component.url(),
            wasm: component.grants(),
        })
        .collect();
    trace.header("agent", options.connection.as_deref(), &described);
    trace.flush();
    let addr = options.serve?;
    let source = trace::serve::Source::Live {
        path: trace.path().to_owned(),
        written: trace.written(),
    };
    match trace::serve::start(addr, source).await {
        Ok(served) => {
            let of = options
                .connection
                .as_ref()
                .map(|id| format!("connection {id}: "))
                .unwrap_or_default();
            crate::stderr::write_line(
                format!("[conductor] {of}trace viewer: {}\n", served.url).into_bytes(),
            );
            Some(served)
        }
        Err(e) => {
            tracing::error!("cannot serve the trace viewer on {addr}: {e}");
            None
        }
    }
}

/// The routing table of `chain`: its components by name, the MCP bridges and translator
/// plugged in, the dialects declared.
fn routing_table(chain: &Chain) -> RoutingTable {
    let names = chain.components.iter().map(|c| c.name.clone()).collect();
    let mut table = RoutingTable::new(names);
    table.plug(Box::new(McpDiversion::default()));
    for (i, component) in chain.components.iter().enumerate() {
        if let Some(dialect) = component.dialect {
            table.declare(i + 1, dialect);
        }
    }
    table
}
