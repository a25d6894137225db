//! A conductor stand-in: one connection to the proxy under test, playing the editor (plain
//! messages) and the agent (`_proxy/successor/*` messages), with a transcript of what it got.

use std::future::Future;
use std::sync::{Arc, Mutex};

use sacp::jsonrpc::{
    Connection, Error, Handler, Notification, RawJson, Request, Responder, Work, channel,
};
use sacp::protocol::envelope::{self, SUCCESSOR_NOTIFICATION, SUCCESSOR_REQUEST};
use sacp::proxy::Proxy;

pub use crate::patience::{Tally, within};

pub fn raw(text: &str) -> RawJson {
    RawJson::from_string(text).unwrap()
}

pub use sacp::jsonrpc::BoxFuture;
/// What the stand-in answers a request with: `(method, params, connection to the proxy)`.
pub type Answer = Arc<
    dyn Fn(String, Option<RawJson>, Connection) -> BoxFuture<Result<RawJson, Error>> + Send + Sync,
>;

/// Answers every request with `{}`.
pub fn empty_answers() -> Answer {
    Arc::new(|_, _, _| Box::pin(async { Ok(RawJson::empty_object()) }))
}

/// What the stand-in received, one line per message, in arrival order:
/// `agent <- request session/prompt {...}` or `editor <- notification session/update {...}`.
#[derive(Clone, Default)]
pub struct Transcript(Arc<(Mutex<Vec<String>>, tokio::sync::Notify)>);

impl Transcript {
    fn push(&self, line: String) {
        self.0.0.lock().unwrap().push(line);
        self.0.1.notify_waiters();
    }

    pub fn lines(&self) -> Vec<String> {
        self.0.0.lock().unwrap().clone()
    }

    /// Completes once the transcript has `n` lines; returns them.
    pub async fn reaches(&self, n: usize) -> Vec<String> {
        within(&format!("{n} lines in the transcript"), async {
            loop {
                let changed = self.0.1.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                let lines = self.lines();
                if lines.len() >= n {
                    return lines;
                }
                changed.await;
            }
        })
        .await
    }
}

impl std::fmt::Debug for Transcript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for line in self.lines() {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

struct StandIn {
    transcript: Transcript,
    agent: Answer,
    editor: Answer,
}

fn line(who: &str, kind: &str, method: &str, params: &Option<RawJson>) -> String {
    match params {
        Some(p) => format!("{who} <- {kind} {method} {p}"),
        None => format!("{who} <- {kind} {method}"),
    }
}

/// How the transcript marks an envelope of another dialect than ours: `" via METHOD"`.
fn via(method: &str) -> &'static str {
    match method {
        "_proxy/successor" => " via _proxy/successor",
        "proxy/successor" => " via proxy/successor",
        _ => "",
    }
}

impl Handler for StandIn {
    type Lane = ();

    fn handle_request(
        &mut self,
        request: Request,
        responder: Responder,
        conn: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static> {
        let work = if envelope::is_envelope(&request.method) {
            let via = via(&request.method);
            envelope::unwrap(request.params.as_ref()).map(|(method, params)| {
                self.transcript
                    .push(line("agent", "request", &method, &params) + via);
                (self.agent)(method, params, conn.clone())
            })
        } else {
            self.transcript
                .push(line("editor", "request", &request.method, &request.params));
            Ok((self.editor)(request.method, request.params, conn.clone()))
        };
        let work = async move {
            match work {
                Ok(work) => responder.answer_raw(work.await),
                Err(e) => responder.answer_error(e),
            }
        };
        Work::start(work, ())
    }

    fn handle_notification(
        &mut self,
        n: Notification,
        _conn: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static> {
        if envelope::is_envelope(&n.method) {
            let via = via(&n.method);
            match envelope::unwrap(n.params.as_ref()) {
                Ok((method, params)) => self
                    .transcript
                    .push(line("agent", "notification", &method, &params) + via),
                Err(e) => self.transcript.push(format!("bad envelope: {e}")),
            }
        } else {
            self.transcript
                .push(line("editor", "notification", &n.method, &n.params));
        }
        Work::in_turn(async {}, ())
    }
}

/// A proxy under test, and the stand-in's end of its connection.
pub struct Chain {
    pub conductor: Connection,
    pub transcript: Transcript,
}

pub fn chain<P: Proxy>(proxy: P, agent: Answer, editor: Answer) -> Chain {
    chain_with(proxy, agent, editor, sacp::jsonrpc::Limits::default())
}

/// [`chain`] with the proxy's connection limits set.
pub fn chain_with<P: Proxy>(
    proxy: P,
    agent: Answer,
    editor: Answer,
    limits: sacp::jsonrpc::Limits,
) -> Chain {
    let (ours, theirs) = channel();
    let builder = sacp::proxy::builder().limits(limits);
    let _proxy = sacp::proxy::spawn_with(proxy, theirs, builder);
    let transcript = Transcript::default();
    let conductor = Connection::builder().name("proxy").spawn(
        ours,
        StandIn {
            transcript: transcript.clone(),
            agent,
            editor,
        },
    );
    Chain {
        conductor,
        transcript,
    }
}

pub const OFFER: &str = r#"{"protocolVersion":1,"clientCapabilities":{},"_meta":{"proxy":true}}"#;

impl Chain {
    /// Sends a request as the editor.
    pub async fn request_as_editor(&self, method: &str, params: &str) -> Result<RawJson, Error> {
        within(
            method,
            self.conductor.request_raw(method, Some(raw(params))),
        )
        .await
    }

    pub async fn notify_from_editor(&self, method: &str, params: &str) {
        within(method, self.conductor.notify_raw(method, Some(raw(params))))
            .await
            .unwrap();
    }

    /// Sends a request as the agent (wrapped, as the conductor delivers it).
    pub async fn request_as_agent(&self, method: &str, params: &str) -> Result<RawJson, Error> {
        let wrapped = envelope::wrap(method, Some(&raw(params)));
        within(
            method,
            self.conductor.request_raw(SUCCESSOR_REQUEST, Some(wrapped)),
        )
        .await
    }

    pub async fn notify_from_agent(&self, method: &str, params: &str) {
        agent_notifies(&self.conductor, method, params).await;
    }

    /// Waits until the transcript has `n` lines.
    pub async fn wait_for_lines(&self, n: usize) -> Vec<String> {
        self.transcript.reaches(n).await
    }
}

/// Sends a notification to the proxy as the agent would (from inside an answer).
pub async fn agent_notifies(conn: &Connection, method: &str, params: &str) {
    let wrapped = envelope::wrap(method, Some(&raw(params)));
    within(
        method,
        conn.notify_raw(SUCCESSOR_NOTIFICATION, Some(wrapped)),
    )
    .await
    .unwrap();
}
