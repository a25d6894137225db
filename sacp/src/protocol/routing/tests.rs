//! The routing table, message by message (the process-level tests run the same paths end to end).

use crate::jsonrpc::{Inbound, Message};
use serde_json::{Value, json};

use super::*;

fn parse(line: Value) -> Inbound {
    parse_text(&line.to_string())
}

pub(super) fn parse_text(line: &str) -> Inbound {
    use crate::jsonrpc::{ByteStream, MessageReader, Transport};
    let text = std::io::Cursor::new(format!("{line}\n").into_bytes());
    let (mut reader, _) = ByteStream::new(text, tokio::io::sink()).split();
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(async move { reader.read().await.unwrap().unwrap() })
}

/// Feeds `line` from `conn` and returns what goes out, as `(conn, json)`.
fn feed(table: &mut RoutingTable, conn: Conn, line: Value) -> (Vec<(Conn, Value)>, Option<Fatal>) {
    let mut out = Vec::new();
    let fatal = table.inbound(conn, parse(line), &mut out);
    let sent = out
        .into_iter()
        .map(|d| (d.conn, serde_json::from_str(&d.message.to_line()).unwrap()))
        .collect();
    (sent, fatal)
}

fn one(table: &mut RoutingTable, conn: Conn, line: Value) -> (Conn, Value) {
    let (mut sent, fatal) = feed(table, conn, line);
    assert!(fatal.is_none());
    assert_eq!(sent.len(), 1, "{sent:?}");
    sent.remove(0)
}

fn chain(n: usize) -> RoutingTable {
    RoutingTable::new((1..=n).map(|i| format!("c{i}")).collect())
}

#[test]
fn requests_go_down_wrapped_between_components_and_answers_come_back_by_our_ids() {
    let mut r = chain(2);
    let (to, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":"e-1","method":"session/prompt","params":{"sessionId":"s"}}),
    );
    assert_eq!(to, 1);
    assert_eq!(
        sent,
        json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}})
    );

    // The proxy sends it on to its successor; the agent gets it plain, with the conductor's id.
    let (to, sent) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":"p","method":"_proxy/successor/request","params":{"method":"session/prompt","params":{"sessionId":"s"},"_meta":{"hop":1}}}),
    );
    assert_eq!(to, 2);
    assert_eq!(
        sent,
        json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}})
    );

    // An update from the agent reaches the proxy wrapped, and the proxy's plain copy the editor.
    let (to, sent) = one(
        &mut r,
        2,
        json!({"jsonrpc":"2.0","method":"session/update","params":{"x":1}}),
    );
    assert_eq!(to, 1);
    assert_eq!(
        sent,
        json!({"jsonrpc":"2.0","method":"_proxy/successor/notification","params":{"method":"session/update","params":{"x":1}}})
    );
    let (to, _) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","method":"session/update","params":{"x":1}}),
    );
    assert_eq!(to, EDITOR);

    let (to, sent) = one(
        &mut r,
        2,
        json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}),
    );
    assert_eq!((to, &sent["id"]), (1, &json!("p")));
    let (to, sent) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m","data":[1]}}),
    );
    assert_eq!(to, EDITOR);
    assert_eq!(
        sent,
        json!({"jsonrpc":"2.0","id":"e-1","error":{"code":-1,"message":"m","data":[1]}})
    );

    // Answered once: a second response with that id goes nowhere.
    assert!(
        feed(&mut r, 1, json!({"jsonrpc":"2.0","id":1,"result":null}))
            .0
            .is_empty()
    );
}

