//! Property tests of the routing table: whatever arrives never panics it, and requests that
//! every proxy passes on, answered in any order, come back to their senders with their own ids
//! and the agent's result byte for byte — whatever ids the peers chose.

use std::collections::HashMap;

use crate::jsonrpc::{
    Id, Inbound, Message, Notification, RawJson, Request, Response, ResponseBody,
};
use crate::protocol::envelope::{self, SUCCESSOR_REQUEST};
use proptest::prelude::*;

use super::*;

fn raw(text: &str) -> RawJson {
    RawJson::from_string(text).unwrap()
}

/// An id as a peer might choose it: numbers (negative ones too) or strings.
fn id_of(choice: u64, style: u8) -> Id {
    match style % 3 {
        0 => Id::Number(choice as i64),
        1 => Id::Number(-(choice as i64) - 1),
        _ => Id::String(format!("id-{choice}-\"é").into()),
    }
}

/// A peer's message, on its way into the routing table.
fn inbound(message: Message) -> Inbound {
    Inbound::Message(message)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn requests_through_every_proxy_come_back_with_their_own_ids(
        components in 1usize..5,
        requests in 1usize..12,
        styles in prop::collection::vec(any::<u8>(), 12),
        picks in prop::collection::vec(any::<usize>(), 400),
    ) {
        let mut table = RoutingTable::new((1..=components).map(|i| format!("c{i}")).collect());
        let mut out = Vec::new();
        // Deliveries not yet handled by the component they reach.
        let mut inbox: Vec<(Conn, Message)> = Vec::new();
        // What each component owes: its own request's id -> the id it must answer.
        let mut owed: Vec<HashMap<Id, Id>> = vec![HashMap::new(); components + 1];
        let mut next_own = 0u64;
        let mut answers: HashMap<Id, RawJson> = HashMap::new();
        let mut expected: HashMap<Id, RawJson> = HashMap::new();

        for (n, style) in styles.iter().take(requests).enumerate() {
            let id = id_of(n as u64, *style);
            expected.insert(id.clone(), raw(&format!(r#"{{ "marker" : {n} , "x":1.50 }}"#)));
            let params = raw(&format!(r#"{{"marker":{n}}}"#));
            table.inbound(
                EDITOR,
                inbound(Message::Request(Request { id, method: "session/prompt".into(), params: Some(params) })),
                &mut out,
            );
            for d in out.drain(..) {
                inbox.push((d.conn, d.message));
            }
        }
        let mut step = 0;
        while !inbox.is_empty() {
            let pick = picks[step % picks.len()] % inbox.len();
            step += 1;
            prop_assert!(step < 10_000, "the chain never settles");
            let (conn, message) = inbox.swap_remove(pick);
            let reply = match message {
                Message::Request(request) if conn == components => {
                    // The agent: the marker's result, spaced its own way.
                    let params: serde_json::Value = request.params.unwrap().parse().unwrap();
                    let n = params["marker"].as_u64().unwrap();
                    Message::Response(Response {
                        id: request.id,
                        body: ResponseBody::Result(raw(&format!(r#"{{ "marker" : {n} , "x":1.50 }}"#))),
                    })
                }
                Message::Request(request) => {
                    // A proxy passes it on to its successor with an id of its own.
                    next_own += 1;
                    let own = id_of(next_own, styles[(next_own as usize) % styles.len()]);
                    owed[conn].insert(own.clone(), request.id);
                    let wrapped = envelope::wrap(&request.method, request.params.as_ref());
                    Message::Request(Request { id: own, method: SUCCESSOR_REQUEST.into(), params: Some(wrapped) })
                }
                Message::Response(response) => {
                    // The successor's answer: the proxy answers its own request with it.
                    let original = owed[conn].remove(&response.id);
                    prop_assert!(original.is_some(), "component {} got an answer to no request of its own", conn);
                    Message::Response(Response { id: original.unwrap(), body: response.body })
                }
                Message::Notification(_) => continue,
            };
            table.inbound(conn, inbound(reply), &mut out);
            for d in out.drain(..) {
                if d.conn == EDITOR {
                    let Message::Response(Response { id, body: ResponseBody::Result(result) }) = d.message else {
                        return Err(TestCaseError::fail(format!("the editor got {:?}", d.message)));
                    };
                    prop_assert!(answers.insert(id, result).is_none(), "answered twice");
                } else {
                    inbox.push((d.conn, d.message));
                }
            }
        }
        prop_assert_eq!(answers, expected);
        prop_assert!(owed.iter().all(HashMap::is_empty));
        prop_assert_eq!(table.editor_requests_in_flight(), 0);
    }

    #[test]
    fn arbitrary_lines_from_any_peer_never_panic_the_routing_table(
        components in 1usize..4,
        lines in prop::collection::vec((0usize..4, "\\PC{0,80}"), 1..40),
    ) {
        let mut table = RoutingTable::new((1..=components).map(|i| format!("c{i}")).collect());
        let mut out = Vec::new();
        for (conn, line) in lines {
            let conn = conn % (components + 1);
            if line.trim().is_empty() {
                continue;
            }
            table.inbound(conn, super::tests::parse_text(&line), &mut out);
            out.clear();
        }
    }

    #[test]
    fn well_formed_messages_with_any_ids_never_panic_the_routing_table(
        components in 1usize..4,
        messages in prop::collection::vec(
            (0usize..4, any::<u8>(), any::<u64>(), any::<u8>(), prop::sample::select(vec![
                "initialize", "session/prompt", "_proxy/successor/request",
                "_proxy/successor/notification", "$/cancel_request", "_x/y",
            ])),
            1..60,
        ),
    ) {
        let mut table = RoutingTable::new((1..=components).map(|i| format!("c{i}")).collect());
        let mut out = Vec::new();
        for (conn, kind, n, style, method) in messages {
            let conn = conn % (components + 1);
            let id = id_of(n % 8, style);
            let params = match method {
                "_proxy/successor/request" | "_proxy/successor/notification" => {
                    Some(envelope::wrap("session/update", Some(&raw(r#"{"a":1}"#))))
                }
                "$/cancel_request" => Some(raw(&format!(r#"{{"requestId":{}}}"#, n % 8))),
                "initialize" => Some(raw(r#"{"protocolVersion":1,"_meta":{"proxy":true}}"#)),
                _ => Some(raw("{}")),
            };
            let message = match kind % 3 {
                0 => Message::Request(Request { id, method: method.into(), params }),
                1 => Message::Notification(Notification { method: method.into(), params }),
                _ => Message::Response(Response {
                    id,
                    body: ResponseBody::Result(raw(r#"{"_meta":{"proxy":true}}"#)),
                }),
            };
            table.inbound(conn, inbound(message), &mut out);
            out.clear();
        }
    }
}
