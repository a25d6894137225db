//! A client speaking raw JSON-RPC frames, for the tests of the session layer: what it sends,
//! and exactly what reaches it (a `$/cancel_request`, say).

use std::collections::VecDeque;
use std::time::Duration;

use sacp::jsonrpc::{
    Id, Inbound, Message, MessageReader, MessageWriter, Notification, RawJson, Request, Response,
    Transport,
};
use sacp::testing::within;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::common::*;

/// A client speaking raw JSON-RPC frames: what it sends, exactly what it receives.
pub(crate) struct Raw {
    pub(crate) name: &'static str,
    out: mpsc::Sender<Message>,
    inbox: mpsc::Receiver<Message>,
    /// Received, not yet taken by the test.
    pub(crate) held: VecDeque<Message>,
    /// Everything received that the test took or set aside, in arrival order.
    pub(crate) log: Vec<Message>,
    next: i64,
}

impl Raw {
    pub(crate) fn new(name: &'static str, transport: impl Transport) -> Raw {
        let (mut reader, mut writer) = transport.split();
        let (to_test, inbox) = mpsc::channel(1 << 16);
        tokio::spawn(async move {
            while let Ok(Some(inbound)) = reader.read().await {
                if let Inbound::Message(m) = inbound
                    && to_test.send(m).await.is_err()
                {
                    return;
                }
            }
        });
        let (out, mut outbox) = mpsc::channel::<Message>(256);
        tokio::spawn(async move {
            while let Some(m) = outbox.recv().await {
                if writer.write(&mut vec![m]).await.is_err() {
                    return;
                }
            }
            let _ = writer.close().await;
        });
        Raw {
            name,
            out,
            inbox,
            held: VecDeque::new(),
            log: Vec::new(),
            next: 1000,
        }
    }

    pub(crate) async fn send(&self, message: Message) {
        within("a frame to go", self.out.send(message))
            .await
            .expect("the client's writer is gone");
    }

    /// Sends a request: its id.
    pub(crate) async fn ask(&mut self, method: &str, params: Value) -> Id {
        self.next += 1;
        let id = Id::Number(self.next);
        let request = Request {
            id: id.clone(),
            method: method.to_owned(),
            params: Some(RawJson::to_raw(&params).unwrap()),
        };
        self.send(Message::Request(request)).await;
        id
    }

    /// A request and its answer (the result, or the error object).
    pub(crate) async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.ask(method, params).await;
        self.answer_to(&id).await
    }

    pub(crate) async fn answer_to(&mut self, id: &Id) -> Result<Value, Value> {
        let what = format!("{}: the answer to {id:?}", self.name);
        match self
            .until(&what, |m| matches!(m, Message::Response(r) if &r.id == id))
            .await
        {
            Message::Response(r) => match r.into_result() {
                Ok(raw) => Ok(raw.parse().unwrap()),
                Err(e) => Err(serde_json::to_value(&e).unwrap()),
            },
            _ => unreachable!(),
        }
    }

    pub(crate) async fn notify(&self, method: &str, params: Value) {
        let n = Notification {
            method: method.to_owned(),
            params: Some(RawJson::to_raw(&params).unwrap()),
        };
        self.send(Message::Notification(n)).await;
    }

    pub(crate) async fn reply(&self, id: Id, result: Value) {
        let r = Response::ok(id, RawJson::to_raw(&result).unwrap());
        self.send(Message::Response(r)).await;
    }

    /// The first message received (held or new) that `pred` takes; those before it stay held.
    pub(crate) async fn until(&mut self, what: &str, pred: impl Fn(&Message) -> bool) -> Message {
        if let Some(i) = self.held.iter().position(&pred) {
            return self.held.remove(i).unwrap();
        }
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let next = tokio::time::timeout_at(deadline, self.inbox.recv()).await;
            match next {
                Ok(Some(m)) => {
                    self.log.push(m.clone());
                    if pred(&m) {
                        return m;
                    }
                    self.held.push_back(m);
                }
                Ok(None) => panic!("{what}: the connection ended; {}", self.last_held()),
                Err(_) => panic!("timed out waiting for {what}; {}", self.last_held()),
            }
        }
    }

    /// The last few messages held, for a failure's message.
    pub(crate) fn last_held(&self) -> String {
        let n = self.held.len();
        let last: Vec<String> = self
            .held
            .iter()
            .skip(n.saturating_sub(3))
            .map(|m| format!("{m:?}").chars().take(300).collect())
            .collect();
        format!("{n} held, the last: {last:?}")
    }

    /// Whether anything that `pred` takes arrives within `wait` (taking it).
    pub(crate) async fn gets_within(
        &mut self,
        wait: Duration,
        pred: impl Fn(&Message) -> bool,
    ) -> bool {
        if let Some(i) = self.held.iter().position(&pred) {
            self.held.remove(i);
            return true;
        }
        let deadline = tokio::time::Instant::now() + wait;
        while let Ok(Some(m)) = tokio::time::timeout_at(deadline, self.inbox.recv()).await {
            self.log.push(m.clone());
            if pred(&m) {
                return true;
            }
            self.held.push_back(m);
        }
        false
    }

    /// A request of the agent's with `method` (taken).
    pub(crate) async fn asked(&mut self, method: &str) -> (Id, Value) {
        let what = format!("{}: a {method} request", self.name);
        match self
            .until(
                &what,
                |m| matches!(m, Message::Request(r) if r.method == method),
            )
            .await
        {
            Message::Request(r) => (r.id, params_of(r.params.as_ref())),
            _ => unreachable!(),
        }
    }

    /// Whether a notification `method` was received (taken or held).
    pub(crate) fn received(&self, method: &str) -> bool {
        self.log.iter().any(|m| is_notification(m, method))
    }

    /// The `session/update` notifications received so far that the test took or held, as
    /// their params, in order.
    pub(crate) fn updates(&self) -> Vec<Value> {
        self.log
            .iter()
            .filter_map(|m| match m {
                Message::Notification(n) if n.method == "session/update" => {
                    Some(params_of(n.params.as_ref()))
                }
                _ => None,
            })
            .collect()
    }

    /// Every message received that the test took or set aside, in arrival order.
    pub(crate) fn messages(&self) -> &[Message] {
        &self.log
    }

    /// Forgets what it holds and has logged.
    pub(crate) fn clear(&mut self) {
        self.held.clear();
        self.log.clear();
    }
}

pub(crate) fn params_of(params: Option<&RawJson>) -> Value {
    params.map_or(Value::Null, |p| p.parse().unwrap())
}

pub(crate) fn is_notification(m: &Message, method: &str) -> bool {
    matches!(m, Message::Notification(n) if n.method == method)
}

/// A text update's text, if `update` is an agent message chunk.
pub(crate) fn said(update: &Value) -> Option<&str> {
    (update["update"]["sessionUpdate"] == "agent_message_chunk")
        .then(|| update["update"]["content"]["text"].as_str())
        .flatten()
}