#[test]
fn agent_requests_go_up_and_the_agent_has_no_successor() {
    let mut r = chain(2);
    let (to, sent) = one(
        &mut r,
        2,
        json!({"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"path":"/a"}}),
    );
    assert_eq!(to, 1);
    assert_eq!(sent["method"], "_proxy/successor/request");
    assert_eq!(
        sent["params"],
        json!({"method":"fs/read_text_file","params":{"path":"/a"}})
    );
    let (to, _) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":1,"result":{"content":"x"}}),
    );
    assert_eq!(to, 2);

    let (to, sent) = one(
        &mut r,
        2,
        json!({"jsonrpc":"2.0","id":8,"method":"_proxy/successor/request","params":{"method":"x"}}),
    );
    assert_eq!(to, 2);
    assert_eq!(sent["error"]["code"], -32601);
    assert!(feed(&mut r, 2, json!({"jsonrpc":"2.0","method":"_proxy/successor/notification","params":{"method":"x"}})).0.is_empty());

    let (to, sent) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":9,"method":"_proxy/successor/request","params":{"nomethod":1}}),
    );
    assert_eq!(to, 1);
    assert_eq!(sent["error"]["code"], -32602);
}

#[test]
fn initialize_offers_the_capability_to_proxies_only_and_hides_it_from_the_editor() {
    let mut r = chain(2);
    let (_, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"_meta":{"proxy":false,"k":1}}}),
    );
    assert_eq!(
        sent["params"],
        json!({"protocolVersion":1,"_meta":{"k":1,"proxy":true}})
    );
    let (_, sent) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":1,"method":"_proxy/successor/request","params":{"method":"initialize","params":{"protocolVersion":1,"_meta":{"k":1}}}}),
    );
    assert_eq!(sent["params"], json!({"protocolVersion":1,"_meta":{"k":1}}));
    let (to, sent) = one(
        &mut r,
        2,
        json!({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}),
    );
    // The proxy hears that its successor speaks MCP over ACP: the conductor bridges for the
    // agent (spec §4).
    assert_eq!(
        (to, &sent["result"]),
        (
            1,
            &json!({"protocolVersion":1,"agentCapabilities":{},"_meta":{"mcp_acp_transport":true}})
        )
    );
    let (to, sent) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"_meta":{"proxy":true,"x":2}}}),
    );
    assert_eq!(
        (to, &sent["result"]),
        (EDITOR, &json!({"protocolVersion":1,"_meta":{"x":2}}))
    );
    assert!(!r.proxy_mode());
}

#[test]
fn a_proxy_that_does_not_accept_fails_the_editors_initialize_by_name() {
    let mut r = chain(3);
    one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1}}),
    );
    one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":1,"method":"_proxy/successor/request","params":{"method":"initialize","params":{}}}),
    );
    let (sent, fatal) = feed(
        &mut r,
        2,
        json!({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}),
    );
    assert!(matches!(fatal, Some(Fatal::Refused(2))));
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0].0, EDITOR);
    assert_eq!(sent[0].1["id"], "init");
    assert_eq!(sent[0].1["error"]["code"], -32603);
    assert_eq!(
        sent[0].1["error"]["message"],
        "component 2 (\"c2\") did not accept the proxy capability"
    );
    assert_eq!(sent[1].0, 1);
}

#[test]
fn in_proxy_mode_the_last_component_talks_to_the_outer_conductor() {
    let mut r = chain(1);
    let (to, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"_meta":{"proxy":true}}}),
    );
    assert!(r.proxy_mode());
    assert_eq!(
        (to, &sent["params"]),
        (1, &json!({"protocolVersion":1,"_meta":{"proxy":true}}))
    );
    let (to, sent) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":1,"method":"_proxy/successor/request","params":{"method":"initialize","params":{"protocolVersion":1}}}),
    );
    assert_eq!(to, EDITOR);
    assert_eq!(
        sent,
        json!({"jsonrpc":"2.0","id":1,"method":"_proxy/successor/request","params":{"method":"initialize","params":{"protocolVersion":1}}})
    );
    let (to, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}),
    );
    assert_eq!(
        (to, &sent["result"]),
        (
            1,
            &json!({"protocolVersion":1,"_meta":{"mcp_acp_transport":true}})
        )
    );
    let (to, sent) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"_meta":{"proxy":true}}}),
    );
    assert_eq!(
        (to, &sent["result"]),
        (EDITOR, &json!({"protocolVersion":1,"_meta":{"proxy":true}}))
    );

    // From the outer conductor's successor side, to the last component, wrapped.
    let (to, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","method":"_proxy/successor/notification","params":{"method":"session/update","params":{}}}),
    );
    assert_eq!(
        (to, &sent["method"]),
        (1, &json!("_proxy/successor/notification"))
    );
}

