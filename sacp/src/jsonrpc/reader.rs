//! The connection's reader task: reads the transport, delivers responses, cancels what the
//! peer cancels, hands requests and notifications to the handler in arrival order and admits
//! their work to its lane; and, once the peer's stream has ended, winds the connection down.

use std::future::Future;

use tokio_util::sync::CancellationToken;

use super::budget::Permit;
use super::connection::{Connection, End};
use super::handler::{Order, Work};
use super::in_flight::{CANCEL_REQUEST_METHOD, cancelled_id};
use super::lanes::{self, Item, Lane};
use super::transport::{Inbound, MessageReader};
use super::{Error, Handler, Id, Message, RawJson, Responder, Response};

/// How many messages the reader takes from what one read brought in before it lets the other
/// tasks run: a burst is passed on in slices of this size, so the next process of a chain
/// starts on the first slice while this one reads the rest.
const READ_SLICE: u32 = 32;

pub(crate) async fn run<R: MessageReader, H: Handler>(
    mut reader: R,
    mut handler: H,
    conn: Connection,
) {
    let mut slice = 0;
    let end = loop {
        slice += 1;
        if slice == READ_SLICE {
            slice = 0;
            tokio::task::yield_now().await;
        }
        let read = tokio::select! {
            biased;
            _ = conn.shutdown_requested() => break End::Closed,
            read = reader.read() => read,
        };
        let inbound = match read {
            Ok(Some(inbound)) => inbound,
            Ok(None) => break End::Eof,
            Err(e) => break End::Failed(format!("read error: {e}")),
        };
        let admitted = match inbound {
            Inbound::Message(Message::Response(response)) => {
                let Response { id, body } = response;
                let result = Response { id: Id::Null, body }.into_result();
                if id == Id::Null {
                    // The peer could not read something we sent and says so.
                    tracing::error!(peer = %conn.name(), response = ?result, "the peer reported an error about a message it could not read");
                } else {
                    deliver(&conn, &id, result).await;
                }
                continue;
            }
            Inbound::Message(Message::Notification(n)) if n.method == CANCEL_REQUEST_METHOD => {
                match cancelled_id(n.params.as_ref()) {
                    Some(id) if conn.peer_cancelled(id.clone()) => {}
                    Some(id) => {
                        tracing::debug!(peer = %conn.name(), %id, "cancel for a request that is already answered")
                    }
                    None => {
                        tracing::warn!(peer = %conn.name(), params = ?n.params, "malformed $/cancel_request")
                    }
                }
                continue;
            }
            Inbound::Message(Message::Notification(n)) => {
                let bytes = n.params.as_ref().map_or(0, |p| p.len());
                let work = handler.handle_notification(n, &conn);
                admit(&conn, work, bytes, None).await
            }
            Inbound::Message(Message::Request(request)) => {
                let token = match conn.register_request(&request.id) {
                    Ok(token) => token,
                    Err(error) => {
                        tracing::warn!(peer = %conn.name(), %error, "refusing a request");
                        conn.answer_unregistered(Response::error(request.id, &error));
                        continue;
                    }
                };
                let bytes = request.params.as_ref().map_or(0, |p| p.len());
                let responder = Responder::new(
                    request.id.clone(),
                    request.method.clone(),
                    conn.clone(),
                    token.clone(),
                );
                let work = handler.handle_request(request, responder, &conn);
                admit(&conn, work, bytes, Some(token)).await
            }
            Inbound::Invalid { id, error } => {
                tracing::error!(peer = %conn.name(), %id, %error, "invalid message from the peer");
                conn.answer_unregistered(Response::error(id, &error));
                continue;
            }
            Inbound::BadResponse { id, error } => {
                tracing::error!(peer = %conn.name(), %id, %error, "malformed response from the peer");
                deliver(&conn, &id, Err(error)).await;
                continue;
            }
        };
        if let Err(end) = admitted {
            break end;
        }
    };
    tracing::debug!(peer = %conn.name(), reason = ?end, "connection reader ended");
    wind_down(&conn, end).await;
}

