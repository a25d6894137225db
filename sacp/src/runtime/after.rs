//! [`AfterAnswer`]: work a request handler leaves for after its answer, for both roles'
//! `Cx::after_answer`.

use crate::jsonrpc::{BoxFuture, Error};
use crate::lock::lock;

use super::Neighbours;

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

    /// Starts the work left, now that the answer is queued.
    pub(crate) fn start(&self, neighbours: &Neighbours) {
        for work in std::mem::take(&mut *lock(&self.0)) {
            neighbours.spawn_lingering(work);
        }
    }
}