#[test]
fn with_no_components_a_proxy_mode_conductor_is_transparent() {
    let mut r = chain(0);
    let (to, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":"a","method":"session/new","params":{}}),
    );
    assert_eq!((to, &sent["error"]["code"]), (EDITOR, &json!(-32603)));

    let (_, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":1,"_meta":{"proxy":true}}}),
    );
    assert_eq!(sent["method"], "_proxy/successor/request");
    assert_eq!(
        sent["params"],
        json!({"method":"initialize","params":{"protocolVersion":1}})
    );
    let id = sent["id"].clone();
    let (_, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":id,"result":{"protocolVersion":1}}),
    );
    assert_eq!(
        sent,
        json!({"jsonrpc":"2.0","id":"i","result":{"protocolVersion":1,"_meta":{"proxy":true}}})
    );

    let (_, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","method":"_proxy/successor/notification","params":{"method":"session/update","params":{"u":1}}}),
    );
    assert_eq!(
        sent,
        json!({"jsonrpc":"2.0","method":"session/update","params":{"u":1}})
    );
}

#[test]
fn cancellation_is_mapped_to_the_request_it_caused() {
    let mut r = chain(1);
    let (_, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":"slow","method":"session/prompt","params":{}}),
    );
    let out_id = sent["id"].clone();
    let (to, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"slow"}}),
    );
    assert_eq!(to, 1);
    assert_eq!(sent["params"], json!({"requestId": out_id}));
    assert!(
        feed(
            &mut r,
            EDITOR,
            json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"other"}})
        )
        .0
        .is_empty()
    );
}

#[test]
fn the_editor_may_not_use_successor_envelopes_outside_proxy_mode() {
    let mut r = chain(1);
    let (to, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":1,"method":"_proxy/successor/request","params":{"method":"x"}}),
    );
    assert_eq!((to, &sent["error"]["code"]), (EDITOR, &json!(-32601)));
}

#[test]
fn failing_answers_everything_the_editor_waits_for() {
    let mut r = chain(1);
    one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":1,"method":"a","params":{}}),
    );
    one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":"two","method":"b"}),
    );
    let mut out = Vec::new();
    r.fail_all(&Error::internal_error("gone"), &mut out);
    let mut ids: Vec<String> = out.iter().map(|d| d.message.to_line()).collect();
    ids.sort();
    assert_eq!(ids.len(), 2);
    assert!(ids.iter().all(|l| l.contains("gone")), "{ids:?}");
    assert!(matches!(out[0].message, Message::Response(_)));
}

#[test]
fn payloads_are_forwarded_as_the_bytes_they_arrived_as() {
    let mut r = chain(2);
    let params = r#"{ "sessionId" : "s",  "x":[1.50, 2e3, "\u00e9"] }"#;
    let mut out = Vec::new();
    let line = format!(r#"{{"jsonrpc":"2.0","method":"_ext/thing","params":{params}}}"#);
    r.inbound(2, parse_text(&line), &mut out);
    let wrapped = out.pop().unwrap().message.to_line();
    assert!(
        wrapped.ends_with(&format!(
            r#""params":{{"method":"_ext/thing","params":{params}}}}}"#
        )),
        "{wrapped}"
    );

    let line = format!(
        r#"{{"jsonrpc":"2.0","id":"p","method":"_proxy/successor/request","params":{{"params":{params},"method":"_ext/ask"}}}}"#
    );
    r.inbound(1, parse_text(&line), &mut out);
    let unwrapped = out.pop().unwrap().message.to_line();
    assert!(
        unwrapped.ends_with(&format!(r#""method":"_ext/ask","params":{params}}}"#)),
        "{unwrapped}"
    );
}

#[test]
fn a_reused_id_still_in_flight_is_refused_and_the_first_request_keeps_its_answer() {
    let mut r = chain(1);
    let prompt =
        json!({"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s"}});
    let (to, first) = one(&mut r, EDITOR, prompt.clone());
    assert_eq!(to, 1);
    let (to, refused) = one(&mut r, EDITOR, prompt);
    assert_eq!(to, EDITOR, "answered by the conductor, not forwarded");
    assert_eq!(refused["id"], 7);
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    // The first one's answer and cancellation still find their way.
    let (to, cancel) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":7}}),
    );
    assert_eq!((to, &cancel["params"]["requestId"]), (1, &first["id"]));
    let (to, answer) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":first["id"],"result":{"stopReason":"cancelled"}}),
    );
    assert_eq!((to, &answer["id"]), (EDITOR, &json!(7)));
    // Once answered, the id may be used again.
    let (to, _) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s"}}),
    );
    assert_eq!(to, 1);
}

