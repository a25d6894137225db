//! The end of a chain: a component's failure (both signs of its end, its last words, the
//! error the editor gets), the clean end (inputs closed in chain order, then `SIGTERM`, then
//! `SIGKILL`), and what is left to write when the loop stops.

use super::*;

/// A component that failed, while what it sent before passes the proxies in front of it (the
/// chain's core settles; see `ChainCore::component_failed`): how the chain then ends.
#[derive(Debug)]
pub(super) struct Failing {
    pub(super) why: String,
    pub(super) status: u8,
}

/// A component process, as the loop tracks it.
#[derive(Debug)]
pub(super) struct Member {
    /// Its process (group) id; `None` for a proxy in the conductor's own process.
    pub(super) pid: Option<u32>,
    pub(super) tail: Tail,
    /// Its output ended (or its input broke).
    pub(super) eof: bool,
    pub(super) exit: Option<ExitStatus>,
    /// When to give up waiting for the other sign of its end.
    pub(super) deadline: Option<Instant>,
    /// For a component reached over the network, its URL (without credentials): its
    /// connection is then the only sign of its end.
    pub(super) url: Option<String>,
    /// Why its connection ended, when it failed.
    pub(super) lost: Option<String>,
}

impl Member {
    pub(super) fn new(pid: Option<u32>, tail: Tail, url: Option<String>) -> Member {
        Member {
            pid,
            tail,
            eof: false,
            exit: None,
            deadline: None,
            url,
            lost: None,
        }
    }

    pub(super) fn alive(&self) -> bool {
        self.exit.is_none() && !(self.url.is_some() && self.eof)
    }

    /// Both signs of its end are in (a remote component has only the one).
    pub(super) fn ended(&self) -> bool {
        self.eof && (self.exit.is_some() || self.url.is_some())
    }

    /// Signals its process group (an in-process proxy ends with its connection instead).
    pub(super) fn signal(&self, signal: Signal) {
        if let Some(pid) = self.pid {
            process::signal_group(pid, signal);
        }
    }
}

/// The chain is ending: how, and what is left to do when.
#[derive(Debug)]
pub(super) struct Ending {
    pub(super) exit: Exit,
    /// At a clean end, the component whose stdin closed last, while it passes on what it
    /// still had, and until when it may: the next one's stdin closes when it closes its output
    /// (or exits), or then.
    pub(super) closing: Option<(usize, Instant)>,
    pub(super) term_at: Option<Instant>,
    pub(super) kill_at: Option<Instant>,
    pub(super) give_up_at: Instant,
}

impl Conductor {
    /// After the editor closed stdin: ends the chain once its requests are all answered, or
    /// the grace is over.
    pub(super) fn check_drained(&mut self) {
        if let Some(until) = self.draining
            && (self.core.table().editor_requests_in_flight() == 0 || Instant::now() >= until)
        {
            self.draining = None;
            if self.core.table().editor_requests_in_flight() > 0 {
                // Named for who left: the components only see their input end.
                let error = Error::new(
                    code::INTERNAL_ERROR,
                    format!(
                        "the editor closed its connection to the conductor (stdin) while this \
                         request was in flight, and it was not answered within {:?}",
                        self.eof_grace
                    ),
                );
                self.core.fail_all(&error, &mut self.deliveries);
                self.deliver(None);
            }
            self.begin_end(Exit::Clean, false);
        }
    }

    /// A component showed a sign of its end: fail the chain now if both signs are in, or
    /// after [`LAST_WORDS`].
    pub(super) fn check(&mut self, position: usize) {
        if self.ending.is_some() || self.failing.is_some() {
            return;
        }
        let member = &mut self.members[position - 1];
        if member.ended() {
            self.fail(position);
        } else if member.deadline.is_none() {
            member.deadline = Some(Instant::now() + LAST_WORDS);
        }
    }

    pub(super) fn fail(&mut self, position: usize) {
        if self.failing.is_some() {
            return;
        }
        self.members[position - 1].deadline = None;
        let member = &self.members[position - 1];
        let how = match (&member.url, member.exit) {
            (Some(url), _) => match &member.lost {
                Some(error) => format!("at {url} lost its connection: {error}"),
                None => format!("at {url} closed its connection"),
            },
            (None, Some(status)) => process::describe_exit(status),
            (None, None) => "closed its stdout".to_owned(),
        };
        let name = self.core.table().name(position).to_owned();
        let why = format!("component {position} ({name:?}) {how}");
        tracing::error!("{why}");
        let stderr = member.tail.text();
        let status = member.exit.map_or(1, exit_status);
        let error = Error::new(code::INTERNAL_ERROR, &why).with_data(serde_json::json!({
            "component": position,
            "name": name,
            "exitCode": member.exit.and_then(|s| s.code()),
            "stderr": stderr,
            "url": member.url,
        }));
        if self.core.component_failed(error, Instant::now().into_std()) {
            self.failing = Some(Failing { why, status });
        }
    }

