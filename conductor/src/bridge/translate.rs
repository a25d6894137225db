//! The MCP translator: MCP over ACP between a caller and a provider that speak different forms
//! of it (the RFD's `mcp/*` or ours `_mcp/*`, see [`sacp::protocol::dialect`]). It is one more
//! connection of the routing table, the [`TRANSLATOR`](super::diversion::TRANSLATOR) of the
//! conductor's diversion (which says what comes to it), and reaches providers through the bridges' [`Hub`] (as the agent, up the chain).
//!
//! **A stateless caller in front of a connection provider.** An RFD agent's `mcp/message` for
//! a server that went up the whole chain unserved (an S11 proxy's, or an editor's `acp:`
//! server) comes here. The translator opens one MCP connection per server, performs the MCP
//! `initialize` the stateless caller never sends (2025-11-25), and carries each request over
//! it: the answer as `{"result"}` (with the `resultType` of 2026-07-28) or `{"error"}`;
//! `server/discover` answered from the `initialize` result; the provider's notifications about
//! a request (by its related id or progress token) sent to the agent as `mcp/message`
//! notifications with the caller's `requestId`; a request the caller cancels cancelled with
//! `notifications/cancelled`. A stateless caller takes no requests: a server's own (sampling,
//! roots) are answered with an error, `ping` with `{}`. A request of another revision than
//! 2026-07-28 gets the inner `-32022`.
//!
//! **A connection caller in front of a stateless provider.** The agent's (or the bridges')
//! `_mcp/connect` for an RFD server (`{"type": "acp"}`, shown to them as an `acp:` URL) and the
//! `_mcp/*` on the connection it opens come here. MCP `initialize` is answered from the
//! server's `server/discover`; every other request goes out as `mcp/message` with the RFD's
//! `_meta` keys (the revision, and the client's capabilities and info from its `initialize`);
//! `{"error"}` comes back as the JSON-RPC error, an `input_required` result (which a 2025-11-25
//! client cannot take) as an error saying so; the provider's notifications about a request
//! come back as `_mcp/notification`; `notifications/cancelled` cancels the `mcp/message`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use sacp::jsonrpc::{
    self, Connection, Error, Id, Message, Notification, RawJson, Request, Response,
};
use sacp::protocol::mcp::{
    self, CONNECT, ConnectResult, DISCONNECT, MessageParams, NOTIFICATION, REQUEST, RFD_MESSAGE,
    RfdAnswer, RfdMessage,
};
use serde_json::{Map, Value};
use tokio::sync::{OnceCell, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::hub::{Hub, ToClient};
use crate::lock::lock;

/// The MCP revision the translator speaks to connection-oriented peers.
const CONNECTED_REVISION: &str = mcp::PROTOCOL_VERSIONS[0];

/// The running translator: its connection to the routing table, and what the bridges tell it.
#[derive(Debug)]
pub(crate) struct Translator {
    _conn: Connection,
    state: Arc<State>,
}

impl Translator {
    /// Closes the connections it opened to the providers of `servers` for stateless callers
    /// (the session that declared them ended): `_mcp/disconnect` to each provider, and the
    /// requests still open on them fail. A later call opens a new one.
    pub(crate) fn close_servers(&self, servers: &[String]) {
        for server in servers {
            let cell = lock(&self.state.upstreams).remove(server);
            if let Some(upstream) = cell.and_then(|cell| cell.get().cloned()) {
                lock(&upstream.waiting).clear();
                tokio::spawn(async move { upstream.link.close().await });
            }
        }
    }
}

/// Starts the translator on `transport` (the other end is the routing table's translator
/// connection); it reaches providers through `hub`.
pub(crate) fn start(transport: impl jsonrpc::Transport, hub: Hub) -> Translator {
    let state = Arc::new(State {
        hub,
        upstreams: Mutex::default(),
        downstreams: Mutex::default(),
        next: AtomicU64::new(1),
    });
    let on = |state: &Arc<State>| state.clone();
    let handler = jsonrpc::Methods::new()
        .on_raw_request(RFD_MESSAGE, {
            let state = on(&state);
            move |params, cx| {
                let state = state.clone();
                async move { state.stateless_call(params, cx).await }
            }
        })
        .on_raw_request(CONNECT, {
            let state = on(&state);
            move |params, _cx| {
                let state = state.clone();
                async move { state.open(params) }
            }
        })
        .on_raw_request(REQUEST, {
            let state = on(&state);
            move |params, cx| {
                let state = state.clone();
                async move { state.call(params, cx).await }
            }
        })
        .on_raw_notification(NOTIFICATION, {
            let state = on(&state);
            move |params, _cx| {
                let state = state.clone();
                async move {
                    state.told(params);
                    Ok(())
                }
            }
        })
        .on_raw_notification(DISCONNECT, {
            let state = on(&state);
            move |params, _cx| {
                let state = state.clone();
                async move {
                    state.close(params);
                    Ok(())
                }
            }
        });
    let conn = Connection::builder()
        .name("mcp-translator")
        .spawn(transport, handler);
    Translator { _conn: conn, state }
}

#[derive(Debug)]
struct State {
    hub: Hub,
    /// Connections to connection-oriented providers, one per server, for stateless callers.
    upstreams: Mutex<HashMap<String, Arc<OnceCell<Arc<Upstream>>>>>,
    /// Connections opened by connection-oriented callers to stateless providers.
    downstreams: Mutex<HashMap<String, Arc<Downstream>>>,
    next: AtomicU64,
}

impl State {
    fn fresh_id(&self) -> String {
        format!(
            "sacp-translator-{}",
            self.next.fetch_add(1, Ordering::Relaxed)
        )
    }
}

// ---- A stateless caller in front of a connection provider ----

/// One MCP connection to a connection-oriented provider.
#[derive(Debug)]
struct Upstream {
    server_id: String,
    link: super::hub::Link,
    answers: mpsc::Sender<ToClient>,
    /// Requests sent on the connection, by the translator's id.
    waiting: Mutex<HashMap<Id, oneshot::Sender<Response>>>,
    /// The caller's `requestId` of each open request, by the translator's id and by the
    /// request's progress token.
    callers: Mutex<HashMap<String, Value>>,
    /// The provider's `initialize` result.
    initialized: std::sync::OnceLock<Map<String, Value>>,
}

impl State {
    /// `mcp/message` from a stateless caller, for a connection-oriented provider.
    async fn stateless_call(
        self: &Arc<Self>,
        params: Option<RawJson>,
        face: Connection,
    ) -> Result<RawJson, Error> {
        let message: RfdMessage = params
            .ok_or_else(|| Error::invalid_params("mcp/message needs params"))?
            .parse()?;
        let mut inner: Map<String, Value> = match &message.params {
            Some(params) => params.parse()?,
            None => Map::new(),
        };
        let rfd = take_rfd_meta(&mut inner);
        if let Some(requested) = rfd.version.as_ref().and_then(Value::as_str)
            && requested != mcp::RFD_REVISION
        {
            let error = Error::new(mcp::UNSUPPORTED_REVISION, "Unsupported protocol version")
                .with_data(serde_json::json!({
                    "requested": requested,
                    "supported": [mcp::RFD_REVISION],
                }));
            return RawJson::to_raw(&RfdAnswer::of(Err(error)));
        }
        let upstream = self
            .upstream(&message.server_id, &face, rfd.client_info)
            .await
            .map_err(|e| {
                Error::new(
                    mcp::RFD_SERVER_UNAVAILABLE,
                    format!(
                        "MCP server {} cannot be reached over its connection: {}",
                        message.server_id, e.message
                    ),
                )
            })?;
        if message.method == "server/discover" {
            let discovered = upstream.discover();
            return RawJson::to_raw(&RfdAnswer::of(RawJson::to_raw(&discovered)));
        }
        let outcome = upstream
            .ask(
                self.fresh_id(),
                message.method,
                (!inner.is_empty()).then_some(inner),
                Some(message.request_id),
            )
            .await?;
        RawJson::to_raw(&RfdAnswer::of(outcome.map(with_result_type)))
    }

    /// The connection to `server_id`, opened and initialized on first use.
    async fn upstream(
        self: &Arc<Self>,
        server_id: &str,
        face: &Connection,
        client_info: Option<Value>,
    ) -> Result<Arc<Upstream>, Error> {
        let cell = lock(&self.upstreams)
            .entry(server_id.to_owned())
            .or_default()
            .clone();
        let opened = cell
            .get_or_try_init(|| self.open_upstream(server_id, face, client_info))
            .await;
        if opened.is_err() {
            // The next request tries again.
            lock(&self.upstreams).remove(server_id);
        }
        opened.cloned()
    }

    async fn open_upstream(
        self: &Arc<Self>,
        server_id: &str,
        face: &Connection,
        client_info: Option<Value>,
    ) -> Result<Arc<Upstream>, Error> {
        let (link, from_owner) = self.hub.connect(server_id, None).await?;
        let upstream = Arc::new(Upstream {
            server_id: server_id.to_owned(),
            answers: link.to_client(),
            link,
            waiting: Mutex::default(),
            callers: Mutex::default(),
            initialized: std::sync::OnceLock::new(),
        });
        tokio::spawn(pump(
            Arc::downgrade(&upstream),
            from_owner,
            face.clone(),
            self.clone(),
        ));
        let client_info = client_info.unwrap_or_else(
            || serde_json::json!({"name": "sacp-conductor", "version": env!("CARGO_PKG_VERSION")}),
        );
        // A stateless caller takes no requests from the server: no client capabilities.
        let mut params = Map::new();
        params.insert("protocolVersion".into(), CONNECTED_REVISION.into());
        params.insert("capabilities".into(), Value::Object(Map::new()));
        params.insert("clientInfo".into(), client_info);
        let result = upstream
            .ask(self.fresh_id(), "initialize".to_owned(), Some(params), None)
            .await??;
        let result: Map<String, Value> = result.parse()?;
        let _ = upstream.initialized.set(result);
        upstream
            .link
            .pass_on(
                Message::Notification(Notification {
                    method: "notifications/initialized".to_owned(),
                    params: None,
                }),
                &upstream.answers,
            )
            .await;
        Ok(upstream)
    }
}

impl Upstream {
    /// Sends an MCP request on the connection; `Err` when the connection failed, `Ok` with
    /// the MCP outcome otherwise. `caller`: the stateless caller's `requestId`, which the
    /// provider's notifications about it are sent back with.
    async fn ask(
        self: &Arc<Self>,
        id: String,
        method: String,
        params: Option<Map<String, Value>>,
        caller: Option<Value>,
    ) -> Result<Result<RawJson, Error>, Error> {
        let id = Id::String(id.into());
        let token = params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get("progressToken"))
            .map(Value::to_string);
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id.clone(), tx);
        let mut keys = Vec::new();
        if let Some(caller) = caller {
            let mut callers = lock(&self.callers);
            for key in std::iter::once(related_key(&id)).chain(token.map(|t| format!("p:{t}"))) {
                callers.insert(key.clone(), caller.clone());
                keys.push(key);
            }
        }
        let mut open = OpenRequest {
            upstream: self.clone(),
            id: id.clone(),
            keys,
            answered: false,
        };
        let params = params.map(|p| RawJson::to_raw(&p)).transpose()?;
        let request = Message::Request(Request { id, method, params });
        self.link.pass_on(request, &self.answers).await;
        let answer = rx.await;
        open.answered = true;
        match answer {
            Ok(response) => Ok(response.into_result()),
            Err(_) => Err(Error::new(
                mcp::RFD_BACKEND_FAILED,
                format!(
                    "the MCP connection to server {} closed while it served the request",
                    self.server_id
                ),
            )),
        }
    }

    /// `server/discover`'s result (2026-07-28), from the provider's `initialize` result.
    fn discover(&self) -> Value {
        let init = self.initialized.get().cloned().unwrap_or_default();
        let mut result = serde_json::json!({
            "resultType": "complete",
            "supportedVersions": [mcp::RFD_REVISION],
            "capabilities": init.get("capabilities").cloned().unwrap_or_else(|| serde_json::json!({})),
        });
        if let Some(info) = init.get("serverInfo") {
            result["_meta"] = serde_json::json!({ mcp::RFD_SERVER_INFO_KEY: info });
        }
        if let Some(instructions) = init.get("instructions") {
            result["instructions"] = instructions.clone();
        }
        result
    }
}

