//! The conductor's diversion in a chain's machine, message by message (the process-level tests
//! run the same paths end to end, with real bridges and a real translator).

use std::time::Instant;

use sacp::jsonrpc::{Inbound, Message};
use sacp::protocol::routing::life::{Sign, Timing};
use sacp::protocol::routing::{ChainCore, Conn, EDITOR};
use serde_json::{Value, json};

use super::*;

/// A one-component chain with the conductor's diversion plugged in.
fn machine() -> ChainCore {
    let mut table = RoutingTable::new(vec!["agent".to_owned()]);
    table.plug(Box::new(McpDiversion::default()));
    ChainCore::new(table, vec![Sign::OutputAndExit], Timing::default())
}

/// Feeds `line` from `conn` and returns what goes out, as `(conn, json)`.
fn feed(core: &mut ChainCore, conn: Conn, line: Value) -> Vec<(Conn, Value)> {
    let message = Message::parse(line.to_string().as_bytes()).expect("a valid message");
    core.inbound(conn, [Inbound::Message(message)], Instant::now());
    let mut out = Vec::new();
    core.poll_deliveries(&mut out);
    out.into_iter()
        .map(|d| (d.conn, serde_json::from_str(&d.message.to_line()).unwrap()))
        .collect()
}

fn one(core: &mut ChainCore, conn: Conn, line: Value) -> (Conn, Value) {
    let mut sent = feed(core, conn, line);
    assert_eq!(sent.len(), 1, "{sent:?}");
    sent.remove(0)
}

/// The machine with its agent initialized with `result`.
fn initialized_agent(result: Value) -> ChainCore {
    let mut core = machine();
    one(
        &mut core,
        EDITOR,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}),
    );
    one(
        &mut core,
        1,
        json!({"jsonrpc":"2.0","id":1,"result":result}),
    );
    core
}

/// The table's connection of the diversion's connection `k`.
fn conn(core: &ChainCore, k: usize) -> Conn {
    let conn = core.table().agent_conn() + 1 + k;
    assert_eq!(core.table().diverted(conn), Some(k));
    conn
}

#[test]
fn rfd_servers_reach_an_agent_that_speaks_ours_through_the_translator() {
    let mut r = initialized_agent(json!({"protocolVersion":1,"_meta":{"mcp_acp_transport":true}}));
    let (t, b) = (conn(&r, TRANSLATOR), conn(&r, BRIDGES));
    // The editor's RFD server is an `acp:` URL to the agent.
    let (_, sent) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[
            {"type":"acp","name":"ed","serverId":"s1"}]}}),
    );
    assert_eq!(
        sent["params"]["mcpServers"][0],
        json!({"type":"http","name":"ed","url":"acp:s1","headers":[]})
    );
    // Its connection is the translator's, which learns the server id.
    let (to, sent) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":5,"method":"_mcp/connect","params":{"acp_url":"acp:s1"}}),
    );
    assert_eq!(to, t);
    assert_eq!(sent["params"], json!({"acp_url":"acp:s1","server_id":"s1"}));
    let (to, sent) = one(
        &mut r,
        t,
        json!({"jsonrpc":"2.0","id":sent["id"],"result":{"connection_id":"t1"}}),
    );
    assert_eq!((to, &sent["id"]), (1, &json!(5)));
    let (to, _) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":6,"method":"_mcp/request","params":{"connection_id":"t1","method":"tools/list"}}),
    );
    assert_eq!(to, t);
    // What the translator says on it goes to the agent.
    let (to, _) = one(
        &mut r,
        t,
        json!({"jsonrpc":"2.0","method":"_mcp/notification","params":{"connection_id":"t1","method":"notifications/progress"}}),
    );
    assert_eq!(to, 1);
    // The translator's stateless call (through the bridges' connection) reaches the editor,
    // and the editor's notification about it comes back to the bridges.
    let (to, sent) = one(
        &mut r,
        b,
        json!({"jsonrpc":"2.0","id":1,"method":"mcp/message","params":{"serverId":"s1","requestId":"r","method":"tools/list"}}),
    );
    assert_eq!((to, &sent["method"]), (EDITOR, &json!("mcp/message")));
    let (to, _) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","method":"mcp/message","params":{"serverId":"s1","requestId":"r","method":"notifications/progress"}}),
    );
    assert_eq!(to, b);
    // Closed: the connection id is the agent's to use again.
    assert!(
        feed(
            &mut r,
            1,
            json!({"jsonrpc":"2.0","method":"_mcp/disconnect","params":{"connection_id":"t1"}})
        )
        .iter()
        .all(|(to, _)| *to == t)
    );
    let (to, _) = one(
        &mut r,
        1,
        json!({"jsonrpc":"2.0","id":7,"method":"_mcp/request","params":{"connection_id":"t1","method":"tools/list"}}),
    );
    assert_eq!(to, EDITOR);
}

