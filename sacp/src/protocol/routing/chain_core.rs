//! [`ChainCore`]: a chain as one state machine without I/O, which the conductor and the test
//! kit's chain both drive, so that what one does with a message, or at a component's end, the
//! other does too.

use std::collections::VecDeque;
use std::time::Instant;

use crate::jsonrpc::{Error, Inbound, Message, code};

use super::histories::Histories;
use super::life::{Action, End, Ending, Exited, Member, Sign, Signal, Timing};
use super::mcp_routes::SESSION_SETUP;
use super::states::States;
use super::{Conn, Delivery, Dir, EDITOR, Fatal, Hop, Node, RoutingTable, Settling};

/// A chain: its routing table, and every decision of its life (see [`super::life`]).
///
/// The loop that drives it tells it everything that happens, with the time it happened
/// (`now` is always passed in, never read): what arrived on a connection
/// ([`ChainCore::inbound`]), a connection that ended ([`ChainCore::closed`],
/// [`ChainCore::write_failed`]), a component that exited ([`ChainCore::exited`]), a reason of
/// its own to stop ([`ChainCore::stop`]), and that time passed ([`ChainCore::tick`], due at
/// [`ChainCore::next_wake`]). After each, it writes the deliveries the machine made
/// ([`ChainCore::poll_deliveries`], in order, one run per connection), then does what it is
/// asked ([`ChainCore::poll_action`]: inputs to close, signals to send), and stops once the
/// chain has [finished](ChainCore::finished). What the loop does around it (processes,
/// bridges, the trace in the conductor; in-process components and the transcript in the kit)
/// is its own I/O; the machine's documentation lists where the two differ.
#[derive(Debug)]
pub struct ChainCore {
    table: RoutingTable,
    timing: Timing,
    /// By position - 1.
    members: Vec<Member>,
    /// Whether each component's input was closed, by position - 1.
    inputs_closed: Vec<bool>,
    /// A component failed: the error the editor gets once the chain has settled, and how
    /// the chain then ends.
    failing: Option<(Error, Settling, End)>,
    /// The chain failed: nothing more of its components reaches the editor.
    failed: bool,
    /// The editor left; its requests in flight may be answered until then.
    draining: Option<Instant>,
    ending: Option<Ending>,
    finished: bool,
    /// Sessions created with a history, adapted to the agent (see `histories`).
    histories: Histories,
    /// A v2 editor's sessions' states (see `states`).
    states: States,
    /// What the chain kept from everyone since [`ChainCore::take_kept`] (a synthesized
    /// history turn's messages): for a trace.
    kept: Vec<Message>,
    /// Deliveries made, not yet polled.
    out: Vec<Delivery>,
    /// Deliveries to the agent held until it answers its `initialize`: a session setup sent
    /// before then (the conductor bridges its `acp:` MCP entries by what the answer says),
    /// and whatever follows it to the agent, in order.
    held: Vec<Delivery>,
    actions: VecDeque<Action>,
}

impl ChainCore {
    /// A chain routed by `table`, whose components' ends show as `signs` say (one per
    /// component, in chain order), ending with `timing`.
    pub fn new(table: RoutingTable, signs: Vec<Sign>, timing: Timing) -> ChainCore {
        let inputs_closed = vec![false; signs.len()];
        ChainCore {
            table,
            timing,
            members: signs.into_iter().map(Member::new).collect(),
            inputs_closed,
            failing: None,
            failed: false,
            draining: None,
            ending: None,
            finished: false,
            histories: Histories::default(),
            states: States::default(),
            kept: Vec::new(),
            out: Vec::new(),
            held: Vec::new(),
            actions: VecDeque::new(),
        }
    }

    /// The routing table, to read.
    pub fn table(&self) -> &RoutingTable {
        &self.table
    }

    /// The routing table, to set up before the chain runs ([`RoutingTable::declare`],
    /// [`RoutingTable::plug`]).
    pub fn table_mut(&mut self) -> &mut RoutingTable {
        &mut self.table
    }

