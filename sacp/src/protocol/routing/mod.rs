//! Routing: where each message goes, with which id, in which envelope — the conductor's
//! part of spec §2 and §3 as a table without I/O, which the `sacp-chain` conductor and the
//! in-process chains of `sacp::testing` both drive. At the chain's two ends, [`ChainCore`]
//! also adapts a `session/new` that carries a history to the agent (see
//! [`crate::protocol::history`]: told in a prompt of the chain's own when the agent cannot
//! take it) and keeps a v2 editor's session states true around what is said between turns.
//!
//! The conductor has one connection per peer: the **editor** (its own stdin/stdout; in proxy
//! mode that is the outer conductor) and each **component**. A chain of `n` components has
//! positions `0..=n+1`:
//!
//! | position | who | connection | how messages to it travel |
//! |---|---|---|---|
//! | `0` | the client (the editor) | the editor's | plain |
//! | `1..=n` | component `k` | component `k`'s | plain from its client side, wrapped in `_proxy/successor/*` from its successor side |
//! | `n+1` | the successor (proxy mode only) | the editor's | wrapped |
//!
//! A message travels **down** (toward the agent: position `p` to `p+1`) or **up** (toward the
//! editor: `p` to `p-1`). What arrives tells which: a plain message from the editor goes down
//! from `0`; a wrapped one (proxy mode) goes up from `n+1`; a wrapped one from a proxy goes down,
//! a plain one from any component goes up.
//!
//! Every request gets a fresh id on the connection it is sent on, and an entry in that
//! connection's table of pending requests; the response is routed back by that entry alone, so
//! peers may number their ids however they like. Per message this is one or two hash-map
//! operations, whatever the number of sessions, components or requests in flight. Payloads are
//! moved as bytes; only `initialize` (the proxy capability, §3) is rewritten, and only a
//! successor envelope is parsed (its `method`, to unwrap it).
//!
//! A driver may plug in connections it serves itself, numbered after the components', through
//! one seam, a [`Diversion`]: it says from which seat they speak and which messages go to them
//! instead of their target. The conductor plugs in its MCP bridges and translator this way;
//! `sacp::testing`'s chains plug in nothing.
//!
//! The [`RoutingTable`] is synchronous and owns no I/O: it turns one inbound message into the
//! [`Delivery`]s to make, which the conductor's event loop writes in order. One loop, one
//! routing table: no message can overtake another between the same two connections.

use std::collections::HashMap;
use std::fmt;

use crate::jsonrpc::{
    CANCEL_REQUEST_METHOD, Error, Id, Inbound, Message, Notification, RawJson, Request, Response,
    ResponseBody, code,
};
use crate::protocol::dialect::{Carried, Dialect};
use crate::protocol::envelope;
use crate::protocol::handshake;

/// A connection: [`EDITOR`] or a component's (its 1-based position).
pub type Conn = usize;

/// The editor's connection (also the successor's, in proxy mode).
pub const EDITOR: Conn = 0;

/// Which way a message travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Toward the agent.
    Down,
    /// Toward the editor.
    Up,
}

impl Dir {
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::Down => "down",
            Dir::Up => "up",
        }
    }

    fn reverse(self) -> Dir {
        match self {
            Dir::Down => Dir::Up,
            Dir::Up => Dir::Down,
        }
    }
}

/// A party of a hop, for traces and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    /// The client side: the editor, or the outer conductor in proxy mode.
    Client,
    /// Component at this 1-based position.
    Component(usize),
    /// The outer conductor as what comes after the last component (proxy mode; a trace
    /// names it `successor`, the side it is on). The next component in the chain is a
    /// component's successor; this is the chain's.
    Outer,
    /// The conductor itself (errors it answers).
    Conductor,
    /// A connection the driver serves itself (see [`Diversion`]): the conductor's MCP
    /// bridges, speaking for the agent's MCP clients, and its MCP translator.
    Bridge,
}

/// Where one message goes.
#[derive(Debug)]
pub struct Delivery {
    /// The connection to write it on.
    pub conn: Conn,
    /// The message, as it is written.
    pub message: Message,
    /// Who sent it to whom, for the trace.
    pub hop: Hop,
}

