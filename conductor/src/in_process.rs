//! Rust proxies in the conductor's own process: [`Chain::proxy`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::chain::{Chain, Component, InProcess};
use crate::lock::lock;

impl Chain {
    /// Adds a Rust proxy that runs in the conductor's process, over an in-memory channel:
    /// the same routing, ordering, handshake and lifecycle as a process, without the pipes.
    pub fn proxy<P: sacp::proxy::Proxy>(mut self, proxy: P) -> Chain {
        let name = std::any::type_name::<P>()
            .rsplit("::")
            .next()
            .unwrap_or("proxy")
            .to_owned();
        let proxy = Arc::new(Mutex::new(Some(proxy)));
        let start = InProcess(Arc::new(move |channel| {
            let proxy = lock(&proxy).take();
            Box::pin(async move {
                match proxy {
                    Some(proxy) => sacp::proxy::serve(proxy, channel).await,
                    None => Err(sacp::Error::internal_error("an in-process proxy runs once")),
                }
            })
        }));
        self.components.push(Component {
            name,
            program: String::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            in_process: Some(start),
        });
        self
    }
}
