//! Who a client is to the other clients of a session, and what it may do with it: a
//! **controller** prompts, cancels and answers the agent's requests; an **observer** receives
//! everything and changes nothing (see `attach.rs` for how a client attaches as one).

use sacp::jsonrpc::Error;
use serde::Deserialize;
use serde_json::{Map, Value};

/// What a client may do with a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Prompts, cancels, answers the agent's requests.
    Controller,
    /// Receives everything, changes nothing.
    Observer,
}

impl Role {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Role::Controller => "controller",
            Role::Observer => "observer",
        }
    }

    pub(crate) fn parse(name: &str) -> Result<Role, Error> {
        match name {
            "controller" => Ok(Role::Controller),
            "observer" => Ok(Role::Observer),
            other => Err(Error::invalid_params(format!(
                "unknown role {other:?}: \"controller\" or \"observer\""
            ))),
        }
    }
}

/// Who a client is to the other clients of a session.
#[derive(Debug, Clone)]
pub(crate) struct Who {
    /// Its id: the one it chose, else its connection's.
    pub(crate) id: String,
    /// Its connection's id.
    pub(crate) connection: String,
    /// Its `clientInfo` (`name`, `version`, …), as it gave it.
    pub(crate) info: Option<Value>,
    pub(crate) role: Role,
}

impl Who {
    pub(crate) fn is_observer(&self) -> bool {
        self.role == Role::Observer
    }

    /// `{clientId, name?, version?, role}`, as `connectedClients` lists it.
    pub(crate) fn describe(&self) -> Value {
        let mut out = Map::new();
        out.insert("clientId".into(), Value::String(self.id.clone()));
        if let Some(info) = self.info.as_ref().and_then(Value::as_object) {
            for key in ["name", "version"] {
                if let Some(v) = info.get(key) {
                    out.insert(key.into(), v.clone());
                }
            }
        }
        out.insert("role".into(), Value::String(self.role.name().into()));
        Value::Object(out)
    }
}

/// What an attaching client is given of the session's past.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HistoryPolicy {
    /// Everything the record holds.
    Full,
    /// The agent's requests still waiting for an answer.
    PendingOnly,
    /// Nothing: the live stream only.
    None,
}

impl HistoryPolicy {
    pub(crate) fn name(self) -> &'static str {
        match self {
            HistoryPolicy::Full => "full",
            HistoryPolicy::PendingOnly => "pending_only",
            HistoryPolicy::None => "none",
        }
    }
}
