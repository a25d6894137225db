//! Restoring a session from the journal: a `session/load` (or `session/resume`, or
//! `session/attach`) of an id of this layer's shape whose chain is not here — a session of
//! this conductor before it restarted, or of another conductor sharing the journal — or of a
//! session that ended here, not closed ([`Layer::restorable`]), starts the client's chain and
//! restores the agent's side, in this order: `session/resume` when the agent offers it, else
//! `session/load` (its replay taken by the layer, not sent to the client again), else a new
//! session created with the journal's history (`_meta.sacp.history`, which the chain gives
//! the agent or tells it). A path the agent offers but that fails falls through to the next.
//! The session keeps the editor's id; its record is the journal's, a turn that never ended
//! shown interrupted (no prompt is sent again); then the client is attached as for a live
//! session.
//!
//! Every restore (and every `session/delete` of a session only the journal has) first claims
//! the session ([`Journal::claim`]): one that another live conductor holds is refused with
//! where it lives ([`super::held_error`]); one whose holder is gone is this conductor's from
//! then on, under a new epoch.

use std::sync::Arc;

use sacp::jsonrpc::{Error, RawJson, Responder};
use serde_json::{Map, Value, json};

use super::chain::answer_of;
use super::client::Client;
use super::offers::Offers;
use super::session::{From, Session, history_of};
use super::{CLOSED, Layer, PARENT_CLOSED, split_id};
use crate::journal::{Claim, Deposed, Journal, Kept, MAX_DEPTH, Record};
use crate::lock::lock;

/// `{cwd, mcpServers, answer}`: how a session began, as the journal keeps it.
pub(super) fn setup_of(params: Option<&RawJson>, answer: &RawJson) -> Value {
    let params = params
        .and_then(|p| p.parse::<Map<String, Value>>().ok())
        .unwrap_or_default();
    json!({
        "cwd": params.get("cwd").cloned().unwrap_or(Value::Null),
        "mcpServers": params.get("mcpServers").cloned().unwrap_or_else(|| json!([])),
        "answer": answer.parse::<Value>().unwrap_or(Value::Null),
    })
}

impl Layer {
    /// Restores the session `id` for `client` and attaches it (replaying its record when
    /// `replay`), or answers why not.
    pub(super) fn restore_or_refuse(
        self: &Arc<Self>,
        client: &Arc<Client>,
        id: String,
        replay: bool,
        responder: Responder,
    ) {
        let (layer, client) = (self.clone(), client.clone());
        tokio::spawn(async move {
            match layer.restore(&client, &id).await {
                Ok(session) => {
                    let answer = super::client::load_answer(session.setup());
                    let from = if replay { From::Oldest } else { From::Now };
                    layer.attach(&client, &session, from, responder, answer, From::Now);
                }
                Err(e) => responder.answer_error(e),
            }
        });
    }

    /// `session/delete` of a session no chain here holds: what the journal kept of it is
    /// deleted (its agent's own copy, if any, is the agent's), or the answer says it is not
    /// here.
    pub(super) fn forget(self: &Arc<Self>, id: String, responder: Responder) {
        let layer = self.clone();
        tokio::spawn(async move {
            let Some(journal) = layer.shared.journal.clone() else {
                return responder.answer_error(layer.not_here(&id));
            };
            match journal.claim(&id, false).await {
                Ok(Claim::Taken { epoch, .. }) if layer.why_ended(&id) != Some(CLOSED) => {
                    journal.record(Record::Closed {
                        id: Arc::from(id.as_str()),
                        epoch,
                        with_parent: false,
                    });
                    lock(&layer.ended).insert(&id, CLOSED);
                    tracing::info!(session = id, "deleted from the journal");
                    responder.answer_raw(RawJson::to_raw(&json!({})));
                }
                Ok(Claim::Held { by }) => responder.answer_error(super::held_error(&id, &by)),
                Ok(_) => responder.answer_error(layer.not_here(&id)),
                Err(e) => responder.answer_error(Error::internal_error(e.to_string())),
            }
        });
    }

    /// Whether a session `id` that is not live here may be in the journal for this conductor to
    /// restore: it ended here, not closed; or its id is of this layer's shape and names no
    /// chain here (a conductor's before this one, or another's sharing the journal).
    pub(super) fn restorable(&self, id: &str) -> bool {
        if self.shared.journal.is_none() {
            return false;
        }
        match self.why_ended(id) {
            Some(why) => why != CLOSED,
            None => split_id(id).is_some_and(|(_, tag)| self.chain(tag).is_none()),
        }
    }

