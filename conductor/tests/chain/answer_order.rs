//! Spec §2 both ways: an answer is never overtaken by what its sender sent after it, at any
//! hop. The test agent answers `then N` at once and streams `N` updates right behind the
//! answer; the editor must see the answer first, in every turn, whatever sits in between.

use serde_json::Value;

use crate::common::*;

const TURNS: usize = 20;
const AFTER: usize = 30;

/// Runs `TURNS` turns of `then AFTER` and fails at the first update that overtook its answer.
async fn every_answer_comes_first(args: &[String], what: &str) {
    let mut editor = Editor::start(conductor(), args);
    let session = editor.open_session().await;
    for turn in 1..=TURNS {
        let id = editor.send_prompt(&session, &format!("then {AFTER}")).await;
        let mut answered = false;
        let mut after = 0;
        while !answered || after < AFTER {
            let message = editor
                .next_message()
                .await
                .unwrap_or_else(|| panic!("{what}: the chain ended in turn {turn}"));
            if message.get("method").is_none() {
                assert_eq!(message["id"], id, "{what}: {message}");
                assert_eq!(message["result"]["stopReason"], "end_turn", "{message}");
                assert_eq!(
                    after, 0,
                    "{what}, turn {turn}: {after} updates sent after the answer overtook it"
                );
                answered = true;
                continue;
            }
            after += 1;
            let text = text_of(&message);
            assert!(
                text.ends_with(&format!("after {after}")),
                "{what}, turn {turn}: update {after} is {text:?} ({message})"
            );
        }
    }
    editor.close_and_expect_a_clean_exit().await;
}

fn text_of(message: &Value) -> String {
    message["params"]["update"]["content"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn updates_sent_after_an_answer_never_overtake_it_through_pass_through_proxies() {
    for proxies in [0, 1, 3] {
        every_answer_comes_first(&flat_chain(proxies), &format!("{proxies} pass-through")).await;
    }
}

#[tokio::test]
async fn updates_sent_after_an_answer_never_overtake_it_through_awaiting_prompt_handlers() {
    // prefix-proxy's prompt handler awaits the agent and transforms every chunk; audit-proxy's
    // awaits the agent with state kept around the await.
    let prefix = format!("{} '>> '", quoted(&example("prefix-proxy")));
    let args = vec!["agent".to_owned(), prefix, agent()];
    every_answer_comes_first(&args, "prefix-proxy").await;
    every_answer_comes_first(&chain_of("audit-proxy", 3), "3 audit-proxies").await;
}
