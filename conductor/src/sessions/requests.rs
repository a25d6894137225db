//! A client's requests about a session it is attached to: `session/prompt` (its turn begun,
//! queued or refused by the session's turns), `session/close` and `session/delete`, and any
//! other naming the session — each sent to the session's chain under the chain's id, its
//! answer given back through the session, in the record's order (a prompt's where its turn
//! ends).

use std::sync::Arc;

use sacp::jsonrpc::{Error, RawJson, Responder};

use super::attach::{BUSY, OBSERVER};
use super::chain::{ChainLink, answer_of};
use super::client::{Client, Unanswered, fail};
use super::offers::Offers;
use super::rewrite::with_session;
use super::session::{Attachment, Session};
use super::turns::Admit;
use super::{CLOSED, Layer, split_id};

impl Layer {
    /// A request about session `id`, on its chain under the chain's id; the answer through
    /// the session (a prompt's where its turn ends).
    pub(super) async fn to_session(
        self: &Arc<Self>,
        client: &Arc<Client>,
        method: String,
        params: Option<RawJson>,
        id: &str,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        let (session, att, link) = match self.may_ask(client, &method, id) {
            Ok(found) => found,
            Err(e) => return fail(responder, e),
        };
        let params = match with_session(params.clone(), &session.own) {
            Ok(own) => Asked { own, given: params },
            Err(e) => return fail(responder, e),
        };
        let to = (session, att, link);
        match method.as_str() {
            "session/prompt" => self.prompt(to, method, params, responder).await,
            "session/close" | "session/delete" => self.close(to, method, params, responder).await,
            _ => self.ask(client, to, method, params, responder).await,
        }
    }

    /// The session `id`, the client's attachment to it and its chain, when the client may
    /// send `method` about it: the session is here and open on this connection, and the client
    /// is a controller.
    fn may_ask(&self, client: &Arc<Client>, method: &str, id: &str) -> Result<To, Error> {
        let Some(session) = self.session(id) else {
            return Err(match split_id(id) {
                Some(_) => self.not_here(id),
                None => Error::invalid_params(format!("unknown session {id:?}")),
            });
        };
        let Some(att) = client.attachment_of(id) else {
            return Err(Error::invalid_params(format!(
                "the session {id} is not open on this connection: take it with session/load first"
            )));
        };
        if att.who.is_observer() {
            return Err(Error::new(
                OBSERVER,
                format!(
                    "{} is attached to the session {id} as an observer: {method} is for a controller",
                    att.who.id
                ),
            )
            .with_data(serde_json::json!({"sessionId": id, "method": method})));
        }
        let Some(link) = self.link_of(&session) else {
            return Err(self.not_here(id));
        };
        Ok((session, att, link))
    }

    /// A prompt: a turn of the session's, now or once the running one ended (or refused, see
    /// `turns.rs`).
    async fn prompt(
        &self,
        (session, att, link): To,
        method: String,
        params: Asked,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        match session.admit(&att, responder) {
            Admit::Now(turn) => run_turn((session, att, link), turn, method, params).await,
            Admit::Busy(responder) => {
                let id = &session.id;
                let busy = Error::new(
                    BUSY,
                    format!("a turn of another client runs in the session {id}: cancel it first, or wait for its end"),
                )
                .with_data(serde_json::json!({"sessionId": id}));
                return fail(responder, busy);
            }
            Admit::Queued(ticket, responder) => {
                tokio::spawn(async move {
                    match session.queued_turn(ticket, &att, responder).await {
                        Ok(turn) => run_turn((session, att, link), turn, method, params).await,
                        Err(responder) => responder.answer_raw(RawJson::to_raw(
                            &serde_json::json!({"stopReason": "cancelled"}),
                        )),
                    }
                });
            }
        }
        Ok(())
    }

