//! Method tables, generated from the same schemas in the same pass as the types.
//!
//! ACP: every definition with `x-method` is a request's params (`…Request`), its response
//! (`…Response`) or a notification's params (`…Notification`); `x-side` says who receives it.
//! MCP: every request and notification definition pins `method` to a constant; membership in
//! `ClientRequest`/`ServerRequest` (and the notification unions) says who receives it; a
//! request `XRequest` is answered by `XResult` (or `EmptyResult`).
//!
//! Output per module: `REQUESTS` and `NOTIFICATIONS` tables, a `METHOD` constant on each message
//! type, and `for_each_*` macros that hand the whole table to a callback macro, so that the
//! `sacp` crate implements its typed-message traits from this one source.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::Value;

use crate::emit_unions::ident;
use crate::passes::{Defs, const_str, ref_name};

/// One request of a table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RequestRow {
    pub(crate) method: String,
    /// The definition that carries the method (ACP: the params; MCP: the request envelope).
    pub(crate) message: String,
    /// The type of the `params` member.
    pub(crate) params: String,
    pub(crate) response: String,
    pub(crate) receiver: String,
}

/// One notification of a table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NotificationRow {
    pub(crate) method: String,
    pub(crate) message: String,
    pub(crate) params: String,
    pub(crate) receiver: String,
}

#[derive(Debug, Default)]
pub(crate) struct Tables {
    pub(crate) requests: Vec<RequestRow>,
    pub(crate) notifications: Vec<NotificationRow>,
}

/// Every `(x-method, definition)` of an ACP schema.
pub(crate) fn acp_methods(defs: &Defs) -> Vec<(String, String)> {
    defs.iter()
        .filter_map(|(name, d)| Some((d.get("x-method")?.as_str()?.to_owned(), name.clone())))
        .collect()
}

pub(crate) fn acp_tables(defs: &Defs) -> Result<Tables, String> {
    let mut t = Tables::default();
    let side = |d: &Value| -> Result<String, String> {
        let side = d
            .get("x-side")
            .and_then(Value::as_str)
            .unwrap_or("protocol");
        match side {
            "agent" => Ok("Agent".into()),
            "client" => Ok("Client".into()),
            "protocol" => Ok("Protocol".into()),
            // Between a proxy and its conductor (`proxy/*`, unstable schema): neither the
            // client's nor the agent's, like `$/cancel_request`. A variant of its own would
            // make the feature `unstable` break exhaustive matches on `AcpSide`.
            "proxy" => Ok("Protocol".into()),
            other => Err(format!("unknown x-side {other:?}")),
        }
    };
    for (method, name) in acp_methods(defs) {
        let def = &defs[&name];
        if let Some(stem) = name.strip_suffix("Request") {
            let response = format!("{stem}Response");
            if !defs.contains_key(&response) {
                return Err(format!(
                    "request {name} ({method}) has no {response} definition"
                ));
            }
            t.requests.push(RequestRow {
                method,
                message: name.clone(),
                params: name.clone(),
                response,
                receiver: side(def)?,
            });
        } else if name.ends_with("Notification") {
            t.notifications.push(NotificationRow {
                method,
                message: name.clone(),
                params: name.clone(),
                receiver: side(def)?,
            });
        } else if !name.ends_with("Response") {
            return Err(format!(
                "definition {name} has x-method {method:?} but is not a request, response or notification"
            ));
        }
    }
    t.requests.sort_by(|a, b| a.method.cmp(&b.method));
    t.notifications.sort_by(|a, b| a.method.cmp(&b.method));
    Ok(t)
}