#[test]
fn an_rfd_agents_unserved_call_goes_to_the_translator() {
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
    assert_eq!(
        (to, &sent["method"]),
        (conn(&r, TRANSLATOR), &json!("mcp/message"))
    );
}

#[test]
fn the_bridges_own_connections_come_back_to_them_and_nothing_is_diverted_in_proxy_mode() {
    let mut r = initialized_agent(json!({"protocolVersion":1}));
    let b = conn(&r, BRIDGES);
    // The bridges open a connection to the editor's `acp:` server, as the agent.
    let (to, sent) = one(
        &mut r,
        b,
        json!({"jsonrpc":"2.0","id":"h1","method":"_mcp/connect","params":{"acp_url":"acp:e1"}}),
    );
    assert_eq!((to, &sent["method"]), (EDITOR, &json!("_mcp/connect")));
    let (to, _) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":sent["id"],"result":{"connection_id":"c7"}}),
    );
    assert_eq!(to, b);
    // The owner's requests on it go to the bridges, not the agent; another id goes to the agent.
    let (to, _) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":3,"method":"_mcp/request","params":{"connection_id":"c7","method":"roots/list"}}),
    );
    assert_eq!(to, b);
    let (to, _) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":4,"method":"_mcp/request","params":{"connection_id":"other","method":"roots/list"}}),
    );
    assert_eq!(to, 1);
    // The bridges close it: it is the agent's again.
    let (to, _) = one(
        &mut r,
        b,
        json!({"jsonrpc":"2.0","method":"_mcp/disconnect","params":{"connection_id":"c7"}}),
    );
    assert_eq!(to, EDITOR);
    let (to, _) = one(
        &mut r,
        EDITOR,
        json!({"jsonrpc":"2.0","id":5,"method":"_mcp/request","params":{"connection_id":"c7","method":"roots/list"}}),
    );
    assert_eq!(to, 1);
    // A successor envelope from a diverted connection is refused.
    let (to, sent) = one(
        &mut r,
        b,
        json!({"jsonrpc":"2.0","id":"h2","method":"_proxy/successor/request","params":{"method":"x"}}),
    );
    assert_eq!((to, &sent["error"]["code"]), (b, &json!(-32601)));

    // In proxy mode the agent's successor is another conductor: nothing is diverted.
    let mut p = machine();
    one(
        &mut p,
        EDITOR,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,
            "_meta":{"proxy":true}}}),
    );
    let b = conn(&p, BRIDGES);
    let (_, sent) = one(
        &mut p,
        b,
        json!({"jsonrpc":"2.0","id":"h1","method":"_mcp/connect","params":{"acp_url":"acp:e1"}}),
    );
    one(
        &mut p,
        EDITOR,
        json!({"jsonrpc":"2.0","id":sent["id"],"result":{"connection_id":"c7"}}),
    );
    let (to, _) = one(
        &mut p,
        EDITOR,
        json!({"jsonrpc":"2.0","id":3,"method":"_mcp/request","params":{"connection_id":"c7","method":"roots/list"}}),
    );
    assert_eq!(to, 1);
}