/// The key of a request's caller by the translator's id (the `related_mcp_request_id` of the
/// owner's messages about it).
fn related_key(id: &Id) -> String {
    format!("r:{}", serde_json::to_string(id).unwrap_or_default())
}

/// A request on an upstream connection: cancelled with `notifications/cancelled` when its
/// caller goes away before the answer.
struct OpenRequest {
    upstream: Arc<Upstream>,
    id: Id,
    keys: Vec<String>,
    answered: bool,
}

impl Drop for OpenRequest {
    fn drop(&mut self) {
        {
            let mut callers = lock(&self.upstream.callers);
            for key in &self.keys {
                callers.remove(key);
            }
        }
        if self.answered || lock(&self.upstream.waiting).remove(&self.id).is_none() {
            return;
        }
        let upstream = self.upstream.clone();
        let params = serde_json::json!({"requestId": self.id, "reason": "the caller cancelled it"});
        let cancelled = Message::Notification(Notification {
            method: "notifications/cancelled".to_owned(),
            params: RawJson::to_raw(&params).ok(),
        });
        tokio::spawn(async move {
            upstream.link.pass_on(cancelled, &upstream.answers).await;
        });
    }
}

/// What a connection-oriented provider sends on an upstream connection: answers to the
/// translator's requests, notifications about a stateless caller's request (to the agent, as
/// `mcp/message`), and its own requests (which a stateless caller cannot take).
async fn pump(
    upstream: std::sync::Weak<Upstream>,
    mut from_owner: mpsc::Receiver<ToClient>,
    face: Connection,
    state: Arc<State>,
) {
    while let Some(item) = from_owner.recv().await {
        let Some(upstream) = upstream.upgrade() else {
            return;
        };
        match item.message {
            Message::Response(response) => {
                if let Some(waiting) = lock(&upstream.waiting).remove(&response.id) {
                    let _ = waiting.send(response);
                }
            }
            Message::Notification(notification) => {
                let caller = {
                    let callers = lock(&upstream.callers);
                    let related = item
                        .related
                        .as_ref()
                        .and_then(|r| serde_json::from_value::<Id>(r.clone()).ok())
                        .and_then(|id| callers.get(&related_key(&id)));
                    let by_token = || {
                        let token = notification
                            .params
                            .as_ref()?
                            .parse::<Map<String, Value>>()
                            .ok()?
                            .get("progressToken")?
                            .to_string();
                        callers.get(&format!("p:{token}"))
                    };
                    related.or_else(by_token).cloned()
                };
                let Some(request_id) = caller else {
                    tracing::debug!(
                        server = %upstream.server_id,
                        method = %notification.method,
                        "dropped an MCP notification that a stateless caller cannot take (about no request of its)"
                    );
                    continue;
                };
                let message = RfdMessage {
                    server_id: upstream.server_id.clone(),
                    request_id,
                    method: notification.method,
                    params: notification.params,
                };
                match RawJson::to_raw(&message) {
                    Ok(params) => {
                        if let Err(e) = face.notify_raw(RFD_MESSAGE, Some(params)).await {
                            tracing::debug!("cannot pass on an MCP notification: {e}");
                        }
                    }
                    Err(e) => tracing::warn!("cannot write an MCP notification: {e}"),
                }
            }
            Message::Request(request) => {
                let answer = if request.method == "ping" {
                    Response::ok(request.id, RawJson::empty_object())
                } else {
                    let error = Error::method_not_found(&request.method).with_data(
                        "the MCP client is an agent calling statelessly (ACP's RFD): it takes no \
                         requests from the server",
                    );
                    Response::error(request.id, &error)
                };
                upstream
                    .link
                    .pass_on(Message::Response(answer), &upstream.answers)
                    .await;
            }
        }
    }
    // The connection ended: the next request opens a new one.
    if let Some(upstream) = upstream.upgrade() {
        lock(&upstream.waiting).clear();
        let mut upstreams = lock(&state.upstreams);
        let current = upstreams
            .get(&upstream.server_id)
            .and_then(|cell| cell.get())
            .is_some_and(|u| Arc::ptr_eq(u, &upstream));
        if current {
            upstreams.remove(&upstream.server_id);
        }
    }
}