    /// What arrived on `conn` at `now`. Once the chain has failed, what its components send
    /// is dropped (the editor has its errors, and nothing of the failed chain follows them);
    /// while it settles, their traffic postpones the end. Once it is ending, the editor's
    /// requests are answered at once with an error saying why.
    pub fn inbound(&mut self, conn: Conn, batch: impl IntoIterator<Item = Inbound>, now: Instant) {
        if conn != EDITOR {
            if self.failed || self.finished {
                return;
            }
            if let Some((_, settling, _)) = &mut self.failing {
                settling.traffic(now);
            }
        }
        let mut batch: Vec<Inbound> = batch.into_iter().collect();
        if conn == EDITOR && self.ending.is_some() {
            batch.retain_mut(|inbound| !self.refuse_after_the_end(inbound));
            if self.finished {
                // Nothing reaches a component once the chain has finished.
                return;
            }
        }
        if conn == EDITOR && self.v2_editor() {
            for inbound in &batch {
                if let Inbound::Message(Message::Request(request)) = inbound {
                    self.states.on_request(request);
                }
            }
        }
        let agent = self.table.agent_conn();
        if conn == agent && !self.table.proxy_mode() && self.histories.watching() {
            let done = self.histories.on_from_agent(&mut batch);
            self.kept.extend(done.kept);
            for message in done.to_agent {
                let hop = Hop {
                    from: Node::Conductor,
                    to: Node::Component(agent),
                    dir: Dir::Down,
                    answers: None,
                    key: None,
                };
                self.out.push(Delivery {
                    conn: agent,
                    message,
                    hop,
                });
            }
        }
        let mut refused = None;
        for inbound in batch {
            if let Some(Fatal::Refused(position)) = self.table.inbound(conn, inbound, &mut self.out)
            {
                refused.get_or_insert(position);
            }
        }
        if let Some(position) = refused {
            let message = self.table.refusal(position).message;
            self.begin_end(End::Refused { position, message }, true, now);
        }
        self.check_drained(now);
        self.check_finished(now);
    }

    /// After the end, a request of the editor's gets its error here (true: it is taken).
    fn refuse_after_the_end(&mut self, inbound: &mut Inbound) -> bool {
        let (Inbound::Message(Message::Request(request)), Some(ending)) = (inbound, &self.ending)
        else {
            return false;
        };
        let error = Error::new(
            code::INTERNAL_ERROR,
            format!("the chain has ended: {}", ending.end.describe()),
        );
        let id = request.id.clone();
        self.table.answer(EDITOR, id, &error, &mut self.out);
        true
    }

    /// `conn`'s output ended at `now` (with the error that ended it, if one did): the editor
    /// left, or a component showed a sign of its end. A [`Diversion`](super::Diversion)'s
    /// connections end nothing.
    pub fn closed(&mut self, conn: Conn, error: Option<String>, now: Instant) {
        if conn == EDITOR {
            // What the editor asked before it left is still answered, for a while.
            self.draining = Some(now + self.timing.eof_grace);
            self.check_drained(now);
        } else if let Some(member) = self.members.get_mut(conn - 1) {
            if error.is_some() {
                member.lost = error;
            }
            member.eof = true;
            self.check(conn, now);
            self.on_closed_while_ending(conn, now);
        }
        self.check_finished(now);
    }

    /// Writing to `conn` failed at `now`: an editor that stops reading ends the chain as one
    /// that left does, without the grace; a component shows a sign of its end.
    pub fn write_failed(&mut self, conn: Conn, error: String, now: Instant) {
        if conn == EDITOR {
            self.begin_end(End::Clean, false, now);
        } else if let Some(member) = self.members.get_mut(conn - 1) {
            if matches!(member.sign, Sign::Connection { .. }) {
                member.lost.get_or_insert(error);
            }
            member.eof = true;
            self.check(conn, now);
            self.on_closed_while_ending(conn, now);
        }
        self.check_finished(now);
    }