    /// The failed chain has settled: the editor gets its errors, and the chain ends.
    pub(super) fn fail_now(&mut self) {
        let Some(Failing { why, status }) = self.failing.take() else {
            return;
        };
        self.core.settled(&mut self.deliveries);
        self.deliver(None);
        self.begin_end(Exit::Ended { why, status }, true);
    }

    /// Starts ending the chain (the first reason wins): closes the components' input, and
    /// plans the signals. An urgent end (a failure, a signal) closes every input at once; a
    /// clean one closes them in chain order (see the module docs).
    pub(super) fn begin_end(&mut self, exit: Exit, urgent: bool) {
        if self.ending.is_some() {
            return;
        }
        if exit.is_failure() {
            self.core.fail();
        }
        self.bridges.end_all();
        let now = Instant::now();
        if urgent {
            for position in 1..=self.members.len() {
                self.close_input(position);
            }
            self.ending = Some(Ending {
                exit,
                closing: None,
                term_at: Some(now),
                kill_at: Some(now + URGENT_TERM_GRACE),
                give_up_at: now + URGENT_TERM_GRACE + LAST_WORDS,
            });
        } else {
            self.ending = Some(Ending {
                exit,
                closing: None,
                term_at: None,
                kill_at: None,
                give_up_at: now,
            });
            self.close_next(0);
        }
        self.on_deadlines();
    }

    /// At a clean end: closes the input of the component after `position` (0: the first), or,
    /// when all are closed, plans the signals.
    pub(super) fn close_next(&mut self, position: usize) {
        let now = Instant::now();
        let Some(ending) = &mut self.ending else {
            return;
        };
        if position < self.members.len() {
            ending.closing = Some((position + 1, now + GRACE));
            ending.give_up_at = now + GRACE + LAST_WORDS;
            self.close_input(position + 1);
            // One that has already ended has nothing more to pass on.
            let member = &self.members[position];
            if member.eof || !member.alive() {
                self.close_next(position + 1);
            }
            return;
        }
        let term_at = now + GRACE;
        ending.closing = None;
        ending.term_at = Some(term_at);
        ending.kill_at = Some(term_at + self.term_grace);
        ending.give_up_at = term_at + self.term_grace + LAST_WORDS;
    }

    /// Closes the stdin of the component at `position`, after what is queued for it.
    pub(super) fn close_input(&mut self, position: usize) {
        if let Some(outbox) = self.outboxes[position].take() {
            tokio::spawn(outbox.close());
        }
    }

    /// At a clean end, the component at `position` closed its output or exited: the next one's
    /// stdin may close.
    pub(super) fn on_closed_while_ending(&mut self, position: usize) {
        if let Some(Ending {
            closing: Some((closing, _)),
            ..
        }) = &self.ending
            && *closing == position
        {
            self.close_next(position);
        }
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        let ending = self.ending.as_ref().map(|e| {
            [
                e.closing.map(|(_, until)| until),
                e.term_at,
                e.kill_at,
                Some(e.give_up_at),
            ]
            .into_iter()
            .flatten()
            .min()
        });
        self.members
            .iter()
            .map(|m| m.deadline)
            .chain(ending)
            .chain([self.draining, self.core.settle_due().map(Instant::from_std)])
            .chain([self
                .trace
                .as_ref()
                .and_then(Trace::due)
                .map(Instant::from_std)])
            .flatten()
            .min()
    }

    pub(super) fn on_deadlines(&mut self) {
        self.check_drained();
        let now = Instant::now();
        if self
            .core
            .settle_due()
            .is_some_and(|due| Instant::from_std(due) <= now)
        {
            self.fail_now();
        }
        if let Some(Ending {
            closing: Some((position, until)),
            ..
        }) = self.ending
            && until <= now
        {
            self.close_next(position);
        }
        if let Some(ending) = &mut self.ending {
            let signal = if ending.kill_at.is_some_and(|at| at <= now) {
                ending.kill_at = None;
                ending.term_at = None;
                Some(Signal::SIGKILL)
            } else if ending.term_at.is_some_and(|at| at <= now) {
                ending.term_at = None;
                Some(Signal::SIGTERM)
            } else {
                None
            };
            if let Some(signal) = signal {
                for member in self.members.iter().filter(|m| m.alive()) {
                    member.signal(signal);
                }
            }
            return;
        }
        let due = self
            .members
            .iter()
            .position(|m| m.deadline.is_some_and(|at| at <= now));
        if let Some(index) = due {
            self.fail(index + 1);
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
        self.ending.map_or(Exit::Clean, |e| e.exit)
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