#[test]
fn a_later_initialize_cannot_switch_the_mode() {
    for (first, later) in [(false, true), (true, false)] {
        let mut r = chain(1);
        let init = |id: u64, proxy: bool| {
            let mut params = json!({"protocolVersion": 1});
            if proxy {
                params["_meta"] = json!({"proxy": true});
            }
            json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":params})
        };
        let (to, _) = one(&mut r, EDITOR, init(1, first));
        assert_eq!(to, 1);
        let (to, refused) = one(&mut r, EDITOR, init(2, later));
        assert_eq!(to, EDITOR);
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("cannot change its mode"),
            "{refused}"
        );
        assert_eq!(r.proxy_mode(), first, "the mode stays");
        // The same mode again is just another initialize.
        let (to, _) = one(&mut r, EDITOR, init(3, first));
        assert_eq!(to, 1);
    }
}

#[test]
fn a_wrapped_message_with_scalar_params_is_refused_to_the_proxy_that_sent_it() {
    let mut r = chain(2);
    for params in [json!(-1), json!("text"), json!(true)] {
        let (to, sent) = one(
            &mut r,
            1,
            json!({"jsonrpc":"2.0","id":7,"method":"_proxy/successor/request",
                   "params":{"method":"session/prompt","params":params}}),
        );
        assert_eq!(to, 1, "answered to the proxy, never passed on: {sent}");
        assert_eq!(sent["id"], 7);
        assert_eq!(sent["error"]["code"], -32602, "{sent}");
        // A notification is dropped (notifications are never answered).
        let (sent, fatal) = feed(
            &mut r,
            1,
            json!({"jsonrpc":"2.0","method":"_proxy/successor/notification",
                   "params":{"method":"session/cancel","params":params}}),
        );
        assert!(sent.is_empty() && fatal.is_none(), "{sent:?}");
    }
    // `null` inner params go on as absent.
    let (to, sent) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","method":"_proxy/successor/notification",
               "params":{"method":"session/cancel","params":null}}),
    );
    assert_eq!(to, 2);
    assert_eq!(sent, json!({"jsonrpc":"2.0","method":"session/cancel"}));
}

