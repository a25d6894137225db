//! What lossless typing costs a typed hop (see `sacp::jsonrpc::lossless`): reading an ACP
//! message into its type and writing it again, per message, against plain serde (what a typed
//! hop cost before: parse, serialize), for a streamed chunk and a prompt of a few kilobytes —
//! passed on unchanged, changed (the chunk's text, as `prefix-proxy` does), and carrying fields
//! newer than the schema. Untyped forwarding parses nothing and is not measured here.
//!
//! ```text
//! cargo bench -p sacp-sdk --bench lossless          # full run
//! cargo bench -p sacp-sdk --bench lossless -- 0.1   # a tenth of the work
//! ```

#![allow(clippy::print_stdout, missing_docs)]

use std::hint::black_box;
#[path = "support/timing.rs"]
mod timing;

use timing::per_call;

use sacp::acp::{ContentBlock, PromptRequest, SessionNotification, SessionUpdate};
use sacp::jsonrpc::{RawJson, lossless};

const CHUNK: &str = r#"{"sessionId":"session-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Here is the next part of the answer, about as long as a model's chunk."}}}"#;
const CHUNK_FUTURE: &str = r#"{"sessionId":"session-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Here is the next part of the answer, about as long as a model's chunk.","futureAnno":{"x":1}},"futureUpd":true},"futureParam":[1,null]}"#;

fn prompt() -> String {
    let blocks: Vec<String> = (0..8)
        .map(|i| {
            format!(
                r#"{{"type":"text","text":"{} {i}"}}"#,
                "Context line of a prompt, repeated to make it a few kilobytes long.".repeat(6)
            )
        })
        .collect();
    format!(
        r#"{{"sessionId":"session-1","prompt":[{}]}}"#,
        blocks.join(",")
    )
}

fn plain<T: serde::Serialize + serde::de::DeserializeOwned>(raw: &RawJson) -> RawJson {
    let value: T = raw.parse().unwrap();
    RawJson::to_raw(&value).unwrap()
}

fn chunk_changed(raw: &RawJson) -> RawJson {
    let mut n: SessionNotification = lossless::read(raw).unwrap();
    if let SessionUpdate::AgentMessageChunk(chunk) = &mut n.update
        && let ContentBlock::Text(text) = &mut chunk.content
    {
        text.text.insert_str(0, "» ");
    }
    lossless::write(&n).unwrap()
}

fn chunk_changed_plain(raw: &RawJson) -> RawJson {
    let mut n: SessionNotification = raw.parse().unwrap();
    if let SessionUpdate::AgentMessageChunk(chunk) = &mut n.update
        && let ContentBlock::Text(text) = &mut chunk.content
    {
        text.text.insert_str(0, "» ");
    }
    RawJson::to_raw(&n).unwrap()
}

fn main() {
    let scale: f64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1.0);
    let n = ((200_000.0 * scale) as u64).max(1_000);
    let chunk = RawJson::from_string(CHUNK).unwrap();
    let future = RawJson::from_string(CHUNK_FUTURE).unwrap();
    let prompt = RawJson::from_string(prompt()).unwrap();

    let rows: Vec<(&str, f64, f64)> = vec![
        (
            "chunk, unchanged",
            per_call(n, || {
                black_box(plain::<SessionNotification>(black_box(&chunk)));
            }),
            per_call(n, || {
                let v: SessionNotification = lossless::read(black_box(&chunk)).unwrap();
                black_box(lossless::write(&v).unwrap());
            }),
        ),
        (
            "chunk, text changed",
            per_call(n, || {
                black_box(chunk_changed_plain(black_box(&chunk)));
            }),
            per_call(n, || {
                black_box(chunk_changed(black_box(&chunk)));
            }),
        ),
        (
            "chunk with newer fields, unchanged",
            per_call(n, || {
                black_box(plain::<SessionNotification>(black_box(&future)));
            }),
            per_call(n, || {
                let v: SessionNotification = lossless::read(black_box(&future)).unwrap();
                black_box(lossless::write(&v).unwrap());
            }),
        ),
        (
            "chunk with newer fields, text changed",
            per_call(n, || {
                black_box(chunk_changed_plain(black_box(&future)));
            }),
            per_call(n, || {
                black_box(chunk_changed(black_box(&future)));
            }),
        ),
        (
            "prompt (4.6 KB), unchanged",
            per_call(n / 10, || {
                black_box(plain::<PromptRequest>(black_box(&prompt)));
            }),
            per_call(n / 10, || {
                let v: PromptRequest = lossless::read(black_box(&prompt)).unwrap();
                black_box(lossless::write(&v).unwrap());
            }),
        ),
    ];
    println!("Read into its type and written again, per message (best of 3 runs of {n}):\n");
    println!("| message | plain serde (loses data) | lossless | ratio |");
    println!("|---|---|---|---|");
    for (name, plain, lossless) in rows {
        println!(
            "| {name} | {plain:.0} ns | {lossless:.0} ns | {:.2}x |",
            lossless / plain
        );
    }
}
