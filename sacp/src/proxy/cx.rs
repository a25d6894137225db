//! [`Cx`]: what a proxy's handler can reach.

use std::future::Future;
use std::sync::Arc;

use crate::jsonrpc::Connection;
use crate::mcp::McpServers;
use crate::mcp::registry::Registry;
use crate::peer::Peer;

/// A proxy handler's context: its two neighbours and a place to run background work.
///
/// Cheap to clone; a clone can be moved into [`Cx::spawn`]ed work.
#[derive(Debug, Clone)]
pub struct Cx {
    conn: Connection,
    mcp: Arc<Registry>,
}

impl Cx {
    pub(crate) fn new(conn: Connection, mcp: Arc<Registry>) -> Cx {
        Cx { conn, mcp }
    }

    /// The proxy's MCP servers: to give a server to one session (see [`McpServers`]).
    pub fn mcp_servers(&self) -> McpServers {
        McpServers::new(self.mcp.clone())
    }

    /// The client side: the editor, or the proxy in front of this one.
    pub fn client(&self) -> Peer {
        Peer::client(self.conn.clone())
    }

    /// The successor: the next proxy, or the agent.
    pub fn successor(&self) -> Peer {
        Peer::successor(self.conn.clone())
    }

    /// Runs `work` in the background until it finishes or the connection ends.
    pub fn spawn<F>(&self, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.conn.spawn(work)
    }

    /// The connection to the conductor, for what the methods above do not cover.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}
