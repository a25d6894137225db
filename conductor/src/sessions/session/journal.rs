//! A session and its journal: each entry written as it enters the record, and a record
//! restored from the journal.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use sacp::jsonrpc::{Error, RawJson};
use serde_json::Value;

use super::super::record::{Entry, update_method};
use super::Session;
use crate::journal::{Body, Kept, Kind, Record};
use crate::lock::lock;

/// What a restored session's interrupted turn says, as the agent's last words in it.
pub(crate) const INTERRUPTED: &str =
    "[sacp] This turn was interrupted: the conductor restarted before it ended.";

impl Session {
    /// Writes `entry` to the journal (an agent's request is not history: it is not written).
    pub(super) fn journal(&self, entry: &Entry) {
        let Some(journal) = &self.shared.journal else {
            return;
        };
        // The message's bytes are shared with the record, not copied: the writer thread
        // makes the journal's line.
        let body = match entry {
            Entry::Notification { method, params, .. } => Body::Notification {
                method: method.clone(),
                params: params.clone(),
            },
            Entry::Prompt { params, .. } => Body::Prompt(params.clone()),
            Entry::TurnEnded { result, .. } => Body::TurnEnded(result.clone().map_err(|e| *e)),
            Entry::Ask(_) => return,
        };
        journal.record(Record::Entry {
            id: self.key.clone(),
            epoch: self.epoch(),
            seq: self.journaled.fetch_add(1, Ordering::Relaxed),
            body,
        });
    }

    /// Writes how the session began: the agent's id `own` and `{cwd, mcpServers, answer}`
    /// (and `parent`, the editor's id of the session a subagent's runs in).
    pub(in crate::sessions) fn began(&self, own: &str, setup: &Value) {
        if let Some(journal) = &self.shared.journal {
            self.remember_place(setup);
            journal.record(Record::Began {
                id: self.key.clone(),
                epoch: self.epoch(),
                own: own.to_owned(),
                setup: setup.to_string(),
            });
        }
    }

    /// Writes how a subagent's session began: in `parent`'s place (its `cwd` and MCP
    /// servers), as its child — so that after a restart it is restored like any session, and
    /// not once `parent` was closed.
    pub(in crate::sessions) fn began_in(&self, parent: &Session) {
        if self.shared.journal.is_none() {
            return;
        }
        let place = lock(&parent.place).clone().unwrap_or(Value::Null);
        let setup = serde_json::json!({
            "cwd": place["cwd"],
            "mcpServers": place.get("mcpServers").cloned().unwrap_or_else(|| serde_json::json!([])),
            "answer": Value::Null,
            "parent": parent.id,
        });
        self.began(&self.own, &setup);
    }

    /// Keeps where the session began (see [`Session::began_in`]).
    fn remember_place(&self, setup: &Value) {
        *lock(&self.place) = Some(serde_json::json!({
            "cwd": setup["cwd"],
            "mcpServers": setup["mcpServers"],
        }));
    }

    /// The session is loaded through its chain: its entries are journaled afresh, from the
    /// agent's replay on (see [`Record::Afresh`]).
    pub(in crate::sessions) fn journal_afresh(&self) {
        if let Some(journal) = &self.shared.journal {
            journal.record(Record::Afresh {
                id: self.key.clone(),
                epoch: self.epoch(),
            });
        }
    }

    /// The session was closed (or deleted; `with_parent`: the session it was a subagent of
    /// was): the journal deletes what it kept of it, and does not restore it.
    pub(in crate::sessions) fn journal_closed(&self, with_parent: bool) {
        if let Some(journal) = &self.shared.journal {
            journal.record(Record::Closed {
                id: self.key.clone(),
                epoch: self.epoch(),
                with_parent,
            });
        }
    }

    /// The session ended here without being closed: the journal names no holder for it any
    /// more, and the next claim of it (here or on another conductor) takes it.
    pub(in crate::sessions) fn journal_released(&self) {
        if let Some(journal) = &self.shared.journal {
            journal.record(Record::Released {
                id: self.key.clone(),
                epoch: self.epoch(),
            });
        }
    }

    /// The epoch under which this conductor holds the session (see `journal::hold`).
    pub(in crate::sessions) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }

    /// This conductor holds the session under `epoch` now (a claim took it).
    pub(in crate::sessions) fn set_epoch(&self, epoch: u64) {
        self.epoch.store(epoch, Ordering::Relaxed);
    }

    /// Fills the record with what the journal kept (not written again), then, if its last turn
    /// never ended, ends it as interrupted: the agent's [`INTERRUPTED`] and a `cancelled`
    /// stop, both written.
    pub(in crate::sessions) fn restore(self: &Arc<Self>, kept: &Kept) {
        self.remember_place(&kept.setup);
        let mut open_turn = false;
        let mut entries = Vec::with_capacity(kept.entries.len());
        for (kind, body) in &kept.entries {
            let entry = match kind {
                Kind::Notification => {
                    let method = body["method"].as_str().unwrap_or("session/update");
                    let method = if method == "session/update" {
                        update_method()
                    } else {
                        Arc::from(method)
                    };
                    match RawJson::to_raw(&body["params"]) {
                        Ok(params) => Entry::Notification {
                            method,
                            params,
                            echo: None,
                        },
                        Err(_) => continue,
                    }
                }
                Kind::Prompt => match RawJson::to_raw(body) {
                    Ok(params) => {
                        open_turn = true;
                        Entry::Prompt { params, echo: None }
                    }
                    Err(_) => continue,
                },
                Kind::TurnEnded => {
                    open_turn = false;
                    Entry::turn_ended(turn_end_of(body), None)
                }
            };
            entries.push(entry);
        }
        self.journaled.store(kept.next, Ordering::Relaxed);
        let mut then = Vec::new();
        if open_turn {
            let said = serde_json::json!({
                "sessionId": self.id,
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": INTERRUPTED},
                },
            });
            if let Ok(params) = RawJson::to_raw(&said) {
                then.push(Entry::Notification {
                    method: update_method(),
                    params,
                    echo: None,
                });
            }
            let stop = RawJson::to_raw(&serde_json::json!({"stopReason": "cancelled"}));
            then.push(Entry::turn_ended(stop, None));
        }
        self.with(|core, _| core.restore(entries, then));
    }
}

fn turn_end_of(body: &Value) -> Result<RawJson, Error> {
    match body.get("error") {
        Some(e) => Err(serde_json::from_value(e.clone())
            .unwrap_or_else(|_| Error::internal_error("the turn failed"))),
        None => RawJson::to_raw(&body["result"]),
    }
}

/// The updates an editor would have seen of a journaled session, for a fresh agent session
/// created with them as its history: the agent's updates, the prompts as
/// `user_message_chunk`s.
pub(crate) fn history_of(kept: &Kept) -> Vec<Value> {
    let mut out = Vec::new();
    for (kind, body) in &kept.entries {
        match kind {
            Kind::Notification if body["method"] == "session/update" => {
                out.push(body["params"]["update"].clone());
            }
            Kind::Prompt => {
                for block in body["prompt"].as_array().into_iter().flatten() {
                    out.push(serde_json::json!({
                        "sessionUpdate": "user_message_chunk",
                        "content": block,
                    }));
                }
            }
            _ => {}
        }
    }
    out
}
