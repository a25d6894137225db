//! Property tests of the chain's state machine: random arrivals, ends of output, exits, the
//! editor leaving, stops and times, fed to a [`ChainCore`] driven the way a loop drives it.
//! Whatever happens, every request the editor sent is answered exactly once by the time the
//! chain has finished; once the chain has failed nothing of its components reaches the editor;
//! once it has finished, nothing reaches anyone but the editor's answers; and what the agent
//! says reaches the editor in the order it said it.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use proptest::prelude::*;

use crate::jsonrpc::{
    Id, Inbound, Message, Notification, RawJson, Request, Response, ResponseBody,
};
use crate::protocol::envelope::{self, SUCCESSOR_NOTIFICATION, SUCCESSOR_REQUEST};

use super::life::{Action, Exited, Sign, Timing};
use super::*;

fn raw(text: &str) -> RawJson {
    RawJson::from_string(text).unwrap()
}

/// What happens next in the world around the chain.
#[derive(Debug, Clone)]
enum Event {
    /// The editor sends a prompt.
    Prompt,
    /// A component reads the next message waiting for it, and does what it does with it.
    Step(usize),
    /// A component's output ends.
    CloseOutput(usize),
    /// A component exits.
    Exit(usize),
    /// The editor leaves.
    EditorLeaves,
    /// The loop stops the chain (a signal).
    Stop(bool),
    /// Time passes (milliseconds).
    Wait(u64),
}

fn event(components: usize) -> impl Strategy<Value = Event> {
    prop_oneof![
        3 => Just(Event::Prompt),
        8 => (1..=components).prop_map(Event::Step),
        1 => (1..=components).prop_map(Event::CloseOutput),
        1 => (1..=components).prop_map(Event::Exit),
        1 => Just(Event::EditorLeaves),
        1 => any::<bool>().prop_map(Event::Stop),
        3 => (0u64..700).prop_map(Event::Wait),
    ]
}

/// A component as the world sees it.
#[derive(Debug, Default)]
struct Peer {
    /// What the chain delivered to it, not yet read.
    queue: VecDeque<Message>,
    input_closed: bool,
    output_closed: bool,
    exited: bool,
    /// A proxy's requests to its successor: its own id -> the id it must answer.
    owed: HashMap<Id, Id>,
    next_own: i64,
}

/// The world: the machine, the components, the editor's side, and the clock.
struct World {
    core: ChainCore,
    peers: Vec<Peer>,
    now: Instant,
    /// Requests the editor sent, by id: how many answers each got.
    answers: HashMap<Id, usize>,
    sent: usize,
    /// The agent's last update number, and the last one the editor saw.
    said: u64,
    seen: Option<u64>,
    failed_seen: bool,
    finished_seen: bool,
    signs: Vec<Sign>,
}

impl World {
    fn new(signs: Vec<Sign>) -> World {
        let names = (1..=signs.len()).map(|i| format!("c{i}")).collect();
        let peers = (0..signs.len()).map(|_| Peer::default()).collect();
        World {
            core: ChainCore::new(RoutingTable::new(names), signs.clone(), Timing::default()),
            peers,
            now: Instant::now(),
            answers: HashMap::new(),
            sent: 0,
            said: 0,
            seen: None,
            failed_seen: false,
            finished_seen: false,
            signs,
        }
    }

    fn n(&self) -> usize {
        self.peers.len()
    }

    fn peer(&mut self, position: usize) -> &mut Peer {
        &mut self.peers[position - 1]
    }

    /// Writes what the machine delivered and does what it asks, checking each delivery.
    fn act(&mut self) -> Result<(), TestCaseError> {
        loop {
            let mut out = Vec::new();
            self.core.poll_deliveries(&mut out);
            let mut acted = !out.is_empty();
            for delivery in out {
                self.delivered(delivery)?;
            }
            while let Some(action) = self.core.poll_action() {
                acted = true;
                match action {
                    Action::CloseInput(position) => self.peer(position).input_closed = true,
                    Action::Signal(signal, positions) => {
                        for position in positions {
                            let process = matches!(self.signs[position - 1], Sign::OutputAndExit);
                            let peer = &mut self.peers[position - 1];
                            prop_assert!(
                                !peer.exited,
                                "{:?} to a component that had ended",
                                signal
                            );
                            // A process dies of `SIGKILL`; of `SIGTERM` too, here.
                            if process && !peer.exited {
                                peer.exited = true;
                                peer.output_closed = true;
                                let exited = Exited {
                                    description: "was killed by a signal".into(),
                                    code: None,
                                    status: 137,
                                };
                                self.core.exited(position, exited, self.now);
                                self.core.closed(position, None, self.now);
                            }
                        }
                    }
                    Action::Failing { .. } | Action::Ending => {}
                }
            }
            self.failed_seen |= self.core.failed();
            self.finished_seen |= self.core.finished();
            if !acted {
                return Ok(());
            }
        }
    }

