//! Many clients on one session: `session/attach` and `session/detach` (the wire of the
//! multi-client attach proposal for ACP), the roles a client attaches with, and who a client
//! is to the others.
//!
//! - `session/attach` `{sessionId, clientId?, clientInfo?, role?, historyPolicy?, _meta?}` is
//!   answered by the layer, never passed on: `{sessionId, clientId, role, historyPolicy,
//!   history?, connectedClients}`. `history` is what the session's record holds, in order, as
//!   `{method, params}` (`full`, the default: the updates, the prompts as `session/prompt`,
//!   the agent's requests); the agent's requests still waiting for an answer
//!   (`pending_only`), which are sent again as real requests on the attaching connection
//!   (with `full` too); nothing (`none`). Then the live stream follows, with nothing missing
//!   and nothing twice. An unknown session: `-32001`, its id in `data`.
//! - `session/detach` `{sessionId}` → `{sessionId, "status": "detached"}`: the connection gets
//!   nothing more of the session, which goes on (and ends by the detached rules once no
//!   controller is left).
//! - A client is a **controller** unless it attaches with `role: "observer"` (or
//!   `_meta.sacp.role`). An observer gets everything — the agent's permission requests and
//!   elicitations too, which it sees but cannot answer — and changes nothing: a request about
//!   the session other than `session/detach` is refused with [`OBSERVER`], a notification
//!   (`session/cancel`) is dropped, its answer to a request of the agent's is not passed on
//!   (the request waits for a controller). It is not sent the agent's `fs/*` and
//!   `terminal/*` requests at all.
//! - `fs/*` and `terminal/*` go to one controller only (a file written twice, or a command
//!   run on two machines, is not a race a first answer can undo): the one whose prompt began
//!   the turn, else the one attached longest; if it leaves before answering, the next one.
//!   Every other request of the agent's (a permission, an elicitation) goes to every attached
//!   client; the first controller's answer goes to the agent and every other copy is
//!   withdrawn with `$/cancel_request`.
//! - One turn at a time: a prompt while another attached client's turn runs is refused with
//!   [`BUSY`] (cancel it and wait for its end); one while the client's own turn runs, or a
//!   turn whose client left, waits for it (`turns.rs`). `session/cancel` from any controller
//!   cancels the running turn for all, and withdraws the prompts its client queued.

use std::sync::Arc;

use sacp::jsonrpc::{Error, RawJson, Responder};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::client::Client;
pub(crate) use super::who::{HistoryPolicy, Role, Who};
use super::{Layer, split_id};

