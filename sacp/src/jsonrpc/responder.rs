//! [`Responder`]: the answer to one request of the peer.

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::connection::Connection;
use super::{Error, Id, RawJson, Response, ResponseBody};

/// Answers one request. Exactly one answer reaches the peer: the first of `respond*`, the
/// `-32800` of a cancellation, or — if the responder is dropped unanswered — an internal error
/// saying so.
#[derive(Debug)]
pub struct Responder {
    id: Id,
    method: String,
    conn: Connection,
    token: CancellationToken,
    answered: bool,
}

impl Responder {
    pub(crate) fn new(id: Id, method: String, conn: Connection, token: CancellationToken) -> Self {
        Responder {
            id,
            method,
            conn,
            token,
            answered: false,
        }
    }

    /// The id of the request.
    pub fn id(&self) -> &Id {
        &self.id
    }

    /// The method of the request.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Whether the peer cancelled the request (it has been answered `-32800` already).
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Completes when the peer cancels the request.
    pub async fn cancelled(&self) {
        self.token.cancelled().await
    }

    /// Runs `f` when the peer cancels the request (at once if it no longer waits for an
    /// answer), without a task waiting for it.
    pub(crate) fn on_cancel(&self, f: super::in_flight::OnCancel) {
        self.conn.on_cancel(&self.id, f)
    }

    /// Answers with a raw result or an error.
    pub fn answer_raw(self, result: Result<RawJson, Error>) {
        match result {
            Ok(raw) => self.answer_body(ResponseBody::Result(raw)),
            Err(e) => self.answer_error(e),
        }
    }

    /// Answers with a serializable result or an error (any error type that converts into
    /// [`Error`]).
    pub fn answer<T: Serialize, E: Into<Error>>(self, result: Result<T, E>) {
        self.answer_raw(result.map_err(Into::into).and_then(|v| RawJson::to_raw(&v)))
    }

    /// Answers with an error.
    pub fn answer_error(self, error: Error) {
        let raw = RawJson::to_raw(&error).unwrap_or_else(|_| RawJson::null());
        self.answer_body(ResponseBody::Error(raw))
    }

    /// Answers with a raw body, for example a response forwarded from elsewhere as it was.
    pub fn answer_body(mut self, body: ResponseBody) {
        self.answered = true;
        self.send(body);
    }

    fn send(&self, body: ResponseBody) {
        // A closed connection has nobody to answer; the error is already known to all.
        let _ = self.conn.answer(Response {
            id: self.id.clone(),
            body,
        });
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if !self.answered {
            let error = Error::internal_error(format!(
                "the handler of {} ended without answering",
                self.method
            ));
            let raw = RawJson::to_raw(&error).unwrap_or_else(|_| RawJson::null());
            self.send(ResponseBody::Error(raw));
        }
    }
}