    /// The component at `position` exited at `now`.
    pub fn exited(&mut self, position: usize, exited: Exited, now: Instant) {
        let Some(member) = self.members.get_mut(position.wrapping_sub(1)) else {
            return;
        };
        member.exit = Some(exited);
        self.check(position, now);
        self.on_closed_while_ending(position, now);
        self.check_finished(now);
    }

    /// The loop stops the chain at `now` for a reason of its own (a signal, a failure of its
    /// own; `failure`: nothing more of the components reaches the editor): an urgent end.
    pub fn stop(&mut self, why: impl Into<String>, failure: bool, now: Instant) {
        let why = why.into();
        self.begin_end(End::Stopped { why, failure }, true, now);
        self.check_finished(now);
    }

    /// Time passed: whatever is due at `now` happens.
    pub fn tick(&mut self, now: Instant) {
        self.deadlines(now);
        self.check_finished(now);
    }

    /// When the loop must next call [`ChainCore::tick`], unless something happens before.
    pub fn next_wake(&self) -> Option<Instant> {
        if self.finished {
            return None;
        }
        self.members
            .iter()
            .map(|m| m.deadline)
            .chain([
                self.ending.as_ref().and_then(Ending::due),
                self.draining,
                self.failing.as_ref().map(|(_, settling, _)| settling.due()),
            ])
            .flatten()
            .min()
    }

    /// The deliveries made since the last call, appended to `out` in order (deliveries to
    /// one connection that follow each other make one run), each as it is written: the
    /// history of a `session/new` on its way to an agent that cannot take it, the history
    /// offered in the `initialize` answer to the editor (see `histories`). A session setup
    /// on its way to the agent is held, with what follows it to the agent, until the agent
    /// has answered its `initialize`.
    pub fn poll_deliveries(&mut self, out: &mut Vec<Delivery>) {
        self.hold_for_the_agents_initialize();
        let mut ready = std::mem::take(&mut self.out);
        for delivery in &mut ready {
            self.outbound(delivery);
        }
        out.append(&mut ready);
        self.out = ready;
    }

    /// What the loop is asked to do next.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// Adds `value` under `key` to the data of the error a failing component's end gives the
    /// editor (its last stderr lines, say), before the chain settles.
    pub fn annotate_failure(&mut self, key: &str, value: serde_json::Value) {
        if let Some((error, _, _)) = &mut self.failing
            && let Some(serde_json::Value::Object(data)) = &mut error.data
        {
            data.insert(key.to_owned(), value);
        }
    }

    /// How the chain is ending, once it is.
    pub fn end(&self) -> Option<&End> {
        self.ending.as_ref().map(|e| &e.end)
    }

    /// Whether the chain has finished: it was ending, and no component is alive or the last
    /// grace is over. Every request the editor sent has its answer.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Whether the chain has failed.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Looks at messages written to the editor together, in order: for a v2 editor, a
    /// session speaking while idle is put between `running` and idle (see `states`).
    pub fn to_editor(&mut self, messages: &mut Vec<Message>) {
        if self.v2_editor() {
            self.states.on_way_to_editor(messages);
        }
    }