    fn delivered(&mut self, delivery: Delivery) -> Result<(), TestCaseError> {
        if delivery.conn != EDITOR {
            prop_assert!(
                !self.finished_seen,
                "a delivery to a component after the end"
            );
            let peer = self.peer(delivery.conn);
            if !peer.input_closed {
                peer.queue.push_back(delivery.message);
            }
            return Ok(());
        }
        match delivery.message {
            Message::Response(response) => {
                let from_the_chain = matches!(response.body, ResponseBody::Result(_));
                prop_assert!(
                    !(from_the_chain && (self.failed_seen || self.finished_seen)),
                    "an answer of the failed chain reached the editor"
                );
                let count = self.answers.get_mut(&response.id);
                prop_assert!(
                    count.is_some(),
                    "an answer to no request: {:?}",
                    response.id
                );
                *count.unwrap() += 1;
            }
            Message::Notification(notification) => {
                prop_assert!(
                    !self.failed_seen && !self.finished_seen,
                    "an update after the end"
                );
                let params: serde_json::Value = notification.params.unwrap().parse().unwrap();
                let seq = params["seq"].as_u64().unwrap();
                prop_assert!(
                    self.seen.is_none_or(|seen| seq > seen),
                    "updates out of order"
                );
                self.seen = Some(seq);
            }
            Message::Request(request) => {
                return Err(TestCaseError::fail(format!(
                    "the editor was asked {}",
                    request.method
                )));
            }
        }
        Ok(())
    }

