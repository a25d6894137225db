//! Requests the peer sent and this side has not answered yet, and `$/cancel_request` from the
//! peer.
//!
//! Each in-flight request has a cancellation token. When the peer cancels it, the connection
//! answers `-32800` at once, fires the token (which drops the request's work, or lets a
//! background task notice through [`Responder::cancelled`](super::Responder::cancelled)) and
//! forgets the id, so a late answer from the handler is dropped instead of answering twice.
//!
//! The table is bounded: past [`Limits::max_in_flight`](super::Limits) requests the peer's next
//! one is refused with an error instead of starting yet another handler.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

use super::{Error, Id, RawJson, code};
use crate::lock::lock;

/// The method of the protocol-level cancellation notification.
pub const CANCEL_REQUEST_METHOD: &str = "$/cancel_request";

/// What runs when a request is cancelled (besides firing its token): see
/// [`InFlight::on_cancel`].
pub(crate) type OnCancel = Box<dyn FnOnce() + Send>;

/// One request in flight.
struct Entry {
    token: CancellationToken,
    on_cancel: Option<OnCancel>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("cancelled", &self.token.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl Entry {
    fn cancel(self) {
        self.token.cancel();
        if let Some(on_cancel) = self.on_cancel {
            on_cancel();
        }
    }
}

/// Requests received and not answered yet.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    map: Mutex<HashMap<Id, Entry>>,
    emptied: tokio::sync::Notify,
}

impl InFlight {
    /// Registers a new request, unless a request with the same id is still unanswered or
    /// `limit` requests are.
    pub(crate) fn register(&self, id: &Id, limit: usize) -> Result<CancellationToken, Error> {
        let mut map = lock(&self.map);
        if map.contains_key(id) {
            return Err(Error::invalid_request(format!(
                "request id {id} is already in use by an unanswered request"
            )));
        }
        if map.len() >= limit {
            return Err(Error::new(
                code::SERVER_BUSY,
                format!("too many requests in flight: {limit} are still being handled"),
            ));
        }
        let token = CancellationToken::new();
        let entry = Entry {
            token: token.clone(),
            on_cancel: None,
        };
        map.insert(id.clone(), entry);
        Ok(token)
    }

    /// Runs `f` when request `id` is cancelled (at once if it is not in flight any more: it
    /// was cancelled, or answered, and nothing more is wanted for it). A relayed request is
    /// cancelled downstream this way, with no task waiting for the cancellation.
    pub(crate) fn on_cancel(&self, id: &Id, f: OnCancel) {
        let mut map = lock(&self.map);
        match map.get_mut(id) {
            Some(entry) => entry.on_cancel = Some(f),
            None => {
                drop(map);
                f();
            }
        }
    }

    /// Takes `id` out of the table: `true` for the one caller that may answer it.
    pub(crate) fn finish(&self, id: &Id) -> bool {
        self.take(id).is_some()
    }

    fn take(&self, id: &Id) -> Option<Entry> {
        let mut map = lock(&self.map);
        let entry = map.remove(id);
        if map.is_empty() {
            self.emptied.notify_waiters();
        }
        entry
    }

    /// Cancels every request in flight; returns their ids (each must now be answered `-32800`).
    pub(crate) fn cancel_all(&self) -> Vec<Id> {
        let drained: Vec<_> = lock(&self.map).drain().collect();
        self.emptied.notify_waiters();
        drained
            .into_iter()
            .map(|(id, entry)| {
                entry.cancel();
                id
            })
            .collect()
    }

    /// Completes once every request received has been answered.
    pub(crate) async fn all_answered(&self) {
        loop {
            let emptied = self.emptied.notified();
            tokio::pin!(emptied);
            emptied.as_mut().enable();
            if lock(&self.map).is_empty() {
                return;
            }
            emptied.await;
        }
    }

    /// Cancels `id`; `true` when it was still in flight (and must now be answered `-32800`).
    pub(crate) fn cancel(&self, id: &Id) -> bool {
        match self.take(id) {
            Some(entry) => {
                entry.cancel();
                true
            }
            None => false,
        }
    }
}

/// Reads the `requestId` of a `$/cancel_request`.
pub(crate) fn cancelled_id(params: Option<&RawJson>) -> Option<Id> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct CancelParams {
        request_id: Id,
    }
    params?.parse::<CancelParams>().ok().map(|p| p.request_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_answer_per_request() {
        let table = InFlight::default();
        let id = Id::from("r1");
        let token = table.register(&id, 10).unwrap();
        assert!(
            table.register(&id, 10).is_err(),
            "duplicate while in flight"
        );
        assert!(table.cancel(&id));
        assert!(token.is_cancelled());
        assert!(
            !table.finish(&id),
            "a cancelled request is not answered again"
        );
        assert!(table.register(&id, 10).is_ok(), "the id is free again");
        let other = Id::from("r2");
        assert!(table.register(&other, 1).is_err(), "over the limit");
        assert!(table.register(&other, 2).is_ok());
    }

    #[test]
    fn a_cancel_runs_what_was_registered_for_it() {
        let table = InFlight::default();
        let ran = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = |ran: &std::sync::Arc<std::sync::atomic::AtomicUsize>| -> OnCancel {
            let ran = ran.clone();
            Box::new(move || {
                ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            })
        };
        let (a, b) = (Id::from("a"), Id::from("b"));
        table.register(&a, 10).unwrap();
        table.register(&b, 10).unwrap();
        table.on_cancel(&a, count(&ran));
        table.on_cancel(&b, count(&ran));
        assert!(
            table.finish(&b),
            "answered: its callback is dropped, not run"
        );
        assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert!(table.cancel(&a));
        assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 1);
        // For a request no longer in flight, at once.
        table.on_cancel(&a, count(&ran));
        assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[test]
    fn reads_cancel_params() {
        let p = RawJson::from_string(r#"{"requestId":"abc"}"#).unwrap();
        assert_eq!(cancelled_id(Some(&p)), Some(Id::from("abc")));
        assert_eq!(cancelled_id(None), None);
    }
}