    /// What the chain kept from everyone since the last call (a synthesized history turn's
    /// messages, from the agent), for a trace.
    pub fn take_kept(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.kept)
    }

    /// A delivery as it is written (not in proxy mode, where the chain does not end in the
    /// agent).
    fn outbound(&mut self, delivery: &mut Delivery) {
        if self.table.proxy_mode() {
            return;
        }
        match &mut delivery.message {
            Message::Request(request) if delivery.conn == self.table.agent_conn() => {
                self.histories.on_request_to_agent(request);
            }
            Message::Response(response)
                if delivery.conn == EDITOR
                    && delivery.hop.answers.as_deref() == Some("initialize") =>
            {
                super::histories::offer(response);
            }
            _ => {}
        }
    }

    fn hold_for_the_agents_initialize(&mut self) {
        let agent = self.table.agent_conn();
        if self.table.agent_initializing() {
            let mut i = 0;
            while i < self.out.len() {
                let d = &self.out[i];
                let setup = matches!(&d.message, Message::Request(r)
                    if SESSION_SETUP.contains(&r.method.as_str()));
                if d.conn == agent && (setup || !self.held.is_empty()) {
                    self.held.push(self.out.remove(i));
                } else {
                    i += 1;
                }
            }
        } else if !self.held.is_empty() {
            let mut all = std::mem::take(&mut self.held);
            all.append(&mut self.out);
            self.out = all;
        }
    }

    /// Whether the editor speaks ACP v2 (and the chain ends in an agent: in proxy mode the
    /// outer conductor keeps the states).
    fn v2_editor(&self) -> bool {
        !self.table.proxy_mode() && self.table.client_version().is_some_and(|v| v >= 2)
    }

    /// After the editor left: ends the chain once its requests are all answered, or the
    /// grace is over.
    fn check_drained(&mut self, now: Instant) {
        let Some(until) = self.draining else {
            return;
        };
        let in_flight = self.table.editor_requests_in_flight();
        if in_flight > 0 && now < until {
            return;
        }
        self.draining = None;
        if in_flight > 0 {
            // Named for who left: the components only see their input end.
            let error = Error::new(
                code::INTERNAL_ERROR,
                format!(
                    "the editor closed its connection to the chain while this request was in \
                     flight, and it was not answered within {:?}",
                    self.timing.eof_grace
                ),
            );
            self.table.fail_all(&error, &mut self.out);
        }
        self.begin_end(End::Clean, false, now);
    }

    /// The component at `position` showed a sign of its end: it fails now if both signs are
    /// in, or after [`Timing::last_words`].
    fn check(&mut self, position: usize, now: Instant) {
        if self.ending.is_some() || self.failing.is_some() {
            return;
        }
        let member = &mut self.members[position - 1];
        if member.ended() {
            self.fail(position, now);
        } else if member.deadline.is_none() {
            member.deadline = Some(now + self.timing.last_words);
        }
    }

    /// The component at `position` failed: the chain settles, then ends.
    fn fail(&mut self, position: usize, now: Instant) {
        if self.failing.is_some() || self.failed {
            return;
        }
        self.forget_deadlines();
        let member = &self.members[position - 1];
        let name = self.table.name(position).to_owned();
        let why = format!("component {position} ({name:?}) {}", member.how());
        let url = match &member.sign {
            Sign::Connection { url } => url.clone(),
            Sign::OutputAndExit => None,
        };
        let exit = member.exit.as_ref();
        let status = exit.map_or(1, |e| e.status);
        let error = Error::new(code::INTERNAL_ERROR, &why).with_data(serde_json::json!({
            "component": position,
            "name": name,
            "exitCode": exit.and_then(|e| e.code),
            "url": url,
        }));
        let end = End::Component {
            position,
            why: why.clone(),
            status,
        };
        self.failing = Some((error, Settling::new(now), end));
        self.actions.push_back(Action::Failing { position, why });
    }

    /// Once the chain fails or ends, no component's other sign is waited for: a deadline
    /// left behind would be due at every wake from then on.
    fn forget_deadlines(&mut self) {
        for member in &mut self.members {
            member.deadline = None;
        }
    }

    /// The failed chain has settled: every request the editor has in flight gets the error,
    /// and the chain ends.
    fn settle(&mut self, now: Instant) {
        let Some((error, _, end)) = self.failing.take() else {
            return;
        };
        self.table.fail_all(&error, &mut self.out);
        self.failed = true;
        self.begin_end(end, true, now);
    }

    /// Starts ending the chain (the first reason wins): closes the components' inputs, and
    /// plans the signals. An urgent end closes every input at once; a clean one closes them
    /// in chain order.
    fn begin_end(&mut self, end: End, urgent: bool, now: Instant) {
        if self.ending.is_some() {
            return;
        }
        if end.is_failure() {
            self.failed = true;
        }
        self.forget_deadlines();
        self.actions.push_back(Action::Ending);
        let timing = self.timing;
        if urgent {
            for position in 1..=self.members.len() {
                self.close_input(position);
            }
            self.ending = Some(Ending {
                end,
                closing: None,
                term_at: Some(now),
                kill_at: Some(now + timing.urgent_term_grace),
                give_up_at: now + timing.urgent_term_grace + timing.last_words,
            });
        } else {
            self.ending = Some(Ending {
                end,
                closing: None,
                term_at: None,
                kill_at: None,
                give_up_at: now,
            });
            self.close_next(0, now);
        }
        self.deadlines(now);
    }

    /// At a clean end: closes the input of the component after `position` (0: the first),
    /// or, when all are closed, plans the signals.
    fn close_next(&mut self, position: usize, now: Instant) {
        let timing = self.timing;
        let Some(ending) = &mut self.ending else {
            return;
        };
        if position < self.members.len() {
            ending.closing = Some((position + 1, now + timing.grace));
            ending.give_up_at = now + timing.grace + timing.last_words;
            self.close_input(position + 1);
            // One that has already ended has nothing more to pass on.
            let member = &self.members[position];
            if member.eof || !member.alive() {
                self.close_next(position + 1, now);
            }
            return;
        }
        let term_at = now + timing.grace;
        ending.closing = None;
        ending.term_at = Some(term_at);
        ending.kill_at = Some(term_at + timing.term_grace);
        ending.give_up_at = term_at + timing.term_grace + timing.last_words;
    }

    fn close_input(&mut self, position: usize) {
        if let Some(closed) = self.inputs_closed.get_mut(position - 1)
            && !*closed
        {
            *closed = true;
            self.actions.push_back(Action::CloseInput(position));
        }
    }

    /// At a clean end, the component at `position` closed its output or exited: the next
    /// one's input may close.
    fn on_closed_while_ending(&mut self, position: usize, now: Instant) {
        if let Some(Ending {
            closing: Some((closing, _)),
            ..
        }) = &self.ending
            && *closing == position
        {
            self.close_next(position, now);
        }
    }

    fn deadlines(&mut self, now: Instant) {
        self.check_drained(now);
        if self
            .failing
            .as_ref()
            .is_some_and(|(_, settling, _)| settling.due() <= now)
        {
            self.settle(now);
        }
        if let Some(Ending {
            closing: Some((position, until)),
            ..
        }) = self.ending
            && until <= now
        {
            self.close_next(position, now);
        }
        if let Some(ending) = &mut self.ending {
            let signal = if ending.kill_at.is_some_and(|at| at <= now) {
                ending.kill_at = None;
                ending.term_at = None;
                Some(Signal::Kill)
            } else if ending.term_at.is_some_and(|at| at <= now) {
                ending.term_at = None;
                Some(Signal::Term)
            } else {
                None
            };
            if let Some(signal) = signal {
                let alive: Vec<usize> = (1..=self.members.len())
                    .filter(|p| self.members[p - 1].alive())
                    .collect();
                if !alive.is_empty() {
                    self.actions.push_back(Action::Signal(signal, alive));
                }
            }
            return;
        }
        let due = self
            .members
            .iter()
            .position(|m| m.deadline.is_some_and(|at| at <= now));
        if let Some(index) = due {
            self.fail(index + 1, now);
        }
    }

    /// The chain has finished once it is ending and no component is alive, or the last
    /// grace is over: what the editor still has in flight gets the end's error.
    fn check_finished(&mut self, now: Instant) {
        let Some(ending) = &self.ending else {
            return;
        };
        if self.finished || !(self.members.iter().all(|m| !m.alive()) || now >= ending.give_up_at) {
            return;
        }
        self.finished = true;
        if self.table.editor_requests_in_flight() > 0 {
            let error = Error::new(
                code::INTERNAL_ERROR,
                format!(
                    "the chain ended before answering: {}",
                    ending.end.describe()
                ),
            );
            self.table.fail_all(&error, &mut self.out);
        }
    }
}
