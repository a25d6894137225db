//! [`AfterAnswer`]: work a request handler leaves for after its answer, for both roles'
//! `Cx::after_answer`.

use std::future::Future;
use std::sync::Arc;

use crate::jsonrpc::{BoxFuture, Connection, Error};
use crate::lock::lock;

use super::{HandlerSet, Incoming};

/// Work a request handler leaves for after its answer: started, each piece with the grace
/// requests get at the connection's end, once the answer is queued.
#[derive(Default)]
pub(crate) struct AfterAnswer(std::sync::Mutex<Vec<BoxFuture>>);

impl std::fmt::Debug for AfterAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AfterAnswer")
    }
}

impl AfterAnswer {
    /// Leaves `work` for after the answer; outside a request handler (`after` is `None`) an
    /// error, as there is no answer to run it after.
    pub(crate) fn leave(after: Option<&AfterAnswer>, work: BoxFuture) -> Result<(), Error> {
        match after {
            Some(after) => {
                lock(&after.0).push(work);
                Ok(())
            }
            None => Err(Error::internal_error(
                "`Cx::after_answer` was called outside a request handler: there is no answer \
                 to run the work after (`Cx::spawn` runs it at once)",
            )),
        }
    }

    /// The place for the work `message`'s handler leaves, when one of `H` takes it; none for
    /// a request no handler takes (the runtime forwards or answers it itself, often without a
    /// task, and nothing is allocated for it).
    pub(crate) fn for_request<H: HandlerSet>(message: &Incoming) -> Option<Arc<AfterAnswer>> {
        H::takes(&message.method, message.from).then(Arc::default)
    }

    /// `work` (a request's handling, which queues its answer), then the work its handler left
    /// in `after`, started on `conn`.
    pub(crate) fn following<F: Future<Output = ()>>(
        work: F,
        after: Option<Arc<AfterAnswer>>,
        conn: &Connection,
    ) -> impl Future<Output = ()> + use<F> {
        let left = after.map(|after| (after, conn.clone()));
        async move {
            work.await;
            if let Some((after, conn)) = left {
                for work in std::mem::take(&mut *lock(&after.0)) {
                    conn.spawn_lingering(work);
                }
            }
        }
    }
}
