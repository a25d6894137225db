//! The connection's reader task: reads the transport, resolves responses, cancels what the peer
//! cancels, hands requests and notifications to the handler in arrival order and admits their
//! work to its lane; and, once the peer's stream has ended, winds the connection down.

use std::future::Future;

use tokio_util::sync::CancellationToken;

use super::budget::Permit;
use super::connection::{Connection, End};
use super::handler::{Dispatch, Order};
use super::lanes::{self, Item, Work};
use super::responder::{CANCEL_REQUEST_METHOD, cancelled_id};
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
    let shared = conn.shared();
    let mut slice = 0;
    let end = loop {
        slice += 1;
        if slice == READ_SLICE {
            slice = 0;
            tokio::task::yield_now().await;
        }
        let read = tokio::select! {
            biased;
            _ = shared.shutdown.cancelled() => break End::Closed,
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
                    tracing::error!(peer = %shared.name, response = ?result, "the peer reported an error about a message it could not read");
                } else {
                    deliver(&conn, &id, result).await;
                }
                continue;
            }
            Inbound::Message(Message::Notification(n)) if n.method == CANCEL_REQUEST_METHOD => {
                match cancelled_id(n.params.as_ref()) {
                    Some(id) if shared.in_flight.cancel(&id) => {
                        let _ = conn.send_now(Message::Response(Response::error(
                            id,
                            &Error::request_cancelled(),
                        )));
                    }
                    Some(id) => {
                        tracing::debug!(peer = %shared.name, %id, "cancel for a request that is already answered")
                    }
                    None => {
                        tracing::warn!(peer = %shared.name, params = ?n.params, "malformed $/cancel_request")
                    }
                }
                continue;
            }
            Inbound::Message(Message::Notification(n)) => {
                let bytes = n.params.as_ref().map_or(0, |p| p.len());
                let dispatch = handler.handle_notification(n, &conn);
                admit(&conn, dispatch, bytes, None).await
            }
            Inbound::Message(Message::Request(request)) => {
                let token = match shared
                    .in_flight
                    .register(&request.id, shared.limits.max_in_flight)
                {
                    Ok(token) => token,
                    Err(error) => {
                        tracing::warn!(peer = %shared.name, %error, "refusing a request");
                        let _ =
                            conn.send_now(Message::Response(Response::error(request.id, &error)));
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
                let dispatch = handler.handle_request(request, responder, &conn);
                admit(&conn, dispatch, bytes, Some(token)).await
            }
            Inbound::Invalid { id, error } => {
                tracing::error!(peer = %shared.name, %id, %error, "invalid message from the peer");
                let _ = conn.send_now(Message::Response(Response::error(id, &error)));
                continue;
            }
            Inbound::BadResponse { id, error } => {
                tracing::error!(peer = %shared.name, %id, %error, "malformed response from the peer");
                deliver(&conn, &id, Err(error)).await;
                continue;
            }
        };
        if let Err(end) = admitted {
            break end;
        }
    };
    tracing::debug!(peer = %shared.name, reason = ?end, "connection reader ended");
    wind_down(&conn, end).await;
}

/// Delivers the response to `id` to whoever awaits it: in its lane's turn, or at once to work
/// running in a lane (see the `pending` module).
async fn deliver(conn: &Connection, id: &Id, result: Result<RawJson, Error>) {
    let shared = conn.shared();
    let Some((slot, lane)) = shared.pending.take(id) else {
        tracing::warn!(peer = %shared.name, %id, "dropping a response to an unknown or cancelled request id");
        return;
    };
    if slot.awaited_in_lane() {
        slot.fill_now(result);
        return;
    }
    let item = Item {
        work: Work::Deliver(slot, result),
        permit: None,
    };
    lanes::admit(conn, lane, item).await;
}

/// Admits a message's work to its lane, once the lane has room for it. A request's work is
/// dropped when the peer cancels the request.
async fn admit<F>(
    conn: &Connection,
    dispatch: Dispatch<F>,
    bytes: usize,
    cancel: Option<CancellationToken>,
) -> Result<(), End>
where
    F: Future<Output = ()> + Send + 'static,
{
    let Dispatch { lane, order, work } = dispatch;
    let Some(work) = work else {
        conn.shared().lanes.count_done(lane);
        return Ok(());
    };
    let permit = room(conn, lane, bytes).await?;
    let work = match (order, cancel) {
        (Order::InTurn, None) => Work::InTurn(lanes::scoped(work)),
        (Order::InTurn, Some(token)) => Work::InTurn(lanes::scoped(cancellable(token, work))),
        (Order::Start, None) => Work::Start(Box::pin(work)),
        (Order::Start, Some(token)) => Work::Start(Box::pin(cancellable(token, work))),
    };
    let item = Item { work, permit };
    lanes::admit(conn, lane, item).await;
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
    let shared = conn.shared();
    let lanes = &shared.lanes;
    if let Some(permit) = lanes.budget(lane).try_take(bytes) {
        return Ok(Some(permit));
    }
    loop {
        let awaited = lanes.awaited();
        tokio::pin!(awaited);
        awaited.as_mut().enable();
        if lanes.awaited_in_lanes() {
            let backlog = lanes.backlog();
            if backlog >= shared.limits.max_backlog as u64 {
                return Err(End::Failed(format!(
                    "the peer sent {backlog} messages that the handlers have not taken yet \
                     (the limit is {})",
                    shared.limits.max_backlog
                )));
            }
            return Ok(None);
        }
        tokio::select! {
            biased;
            _ = shared.shutdown.cancelled() => return Err(End::Closed),
            permit = lanes.budget(lane).take(bytes) => return Ok(permit),
            _ = awaited => {}
        }
    }
}

/// After the reader stopped: fail the pending requests, let the work still running finish
/// (within the grace at the end of the peer's stream, not at all otherwise), give up on what is
/// left, and close the writer.
async fn wind_down(conn: &Connection, end: End) {
    let shared = conn.shared();
    let grace = match &end {
        End::Eof => shared.limits.eof_grace,
        End::Closed | End::Failed(_) => Some(std::time::Duration::ZERO),
    };
    conn.end(end);
    let settled = async {
        shared.lanes.idle().await;
        shared.in_flight.all_answered().await;
    };
    let abandoned = shared.abandon.cancelled();
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
    abandon(conn);
    conn.close_writer();
}

/// Gives up on the work still running: open requests are answered `-32800`, lanes stop, tasks
/// tied to the connection end.
pub(crate) fn abandon(conn: &Connection) {
    conn.cancel_requests();
    conn.shared().lanes.abandon();
    conn.shared().abandon.cancel();
}