/// A 2025-11-25 result as 2026-07-28 has it: with `resultType`.
fn with_result_type(result: RawJson) -> RawJson {
    match result.parse::<Map<String, Value>>() {
        Ok(mut map) if !map.contains_key("resultType") => {
            map.insert("resultType".to_owned(), Value::from("complete"));
            RawJson::to_raw(&map).unwrap_or(result)
        }
        _ => result,
    }
}

/// The RFD's `_meta` keys of a request, taken out of its params.
#[derive(Debug, Default)]
struct RfdMeta {
    version: Option<Value>,
    client_info: Option<Value>,
}

fn take_rfd_meta(params: &mut Map<String, Value>) -> RfdMeta {
    let Some(Value::Object(meta)) = params.get_mut("_meta") else {
        return RfdMeta::default();
    };
    let taken = RfdMeta {
        version: meta.shift_remove(mcp::RFD_VERSION_KEY),
        client_info: meta.shift_remove(mcp::RFD_CLIENT_INFO_KEY),
    };
    meta.shift_remove(mcp::RFD_CAPABILITIES_KEY);
    if meta.is_empty() {
        params.shift_remove("_meta");
    }
    taken
}

// ---- A connection caller in front of a stateless provider ----

/// A connection a caller opened to a stateless (RFD) provider.
#[derive(Debug)]
struct Downstream {
    server_id: String,
    /// The client's capabilities and info, from its `initialize`.
    client: Mutex<(Value, Value)>,
    /// The caller's open requests, by their MCP id: cancelled by `notifications/cancelled`.
    open: Mutex<HashMap<String, CancellationToken>>,
}