    pub(super) async fn restore(
        self: &Arc<Self>,
        client: &Arc<Client>,
        id: &str,
    ) -> Result<Arc<Session>, Error> {
        let journal = self
            .shared
            .journal
            .clone()
            .ok_or_else(|| self.not_here(id))?;
        let (kept, epoch) = match journal.claim(id, false).await {
            Ok(Claim::Taken { kept, epoch }) => (kept, epoch),
            Ok(Claim::Unknown) => return Err(self.not_here(id)),
            Ok(Claim::Held { by }) => return Err(super::held_error(id, &by)),
            Ok(Claim::Closed { with_parent }) => {
                let with_parent = with_parent || self.why_ended(id) == Some(PARENT_CLOSED);
                let why = if with_parent { PARENT_CLOSED } else { CLOSED };
                return Err(super::ended_error(id, Some(why)));
            }
            Err(e) => return Err(Error::internal_error(e.to_string())),
        };
        let parent = kept.setup["parent"].as_str();
        if let Some(parent) = parent
            && self.parent_closed(&journal, parent).await?
        {
            journal.record(Record::Closed {
                id: Arc::from(id),
                epoch,
                with_parent: true,
            });
            lock(&self.ended).insert(id, PARENT_CLOSED);
            return Err(super::ended_error(id, Some(PARENT_CLOSED)));
        }
        // Restored meanwhile, for another client.
        if let Some(session) = self.session(id) {
            return Ok(session);
        }
        let link = self.own_chain(client);
        let mut offers = Offers::of(client.initialized().as_ref());
        let closes = offers.close;
        // The agent's id of the session names another session of this chain now (an agent
        // that numbers its sessions afresh after a restart gave it to one restored before):
        // taking it back by that id would take the other one. It comes back with its history.
        if lock(&self.sessions).own(&link, &kept.own).is_some() {
            offers = Offers::default();
        }
        let (path, own, answer) = match bring_back(&link, offers, &kept, id).await {
            Ok(back) => back,
            Err(e) => {
                // Not taken back after all: anyone may take it.
                if self.session(id).is_none() {
                    journal.record(Record::Released {
                        id: Arc::from(id),
                        epoch,
                    });
                }
                return Err(e);
            }
        };
        tracing::info!(session = id, path, agent_session = %own, lost = kept.lost, "restored from the journal");
        if let Some(session) = self.session(id) {
            return Ok(session);
        }
        let (session, _) = self.learn(&link, &own, Some(id), parent);
        session.set_epoch(epoch);
        session.close_with_parent.store(
            parent.is_some() && closes,
            std::sync::atomic::Ordering::Relaxed,
        );
        session.restore(&kept);
        let event = match path {
            "resume" => "restored by session/resume",
            "load" => "restored by session/load",
            _ => "restored with its history",
        };
        let who = super::attach::Who {
            id: client.name.clone(),
            connection: client.name.clone(),
            info: client.info(),
            role: super::attach::Role::Controller,
        };
        link.note(id, event, &who, None);
        let mut setup = answer.parse::<Map<String, Value>>().unwrap_or_default();
        setup.insert("sessionId".into(), Value::String(own.clone()));
        session.set_setup(&RawJson::to_raw(&setup)?);
        if own != kept.own {
            let mut began = kept.setup.clone();
            began["answer"] = Value::Object(setup);
            session.began(&own, &began);
        }
        if kept.lost > 0 || journal.torn() {
            tell_lost(&session, id, kept.lost, journal.torn()).await?;
        }
        Ok(session)
    }
}

impl Layer {
    /// Hears, for as long as the layer lives, which sessions the journal refused records of
    /// (see [`Layer::deposed`]).
    pub(super) fn watch_deposed(self: &Arc<Self>) {
        let Some(mut deposed) = self.shared.journal.as_ref().and_then(Journal::deposed) else {
            return;
        };
        let layer = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(d) = deposed.recv().await {
                let Some(layer) = layer.upgrade() else {
                    return;
                };
                layer.deposed(&d);
            }
        });
    }

    /// Another conductor took the session over while this one held it (its lease had lapsed):
    /// the journal refused this one's records of it. Its clients are told where it lives now
    /// (`_sacp/session_moved`, after what was queued for them), its turn is cancelled and its
    /// session closed at the agent, and it ends here; a later load here is told where it is.
    fn deposed(self: &Arc<Self>, d: &Deposed) {
        let Some(session) = self.session(&d.id) else {
            return;
        };
        // A newer hold of it here (a claim took it back since): not this one.
        if session.epoch() > d.epoch {
            return;
        }
        let by = d.held_by.as_deref().unwrap_or("another conductor");
        tracing::warn!(session = %d.id, held_by = by, "another conductor took this session over: it ends here");
        session.moved(by);
        lock(&self.ended).insert(&d.id, super::MOVED);
        let Some(link) = self.link_of(&session) else {
            return session.close();
        };
        if let Ok(params) = RawJson::to_raw(&json!({"sessionId": session.own})) {
            let (cancel, own) = (link.clone(), session.own.clone());
            tokio::spawn(async move {
                let _ = cancel.notify("session/cancel", Some(params)).await;
                super::close_at_agent(cancel, own);
            });
        }
        self.remove(&session, &link, Some(super::MOVED));
    }

    /// Whether the session `parent` (a subagent's, restored) or one it ran in was closed:
    /// here, or in the journal.
    async fn parent_closed(&self, journal: &Journal, parent: &str) -> Result<bool, Error> {
        let mut next = Some(parent.to_owned());
        // Subagents of subagents, to a depth no agent nests them.
        for _ in 0..MAX_DEPTH {
            let Some(parent) = next.take() else {
                break;
            };
            if matches!(self.why_ended(&parent), Some(CLOSED | PARENT_CLOSED)) {
                return Ok(true);
            }
            if self.session(&parent).is_some() {
                return Ok(false);
            }
            let row = journal.row(&parent).await;
            match row.map_err(|e| Error::internal_error(e.to_string()))? {
                Some(kept) if kept.closed => return Ok(true),
                Some(kept) => next = kept.setup["parent"].as_str().map(str::to_owned),
                None => break,
            }
        }
        Ok(false)
    }
}

