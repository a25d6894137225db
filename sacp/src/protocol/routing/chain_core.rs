//! [`ChainCore`]: the part of a chain's event loop that the conductor and the test kit's chain
//! both run, so that what one does with a message the other does too.

use std::time::Instant;

use crate::jsonrpc::{Error, Inbound, Message};

use super::histories::Histories;
use super::states::States;
use super::{Conn, Delivery, Dir, EDITOR, Fatal, Hop, Node, RoutingTable, Settling};

/// The routing table, and what a chain lets through once a component has failed. A loop
/// feeds it what arrives on each connection ([`ChainCore::inbound`]) and writes the
/// deliveries it makes, in order; it tells it when a component failed
/// ([`ChainCore::component_failed`]) and wakes at [`ChainCore::settle_due`] to end the chain
/// ([`ChainCore::settled`]). What the loop does around it (processes and their ends, bridges,
/// trace, versions in the conductor; in-process components and the transcript in the kit) is
/// its own.
#[derive(Debug)]
pub struct ChainCore {
    table: RoutingTable,
    /// A component failed: the error the editor gets once the chain has settled.
    failing: Option<(Error, Settling)>,
    /// The chain failed: nothing more of its components reaches the editor.
    failed: bool,
    /// Sessions created with a history, adapted to the agent (see `histories`).
    histories: Histories,
    /// A v2 editor's sessions' states (see `states`).
    states: States,
    /// What the chain kept from everyone since [`ChainCore::take_kept`] (a synthesized
    /// history turn's messages): for a trace.
    kept: Vec<Message>,
}

impl ChainCore {
    /// A chain routed by `table`.
    pub fn new(table: RoutingTable) -> ChainCore {
        ChainCore {
            table,
            failing: None,
            failed: false,
            histories: Histories::default(),
            states: States::default(),
            kept: Vec::new(),
        }
    }

    /// The routing table, to read.
    pub fn table(&self) -> &RoutingTable {
        &self.table
    }

    /// The routing table, to set up before the chain runs ([`RoutingTable::declare`],
    /// [`RoutingTable::translate`]).
    pub fn table_mut(&mut self) -> &mut RoutingTable {
        &mut self.table
    }

    /// Routes what arrived on `conn`, adding the deliveries to `out`. Once the chain has
    /// failed, what its components send is dropped (the editor has its errors, and nothing of
    /// the failed chain follows them); while it settles, their traffic postpones the end. The
    /// position of a component that refused the proxy capability, which fails the chain.
    pub fn inbound(
        &mut self,
        conn: Conn,
        batch: impl IntoIterator<Item = Inbound>,
        out: &mut Vec<Delivery>,
    ) -> Option<usize> {
        if conn != EDITOR {
            if self.failed {
                return None;
            }
            if let Some((_, settling)) = &mut self.failing {
                // Tokio's clock: the test kit's chain runs under a paused one too.
                settling.traffic(tokio::time::Instant::now().into_std());
            }
        }
        let mut batch: Vec<Inbound> = batch.into_iter().collect();
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
                out.push(Delivery {
                    conn: agent,
                    message,
                    hop,
                });
            }
        }
        let mut refused = None;
        for inbound in batch {
            if let Some(Fatal::Refused(position)) = self.table.inbound(conn, inbound, out) {
                refused.get_or_insert(position);
            }
        }
        if refused.is_some() {
            self.failed = true;
        }
        refused
    }

    /// Looks at a delivery as it is written (after whatever the loop held it for): the
    /// history of a `session/new` on its way to an agent that cannot take it, the history
    /// offered in the `initialize` answer to the editor (see `histories`). Not in proxy mode,
    /// where the chain does not end in the agent.
    pub fn outbound(&mut self, delivery: &mut Delivery) {
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

    /// Whether the editor speaks ACP v2 (and the chain ends in an agent: in proxy mode the
    /// outer conductor keeps the states).
    fn v2_editor(&self) -> bool {
        !self.table.proxy_mode() && self.table.client_version().is_some_and(|v| v >= 2)
    }

    /// A component failed at `now` (on tokio's clock, which a test may pause): once the chain
    /// has settled (see [`Settling`]), each request the editor has in flight gets `error`. The
    /// first failure wins: false when the chain was failing or had failed already.
    pub fn component_failed(&mut self, error: Error, now: Instant) -> bool {
        if self.failing.is_some() || self.failed {
            return false;
        }
        self.failing = Some((error, Settling::new(now)));
        true
    }

    /// When the failing chain counts as settled, unless more traffic comes.
    pub fn settle_due(&self) -> Option<Instant> {
        self.failing.as_ref().map(|(_, settling)| settling.due())
    }

    /// The failing chain has settled: every request the editor has in flight gets the error
    /// (in `out`), and the chain has failed. False when it was not failing.
    pub fn settled(&mut self, out: &mut Vec<Delivery>) -> bool {
        let Some((error, _)) = self.failing.take() else {
            return false;
        };
        self.table.fail_all(&error, out);
        self.failed = true;
        true
    }

    /// The chain failed for a reason of the loop's own: nothing more of its components
    /// reaches the editor.
    pub fn fail(&mut self) {
        self.failed = true;
    }

    /// Whether the chain has failed.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Answers every request the editor has in flight with `error` (see
    /// [`RoutingTable::fail_all`]): the chain ends for another reason (the editor left, say).
    pub fn fail_all(&mut self, error: &Error, out: &mut Vec<Delivery>) {
        self.table.fail_all(error, out);
    }
}