/// One hop of a message, as the trace records it.
#[derive(Debug)]
pub struct Hop {
    pub from: Node,
    pub to: Node,
    pub dir: Dir,
    /// For a response: the method of the request it answers.
    pub answers: Option<Box<str>>,
    /// For a request the conductor sends on, and its response: the connection it was sent on
    /// and the id the conductor gave it there — the same for both, so a trace can pair them.
    pub key: Option<(Conn, i64)>,
}

/// Something that ends the chain.
#[derive(Debug)]
pub enum Fatal {
    /// The component at this position was offered the proxy capability and did not accept it.
    Refused(usize),
}

/// A request sent on a connection, waiting for its response.
#[derive(Debug)]
struct Pending {
    /// Where the request came from, and with which id.
    origin: Conn,
    origin_id: Id,
    /// The hop the response makes.
    responder: Node,
    requester: Node,
    dir: Dir,
    method: Box<str>,
    /// For `initialize`: the position it was sent to, whether it offered the capability, and
    /// what a resend in another dialect needs.
    initialize: Option<Init>,
}

/// What follows an error answer to an offered `initialize`.
enum Next {
    /// Offer the capability again in this dialect.
    Offer(Dialect),
    /// The component refused the proxy capability.
    Refuse,
    /// The component speaks another dialect than the one it was declared to.
    Contradiction(Error),
}

/// An `initialize` on its way to a component.
#[derive(Debug)]
struct Init {
    position: usize,
    offered: bool,
    /// The params without the offer, for a resend under another dialect's method.
    params: Option<RawJson>,
    /// The dialects offered so far, ours first.
    tried: Vec<Dialect>,
    /// Set while finding out what a component speaks that refused its declared dialect
    /// without naming another: that dialect.
    diagnosing: Option<Dialect>,
}

/// The ids of one connection.
#[derive(Debug, Default)]
struct Ids {
    /// The last id the conductor assigned on this connection.
    last: i64,
    /// Requests the conductor sent on this connection, by the id it gave them.
    pending: HashMap<i64, Pending>,
    /// Requests this connection's peer sent, by its id: where they went, with which id.
    in_flight: HashMap<Id, (Conn, i64)>,
}

/// The routing state of a chain.
#[derive(Debug)]
pub struct RoutingTable {
    /// Component names, by position - 1.
    names: Vec<String>,
    /// Whether the conductor runs as a proxy (its `initialize` offered the capability).
    proxy_mode: bool,
    /// The ACP version the editor's connection negotiated: the first component's answer to
    /// its `initialize`.
    client_version: Option<u16>,
    /// Set by the editor's first `initialize`: the mode cannot change after it.
    mode_fixed: bool,
    /// One per connection: the editor's, then the components', then the diversion's.
    conns: Vec<Ids>,
    /// What the agent said of MCP in its `initialize` result.
    agent_mcp: Option<mcp_routes::AgentMcp>,
    /// The connections a driver serves itself (the conductor's MCP bridges and translator).
    diversion: Option<Box<dyn Diversion>>,
    /// The proxy-chain dialect of each position (`0` unused; `n + 1`: the outer conductor in
    /// proxy mode), and whether it was declared (no probe, no switch).
    dialects: Vec<(Dialect, bool)>,
    /// Why the chain ended, when it is more than [`RoutingTable::refusal`]'s default.
    refused: Option<Error>,
    /// By position: whether the component has accepted the proxy capability (then a later
    /// `initialize` it answers with an error is a request that failed, not a refusal).
    accepted: Vec<bool>,
    /// RFD MCP servers (`{"type": "acp"}`) shown to an S11 proxy as `acp:` URLs: their server
    /// ids, by URL, to give the hops after it the RFD's form back.
    rfd_servers: HashMap<String, String>,
    /// The proxies' `acp:` servers given to an RFD agent as RFD entries.
    lent_to_rfd_agent: std::collections::HashSet<String>,
    /// How many `initialize` requests the agent's connection has pending (so that
    /// [`RoutingTable::agent_initializing`] does not walk its pending requests).
    agent_inits: usize,
    /// What each position takes, for rich content (see `content_routes`).
    contents: content_routes::Contents,
}

/// How an arriving request or notification travels.
struct Route {
    from: usize,
    dir: Dir,
    wrapped: bool,
}

