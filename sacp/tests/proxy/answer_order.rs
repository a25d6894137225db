//! Spec §2 both ways, in process: an agent answers a prompt and at once streams updates; at the
//! moment the editor's side gets the answer, none of those updates may have come before it.
//!
//! The conductor stand-in awaits the prompt in a task of its connection, so its own lane holds
//! the updates behind the answer until that task has looked at what came before it.

use std::future::Future;
use std::sync::{Arc, Mutex};

use sacp::acp::{ContentBlock, PromptRequest, PromptResponse, SessionNotification, SessionUpdate};
use sacp::jsonrpc::{
    Connection, Handler, Notification, RawJson, Request, Responder, Work, channel,
};
use sacp::protocol::envelope::{self, SUCCESSOR_NOTIFICATION, SUCCESSOR_REQUEST};
use sacp::proxy::{Cx, Proxy};
use tokio::sync::oneshot;

use crate::common::{Tally, raw, within};

const AFTER: usize = 40;

/// Plays the agent (answers `session/prompt`, then streams `AFTER` updates right behind the
/// answer) and records the updates that reach the editor.
struct StandIn {
    updates: Arc<Mutex<Vec<String>>>,
    count: Arc<Tally>,
}

impl Handler for StandIn {
    type Lane = ();

    fn handle_request(
        &mut self,
        request: Request,
        responder: Responder,
        conn: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static> {
        let conn = conn.clone();
        let work = async move {
            if request.method != SUCCESSOR_REQUEST {
                responder.answer_raw(Ok(RawJson::empty_object()));
                return;
            }
            responder.answer_raw(Ok(raw(r#"{"stopReason":"end_turn"}"#)));
            for i in 1..=AFTER {
                let update = format!(
                    r#"{{"sessionId":"s1","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"after {i}"}}}}}}"#
                );
                let wrapped = envelope::wrap("session/update", Some(&raw(&update)));
                if conn
                    .notify_raw(SUCCESSOR_NOTIFICATION, Some(wrapped))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        };
        Work::start(work, ())
    }

    fn handle_notification(
        &mut self,
        notification: Notification,
        _conn: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static> {
        let (updates, count) = (self.updates.clone(), self.count.clone());
        // In the lane's turn: behind an answer that holds it.
        Work::in_turn(
            async move {
                if notification.method == "session/update" {
                    let text = notification
                        .params
                        .map(|p| p.to_string())
                        .unwrap_or_default();
                    updates.lock().unwrap().push(text);
                    count.add();
                }
            },
            (),
        )
    }
}

/// Runs `turns` prompts through `proxy`; fails at the first update that overtook its answer.
async fn every_answer_comes_first<P: Proxy>(proxy: P, turns: usize) {
    let (ours, theirs) = channel();
    let updates = Arc::new(Mutex::new(Vec::new()));
    let count = Arc::new(Tally::default());
    let conductor = Connection::builder().name("stand-in").spawn(
        ours,
        StandIn {
            updates: updates.clone(),
            count: count.clone(),
        },
    );
    let _proxy = sacp::proxy::spawn(proxy, theirs);
    for turn in 1..=turns {
        let (seen, when_answered) = oneshot::channel();
        conductor.spawn({
            let (conductor, updates) = (conductor.clone(), updates.clone());
            async move {
                let params = raw(r#"{"sessionId":"s1","prompt":[]}"#);
                let answer = conductor.request_raw("session/prompt", Some(params)).await;
                let before = updates.lock().unwrap().len();
                let _ = seen.send((answer, before));
            }
        });
        let (answer, before) = within("the prompt's answer", when_answered).await.unwrap();
        assert_eq!(answer.unwrap().as_str(), r#"{"stopReason":"end_turn"}"#);
        let expected = (turn - 1) * AFTER;
        assert_eq!(
            before,
            expected,
            "turn {turn}: {} updates sent after the answer overtook it",
            before - expected
        );
        // The turn's updates all come, in order, before the next prompt.
        count
            .reaches(turn * AFTER, "the updates after the answer")
            .await;
        let updates = updates.lock().unwrap();
        for (i, update) in updates[expected..].iter().enumerate() {
            assert!(update.contains(&format!("after {}", i + 1)), "{update}");
        }
    }
}

struct PassThrough;

#[sacp::proxy]
impl PassThrough {}

/// Awaits the agent in its prompt handler and rewrites every chunk.
struct Rewriter;

#[sacp::proxy]
impl Rewriter {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let answer = cx.successor().request(req).await?;
        Ok(answer)
    }

    #[on_notification(from = agent)]
    async fn update(&self, mut n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        if let SessionUpdate::AgentMessageChunk(chunk) = &mut n.update
            && let ContentBlock::Text(text) = &mut chunk.content
        {
            text.text.insert_str(0, "> ");
        }
        cx.client().notify(n).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_streamed_after_an_answer_never_overtake_it_through_a_forwarding_proxy() {
    every_answer_comes_first(PassThrough, 30).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_streamed_after_an_answer_never_overtake_it_through_an_awaiting_handler() {
    every_answer_comes_first(Rewriter, 30).await;
}