    /// `session/close` or `session/delete`: a turn in flight is cancelled, and ends
    /// `cancelled` for every client; once the agent closed it, the session is gone. An agent
    /// that does not offer `session/close` is not asked: the layer ends the session itself
    /// (the agent keeps its own copy until its chain ends).
    async fn close(
        self: &Arc<Self>,
        (session, att, link): To,
        method: String,
        params: Asked,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        if session.turns_in_flight() {
            let cancel = serde_json::json!({"sessionId": session.own});
            let _ = link
                .notify("session/cancel", RawJson::to_raw(&cancel).ok())
                .await;
        }
        if method == "session/close" && !Offers::of(link.agent_answer().as_ref()).close {
            for asker in session.take_turns() {
                let cancelled = RawJson::to_raw(&serde_json::json!({"stopReason": "cancelled"}));
                session.turn_ended(Some(asker), cancelled);
            }
            session.answer(att.id, responder, RawJson::to_raw(&serde_json::json!({})));
            self.remove(&session, &link, Some(CLOSED));
            return Ok(());
        }
        let waiting = match link.request(method, params.own).await {
            Ok(waiting) => waiting,
            Err(e) => return fail(responder, e),
        };
        let layer = self.clone();
        tokio::spawn(async move {
            let result = answer_of(waiting).await;
            // A turn the agent left open ends cancelled, for every client.
            for asker in session.take_turns() {
                let cancelled = RawJson::to_raw(&serde_json::json!({"stopReason": "cancelled"}));
                session.turn_ended(Some(asker), cancelled);
            }
            let closed = result.is_ok();
            session.answer(att.id, responder, result);
            if closed {
                layer.remove(&session, &link, Some(CLOSED));
            }
        });
        Ok(())
    }

    /// Any other request about the session: its answer renamed for the client, and a session
    /// it brought (a fork) begun here and journaled.
    async fn ask(
        self: &Arc<Self>,
        client: &Arc<Client>,
        (session, att, link): To,
        method: String,
        params: Asked,
        responder: Responder,
    ) -> Result<(), Unanswered> {
        let waiting = match link.request(method, params.own).await {
            Ok(waiting) => waiting,
            Err(e) => return fail(responder, e),
        };
        let (layer, client) = (self.clone(), client.clone());
        tokio::spawn(async move {
            let result = answer_of(waiting).await.and_then(|answer| {
                let (born, renamed) =
                    layer.chain_to_editor_for(&link, Some(answer.clone()), Some(&client))?;
                if let Some(born) = born.filter(|b| b.id != session.id && b.setup().is_none()) {
                    born.set_setup(&answer);
                    born.began(
                        &born.own,
                        &super::restore::setup_of(params.given.as_ref(), &answer),
                    );
                }
                Ok(renamed.unwrap_or_else(RawJson::null))
            });
            session.answer(att.id, responder, result);
        });
        Ok(())
    }
}

/// A session a client's request is about: the session, the client's attachment to it, and
/// its chain.
type To = (Arc<Session>, Arc<Attachment>, Arc<ChainLink>);

/// Turn `turn` of a prompt: the prompt recorded as the other clients and a later replay see
/// it, then sent to the chain; the turn ends with the agent's answer.
async fn run_turn((session, att, link): To, turn: u64, method: String, params: Asked) {
    link.note(&session.id, "prompted", &att.who, None);
    if let Some(prompt) = params.given {
        session.prompted(prompt, att.id).await;
    }
    let ended = session.clone();
    let sent = link
        .request_then(method, params.own, move |result| {
            if let Some(asker) = ended.take_turn(turn) {
                ended.turn_ended(Some(asker), result);
            }
        })
        .await;
    if let Err(e) = sent
        && let Some(asker) = session.take_turn(turn)
    {
        session.turn_ended(Some(asker), Err(e));
    }
}

/// A request's params: as the chain takes them (under the chain's id), and as the client gave
/// them.
struct Asked {
    own: Option<RawJson>,
    given: Option<RawJson>,
}