/// An arriving request or notification, unwrapped, with the position it goes to.
struct Resolved {
    from: usize,
    to: usize,
    dir: Dir,
    method: String,
    params: Option<RawJson>,
}

impl RoutingTable {
    /// A routing table for components with these names, in chain order.
    pub fn new(names: Vec<String>) -> RoutingTable {
        // The editor and the components ([`RoutingTable::plug`] adds more).
        let conns = (0..names.len() + 1).map(|_| Ids::default()).collect();
        let dialects = vec![(Dialect::Sacp, false); names.len() + 2];
        RoutingTable {
            names,
            dialects,
            refused: None,
            accepted: Vec::new(),
            rfd_servers: HashMap::new(),
            lent_to_rfd_agent: std::collections::HashSet::new(),
            proxy_mode: false,
            client_version: None,
            mode_fixed: false,
            conns,
            agent_mcp: None,
            diversion: None,
            agent_inits: 0,
            contents: content_routes::Contents::default(),
        }
    }

    /// Plugs in connections the driver serves itself (see [`Diversion`]), numbered from
    /// `n + 1` on. One diversion per table, plugged in before any traffic: a second one
    /// replaces the first.
    pub fn plug(&mut self, diversion: Box<dyn Diversion>) {
        self.conns.truncate(self.n() + 1);
        self.conns
            .extend((0..diversion.conns()).map(|_| Ids::default()));
        self.diversion = Some(diversion);
    }

    /// Which of the diversion's connections `conn` is, if it is one.
    pub fn diverted(&self, conn: Conn) -> Option<usize> {
        let k = conn.checked_sub(self.n() + 1)?;
        (k < self.conns.len() - self.n() - 1).then_some(k)
    }

    /// The table's connection of the diversion's connection `k`.
    fn diversion_conn(&self, k: usize) -> Conn {
        self.n() + 1 + k
    }

    /// Declares the dialect of the component at `position` (1-based): its `initialize` goes
    /// out under that dialect's method at once, and a refusal asking for another is an error
    /// naming both.
    pub fn declare(&mut self, position: usize, dialect: Dialect) {
        if let Some(slot) = self.dialects.get_mut(position) {
            *slot = (dialect, true);
        }
    }

    /// The dialect the component at `position` speaks (as far as the conductor knows: ours
    /// until its `initialize` answer says otherwise); at `n + 1`, the outer conductor's.
    pub fn dialect(&self, position: usize) -> Dialect {
        self.dialects.get(position).map_or(Dialect::Sacp, |d| d.0)
    }

    /// Whether the conductor was initialized as a proxy.
    pub fn proxy_mode(&self) -> bool {
        self.proxy_mode
    }

    /// The ACP version the chain answered its editor's `initialize` with, once it has.
    pub fn client_version(&self) -> Option<u16> {
        self.client_version
    }

    /// The name of the component at `position`.
    pub fn name(&self, position: usize) -> &str {
        self.names
            .get(position.wrapping_sub(1))
            .map_or("?", String::as_str)
    }

    /// The agent's connection (the last component's).
    pub fn agent_conn(&self) -> Conn {
        self.n()
    }

    fn n(&self) -> usize {
        self.names.len()
    }

    fn is_proxy(&self, position: usize) -> bool {
        position < self.n() || self.proxy_mode
    }

    fn conn_of(&self, position: usize) -> Conn {
        if position == 0 || position > self.n() {
            EDITOR
        } else {
            position
        }
    }

    fn node(&self, position: usize) -> Node {
        match position {
            0 => Node::Client,
            p if p > self.n() => Node::Outer,
            p => Node::Component(p),
        }
    }

    /// Whether a message arriving at `to` while travelling `dir` is wrapped: it is when it
    /// reaches a component from its successor side, or the outer conductor as our successor.
    fn wraps(&self, to: usize, dir: Dir) -> bool {
        match dir {
            Dir::Up => (1..=self.n()).contains(&to),
            Dir::Down => to > self.n(),
        }
    }