    fn happen(&mut self, event: Event) -> Result<(), TestCaseError> {
        match event {
            Event::Prompt => {
                let id = Id::Number(self.sent as i64 * 7 - 3);
                self.sent += 1;
                self.answers.insert(id.clone(), 0);
                let request = Request {
                    id,
                    method: "session/prompt".into(),
                    params: Some(raw(r#"{"sessionId":"s"}"#)),
                };
                self.core.inbound(
                    EDITOR,
                    [Inbound::Message(Message::Request(request))],
                    self.now,
                );
            }
            Event::Step(position) => self.step(position),
            Event::CloseOutput(position) => {
                if !self.peer(position).output_closed {
                    self.peer(position).output_closed = true;
                    self.core.closed(position, None, self.now);
                }
            }
            Event::Exit(position) => {
                if !self.peer(position).exited {
                    self.peer(position).exited = true;
                    let exited = Exited {
                        description: "exited with status 3".into(),
                        code: Some(3),
                        status: 3,
                    };
                    self.core.exited(position, exited, self.now);
                    // A connection's end is its only sign: it exits by closing it.
                    if matches!(self.signs[position - 1], Sign::Connection { .. }) {
                        self.peer(position).output_closed = true;
                        self.core.closed(position, None, self.now);
                    }
                }
            }
            Event::EditorLeaves => self.core.closed(EDITOR, None, self.now),
            Event::Stop(failure) => self.core.stop("stopped by a signal", failure, self.now),
            Event::Wait(ms) => {
                self.now += Duration::from_millis(ms);
                if self.core.next_wake().is_some_and(|at| at <= self.now) {
                    self.core.tick(self.now);
                }
            }
        }
        self.act()
    }

    /// The component at `position` reads one message and does what it does with it.
    fn step(&mut self, position: usize) {
        let n = self.n();
        let now = self.now;
        let peer = &mut self.peers[position - 1];
        if peer.exited || peer.output_closed {
            return;
        }
        let Some(message) = peer.queue.pop_front() else {
            // An input closed with nothing left in it: the component ends.
            if peer.input_closed {
                peer.output_closed = true;
                peer.exited = true;
                self.core.closed(position, None, now);
                if matches!(self.signs[position - 1], Sign::OutputAndExit) {
                    let exited = Exited {
                        description: "exited with status 0".into(),
                        code: Some(0),
                        status: 0,
                    };
                    self.core.exited(position, exited, now);
                }
            }
            return;
        };
        let replies: Vec<Message> = match message {
            Message::Request(request) if position == n => {
                // The agent: an update, then the answer.
                self.said += 1;
                let update = Notification {
                    method: "session/update".into(),
                    params: Some(raw(&format!(r#"{{"seq":{}}}"#, self.said))),
                };
                vec![
                    Message::Notification(update),
                    Message::Response(Response {
                        id: request.id,
                        body: ResponseBody::Result(raw("{}")),
                    }),
                ]
            }
            Message::Request(request) => {
                // A proxy passes it on with an id of its own.
                peer.next_own += 1;
                let own = Id::String(format!("p{position}-{}", peer.next_own).into());
                peer.owed.insert(own.clone(), request.id);
                let wrapped = envelope::wrap(&request.method, request.params.as_ref());
                vec![Message::Request(Request {
                    id: own,
                    method: SUCCESSOR_REQUEST.into(),
                    params: Some(wrapped),
                })]
            }
            Message::Response(response) => match peer.owed.remove(&response.id) {
                Some(original) => vec![Message::Response(Response {
                    id: original,
                    body: response.body,
                })],
                None => Vec::new(),
            },
            Message::Notification(notification)
                if notification.method == SUCCESSOR_NOTIFICATION =>
            {
                let (method, params) = envelope::unwrap(notification.params.as_ref()).unwrap();
                vec![Message::Notification(Notification { method, params })]
            }
            Message::Notification(_) => Vec::new(),
        };
        let batch: Vec<Inbound> = replies.into_iter().map(Inbound::Message).collect();
        self.core.inbound(position, batch, now);
    }

    /// Lets the world run out: the editor leaves, components read what they have, time
    /// passes, until the chain has finished.
    fn run_out(&mut self) -> Result<(), TestCaseError> {
        self.happen(Event::EditorLeaves)?;
        for _ in 0..10_000 {
            if self.core.finished() {
                return Ok(());
            }
            for position in 1..=self.n() {
                self.happen(Event::Step(position))?;
            }
            let next = self.core.next_wake();
            prop_assert!(
                next.is_some()
                    || self.core.finished()
                    || self
                        .peers
                        .iter()
                        .any(|p| !p.queue.is_empty() || (p.input_closed && !p.output_closed)),
                "the chain waits for nothing and has not finished"
            );
            if let Some(at) = next {
                let ms = at.saturating_duration_since(self.now).as_millis() as u64;
                self.happen(Event::Wait(ms))?;
            }
        }
        Err(TestCaseError::fail("the chain never finished"))
    }
}

fn sign(choice: bool) -> Sign {
    if choice {
        Sign::OutputAndExit
    } else {
        Sign::Connection { url: None }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_request_is_answered_once_and_nothing_follows_the_end(
        signs in prop::collection::vec(any::<bool>(), 1..4),
        events in prop::collection::vec(event(3), 0..80),
    ) {
        let signs: Vec<Sign> = signs.into_iter().map(sign).collect();
        let components = signs.len();
        let mut world = World::new(signs);
        for event in events {
            let event = match event {
                Event::Step(p) => Event::Step((p - 1) % components + 1),
                Event::CloseOutput(p) => Event::CloseOutput((p - 1) % components + 1),
                Event::Exit(p) => Event::Exit((p - 1) % components + 1),
                other => other,
            };
            world.happen(event)?;
        }
        world.run_out()?;
        // A request after the end is answered at once.
        world.happen(Event::Prompt)?;
        for (id, count) in &world.answers {
            prop_assert_eq!(*count, 1, "request {:?} answered {} times", id, count);
        }
        // Nothing of the components follows the end.
        world.core.inbound(components, [Inbound::Message(Message::Notification(Notification {
            method: "session/update".into(),
            params: Some(raw(r#"{"seq":0}"#)),
        }))], world.now);
        let mut out = Vec::new();
        world.core.poll_deliveries(&mut out);
        prop_assert!(out.is_empty(), "delivered after the end: {:?}", out);
    }
}
