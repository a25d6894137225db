//! Waiting for a v2 turn's end in a proxy: the idle `state_update` of a session, seen as it
//! arrives from the successor, before any handler (see [`Cx::idle`](super::Cx)).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use sacp_schema::acp::v2::{IdleStateUpdate, SessionUpdate, StateUpdate};
use tokio::sync::oneshot;

use crate::jsonrpc::RawJson;
use crate::lock::lock;

/// The proxies' handlers waiting for a session to go idle.
#[derive(Debug, Default)]
pub(crate) struct Idles {
    /// How many wait: while none does, an update costs one load.
    waiting: AtomicUsize,
    by_session: Mutex<HashMap<String, Vec<oneshot::Sender<IdleStateUpdate>>>>,
}

impl Idles {
    /// A receiver of `session`'s next idle update, registered now.
    #[cfg_attr(not(feature = "unstable_protocol_v2"), allow(dead_code))]
    pub(crate) fn wait(&self, session: &str) -> oneshot::Receiver<IdleStateUpdate> {
        let (tx, rx) = oneshot::channel();
        let mut by_session = lock(&self.by_session);
        // Waiters whose handler gave up are dropped on the way.
        let waiters = by_session.entry(session.to_owned()).or_default();
        waiters.retain(|w| !w.is_closed());
        waiters.push(tx);
        self.waiting
            .store(by_session.values().map(Vec::len).sum(), Ordering::Release);
        rx
    }

    /// Looks at a `session/update` from the successor: an idle one wakes its session's
    /// waiters.
    pub(crate) fn observe(&self, method: &str, params: Option<&RawJson>) {
        if self.waiting.load(Ordering::Acquire) == 0 || method != "session/update" {
            return;
        }
        #[derive(serde::Deserialize)]
        struct Update {
            #[serde(rename = "sessionId")]
            session_id: String,
            update: SessionUpdate,
        }
        let Some(Ok(Update { session_id, update })) = params.map(RawJson::parse::<Update>) else {
            return;
        };
        let SessionUpdate::StateUpdate(StateUpdate::Idle(idle)) = update else {
            return;
        };
        let mut by_session = lock(&self.by_session);
        let Some(waiters) = by_session.remove(&session_id) else {
            return;
        };
        for waiter in waiters {
            let _ = waiter.send(idle.clone());
        }
        self.waiting
            .store(by_session.values().map(Vec::len).sum(), Ordering::Release);
    }
}