/// Brings a journaled session back on `link`'s chain, by the first path the agent offers:
/// `session/resume`, else `session/load` (its replay taken by the layer, which has it), else a
/// `session/new` with the journal's history. The path, the agent's id and its answer.
async fn bring_back(
    link: &Arc<super::chain::ChainLink>,
    offers: Offers,
    kept: &Kept,
    id: &str,
) -> Result<(&'static str, String, RawJson), Error> {
    let asked = |own: &str| {
        RawJson::to_raw(&json!({
            "sessionId": own,
            "cwd": kept.setup["cwd"],
            "mcpServers": kept.setup["mcpServers"],
        }))
    };
    let mut restored: Option<(&'static str, String, RawJson)> = None;
    if offers.resume {
        match link
            .request("session/resume", Some(asked(&kept.own)?))
            .await
        {
            Ok(waiting) => match answer_of(waiting).await {
                Ok(answer) => restored = Some(("resume", kept.own.clone(), answer)),
                Err(e) => tracing::info!(session = id, "session/resume failed, next path: {e}"),
            },
            Err(e) => return Err(e),
        }
    }
    if restored.is_none() && offers.load {
        // What the agent replays is the journal's already: the layer takes it.
        link.restoring(&kept.own, true);
        let loaded = match link.request("session/load", Some(asked(&kept.own)?)).await {
            Ok(waiting) => answer_of(waiting).await,
            Err(e) => Err(e),
        };
        link.restoring(&kept.own, false);
        match loaded {
            Ok(answer) => restored = Some(("load", kept.own.clone(), answer)),
            Err(e) => tracing::info!(session = id, "session/load failed, next path: {e}"),
        }
    }
    if restored.is_none() {
        let params = json!({
            "cwd": kept.setup["cwd"],
            "mcpServers": kept.setup["mcpServers"],
            "_meta": {"sacp": {sacp::protocol::history::HISTORY: history_of(kept)}},
        });
        let answer = answer_of(
            link.request("session/new", Some(RawJson::to_raw(&params)?))
                .await?,
        )
        .await?;
        let own = answer
            .plain_str("sessionId")
            .map(str::to_owned)
            .ok_or_else(|| Error::internal_error("the agent's session/new gave no sessionId"))?;
        restored = Some(("history", own, answer));
    }
    restored.ok_or_else(|| Error::internal_error("no way to restore the session"))
}

/// The notice, in a restored session's record, that the journal lost `lost` records of it, or
/// that its last write was `torn`.
async fn tell_lost(session: &Session, id: &str, lost: u64, torn: bool) -> Result<(), Error> {
    tracing::warn!(
        session = id,
        lost = lost,
        torn = torn,
        "the journal lost records of this session (or its last write was torn): its history may be incomplete"
    );
    let mut notice = json!({"sessionId": id, "lost": lost});
    if torn {
        notice["torn"] = Value::Bool(true);
    }
    session
        .append(
            std::sync::Arc::from(HISTORY_INCOMPLETE),
            RawJson::to_raw(&notice)?,
            None,
            None,
        )
        .await;
    Ok(())
}

/// The layer's notice, in a restored session's record, that the journal lost records of it
/// (`lost`: how many), or that the journal's last write was found torn when it was opened
/// (`torn: true`: the session may end before its last turns).
pub(crate) const HISTORY_INCOMPLETE: &str = "_sacp/history_incomplete";
