//! Starting a chain: its components (processes, in-process proxies, servers over the network),
//! the MCP bridges, the trace and its viewer; then the event loop runs it.

use super::*;

/// Runs `chain` as one ACP agent on this process's stdin and stdout.
pub async fn run_stdio(chain: Chain, options: Options) -> Exit {
    run(chain, options, ByteStream::stdio()).await
}

/// Runs `chain` as one ACP agent, talking to the editor over `editor`, until the editor closes
/// it or the chain fails.
pub async fn run(chain: Chain, options: Options, editor: impl Transport) -> Exit {
    // A viewer needs a trace (with payloads) to show.
    let (trace_path, scratch) = match (&options.trace, options.serve) {
        (Some(path), _) => (Some(path.clone()), false),
        (None, Some(_)) => (
            Some(std::env::temp_dir().join(format!(
                "sacp-trace-{}-{}.jsonl",
                std::process::id(),
                uuid::Uuid::new_v4().simple()
            ))),
            true,
        ),
        (None, None) => (None, false),
    };
    let mut trace = match &trace_path {
        None => None,
        Some(path) => {
            match Trace::create(path, options.trace_payloads || options.serve.is_some()) {
                Ok(trace) => Some(trace),
                Err(e) => {
                    let failure = Failure::Trace {
                        path: path.clone(),
                        source: Arc::new(e),
                    };
                    tracing::error!("{failure}");
                    return Exit::Failed(failure);
                }
            }
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
    let mut members: Vec<Member> = Vec::new();
    let mut outboxes = vec![None];
    let down = Arc::new(Account::default());
    for (index, component) in chain.components.iter().enumerate() {
        let position = index + 1;
        if let Some(proxy) = &component.in_process {
            // A proxy in this process: a channel instead of pipes, a task instead of a child.
            let (ours, theirs) = sacp::jsonrpc::channel();
            let task = tokio::spawn(proxy.run(theirs));
            let exited = events_tx.clone();
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
            outboxes.push(Some(endpoint::start(
                position,
                ours,
                events_tx.clone(),
                down.clone(),
            )));
            members.push(Member::new(None, Tail::default(), None));
            tracing::debug!(position, name = %component.name, "started in-process");
            continue;
        }
        if let Some(address) = &component.remote {
            // A server over the network: a connection instead of a child.
            let transport = match address.connect().await {
                Ok(transport) => transport,
                Err(e) => {
                    let failure = Failure::Start {
                        position,
                        name: component.name.clone(),
                        command: None,
                        source: Arc::new(e),
                    };
                    tracing::error!("{failure}");
                    for member in &members {
                        member.signal(Signal::SIGKILL);
                    }
                    return Exit::Failed(failure);
                }
            };
            outboxes.push(Some(endpoint::start(
                position,
                transport,
                events_tx.clone(),
                down.clone(),
            )));
            let url = address.display_url();
            tracing::debug!(position, name = %component.name, %url, "connected");
            members.push(Member::new(None, Tail::default(), Some(url)));
            continue;
        }
        let started = match process::spawn(
            position,
            component,
            options.launcher.as_deref(),
            stderr_tap.clone(),
        ) {
            Ok(started) => started,
            Err(e) => {
                let failure = Failure::Start {
                    position,
                    name: component.name.clone(),
                    command: Some(component.command_line()),
                    source: Arc::new(e),
                };
                tracing::error!("{failure}");
                for member in &members {
                    member.signal(Signal::SIGKILL);
                }
                return Exit::Failed(failure);
            }
        };
        let process::Process {
            pid,
            mut child,
            stdin,
            stdout,
            tail,
        } = started;
        let exited = events_tx.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            let _ = exited.send(Event::Exited(position, status));
        });
        let transport = ByteStream::new(stdout, stdin);
        outboxes.push(Some(endpoint::start(
            position,
            transport,
            events_tx.clone(),
            down.clone(),
        )));
        members.push(Member::new(Some(pid), tail, None));
        tracing::debug!(position, name = %component.name, pid, "started");
    }
    // The MCP bridges are one more connection, after the components'.
    let (hub_end, router_end) = sacp::jsonrpc::channel();
    let bridge_conn = outboxes.len();
    outboxes.push(Some(endpoint::start(
        bridge_conn,
        router_end,
        events_tx.clone(),
        down.clone(),
    )));
    let program = options
        .bridge_program
        .clone()
        .or_else(|| options.launcher.clone());
    // The MCP translator after them.
    let (translator_end, router_end) = sacp::jsonrpc::channel();
    let translator_conn = outboxes.len();
    outboxes.push(Some(endpoint::start(
        translator_conn,
        router_end,
        events_tx.clone(),
        down.clone(),
    )));
    let mode = options.mcp_bridge.or(chain.mcp_bridge).unwrap_or_default();
    let bridges = Bridges::new(mode, program, hub_end, translator_end);
    // The session layer's notes of its clients, for the trace.
    if let Some(mut notes) = options
        .notes
        .as_ref()
        .and_then(crate::sessions::Notes::take)
    {
        let events = events_tx.clone();
        tokio::spawn(async move {
            while let Some(note) = notes.recv().await {
                if events.send(Event::Note(note)).is_err() {
                    return;
                }
            }
        });
    }
    outboxes[EDITOR] = Some(endpoint::start(EDITOR, editor, events_tx, down.clone()));
    let mut viewer = None;
    if let Some(trace) = &mut trace {
        let members: Vec<trace::Member> = chain
            .components
            .iter()
            .zip(&members)
            .enumerate()
            .map(|(i, (component, member))| trace::Member {
                position: i + 1,
                name: component.name.clone(),
                command: component.command_line(),
                dialect: component.dialect.map(|d| d.name().to_owned()),
                pid: member.pid,
                transport: component.remote.as_ref().map(|r| r.transport()),
                url: component.url(),
            })
            .collect();
        trace.header("agent", options.connection.as_deref(), &members);
        trace.flush();
        if let Some(addr) = options.serve {
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
                    viewer = Some(served);
                }
                Err(e) => tracing::error!("cannot serve the trace viewer on {addr}: {e}"),
            }
        }
    }
    let names = chain.components.iter().map(|c| c.name.clone()).collect();
    let mut router = RoutingTable::new(names);
    debug_assert_eq!(router.translator_conn(), translator_conn);
    router.translate();
    for (i, component) in chain.components.iter().enumerate() {
        if let Some(dialect) = component.dialect {
            router.declare(i + 1, dialect);
        }
    }
    let conductor = Conductor {
        core: ChainCore::new(router),
        bridges,
        members,
        outboxes,
        trace,
        scratch_trace: scratch.then_some(trace_path).flatten(),
        versions: Versions::default(),
        viewer,
        deliveries: Vec::new(),
        held: Vec::new(),
        ending: None,
        draining: None,
        failing: None,
        down,
        eof_grace: options.eof_grace,
        flush_timeout: options.flush_timeout,
        term_grace: options.term_grace,
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