impl State {
    /// `_mcp/connect` for an RFD server (the routing table added its `server_id`).
    fn open(&self, params: Option<RawJson>) -> Result<RawJson, Error> {
        #[derive(serde::Deserialize)]
        struct Connect {
            acp_url: String,
            server_id: Option<String>,
        }
        let connect: Connect = params
            .ok_or_else(|| Error::invalid_params("_mcp/connect needs params"))?
            .parse()?;
        let server_id = connect.server_id.ok_or_else(|| {
            Error::invalid_params(format!("{} is not an RFD server", connect.acp_url))
        })?;
        let connection_id = format!("sacp-rfd-{}", uuid::Uuid::new_v4());
        let client = (
            serde_json::json!({}),
            serde_json::json!({"name": "sacp-conductor", "version": env!("CARGO_PKG_VERSION")}),
        );
        lock(&self.downstreams).insert(
            connection_id.clone(),
            Arc::new(Downstream {
                server_id,
                client: Mutex::new(client),
                open: Mutex::default(),
            }),
        );
        RawJson::to_raw(&ConnectResult { connection_id })
    }

    /// `_mcp/request` on a connection to a stateless provider.
    async fn call(&self, params: Option<RawJson>, face: Connection) -> Result<RawJson, Error> {
        let message = MessageParams::parse(params.as_ref())?;
        let downstream = lock(&self.downstreams)
            .get(&message.connection_id)
            .cloned()
            .ok_or_else(|| {
                Error::invalid_params(format!(
                    "no open MCP connection {:?} (it was closed)",
                    message.connection_id
                ))
            })?;
        let mut inner: Map<String, Value> = match &message.params {
            Some(params) => params.parse()?,
            None => Map::new(),
        };
        if message.method == "initialize" {
            return self.initialize(&downstream, &message, inner, face).await;
        }
        let (capabilities, info) = lock(&downstream.client).clone();
        let meta = inner
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(mcp::RFD_VERSION_KEY.into(), mcp::RFD_REVISION.into());
            meta.insert(mcp::RFD_CAPABILITIES_KEY.into(), capabilities);
            meta.insert(mcp::RFD_CLIENT_INFO_KEY.into(), info);
        }
        let cancelled = CancellationToken::new();
        let key = message.mcp_request_id.as_ref().map(Value::to_string);
        if let Some(key) = &key {
            lock(&downstream.open).insert(key.clone(), cancelled.clone());
        }
        let outcome = tokio::select! {
            outcome = self.stateless(&downstream, &message, &message.method, inner, &face) => outcome,
            () = cancelled.cancelled() => Err(Error::request_cancelled()),
        };
        if let Some(key) = &key {
            lock(&downstream.open).remove(key);
        }
        outcome.and_then(without_result_type)
    }

    /// The caller's MCP `initialize`: answered from the provider's `server/discover`.
    async fn initialize(
        &self,
        downstream: &Downstream,
        message: &MessageParams,
        params: Map<String, Value>,
        face: Connection,
    ) -> Result<RawJson, Error> {
        let requested = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or(CONNECTED_REVISION);
        let version = if mcp::PROTOCOL_VERSIONS.contains(&requested) {
            requested.to_owned()
        } else {
            CONNECTED_REVISION.to_owned()
        };
        {
            let mut client = lock(&downstream.client);
            if let Some(capabilities) = params.get("capabilities") {
                client.0 = capabilities.clone();
            }
            if let Some(info) = params.get("clientInfo") {
                client.1 = info.clone();
            }
        }
        let (capabilities, info) = lock(&downstream.client).clone();
        let mut meta = Map::new();
        meta.insert(mcp::RFD_VERSION_KEY.into(), mcp::RFD_REVISION.into());
        meta.insert(mcp::RFD_CAPABILITIES_KEY.into(), capabilities);
        meta.insert(mcp::RFD_CLIENT_INFO_KEY.into(), info);
        let mut discover = Map::new();
        discover.insert("_meta".into(), Value::Object(meta));
        let discovered = self
            .stateless(downstream, message, "server/discover", discover, &face)
            .await
            .and_then(|r| r.parse::<Map<String, Value>>());
        let discovered = match discovered {
            Ok(discovered) => discovered,
            // A provider without `server/discover` is still called: as a tool server.
            Err(e) if e.code == jsonrpc::code::METHOD_NOT_FOUND => {
                tracing::debug!(
                    server = %downstream.server_id,
                    "the RFD server has no `server/discover`: offering its tools"
                );
                let mut found = Map::new();
                found.insert("capabilities".into(), serde_json::json!({"tools": {}}));
                found
            }
            Err(e) => return Err(e),
        };
        let server_info = discovered
            .get("_meta")
            .and_then(|m| m.get(mcp::RFD_SERVER_INFO_KEY))
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"name": downstream.server_id, "version": ""}));
        let mut result = serde_json::json!({
            "protocolVersion": version,
            "capabilities": discovered.get("capabilities").cloned().unwrap_or_else(|| serde_json::json!({})),
            "serverInfo": server_info,
        });
        if let Some(instructions) = discovered.get("instructions") {
            result["instructions"] = instructions.clone();
        }
        RawJson::to_raw(&result)
    }

    /// One `mcp/message` to the provider of `downstream`: its MCP outcome; the provider's
    /// notifications about it go to the caller as `_mcp/notification` as they come.
    async fn stateless(
        &self,
        downstream: &Downstream,
        message: &MessageParams,
        method: &str,
        params: Map<String, Value>,
        face: &Connection,
    ) -> Result<RawJson, Error> {
        let request = RfdMessage {
            server_id: downstream.server_id.clone(),
            request_id: Value::String(self.fresh_id()),
            method: method.to_owned(),
            params: Some(RawJson::to_raw(&params)?),
        };
        let mut call = self.hub.call_stateless(&request)?;
        let tell = async |note: super::hub::RfdNote| {
            let params = MessageParams {
                connection_id: message.connection_id.clone(),
                method: note.0,
                params: note.1,
                mcp_request_id: None,
                related_mcp_request_id: message.mcp_request_id.clone(),
            };
            match RawJson::to_raw(&params) {
                Ok(params) => {
                    if let Err(e) = face.notify_raw(NOTIFICATION, Some(params)).await {
                        tracing::debug!("cannot pass on an MCP notification: {e}");
                    }
                }
                Err(e) => tracing::warn!("cannot write an MCP notification: {e}"),
            }
        };
        let Some(answer) = call.answer.take() else {
            return Err(Error::internal_error("an RFD call without its answer"));
        };
        let mut answer = std::pin::pin!(answer.into_future());
        let answer = loop {
            tokio::select! {
                biased;
                Some(note) = call.notes_rx.recv() => tell(note).await,
                answer = &mut answer => break answer,
            }
        };
        // What the provider sent before its answer goes before it.
        while let Ok(note) = call.notes_rx.try_recv() {
            tell(note).await;
        }
        answer
            .map_err(|e| {
                Error::new(
                    e.code,
                    format!(
                        "MCP server {} (over ACP's `mcp/message`): {}",
                        downstream.server_id, e.message
                    ),
                )
            })?
            .parse::<RfdAnswer>()?
            .into_outcome()
    }

    /// `_mcp/notification` from a caller: `notifications/cancelled` cancels its request; a
    /// stateless provider takes no other notification.
    fn told(&self, params: Option<RawJson>) {
        let Ok(message) = MessageParams::parse(params.as_ref()) else {
            return;
        };
        if message.method != "notifications/cancelled" {
            tracing::debug!(method = %message.method, "not passed on to an RFD server: it takes no notifications");
            return;
        }
        let Some(downstream) = lock(&self.downstreams).get(&message.connection_id).cloned() else {
            return;
        };
        let request = message
            .params
            .and_then(|p| p.parse::<Map<String, Value>>().ok())
            .and_then(|p| p.get("requestId").map(Value::to_string));
        if let Some(token) = request.and_then(|r| lock(&downstream.open).remove(&r)) {
            token.cancel();
        }
    }

    /// `_mcp/disconnect`: the connection's open requests are cancelled.
    fn close(&self, params: Option<RawJson>) {
        let Some(id) = mcp::connection_of(params.as_ref()) else {
            return;
        };
        if let Some(downstream) = lock(&self.downstreams).remove(&id) {
            for (_, token) in lock(&downstream.open).drain() {
                token.cancel();
            }
        }
    }
}

/// A 2026-07-28 result as a 2025-11-25 client takes it: without `resultType: "complete"`; an
/// `input_required` result cannot be taken.
fn without_result_type(result: RawJson) -> Result<RawJson, Error> {
    let Ok(mut map) = result.parse::<Map<String, Value>>() else {
        return Ok(result);
    };
    match map.get("resultType").and_then(Value::as_str) {
        None => Ok(result),
        Some("complete") => {
            map.shift_remove("resultType");
            RawJson::to_raw(&map)
        }
        Some(other) => Err(Error::internal_error(format!(
            "the MCP server answered with a `{other}` result (MCP 2026-07-28), which the agent's \
             MCP client ({CONNECTED_REVISION}) cannot take: the conductor cannot bridge it"
        ))),
    }
}

#[cfg(test)]
mod tests;
