//! Rust components in the conductor's own process: [`Chain::proxy`] and [`Chain::agent`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use sacp::jsonrpc::{BoxFuture, Channel, Error};

use crate::chain::{Chain, Component, InProcess};
use crate::lock::lock;

impl Chain {
    /// Adds a Rust proxy that runs in the conductor's process, over an in-memory channel:
    /// the same routing, ordering, handshake and lifecycle as a process, without the pipes.
    pub fn proxy<P: sacp::proxy::Proxy>(self, proxy: P) -> Chain {
        self.in_process(type_name::<P>(), proxy, |proxy, channel| {
            Box::pin(sacp::proxy::serve(proxy, channel))
        })
    }

    /// Adds a Rust agent (an `#[sacp::agent]`) that runs in the conductor's process, as the
    /// last component: a whole chain in one process, for tests and for programs that are
    /// their own agent. Its MCP servers reach it over ACP when it speaks MCP over ACP
    /// (`#[sacp::agent(mcp_over_acp)]`), over HTTP when it declares it; a stdio bridge needs
    /// [`Options::bridge_program`](crate::Options::bridge_program).
    pub fn agent<A: sacp::agent::Agent>(self, agent: A) -> Chain {
        self.in_process(type_name::<A>(), agent, |agent, channel| {
            Box::pin(sacp::agent::serve(agent, channel))
        })
    }

    fn in_process<T: Send + 'static>(
        mut self,
        name: String,
        value: T,
        serve: fn(T, Channel) -> BoxFuture<Result<(), Error>>,
    ) -> Chain {
        let value = Arc::new(Mutex::new(Some(value)));
        let start = InProcess(Arc::new(move |channel| match lock(&value).take() {
            Some(value) => serve(value, channel),
            None => {
                Box::pin(async { Err(Error::internal_error("an in-process component runs once")) })
            }
        }));
        self.components.push(Component {
            name,
            program: String::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            dialect: Some(sacp::protocol::dialect::Dialect::Sacp),
            in_process: Some(start),
            remote: None,
            wasm: None,
            registry: None,
        });
        self
    }
}

/// A component's name: its type's, without the path or generics.
fn type_name<T>() -> String {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or("component").to_owned()
}
