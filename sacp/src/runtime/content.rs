//! A proxy's own content handlers (`#[content("text/html")]`, see
//! [`Proxy::transform`](crate::proxy::Proxy::transform)) on
//! its two hops: what each neighbour takes, learned at `initialize`; the proxy's declaration
//! of what it takes, so that the conductor leaves those types to it; and what it sends each
//! neighbour adapted by its handlers (see [`crate::protocol::content`]).

use std::sync::{Arc, Mutex};

use crate::acp::Side;
use crate::jsonrpc::RawJson;
use crate::lock::lock;
use crate::protocol::content::{self, Accepts, Transform};

/// A proxy's content handlers, and what its neighbours take.
pub(crate) struct Adapter {
    /// The media ranges its handlers transform.
    types: Accepts,
    /// What the client side takes (from its `initialize`), once known.
    client: Mutex<Option<Arc<Accepts>>>,
    /// What the successor takes (from its answer to `initialize`), once known.
    successor: Mutex<Option<Arc<Accepts>>>,
    handlers: Arc<dyn Transform>,
}

impl std::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adapter")
            .field("types", &self.types)
            .finish_non_exhaustive()
    }
}

impl Adapter {
    /// The adapter of a proxy whose `handlers` transform the media ranges `types`.
    pub(crate) fn new(types: &[&str], handlers: Arc<dyn Transform>) -> Adapter {
        Adapter {
            types: Accepts::of(types),
            client: Mutex::default(),
            successor: Mutex::default(),
            handlers,
        }
    }

    /// `initialize`'s params from the client, on their way to the successor: what the client
    /// takes is noted, and the proxy declares it takes that and what it transforms.
    pub(crate) fn initializing(&self, params: RawJson) -> RawJson {
        let client = Accepts::of_client(Some(&params));
        let declared = client.clone().and(&self.types);
        *lock(&self.client) = Some(Arc::new(client));
        declared.declare_in(&params).unwrap_or(params)
    }

    /// The successor's answer to `initialize`, on its way to the client: what the successor
    /// takes is noted, and the proxy declares it takes that and what it transforms.
    pub(crate) fn initialized(&self, answer: RawJson) -> RawJson {
        let successor = Accepts::of_agent(&answer);
        let declared = successor.clone().and(&self.types);
        *lock(&self.successor) = Some(Arc::new(successor));
        declared.declare_in(&answer).unwrap_or(answer)
    }

    /// `params` of a `method` message the proxy sends to `to`, adapted by its handlers to
    /// what that neighbour takes.
    pub(crate) fn adapt(&self, to: Side, method: &str, params: RawJson) -> RawJson {
        let takes = match to {
            Side::Client => lock(&self.client).clone(),
            Side::Agent => lock(&self.successor).clone(),
        };
        let Some(takes) = takes else {
            return params;
        };
        match content::adapt_with(method, &params, &takes, &*self.handlers) {
            Some((adapted, done)) => {
                for one in done {
                    tracing::debug!(%method, from = %one.from, into = one.into, "a content handler transformed a block");
                }
                adapted
            }
            None => params,
        }
    }
}