/// `session/attach` of a session this conductor does not hold.
pub(crate) const UNKNOWN_SESSION: i64 = -32001;
/// An observer asked for something only a controller may do.
pub(crate) const OBSERVER: i64 = -32004;
/// A prompt while a turn of the session runs.
pub(crate) const BUSY: i64 = -32005;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AttachParams {
    session_id: String,
    client_id: Option<String>,
    client_info: Option<Value>,
    role: Option<String>,
    history_policy: Option<HistoryPolicy>,
    #[serde(rename = "_meta")]
    meta: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DetachParams {
    session_id: String,
}

/// What a `session/attach` asked for.
pub(crate) struct Asked {
    pub(crate) who: Who,
    pub(crate) policy: HistoryPolicy,
}

impl Asked {
    /// The layer's answer: `{sessionId, clientId, role, historyPolicy, history?,
    /// connectedClients}`.
    pub(crate) fn answer(
        &self,
        session: &str,
        history: Option<Vec<Value>>,
        connected: Vec<Value>,
    ) -> Result<RawJson, Error> {
        let mut out = Map::new();
        out.insert("sessionId".into(), Value::String(session.to_owned()));
        out.insert("clientId".into(), Value::String(self.who.id.clone()));
        out.insert("role".into(), Value::String(self.who.role.name().into()));
        out.insert(
            "historyPolicy".into(),
            Value::String(self.policy.name().into()),
        );
        if let Some(history) = history {
            out.insert("history".into(), Value::Array(history));
        }
        out.insert("connectedClients".into(), Value::Array(connected));
        RawJson::to_raw(&out)
    }
}

impl Layer {
    /// `session/attach`: see the module docs.
    pub(super) fn attach_request(
        self: &Arc<Self>,
        client: &Arc<Client>,
        params: Option<RawJson>,
        responder: Responder,
    ) {
        let asked = match parse_attach(client, params.as_ref()) {
            Ok(asked) => asked,
            Err(e) => return responder.answer_error(e),
        };
        let (id, asked) = asked;
        if let Some(session) = self.session(&id) {
            return self.join_as(client, &session, &asked, responder);
        }
        if !self.restorable(&id) {
            return responder.answer_error(self.unknown_session(&id));
        }
        // In the journal, not live here: restored as for `session/load`, then joined.
        let (layer, client) = (self.clone(), client.clone());
        tokio::spawn(async move {
            match layer.restore(&client, &id).await {
                Ok(session) => layer.join_as(&client, &session, &asked, responder),
                // Not anywhere (held by another conductor is said as such).
                Err(e)
                    if e.code == super::NOT_HERE
                        && e.data.as_ref().is_none_or(|d| d.get("heldBy").is_none()) =>
                {
                    responder.answer_error(layer.unknown_session(&id))
                }
                Err(e) => responder.answer_error(e),
            }
        });
    }

    /// `-32001` for a `session/attach` of a session that is not here, saying why when known.
    fn unknown_session(&self, id: &str) -> Error {
        let message = match self.why_ended(id) {
            Some(why) => format!("Session not found: {id} has ended here ({why})"),
            None if split_id(id).is_some() => {
                format!("Session not found: {id} is not held by this conductor")
            }
            None => format!("Session not found: {id}"),
        };
        Error::new(UNKNOWN_SESSION, message).with_data(serde_json::json!({ "sessionId": id }))
    }

    /// Attaches `client` to `session` as `asked`.
    fn join_as(
        self: &Arc<Self>,
        client: &Arc<Client>,
        session: &Arc<super::session::Session>,
        asked: &Asked,
        responder: Responder,
    ) {
        let att = match self.attachment_as(client, asked.who.clone()) {
            Ok(att) => att,
            Err(e) => return responder.answer_error(e),
        };
        let answer = |history, connected| asked.answer(&session.id, history, connected);
        if session.join(att.clone(), asked.policy, answer, responder) {
            tracing::info!(session = %session.id, client = %asked.who.id, role = ?asked.who.role, policy = ?asked.policy, "attached by session/attach");
            self.attached(client, session, &att, self.link_of(session).as_deref());
        }
    }

    /// `session/detach`: see the module docs.
    pub(super) fn detach_request(
        self: &Arc<Self>,
        client: &Arc<Client>,
        params: Option<RawJson>,
        responder: Responder,
    ) {
        let id = match params
            .as_ref()
            .map(RawJson::parse::<DetachParams>)
            .transpose()
        {
            Ok(Some(p)) => p.session_id,
            Ok(None) => return responder.answer_error(Error::invalid_params("no params")),
            Err(e) => return responder.answer_error(e),
        };
        match client.take_attachment(&id) {
            Some((session, att)) => {
                // Its answer first: nothing of the session comes after it.
                responder.answer_raw(RawJson::to_raw(
                    &serde_json::json!({"sessionId": id, "status": "detached"}),
                ));
                self.left(&session, &att);
            }
            None => responder.answer_error(Error::invalid_params(format!(
                "the session {id} is not open on this connection"
            ))),
        }
    }
}

/// The session a `session/attach` names, and what it asks.
fn parse_attach(client: &Client, params: Option<&RawJson>) -> Result<(String, Asked), Error> {
    let params = params
        .ok_or_else(|| Error::invalid_params("session/attach needs a sessionId"))?
        .parse::<AttachParams>()?;
    let role = match (&params.role, &params.meta) {
        (Some(role), _) => Role::parse(role)?,
        (None, Some(meta)) => match meta.pointer("/sacp/role").and_then(Value::as_str) {
            Some(role) => Role::parse(role)?,
            None => Role::Controller,
        },
        (None, None) => Role::Controller,
    };
    let who = Who {
        id: params.client_id.unwrap_or_else(|| client.name.clone()),
        connection: client.name.clone(),
        info: params.client_info.or_else(|| client.info()),
        role,
    };
    let policy = params.history_policy.unwrap_or(HistoryPolicy::Full);
    Ok((params.session_id, Asked { who, policy }))
}