    /// Handles one inbound item from `conn`, appending what to send to `out`. Loops drive it
    /// through [`ChainCore::inbound`], the one place that does.
    pub(crate) fn inbound(
        &mut self,
        conn: Conn,
        inbound: Inbound,
        out: &mut Vec<Delivery>,
    ) -> Option<Fatal> {
        match inbound {
            Inbound::Message(Message::Request(request)) => self.request(conn, request, out),
            Inbound::Message(Message::Notification(n)) => self.notification(conn, n, out),
            Inbound::Message(Message::Response(response)) => {
                return self.response(conn, response, out);
            }
            Inbound::Invalid { id, error } => {
                tracing::warn!(peer = %self.peer(conn), %error, "invalid message");
                self.answer(conn, id, &error, out);
            }
            Inbound::BadResponse { id, error } => {
                tracing::warn!(peer = %self.peer(conn), %error, "malformed response");
                if let Some(pending) = self.take_pending(conn, &id) {
                    self.answer(pending.origin, pending.origin_id, &error, out);
                }
            }
        }
        None
    }

    /// Answers every request the editor's connection has in flight with `error` (the chain is
    /// ending).
    pub(crate) fn fail_all(&mut self, error: &Error, out: &mut Vec<Delivery>) {
        let ids: Vec<(Id, (Conn, i64))> = self.conns[EDITOR].in_flight.drain().collect();
        for (id, (target, out_id)) in ids {
            // Answered here, the request is no longer the component's to answer: a late
            // answer of its own is dropped (JSON-RPC allows one answer per request).
            self.remove_pending(target, out_id);
            self.answer(EDITOR, id, error, out);
        }
    }

    /// How many requests of the editor still wait for an answer.
    pub fn editor_requests_in_flight(&self) -> usize {
        self.conns[EDITOR].in_flight.len()
    }

    /// The error for a later `initialize` that would switch the conductor's mode.
    fn mode_switch(&self, offered: bool) -> Error {
        let (was, now) = if offered {
            ("an agent", "offers the proxy capability")
        } else {
            ("a proxy", "does not offer the proxy capability")
        };
        Error::invalid_params(format!(
            "the conductor was initialized as {was}; this `initialize` {now}, and a running \
             chain cannot change its mode"
        ))
    }

    /// The error for a component that refused the proxy capability (or the reason the chain
    /// ended at its `initialize`, once it did).
    pub fn refusal(&self, position: usize) -> Error {
        if let Some(error) = &self.refused {
            return error.clone();
        }
        Error::new(
            code::INTERNAL_ERROR,
            format!(
                "component {position} ({:?}) did not accept the proxy capability",
                self.name(position)
            ),
        )
    }

