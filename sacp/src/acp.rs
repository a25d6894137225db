//! Typed ACP: the protocol's messages as Rust types, with their method and sending side.
//!
//! The types are generated from the pinned ACP schema (see [`sacp_schema`]); this module
//! re-exports ACP v1 (the version proxies and agents speak today) and implements the typed
//! message traits for every request and notification of the schema's method tables, so each
//! method string exists once — in the generated table.
//!
//! ```
//! use sacp::acp::{AcpRequest, PromptRequest, Side};
//! use sacp::jsonrpc::JsonRpcRequest;
//!
//! assert_eq!(<PromptRequest as JsonRpcRequest>::METHOD, "session/prompt");
//! assert_eq!(<PromptRequest as AcpRequest>::FROM, Side::Client);
//! ```
//!
//! Messages the tables do not name — other protocols' methods and `_`-prefixed extensions —
//! have no type here; proxies forward them untyped and unchanged.
//!
//! **The unstable surface** (feature `unstable`): the types come from ACP's unstable schema
//! instead, a strict superset of the stable one — `session/fork`, subagents
//! (`SessionUpdate::SubagentUpdate`), system prompts, session titles, archive and status,
//! providers, `auth/status`, … — with the same traits, so `#[sacp::proxy]` and
//! `#[sacp::agent]` take typed handlers for them like for any other message. Nothing stable
//! changes type; see [`sacp_schema::acp`] for the list of what is added. Without the feature
//! those messages are still forwarded, untyped and unchanged.
//!
//! **Typed is lossless.** Every request, response and notification type keeps the JSON it was
//! read from (its `origin` field, see [`Origin`]), and is written against it: a message a
//! handler passes on unchanged goes out byte for byte, and one it changed keeps every field,
//! `null` and key it did not touch — fields newer than this schema included (see
//! [`crate::jsonrpc::lossless`]). Unknown kinds of a tagged union arrive as its
//! `Other` variant, and leave as they came. A field with patch semantics (v2's updates:
//! absent leaves it, `null` clears it, a value replaces it) is a [`Patch`], which writes all
//! three.

pub use sacp_schema::{HasOrigin, Origin, Patch};

use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest, RawJson, lossless};

pub use sacp_schema::acp::v1::*;

/// ACP v2 (draft) types, with the same traits implemented (feature `unstable_protocol_v2`).
#[cfg(feature = "unstable_protocol_v2")]
pub mod v2 {
    pub use sacp_schema::acp::v2::*;
}

/// Which end of an ACP connection sends a message.
///
/// Requests like `session/prompt` come from the **client** (the editor, or the proxy in front);
/// `session/update` and `session/request_permission` come from the **agent** (or the proxy
/// behind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The editor's end: toward the client.
    Client,
    /// The agent's end: toward the successor.
    Agent,
}

impl Side {
    /// The other end.
    pub fn opposite(self) -> Side {
        match self {
            Side::Client => Side::Agent,
            Side::Agent => Side::Client,
        }
    }

    /// `"client"` or `"agent"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Agent => "agent",
        }
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An ACP request: its method, response type and the side that sends it.
pub trait AcpRequest: JsonRpcRequest {
    /// The side that sends this request.
    const FROM: Side;
}

/// An ACP notification: its method and the side that sends it.
pub trait AcpNotification: JsonRpcNotification {
    /// The side that sends this notification.
    const FROM: Side;
}

/// The side that sends a message, from the schema's receiver.
macro_rules! sender {
    (Agent) => {
        Side::Client
    };
    (Client) => {
        Side::Agent
    };
}

macro_rules! impl_requests {
    ($(($params:ty, $response:ty, $method:literal, $receiver:ident),)*) => {$(
        impl_requests!(@typed $params, $response);
        impl_requests!(@side $params, $receiver);
    )*};
    (@typed $params:ty, $response:ty) => {
        impl JsonRpcRequest for $params {
            const METHOD: &'static str = <$params>::METHOD;
            type Response = $response;

            fn read(params: Option<RawJson>) -> crate::Result<Self> {
                lossless::read_params(params)
            }

            fn write(&self) -> crate::Result<RawJson> {
                lossless::write(self)
            }

            fn read_response(result: RawJson) -> crate::Result<$response> {
                lossless::read_result(result)
            }

            fn write_response(response: &$response) -> crate::Result<RawJson> {
                lossless::write(response)
            }
        }
    };
    // The RFD's `proxy/*` methods (unstable schema) pass between a proxy and its conductor,
    // not between a client and an agent: typed, with no sending side. The proxy runtime
    // speaks them itself (`crate::protocol::dialect`).
    (@side $params:ty, Protocol) => {};
    (@side $params:ty, $receiver:ident) => {
        impl AcpRequest for $params {
            const FROM: Side = sender!($receiver);
        }
    };
}

macro_rules! impl_notifications {
    ($(($params:ty, $method:literal, $receiver:ident),)*) => {$(
        impl_notifications!(@one $params, $receiver);
    )*};
    // `$/cancel_request` is handled by every connection itself, and `proxy/successor`
    // (unstable schema) passes between a proxy and its conductor: no sending side.
    (@one $params:ty, Protocol) => {
        impl JsonRpcNotification for $params {
            const METHOD: &'static str = <$params>::METHOD;
        }
    };
    (@one $params:ty, $receiver:ident) => {
        impl JsonRpcNotification for $params {
            const METHOD: &'static str = <$params>::METHOD;

            fn read(params: Option<RawJson>) -> crate::Result<Self> {
                lossless::read_params(params)
            }

            fn write(&self) -> crate::Result<RawJson> {
                lossless::write(self)
            }
        }
        impl AcpNotification for $params {
            const FROM: Side = sender!($receiver);
        }
    };
}

sacp_schema::for_each_acp_v1_request!(impl_requests);
sacp_schema::for_each_acp_v1_notification!(impl_notifications);
#[cfg(feature = "unstable_protocol_v2")]
sacp_schema::for_each_acp_v2_request!(impl_requests);
#[cfg(feature = "unstable_protocol_v2")]
sacp_schema::for_each_acp_v2_notification!(impl_notifications);

#[cfg(test)]
mod tests {
    use super::*;
    use sacp_schema::table::AcpSide;

    fn side_of(receiver: AcpSide) -> Side {
        match receiver {
            AcpSide::Agent => Side::Client,
            AcpSide::Client => Side::Agent,
            AcpSide::Protocol => unreachable!("no protocol-level requests"),
        }
    }

    #[test]
    fn traits_agree_with_the_table() {
        let table = sacp_schema::acp::v1::methods::REQUESTS;
        let find = |m: &str| table.iter().find(|e| e.method == m).unwrap();
        assert_eq!(<PromptRequest as JsonRpcRequest>::METHOD, "session/prompt");
        assert_eq!(
            <PromptRequest as AcpRequest>::FROM,
            side_of(find("session/prompt").receiver)
        );
        assert_eq!(
            <RequestPermissionRequest as AcpRequest>::FROM,
            side_of(find("session/request_permission").receiver)
        );
        assert_eq!(<SessionNotification as AcpNotification>::FROM, Side::Agent);
        assert_eq!(<CancelNotification as AcpNotification>::FROM, Side::Client);
        assert_eq!(
            <CancelRequestNotification as JsonRpcNotification>::METHOD,
            "$/cancel_request"
        );
        #[cfg(feature = "unstable_protocol_v2")]
        assert_eq!(
            <v2::PromptRequest as JsonRpcRequest>::METHOD,
            "session/prompt"
        );
    }
}
