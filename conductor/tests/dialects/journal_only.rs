//! What only the journal holds (see `journal.rs`): a session left by a killed conductor,
//! deleted with its subagents' words, and taken back with `session/attach` by the conductor
//! after it.

use std::path::Path;

use serde_json::json;

use crate::common::*;
use crate::journal::*;
use crate::raw::Raw;
use crate::remote::Listening;
use crate::restart::editor;

/// A session of one turn ("stream 2") journaled in `base`'s journal by a conductor then
/// killed, a second conductor on the same journal, and an editor connected to it.
async fn left_by_a_killed_conductor(base: &Path) -> (String, Listening, Raw) {
    let db = base.join("journal.db");
    let args = ["--journal", db.to_str().unwrap()];
    let mut first = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let mut ed = editor(&first.ws()).await;
    let session = new_session(&mut ed).await;
    goes_on(&mut ed, &session, 2).await;
    crate::restart::until_journaled(db.to_str().unwrap(), &session, "stream 2").await;
    first.kill().await;
    drop(ed);
    let second = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let ed = editor(&second.ws()).await;
    (session, second, ed)
}

/// `session/delete` of a session no chain holds, on a conductor started again on its journal:
/// the journal's copy goes (its words deleted, a row saying it was closed left), a load is
/// refused as for a closed session, and a delete of an id the journal never had is "not here".
#[tokio::test]
async fn deleting_a_session_only_the_journal_holds_deletes_its_words() {
    let base = fresh("delete");
    let (session, second, mut ed) = left_by_a_killed_conductor(&base).await;
    let deleted = ed
        .request("session/delete", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(deleted, json!({}));
    until_rows(
        "the deleted session's words gone",
        &base.join("journal.db"),
        &session,
        |(chunks, row)| *chunks == 0 && row.as_ref().is_some_and(|(closed, _)| *closed),
    )
    .await;
    let load = json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []});
    let refused = ed.request("session/load", load).await.unwrap_err();
    assert_eq!(refused["code"], -32002, "{refused}");
    assert_eq!(refused["data"]["ended"], "it was closed", "{refused}");
    // Deleted once: a second delete finds nothing to delete.
    let again = ed
        .request("session/delete", json!({"sessionId": session}))
        .await
        .unwrap_err();
    assert_eq!(again["code"], -32002, "{again}");
    let (own, _) = session.split_once('@').unwrap();
    let stranger = format!("{own}x@ffffffffffff");
    let unknown = ed
        .request("session/delete", json!({"sessionId": stranger}))
        .await
        .unwrap_err();
    assert!(
        unknown["message"]
            .as_str()
            .is_some_and(|m| m.contains(&stranger)),
        "{unknown}"
    );
    drop(second);
    let _ = std::fs::remove_dir_all(&base);
}

/// `session/delete` of a parent session only the journal holds deletes its subagents' words
/// too (at any depth the agent nested them), and a load of a subagent says it ended with its
/// parent.
#[tokio::test]
async fn deleting_a_parent_only_the_journal_holds_deletes_its_subagents_words() {
    let base = fresh("delete-parent");
    let db = base.join("journal.db");
    let args = ["--journal", db.to_str().unwrap()];
    let (parent, children) = subagents_left_by_a_killed_conductor(&db, 1).await;
    let child = &children[0];
    let second = crate::across_machines::conductor_listening(&args, &[agent()]).await;
    let mut ed = editor(&second.ws()).await;
    let deleted = ed
        .request("session/delete", json!({"sessionId": parent}))
        .await
        .unwrap();
    assert_eq!(deleted, json!({}));
    until_closed_with_parent(&db, child).await;
    refused_as_ended_with_parent(&mut ed, child).await;
    drop(second);
    let _ = std::fs::remove_dir_all(&base);
}

/// `session/attach` of a session of a conductor before this one restores it as `session/load`
/// does: the answer's history is the journal's, and the session goes on. An id of the layer's
/// shape that the journal never had is `-32001`.
#[tokio::test]
async fn a_session_of_a_conductor_before_is_taken_back_with_session_attach() {
    let base = fresh("attach");
    let (session, second, mut ed) = left_by_a_killed_conductor(&base).await;
    let attached = ed
        .request("session/attach", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(attached["sessionId"], session.as_str(), "{attached}");
    let said: Vec<&str> = attached["history"]
        .as_array()
        .unwrap_or_else(|| panic!("a history: {attached}"))
        .iter()
        .filter_map(|item| match item["method"].as_str()? {
            "session/update" => item["params"]["update"]["content"]["text"].as_str(),
            "session/prompt" => item["params"]["prompt"][0]["text"].as_str(),
            _ => None,
        })
        .collect();
    assert_eq!(said, ["stream 2", "chunk 1", "chunk 2"], "{attached}");
    goes_on(&mut ed, &session, 1).await;
    let (own, _) = session.split_once('@').unwrap();
    let stranger = format!("{own}x@ffffffffffff");
    let unknown = ed
        .request("session/attach", json!({"sessionId": stranger}))
        .await
        .unwrap_err();
    assert_eq!(unknown["code"], -32001, "{unknown}");
    drop(second);
    let _ = std::fs::remove_dir_all(&base);
}