    fn peer(&self, conn: Conn) -> PeerName<'_> {
        PeerName(self, conn)
    }

    /// Where a request or notification from `conn` goes. `Err` for a successor envelope
    /// from a peer that may not send one.
    fn route(&self, conn: Conn, method: &str) -> Result<Route, Error> {
        let wrapped = envelope::is_envelope(method);
        if let Some(k) = self.diverted(conn) {
            if wrapped {
                return Err(Error::method_not_found(method));
            }
            let seat = self.diversion.as_ref().map(|d| d.seat(k));
            let (from, dir) = match seat {
                Some(Seat::BesideAgent) => (self.n().saturating_sub(1), Dir::Down),
                _ => (self.n(), Dir::Up),
            };
            return Ok(Route { from, dir, wrapped });
        }
        let (from, dir) = match (conn, wrapped) {
            (EDITOR, false) => (0, Dir::Down),
            (EDITOR, true) if self.proxy_mode => (self.n() + 1, Dir::Up),
            (EDITOR, true) => {
                return Err(Error::method_not_found(method).with_data(
                    "the conductor was not initialized as a proxy, so it has no successor",
                ));
            }
            (position, false) => (position, Dir::Up),
            (position, true) if self.is_proxy(position) => (position, Dir::Down),
            (_, true) => {
                return Err(Error::method_not_found(method)
                    .with_data("the agent (the last component) has no successor"));
            }
        };
        Ok(Route { from, dir, wrapped })
    }

    /// The position a message travelling `dir` from `from` reaches.
    fn target(&self, from: usize, dir: Dir) -> Result<usize, Error> {
        match dir {
            Dir::Up => Ok(from - 1),
            Dir::Down if from < self.n() || self.proxy_mode => Ok(from + 1),
            Dir::Down => Err(Error::internal_error(
                "the conductor has no components: it can only run as a proxy inside another \
                 conductor (its `initialize` must offer the proxy capability)",
            )),
        }
    }

    /// Where a request or notification that arrived on `conn` goes, unwrapped. On failure,
    /// the method as it arrived (for the log) and the error (boxed: failures are rare).
    fn resolve(
        &self,
        conn: Conn,
        method: String,
        params: Option<RawJson>,
    ) -> Result<Resolved, Box<(String, Error)>> {
        let route = match self.route(conn, &method) {
            Ok(route) => route,
            Err(error) => return Err(Box::new((method, error))),
        };
        let (method, params) = if route.wrapped {
            match envelope::unwrap(params.as_ref()) {
                Ok(inner) => inner,
                Err(error) => return Err(Box::new((method, error))),
            }
        } else {
            (method, params)
        };
        match self.target(route.from, route.dir) {
            Ok(to) => Ok(Resolved {
                from: route.from,
                to,
                dir: route.dir,
                method,
                params,
            }),
            Err(error) => Err(Box::new((method, error))),
        }
    }

    /// The method and params `resolved` is written with: wrapped in its receiver's envelope
    /// for `carried` when it reaches a component from its successor side, or the outer
    /// conductor as our successor.
    fn on_the_wire(
        &self,
        resolved: Resolved,
        target: Conn,
        carried: Carried,
    ) -> (String, Option<RawJson>) {
        let Resolved {
            to,
            dir,
            method,
            params,
            ..
        } = resolved;
        // What a diversion takes instead of `to` is never wrapped.
        if self.wraps(to, dir) && target == self.conn_of(to) {
            let wrapped = envelope::wrap_owned(method, params);
            (self.dialect(to).envelope(carried).to_owned(), Some(wrapped))
        } else {
            (method, params)
        }
    }

    /// Puts an `_mcp/*` message in the form of the hop it makes (see
    /// [`RoutingTable::mcp_for_hop`]); only `_mcp/` methods are looked at.
    fn mcp_in_form(&self, resolved: &mut Resolved, request: bool) {
        if !resolved.method.starts_with("_mcp/") {
            return;
        }
        let hop = (resolved.from, resolved.to, resolved.dir);
        if let Some((method, params)) =
            self.mcp_for_hop(hop, request, &resolved.method, resolved.params.as_ref())
        {
            resolved.method = method;
            resolved.params = params;
        }
    }

    /// The connection a resolved message is written on: its target's, or the diversion's
    /// that takes it instead.
    fn target_conn(&self, resolved: &Resolved, request: bool) -> Conn {
        let taken = self.diversion.as_ref().and_then(|d| {
            d.divert(&Passing::of(resolved, request), self)
                .map(|k| self.diversion_conn(k))
        });
        taken.unwrap_or_else(|| self.conn_of(resolved.to))
    }

    /// The hop of a message from connection `conn` to connection `target`.
    fn hop_of(&self, conn: Conn, target: Conn, resolved: &Resolved) -> Hop {
        let bridge = |c: Conn| self.diverted(c).is_some();
        Hop {
            from: if bridge(conn) {
                Node::Bridge
            } else {
                self.node(resolved.from)
            },
            to: if bridge(target) {
                Node::Bridge
            } else {
                self.node(resolved.to)
            },
            dir: resolved.dir,
            answers: None,
            key: None,
        }
    }

    fn request(&mut self, conn: Conn, request: Request, out: &mut Vec<Delivery>) {
        let Request {
            id,
            mut method,
            params,
        } = request;
        if conn == EDITOR && id == Id::Null && self.client_version.is_some_and(|v| v >= 2) {
            // ACP v2 forbids `id: null`; renumbered, the hops behind could not tell.
            let error = Error::invalid_request("ACP v2 forbids `id: null`");
            tracing::warn!(%error, "refused a request");
            return self.answer(conn, id, &error, out);
        }
        if self.conns[conn].in_flight.contains_key(&id) {
            // Forwarding it would lose track of the first one (its answer, its cancellation).
            let error = Error::invalid_request(format!(
                "request id {id} is already in use by an unanswered request"
            ));
            tracing::warn!(peer = %self.peer(conn), %error, "refused a request");
            return self.answer(conn, id, &error, out);
        }
        // An outer conductor of another dialect initializes this one as a proxy with its own
        // method; from here on it is an `initialize` that offered the capability, and what
        // goes to the outer conductor goes in its envelopes.
        let outer = if conn == EDITOR {
            Dialect::of_init_method(&method)
        } else {
            None
        };
        if let Some(dialect) = outer {
            let outer = self.n() + 1;
            self.dialects[outer] = (dialect, true);
            method = "initialize".to_owned();
        }
        if conn == EDITOR && method == "initialize" {
            let offered = outer.is_some() || handshake::offered(params.as_ref());
            if self.mode_fixed && offered != self.proxy_mode {
                let error = self.mode_switch(offered);
                tracing::warn!(%error, "refused an initialize");
                return self.answer(conn, id, &error, out);
            }
            self.proxy_mode = offered;
            self.mode_fixed = true;
        }
        let mut resolved = match self.resolve(conn, method, params) {
            Ok(resolved) => resolved,
            Err(failed) => return self.answer(conn, id, &failed.1, out),
        };
        if resolved.dir == Dir::Down && resolved.method == "initialize" {
            self.note_client_content(resolved.from, resolved.params.as_ref());
        }
        self.adapt_content(&mut resolved);
        if resolved.dir == Dir::Down
            && let Some(params) =
                self.declarations_for(resolved.to, &resolved.method, resolved.params.as_ref())
        {
            resolved.params = Some(params);
        }
        self.mcp_in_form(&mut resolved, true);
        if let Some(error) =
            self.unserved_for_rfd_agent(resolved.to, &resolved.method, resolved.params.as_ref())
        {
            tracing::warn!("{}", error.message);
            return self.answer(conn, id, &error, out);
        }
        let (initialize, wire_method) = match self.offer(&mut resolved) {
            Ok(offered) => offered,
            Err(error) => return self.answer(conn, id, &error, out),
        };

        let target = self.target_conn(&resolved, true);
        if let (Some(k), Some(diversion)) = (self.diverted(target), &self.diversion)
            && let Some(params) = diversion.on_the_way(k, &Passing::of(&resolved, true), self)
        {
            resolved.params = Some(params);
        }
        let mut hop = self.hop_of(conn, target, &resolved);
        let out_id = self.register(conn, id, target, &hop, &resolved.method, initialize);
        hop.key = Some((target, out_id));
        let (mut method, params) = self.on_the_wire(resolved, target, Carried::Request);
        if let Some(init) = wire_method {
            init.clone_into(&mut method);
        }
        out.push(Delivery {
            conn: target,
            message: Message::Request(Request {
                id: Id::Number(out_id),
                method,
                params,
            }),
            hop,
        });
    }

    /// Notes a request from `conn` (its id there: `id`) going out on `target` under a fresh id
    /// of that connection, which it returns: the answer comes back by it alone.
    fn register(
        &mut self,
        conn: Conn,
        id: Id,
        target: Conn,
        hop: &Hop,
        method: &str,
        initialize: Option<Init>,
    ) -> i64 {
        let ids = &mut self.conns[target];
        ids.last += 1;
        let out_id = ids.last;
        let pending = Pending {
            origin: conn,
            origin_id: id.clone(),
            responder: hop.to,
            requester: hop.from,
            dir: hop.dir.reverse(),
            method: method.into(),
            initialize,
        };
        self.insert_pending(target, out_id, pending);
        self.conns[conn].in_flight.insert(id, (target, out_id));
        out_id
    }

    /// Notes a request sent on `conn` under `out_id`, awaiting its answer.
    fn insert_pending(&mut self, conn: Conn, out_id: i64, pending: Pending) {
        if conn == self.agent_conn() && pending.initialize.is_some() {
            self.agent_inits += 1;
        }
        if let Some(replaced) = self.conns[conn].pending.insert(out_id, pending) {
            self.forget_init(conn, &replaced);
        }
    }

    /// Takes the request sent on `conn` under `out_id`, answered or given up.
    fn remove_pending(&mut self, conn: Conn, out_id: i64) -> Option<Pending> {
        let pending = self.conns[conn].pending.remove(&out_id)?;
        self.forget_init(conn, &pending);
        Some(pending)
    }

    fn forget_init(&mut self, conn: Conn, pending: &Pending) {
        if conn == self.agent_conn() && pending.initialize.is_some() {
            self.agent_inits -= 1;
        }
    }

    /// An `initialize` going down the chain: the proxy capability offered to a proxy (in its
    /// dialect's method, whose name is returned), or taken out for the agent; and what the
    /// handshake must remember of it. Nothing for any other request.
    fn offer(
        &self,
        resolved: &mut Resolved,
    ) -> Result<(Option<Init>, Option<&'static str>), Error> {
        if resolved.dir != Dir::Down || resolved.method != "initialize" {
            return Ok((None, None));
        }
        let offered = resolved.to <= self.n() && self.is_proxy(resolved.to);
        let dialect = self.dialect(resolved.to);
        let plain = handshake::offer(resolved.params.as_ref(), false)?;
        resolved.params = Some(if offered && dialect == Dialect::Sacp {
            handshake::offer(Some(&plain), true)?
        } else {
            plain.clone()
        });
        let init = Init {
            position: resolved.to,
            offered,
            params: offered.then_some(plain),
            tried: vec![dialect],
            diagnosing: None,
        };
        Ok((Some(init), offered.then(|| dialect.init_method())))
    }

    fn notification(&mut self, conn: Conn, notification: Notification, out: &mut Vec<Delivery>) {
        let Notification { method, params } = notification;
        if method == CANCEL_REQUEST_METHOD {
            return self.cancel(conn, params, out);
        }
        let resolved = match self.resolve(conn, method, params) {
            Ok(resolved) => resolved,
            Err(failed) => {
                let (method, error) = *failed;
                // Notifications are never answered, not even with an error.
                tracing::warn!(peer = %self.peer(conn), %method, %error, "dropped a notification");
                return;
            }
        };
        let mut resolved = resolved;
        self.adapt_content(&mut resolved);
        self.mcp_in_form(&mut resolved, false);
        let target = self.target_conn(&resolved, false);
        let (from_k, to_k) = (self.diverted(conn), self.diverted(target));
        if (from_k.is_some() || to_k.is_some())
            && let Some(diversion) = &mut self.diversion
        {
            diversion.notified(&Passing::of(&resolved, false), from_k, to_k);
        }
        let hop = self.hop_of(conn, target, &resolved);
        let (method, params) = self.on_the_wire(resolved, target, Carried::Notification);
        out.push(Delivery {
            conn: target,
            message: Message::Notification(Notification { method, params }),
            hop,
        });
    }

    /// `$/cancel_request` is hop-local: it cancels the request that the named one caused.
    fn cancel(&mut self, conn: Conn, params: Option<RawJson>, out: &mut Vec<Delivery>) {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Cancel {
            request_id: Id,
        }
        let Some(Ok(Cancel { request_id })) = params.map(|p| p.parse::<Cancel>()) else {
            tracing::warn!(peer = %self.peer(conn), "ignored a `$/cancel_request` without a `requestId`");
            return;
        };
        let Some(&(target, out_id)) = self.conns[conn].in_flight.get(&request_id) else {
            tracing::debug!(peer = %self.peer(conn), %request_id, "cancel for a request that is not in flight");
            return;
        };
        let Some(pending) = self.conns[target].pending.get(&out_id) else {
            return;
        };
        let hop = Hop {
            from: pending.requester,
            to: pending.responder,
            dir: pending.dir.reverse(),
            answers: None,
            key: None,
        };
        let params = RawJson::to_raw(&serde_json::json!({ "requestId": out_id })).ok();
        out.push(Delivery {
            conn: target,
            message: Message::Notification(Notification {
                method: CANCEL_REQUEST_METHOD.to_owned(),
                params,
            }),
            hop,
        });
    }
}

/// A connection's peer, for logs.
struct PeerName<'a>(&'a RoutingTable, Conn);

impl fmt::Display for PeerName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            EDITOR => f.write_str("editor"),
            p => write!(f, "component {p} ({:?})", self.0.name(p)),
        }
    }
}

mod chain_core;
mod content_routes;
mod diversion;
mod histories;
pub mod life;
mod mcp_routes;
mod responses;
mod settling;
mod states;

pub use self::chain_core::ChainCore;
pub use self::content_routes::Transformed;
pub use self::diversion::{Diversion, Passing, Seat};
pub use self::mcp_routes::AgentMcp;
pub use self::settling::Settling;

#[cfg(test)]
mod life_proptests;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
