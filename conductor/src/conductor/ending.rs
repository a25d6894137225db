//! The conductor's side of a chain's end, which the chain's state machine decides (see
//! `sacp::protocol::routing::life`): what the loop is asked to do (inputs to close, signals
//! to process groups, a failing component's last stderr lines, the bridges to end), and what
//! is left to write when the loop stops.

use sacp::protocol::routing::life::{Action, End, Exited, Sign, Signal as Sig};

use super::*;

/// A component, as the loop tracks it (the signs of its end are the machine's).
#[derive(Debug)]
pub(super) struct Member {
    /// Its process (group) id; `None` for a proxy in the conductor's own process.
    pub(super) pid: Option<u32>,
    pub(super) tail: Tail,
    /// For a component reached over the network, its URL (without credentials): its
    /// connection is then the only sign of its end.
    pub(super) url: Option<String>,
    /// For a WebAssembly component, what stops its run (a signal's stand-in: it has no
    /// process of its own).
    pub(super) stop: Option<tokio_util::sync::CancellationToken>,
}

impl Member {
    pub(super) fn new(pid: Option<u32>, tail: Tail, url: Option<String>) -> Member {
        Member {
            pid,
            tail,
            url,
            stop: None,
        }
    }

    /// A member whose run `stop` ends (a WebAssembly component's).
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(super) fn stopped_by(mut self, stop: tokio_util::sync::CancellationToken) -> Member {
        self.stop = Some(stop);
        self
    }

    /// How its end shows.
    pub(super) fn sign(&self) -> Sign {
        match &self.url {
            Some(url) => Sign::Connection {
                url: Some(url.clone()),
            },
            None => Sign::OutputAndExit,
        }
    }

    /// Signals its process group (an in-process proxy ends with its connection instead; a
    /// WebAssembly component, which cannot hear signals, is stopped by either).
    pub(super) fn signal(&self, signal: Signal) {
        if let Some(pid) = self.pid {
            process::signal_group(pid, signal);
        }
        if let Some(stop) = &self.stop {
            stop.cancel();
        }
    }
}

/// Tokio's clock, as the chain's machine takes it.
pub(super) fn now() -> std::time::Instant {
    Instant::now().into_std()
}

/// How a component process exited, for the machine.
pub(super) fn exited(status: ExitStatus) -> Exited {
    Exited {
        description: process::describe_exit(status),
        code: status.code(),
        status: exit_status(status),
    }
}

impl Conductor {
    /// Writes what the machine delivered and does what it asks, until it has nothing more.
    /// What came in on `from` is charged until it is written (see [`Conductor::deliver`]).
    pub(super) fn act(&mut self, mut from: Option<Conn>) {
        loop {
            self.core.poll_deliveries(&mut self.deliveries);
            let mut acted = !self.deliveries.is_empty();
            self.deliver(from.take());
            while let Some(action) = self.core.poll_action() {
                acted = true;
                match action {
                    Action::CloseInput(position) => self.close_input(position),
                    Action::Signal(signal, positions) => {
                        let signal = match signal {
                            Sig::Term => Signal::SIGTERM,
                            Sig::Kill => Signal::SIGKILL,
                        };
                        for position in positions {
                            self.members[position - 1].signal(signal);
                        }
                    }
                    Action::Failing { position, why } => {
                        tracing::error!("{why}");
                        let stderr = self.members[position - 1].tail.text();
                        self.core.annotate_failure("stderr", stderr.into());
                    }
                    Action::Ending => self.bridges.end_all(),
                }
            }
            if !acted {
                return;
            }
        }
    }

    /// Stops the chain for a reason of the conductor's own (a signal, a failure). The
    /// machine decides whether it is the chain's end (the first reason wins); the conductor
    /// keeps its exit for when it is.
    pub(super) fn stop(&mut self, exit: Exit) {
        let why = match &exit {
            Exit::Signalled(signal) => format!("the conductor was stopped by signal {signal}"),
            Exit::Failed(failure) => failure.to_string(),
            Exit::Clean => "the conductor stopped".to_owned(),
            Exit::Ended { why, .. } => why.clone(),
        };
        let was_ending = self.core.end().is_some();
        self.core.stop(why, exit.is_failure(), now());
        if !was_ending {
            self.stopped = Some(exit);
        }
        self.act(None);
    }

    /// Closes the input of the component at `position`, after what is queued for it.
    pub(super) fn close_input(&mut self, position: usize) {
        if let Some(outbox) = self.outboxes[position].take() {
            tokio::spawn(outbox.close());
        }
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        let trace = self.trace.as_ref().and_then(Trace::due);
        [self.core.next_wake(), trace]
            .into_iter()
            .flatten()
            .min()
            .map(Instant::from_std)
    }

    /// How the chain ended, as the conductor's exit.
    fn exit(&mut self) -> Exit {
        match self.core.end() {
            None | Some(End::Clean) => Exit::Clean,
            Some(End::Component { why, status, .. }) => Exit::Ended {
                why: why.clone(),
                status: *status,
            },
            Some(End::Refused { position, message }) => Exit::Failed(Failure::Refused {
                position: *position,
                message: message.clone(),
            }),
            Some(_) => self.stopped.take().unwrap_or(Exit::Clean),
        }
    }

    pub(super) async fn finish(mut self) -> Exit {
        // Whatever the components left behind in their groups goes too.
        for member in &self.members {
            member.signal(Signal::SIGKILL);
        }
        if let Some(editor) = self.outboxes[EDITOR].take()
            && tokio::time::timeout(self.flush_timeout, editor.close())
                .await
                .is_err()
        {
            tracing::warn!(
                "gave up writing to the editor after {:?}",
                self.flush_timeout
            );
        }
        if let Some(trace) = &mut self.trace {
            trace.finish().await;
            // Open pages get the end (a crash, say) before the viewer goes with the process.
            if let Some(viewer) = &self.viewer {
                viewer.caught_up(trace.last_seq(), VIEWER_CATCH_UP).await;
            }
        }
        if let Some(scratch) = &self.scratch_trace {
            let _ = std::fs::remove_file(scratch);
        }
        self.exit()
    }
}

/// A component's exit status as the conductor's own: its code, or 128 + the signal.
fn exit_status(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(1),
        (None, None) => 1,
    }
}