#[test]
fn a_proxy_of_another_dialect_is_found_by_its_refusal_and_gets_its_own_envelopes() {
    let refusals = [
        ("_proxy/initialize", "_proxy/successor"),
        ("proxy/initialize", "proxy/successor"),
    ];
    for (init, envelope) in refusals {
        let mut r = chain(2);
        let (_, offered) = one(
            &mut r,
            EDITOR,
            json!({"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":1}}),
        );
        assert_eq!(offered["params"]["_meta"]["proxy"], true);
        // Refused the way other SDKs refuse: resent at once under its method, without the
        // offer, on the same connection, with a new id.
        let refusal = format!("proxies must be initialized with `{init}`");
        let (to, resent) = one(
            &mut r,
            1,
            json!({"jsonrpc":"2.0","id":offered["id"],"error":{"code":-32600,"message":"Invalid request","data":refusal}}),
        );
        assert_eq!(to, 1);
        assert_eq!(
            resent,
            json!({"jsonrpc":"2.0","id":2,"method":init,"params":{"protocolVersion":1}})
        );
        // It forwards `initialize` in its own envelope; the agent gets it plain.
        let (to, down) = one(
            &mut r,
            1,
            json!({"jsonrpc":"2.0","id":"u-1","method":envelope,"params":{"method":"initialize","params":{"protocolVersion":1},"meta":{"x":1}}}),
        );
        assert_eq!((to, &down["method"]), (2, &json!("initialize")));
        one(
            &mut r,
            2,
            json!({"jsonrpc":"2.0","id":down["id"],"result":{"protocolVersion":1}}),
        );
        // Its answer to its own method needs no marker: the editor gets it.
        let (to, answer) = one(
            &mut r,
            1,
            json!({"jsonrpc":"2.0","id":2,"result":{"protocolVersion":1}}),
        );
        assert_eq!((to, &answer["id"]), (EDITOR, &json!("i")));
        assert_eq!(r.dialect(1).init_method(), init);
        // What the agent sends up reaches it in its envelope, requests and notifications alike.
        let (_, up) = one(
            &mut r,
            2,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"u":1}}),
        );
        assert_eq!(
            up,
            json!({"jsonrpc":"2.0","method":envelope,"params":{"method":"session/update","params":{"u":1}}})
        );
        let (_, up) = one(
            &mut r,
            2,
            json!({"jsonrpc":"2.0","id":"a-1","method":"session/request_permission","params":{}}),
        );
        assert_eq!(up["method"], envelope);
        assert!(up["id"].is_number());
    }
}

#[test]
fn a_declared_dialect_is_offered_first_and_a_contradiction_names_both() {
    let mut r = chain(2);
    r.declare(1, crate::protocol::dialect::Dialect::Rfd);
    let (_, offered) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":1}}),
    );
    assert_eq!(offered["method"], "proxy/initialize");
    assert_eq!(offered["params"], json!({"protocolVersion":1}));
    // An S11 proxy does not know the method: ours is offered to find out what it speaks.
    let (_, probe) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":offered["id"],"error":{"code":-32601,"message":"Method not found"}}),
    );
    assert_eq!(probe["method"], "initialize");
    assert_eq!(probe["params"]["_meta"]["proxy"], true);
    let (sent, fatal) = feed(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":probe["id"],"error":{"code":-32600,"message":"Invalid request","data":"proxies must be initialized with `_proxy/initialize`"}}),
    );
    assert!(matches!(fatal, Some(Fatal::Refused(1))));
    assert_eq!(
        sent[0].1["error"]["message"],
        "component 1 (\"c1\") was declared to speak the rfd proxy dialect (`proxy/initialize`), \
         but it refused that and speaks the s11 dialect (`_proxy/initialize`)"
    );
}

#[test]
fn under_an_outer_conductor_of_another_dialect_the_conductor_is_its_proxy() {
    let mut r = chain(1);
    let (to, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":"o-1","method":"_proxy/initialize","params":{"protocolVersion":1}}),
    );
    assert!(r.proxy_mode());
    assert_eq!((to, &sent["method"]), (1, &json!("initialize")));
    assert_eq!(sent["params"]["_meta"]["proxy"], true);
    // The last component's successor is the outer conductor: in its envelope.
    let (to, sent) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":1,"method":"_proxy/successor/request","params":{"method":"initialize","params":{"protocolVersion":1}}}),
    );
    assert_eq!(to, EDITOR);
    assert_eq!(sent["method"], "_proxy/successor");
    one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":sent["id"],"result":{"protocolVersion":1}}),
    );
    let (to, answer) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"_meta":{"proxy":true}}}),
    );
    // The outer conductor gets no marker it does not expect.
    assert_eq!(
        (to, answer),
        (
            EDITOR,
            json!({"jsonrpc":"2.0","id":"o-1","result":{"protocolVersion":1}})
        )
    );
}

/// An agent-only chain whose agent answered `initialize` with `result`.
fn initialized_agent(result: Value) -> RoutingTable {
    let mut r = chain(1);
    one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}),
    );
    one(&mut r, 1, json!({"jsonrpc":"2.0","id":1,"result":result}));
    r
}