pub(crate) fn mcp_tables(defs: &Defs) -> Result<Tables, String> {
    let members = |union: &str| -> Vec<String> {
        defs.get(union)
            .and_then(|u| u.get("anyOf"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.get("$ref")?.as_str().map(|r| ref_name(r).to_owned()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let receiver =
        |client_sends: &[String], server_sends: &[String], name: &str| -> Option<String> {
            match (
                client_sends.iter().any(|x| x == name),
                server_sends.iter().any(|x| x == name),
            ) {
                (true, true) => Some("Both".into()),
                (true, false) => Some("Server".into()),
                (false, true) => Some("Client".into()),
                (false, false) => None,
            }
        };
    let (client_req, server_req) = (members("ClientRequest"), members("ServerRequest"));
    let (client_not, server_not) = (members("ClientNotification"), members("ServerNotification"));
    let mut t = Tables::default();
    for (name, def) in defs {
        let Some(method) = def
            .get("properties")
            .and_then(|p| p.get("method"))
            .and_then(const_str)
        else {
            continue;
        };
        let params = match def.get("properties").and_then(|p| p.get("params")) {
            Some(p) => match p.get("$ref").and_then(Value::as_str) {
                Some(r) => ref_name(r).to_owned(),
                // typify names an inline property type `{Type}{Property}`.
                None => format!("{name}Params"),
            },
            None => return Err(format!("{name} ({method}) has no params")),
        };
        if let Some(stem) = name.strip_suffix("Request") {
            let response = [format!("{stem}Result"), "EmptyResult".into()]
                .into_iter()
                .find(|r| defs.contains_key(r))
                .ok_or_else(|| format!("request {name} has no result definition"))?;
            let receiver = receiver(&client_req, &server_req, name)
                .ok_or_else(|| format!("request {name} is sent by nobody"))?;
            t.requests.push(RequestRow {
                method: method.to_owned(),
                message: name.clone(),
                params,
                response,
                receiver,
            });
        } else if name.ends_with("Notification") {
            let receiver = receiver(&client_not, &server_not, name)
                .ok_or_else(|| format!("notification {name} is sent by nobody"))?;
            t.notifications.push(NotificationRow {
                method: method.to_owned(),
                message: name.clone(),
                params,
                receiver,
            });
        }
    }
    t.requests.sort_by(|a, b| a.method.cmp(&b.method));
    t.notifications.sort_by(|a, b| a.method.cmp(&b.method));
    Ok(t)
}

/// Renders the tables for the module at `module` (e.g. `acp::v1`); `side` is the side enum's
/// path below `crate::table`, `macro_stem` names the `for_each_*` macros.
pub(crate) fn render(
    t: &Tables,
    module: &str,
    side: &str,
    macro_stem: &str,
    protocol: &str,
) -> TokenStream {
    let side = format_ident!("{side}");
    let module_path: syn::Path = syn::parse_str(&format!("crate::{module}")).expect("module path");
    let dollar_path: TokenStream = format!("$crate::{module}").parse().expect("macro path");
    let req_rows = t.requests.iter().map(|r| {
        let (method, params, response, receiver) = (&r.method, &r.params, &r.response, format_ident!("{}", r.receiver));
        quote! { RequestEntry { method: #method, params_type: #params, response_type: #response, receiver: #side::#receiver }, }
    });
    let not_rows = t.notifications.iter().map(|n| {
        let (method, params, receiver) = (&n.method, &n.params, format_ident!("{}", n.receiver));
        quote! { NotificationEntry { method: #method, params_type: #params, receiver: #side::#receiver }, }
    });
    let consts = t
        .requests
        .iter()
        .map(|r| (&r.message, &r.method))
        .chain(t.notifications.iter().map(|n| (&n.message, &n.method)))
        .map(|(ty, method)| {
            let ty = ident(ty);
            let doc = format!(" The JSON-RPC method of this message: `{method}`.");
            quote! { impl #module_path::#ty { #[doc = #doc] pub const METHOD: &'static str = #method; } }
        });
    let req_macro_rows = t.requests.iter().map(|r| {
        let (method, params, response, receiver) = (
            &r.method,
            ident(&r.params),
            ident(&r.response),
            format_ident!("{}", r.receiver),
        );
        quote! { (#dollar_path::#params, #dollar_path::#response, #method, #receiver) }
    });
    let not_macro_rows = t.notifications.iter().map(|n| {
        let (method, params, receiver) =
            (&n.method, ident(&n.params), format_ident!("{}", n.receiver));
        quote! { (#dollar_path::#params, #method, #receiver) }
    });
    let req_macro = format_ident!("for_each_{macro_stem}_request");
    let not_macro = format_ident!("for_each_{macro_stem}_notification");
    let req_doc = format!(
        " Calls `$callback!` once with every {protocol} request as `(params type, response type, \"method\", receiver),`."
    );
    let not_doc = format!(
        " Calls `$callback!` once with every {protocol} notification as `(params type, \"method\", receiver),`."
    );
    let (n_req, n_not) = (t.requests.len(), t.notifications.len());
    let req_table_doc = format!(" The {n_req} requests of {protocol}, sorted by method.");
    let not_table_doc = format!(" The {n_not} notifications of {protocol}, sorted by method.");
    quote! {
        use crate::table::{#side, NotificationEntry, RequestEntry};

        #[doc = #req_table_doc]
        pub const REQUESTS: &[RequestEntry<#side>] = &[ #(#req_rows)* ];

        #[doc = #not_table_doc]
        pub const NOTIFICATIONS: &[NotificationEntry<#side>] = &[ #(#not_rows)* ];

        #(#consts)*

        #[doc = #req_doc]
        #[macro_export]
        macro_rules! #req_macro {
            ($callback:ident) => { $callback! { #(#req_macro_rows,)* } };
        }

        #[doc = #not_doc]
        #[macro_export]
        macro_rules! #not_macro {
            ($callback:ident) => { $callback! { #(#not_macro_rows,)* } };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn acp_requests_pair_with_responses_and_keep_their_side() {
        let d = json!({
            "PromptRequest": {"x-method": "session/prompt", "x-side": "agent"},
            "PromptResponse": {"x-method": "session/prompt", "x-side": "agent"},
            "SessionNotification": {"x-method": "session/update", "x-side": "client"},
            "CancelRequestNotification": {"x-method": "$/cancel_request", "x-side": "protocol"}});
        let t = acp_tables(d.as_object().unwrap()).unwrap();
        assert_eq!(
            t.requests,
            vec![RequestRow {
                method: "session/prompt".into(),
                message: "PromptRequest".into(),
                params: "PromptRequest".into(),
                response: "PromptResponse".into(),
                receiver: "Agent".into()
            }]
        );
        assert_eq!(
            t.notifications
                .iter()
                .map(|n| n.receiver.as_str())
                .collect::<Vec<_>>(),
            ["Protocol", "Client"]
        );
    }

    #[test]
    fn acp_request_without_response_is_an_error() {
        let d = json!({"XRequest": {"x-method": "x", "x-side": "agent"}});
        assert!(
            acp_tables(d.as_object().unwrap())
                .unwrap_err()
                .contains("XResponse")
        );
    }

    #[test]
    fn mcp_sides_come_from_the_sender_unions() {
        let d = json!({
            "PingRequest": {"properties": {"method": {"const": "ping"}, "params": {"$ref": "#/$defs/RequestParams"}}},
            "ListToolsRequest": {"properties": {"method": {"const": "tools/list"}, "params": {"$ref": "#/$defs/PaginatedRequestParams"}}},
            "ListToolsResult": {}, "EmptyResult": {},
            "ClientRequest": {"anyOf": [{"$ref": "#/$defs/PingRequest"}, {"$ref": "#/$defs/ListToolsRequest"}]},
            "ServerRequest": {"anyOf": [{"$ref": "#/$defs/PingRequest"}]}});
        let t = mcp_tables(d.as_object().unwrap()).unwrap();
        let rows: Vec<_> = t
            .requests
            .iter()
            .map(|r| {
                (
                    r.method.as_str(),
                    r.params.as_str(),
                    r.response.as_str(),
                    r.receiver.as_str(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("ping", "RequestParams", "EmptyResult", "Both"),
                (
                    "tools/list",
                    "PaginatedRequestParams",
                    "ListToolsResult",
                    "Server"
                )
            ]
        );
    }
}