/// Delivers the response to `id` to whoever awaits it: in its lane's turn, or at once to work
/// running in a lane (see the `pending` module).
async fn deliver(conn: &Connection, id: &Id, result: Result<RawJson, Error>) {
    let Some((slot, lane)) = conn.take_pending(id) else {
        tracing::warn!(peer = %conn.name(), %id, "dropping a response to an unknown or cancelled request id");
        return;
    };
    if slot.awaited_in_lane() {
        slot.fill_now(result);
        return;
    }
    conn.lanes().admit(lane, Item::Deliver(slot, result)).await;
}

/// Admits a message's work to its lane, once the lane has room for it. A request's work is
/// dropped when the peer cancels the request.
async fn admit<F, L>(
    conn: &Connection,
    work: Work<F, L>,
    bytes: usize,
    cancel: Option<CancellationToken>,
) -> Result<(), End>
where
    F: Future<Output = ()> + Send + 'static,
    L: Lane,
{
    let Work {
        lane,
        order,
        future,
    } = work;
    let lane = lane.index();
    let Some(future) = future else {
        conn.lanes().count_done(lane);
        return Ok(());
    };
    let permit = room(conn, lane, bytes).await?;
    let item = match (order, cancel) {
        (Order::InTurn, None) => Item::InTurn(lanes::scoped(future), permit),
        (Order::InTurn, Some(token)) => {
            Item::InTurn(lanes::scoped(cancellable(token, future)), permit)
        }
        (Order::Start, None) => Item::Start(Box::pin(future), permit),
        (Order::Start, Some(token)) => Item::Start(Box::pin(cancellable(token, future)), permit),
    };
    conn.lanes().admit(lane, item).await;
    Ok(())
}

/// Runs `work` unless (or until) `token` is cancelled.
async fn cancellable(token: CancellationToken, work: impl Future<Output = ()>) {
    if token.is_cancelled() {
        return;
    }
    tokio::select! {
        biased;
        _ = token.cancelled() => {}
        _ = work => {}
    }
}

/// A share of lane `lane`'s budget for a payload of `bytes`: at once if there is room;
/// otherwise the reader waits (and so stops reading) until there is — unless work in a lane
/// awaits a response, which may be behind what is still unread: then it goes on without one,
/// up to [`Limits::max_backlog`](super::Limits::max_backlog).
async fn room(conn: &Connection, lane: usize, bytes: usize) -> Result<Option<Permit>, End> {
    let lanes = conn.lanes();
    if let Some(permit) = lanes.budget(lane).try_take(bytes) {
        return Ok(Some(permit));
    }
    loop {
        let awaited = lanes.awaited();
        tokio::pin!(awaited);
        awaited.as_mut().enable();
        if lanes.awaited_in_lanes() {
            let backlog = lanes.backlog();
            let limit = conn.limits().max_backlog;
            if backlog >= limit as u64 {
                return Err(End::Failed(format!(
                    "the peer sent {backlog} messages that the handlers have not taken yet \
                     (the limit is {limit})",
                )));
            }
            return Ok(None);
        }
        tokio::select! {
            biased;
            _ = conn.shutdown_requested() => return Err(End::Closed),
            permit = lanes.budget(lane).take(bytes) => return Ok(permit),
            _ = awaited => {}
        }
    }
}

/// After the reader stopped: fail the pending requests, let the work still running finish
/// (within the grace at the end of the peer's stream, not at all otherwise), give up on what is
/// left, and close the writer.
async fn wind_down(conn: &Connection, end: End) {
    let grace = match &end {
        End::Eof => conn.eof_grace(),
        End::Closed | End::Failed(_) => Some(std::time::Duration::ZERO),
    };
    conn.end(end);
    let settled = async {
        conn.lanes().idle().await;
        conn.all_answered().await;
        // Work requests left for after their answers (a v2 turn) gets the same grace.
        conn.lanes().lingered().await;
    };
    let abandoned = conn.lanes().abandoned().cancelled();
    match grace {
        None => {
            tokio::select! {
                _ = settled => {}
                _ = abandoned => {}
            }
        }
        Some(grace) => {
            tokio::select! {
                _ = tokio::time::timeout(grace, settled) => {}
                _ = abandoned => {}
            }
        }
    }
    conn.abandon();
    conn.close_writer();
}
