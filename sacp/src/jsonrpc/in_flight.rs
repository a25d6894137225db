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

/// Requests received and not answered yet.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    map: Mutex<HashMap<Id, CancellationToken>>,
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
        map.insert(id.clone(), token.clone());
        Ok(token)
    }

    /// Takes `id` out of the table: `true` for the one caller that may answer it.
    pub(crate) fn finish(&self, id: &Id) -> bool {
        self.take(id).is_some()
    }

    fn take(&self, id: &Id) -> Option<CancellationToken> {
        let mut map = lock(&self.map);
        let token = map.remove(id);
        if map.is_empty() {
            self.emptied.notify_waiters();
        }
        token
    }

    /// Cancels every request in flight; returns their ids (each must now be answered `-32800`).
    pub(crate) fn cancel_all(&self) -> Vec<Id> {
        let drained: Vec<_> = lock(&self.map).drain().collect();
        self.emptied.notify_waiters();
        drained
            .into_iter()
            .map(|(id, token)| {
                token.cancel();
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
            Some(token) => {
                token.cancel();
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
    fn reads_cancel_params() {
        let p = RawJson::from_string(r#"{"requestId":"abc"}"#).unwrap();
        assert_eq!(cancelled_id(Some(&p)), Some(Id::from("abc")));
        assert_eq!(cancelled_id(None), None);
    }
}