/// With nothing plugged in to translate (as in `sacp::testing`), an RFD agent's call for a
/// server lent to it that no proxy served gets the binding error. (The conductor's
/// translator, which takes it instead, is tested with the conductor's diversion.)
#[test]
fn an_rfd_agents_unserved_call_without_a_translator_gets_a_binding_error() {
    let mut r = initialized_agent(
        json!({"protocolVersion":1,"agentCapabilities":{"mcpCapabilities":{"acp":true}}}),
    );
    // An `acp:` server of ours (here the editor's) is lent to the agent as an RFD entry.
    let (_, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[
            {"type":"http","name":"ed","url":"acp:u1","headers":[]}]}}),
    );
    assert_eq!(
        sent["params"]["mcpServers"][0],
        json!({"type":"acp","name":"ed","serverId":"acp:u1"})
    );
    let (to, sent) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":9,"method":"mcp/message","params":{"serverId":"acp:u1","requestId":1,"method":"tools/list"}}),
    );
    assert_eq!((to, &sent["error"]["code"]), (1, &json!(-33001)));
}

/// What `ChainCore` delivers after `line` arrives on `conn`, as `(conn, method or id)`.
fn through_core(core: &mut ChainCore, conn: Conn, line: Value) -> Vec<(Conn, Value)> {
    core.inbound(conn, [parse(line)], std::time::Instant::now());
    let mut out = Vec::new();
    core.poll_deliveries(&mut out);
    out.into_iter()
        .map(|d| {
            let sent: Value = serde_json::from_str(&d.message.to_line()).unwrap();
            let what = sent.get("method").cloned().unwrap_or(sent["id"].clone());
            (d.conn, what)
        })
        .collect()
}

/// A session setup sent while the agent's `initialize` is unanswered waits for that answer
/// (what the agent says of MCP decides how its servers are given), with what follows it to
/// the agent, in order; a second `initialize` holds them again, and an answer to the first
/// alone does not let them go.
#[test]
fn a_session_setup_waits_for_the_agents_initialize_answer() {
    let mut core = ChainCore::new(
        chain(1),
        vec![life::Sign::OutputAndExit],
        life::Timing::default(),
    );
    let init = |id: u64| json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{"protocolVersion":1}});
    let new = |id: u64| json!({"jsonrpc":"2.0","id":id,"method":"session/new","params":{"cwd":"/","mcpServers":[]}});
    let prompt =
        json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s"}});
    assert_eq!(
        through_core(&mut core, EDITOR, init(1)),
        [(1, json!("initialize"))]
    );
    assert!(core.table().agent_initializing());
    assert!(through_core(&mut core, EDITOR, new(2)).is_empty());
    assert!(through_core(&mut core, EDITOR, prompt).is_empty());
    let answered = through_core(
        &mut core,
        1,
        json!({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}),
    );
    // Order matters between two connections' messages only within each connection.
    let to = |sent: &[(Conn, Value)], conn: Conn| -> Vec<Value> {
        sent.iter()
            .filter(|(c, _)| *c == conn)
            .map(|(_, w)| w.clone())
            .collect()
    };
    assert_eq!(to(&answered, EDITOR), [json!(1)]);
    assert_eq!(
        to(&answered, 1),
        [json!("session/new"), json!("session/prompt")]
    );
    assert!(!core.table().agent_initializing());

    // Two in flight (the agent's ids 4 and 5): the answer to one leaves the other pending, and
    // an error answers it as well as a result.
    through_core(&mut core, EDITOR, init(4));
    through_core(&mut core, EDITOR, init(5));
    through_core(
        &mut core,
        1,
        json!({"jsonrpc":"2.0","id":4,"result":{"protocolVersion":1}}),
    );
    assert!(core.table().agent_initializing());
    assert!(through_core(&mut core, EDITOR, new(6)).is_empty());
    let answered = through_core(
        &mut core,
        1,
        json!({"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"no"}}),
    );
    assert_eq!(to(&answered, EDITOR), [json!(5)]);
    assert_eq!(to(&answered, 1), [json!("session/new")]);
    assert!(!core.table().agent_initializing());
}
