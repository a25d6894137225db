//! A toy agent and client speaking a three-message protocol over `sacp::jsonrpc`.
//!
//! The client sends `demo/prompt`; before answering, the agent asks the client
//! `demo/confirm` (a request in the other direction, awaited inside the agent's handler), then
//! streams one `demo/chunk` notification per word and answers with how many it sent. A
//! `demo/shout` notification from the client makes the agent send its text back upper-cased.

use std::sync::{Arc, Mutex};

use crate::lock::lock;
use sacp::jsonrpc::{Connection, JsonRpcNotification, JsonRpcRequest, Methods};
use serde::{Deserialize, Serialize};

/// Client → agent: answer a prompt.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Prompt {
    /// The prompt's text.
    pub text: String,
}

/// The agent's answer to [`Prompt`].
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PromptDone {
    /// `end_turn`, or `refused` when the client did not confirm.
    pub stop_reason: String,
    /// How many chunks were streamed before the answer.
    pub chunks: u32,
}

impl JsonRpcRequest for Prompt {
    const METHOD: &'static str = "demo/prompt";
    type Response = PromptDone;
}

/// Agent → client: may I go on?
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Confirm {
    /// What the agent asks.
    pub question: String,
}

/// The client's answer to [`Confirm`].
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Confirmed {
    /// Whether the agent may go on.
    pub approved: bool,
}

impl JsonRpcRequest for Confirm {
    const METHOD: &'static str = "demo/confirm";
    type Response = Confirmed;
}

/// Agent → client: one piece of the answer.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Chunk {
    /// The text of the piece.
    pub text: String,
}

impl JsonRpcNotification for Chunk {
    const METHOD: &'static str = "demo/chunk";
}

/// Client → agent: please say this back, loudly.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Shout {
    /// What to shout.
    pub text: String,
}

impl JsonRpcNotification for Shout {
    const METHOD: &'static str = "demo/shout";
}

/// The agent's side of the protocol.
pub fn agent() -> Methods {
    Methods::new()
        .on_request(|prompt: Prompt, client: Connection| async move {
            let words: Vec<&str> = prompt.text.split_whitespace().collect();
            let question = format!("May I echo {} words?", words.len());
            let Confirmed { approved } = client.request(Confirm { question }).await?;
            if !approved {
                return Ok(PromptDone {
                    stop_reason: "refused".into(),
                    chunks: 0,
                });
            }
            for word in &words {
                client
                    .notify(Chunk {
                        text: (*word).to_owned(),
                    })
                    .await?;
            }
            Ok(PromptDone {
                stop_reason: "end_turn".into(),
                chunks: words.len() as u32,
            })
        })
        .on_notification(|shout: Shout, client: Connection| async move {
            client
                .notify(Chunk {
                    text: shout.text.to_uppercase(),
                })
                .await
        })
}

/// What a client saw, in order.
pub type Transcript = Arc<Mutex<Vec<String>>>;

/// The client's side of the protocol: approves every question, records what arrives.
pub fn client(transcript: Transcript, approve: bool) -> Methods {
    let chunks = transcript.clone();
    Methods::new()
        .on_request(move |confirm: Confirm, _agent: Connection| {
            let transcript = transcript.clone();
            async move {
                record(&transcript, format!("agent asks: {}", confirm.question));
                Ok(Confirmed { approved: approve })
            }
        })
        .on_notification(move |chunk: Chunk, _agent: Connection| {
            let transcript = chunks.clone();
            async move {
                record(&transcript, format!("chunk: {}", chunk.text));
                Ok(())
            }
        })
}

/// Appends a line to a transcript.
pub fn record(transcript: &Transcript, line: String) {
    lock(transcript).push(line);
}

/// Takes the lines recorded so far.
pub fn take(transcript: &Transcript) -> Vec<String> {
    std::mem::take(&mut *lock(transcript))
}
