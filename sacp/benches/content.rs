//! What rich content costs a hop (see `sacp::protocol::content`): adapting a message to what
//! the hop takes, per message — a streamed text chunk towards a hop that takes everything
//! (nothing to look at), towards an editor that declared nothing (one scan for `"mimeType"`,
//! no parse), an image in a prompt towards an agent that takes images (parsed, left), and the
//! transformations themselves: an HTML panel to its text, an image to a placeholder.
//!
//! ```text
//! cargo bench -p sacp-sdk --bench content          # full run
//! cargo bench -p sacp-sdk --bench content -- 0.1   # a tenth of the work
//! ```

#![allow(clippy::print_stdout, missing_docs)]

use std::hint::black_box;
#[path = "support/timing.rs"]
mod timing;

use timing::per_call;

use sacp::jsonrpc::RawJson;
use sacp::protocol::content::{Accepts, adapt};

const CHUNK: &str = r#"{"sessionId":"session-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Here is the next part of the answer, about as long as a model's chunk."}}}"#;

const PANEL: &str = r#"{"sessionId":"session-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"resource","resource":{"uri":"panel:turn-1","mimeType":"text/html","text":"<!doctype html><html><head><style>body{font:14px sans-serif}</style></head><body><section><h2>Turn summary</h2><p>The turn ended: end_turn.</p><h3>Tools used</h3><ul><li>read the file <span>(completed)</span></li><li>run the tests <span>(completed)</span></li></ul></section></body></html>"}}}}"#;

fn image_prompt() -> String {
    let data = "iVBORw0KGgo".repeat(400);
    format!(
        r#"{{"sessionId":"session-1","prompt":[{{"type":"text","text":"What is in this picture?"}},{{"type":"image","mimeType":"image/png","data":"{data}"}}]}}"#
    )
}

fn main() {
    let scale: f64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1.0);
    let n = |base: u64| ((base as f64 * scale) as u64).max(1);
    let chunk = RawJson::from_string(CHUNK).unwrap();
    let panel = RawJson::from_string(PANEL).unwrap();
    let image = RawJson::from_string(image_prompt()).unwrap();
    let everything = Accepts::everything();
    let silent = Accepts::acp_default();
    let images = Accepts::of(["image/*"]);
    let nothing = Accepts::of(Vec::<String>::new());
    let rows = [
        (
            "text chunk, to a hop that takes everything",
            per_call(n(2_000_000), || {
                black_box(adapt("session/update", black_box(&chunk), &everything));
            }),
        ),
        (
            "text chunk, to an editor that declared nothing",
            per_call(n(2_000_000), || {
                black_box(adapt("session/update", black_box(&chunk), &silent));
            }),
        ),
        (
            "image prompt (4.4 KB), to an agent that takes images",
            per_call(n(100_000), || {
                black_box(adapt("session/prompt", black_box(&image), &images));
            }),
        ),
        (
            "image prompt (4.4 KB), to an agent that does not: a placeholder",
            per_call(n(100_000), || {
                black_box(adapt("session/prompt", black_box(&image), &nothing));
            }),
        ),
        (
            "HTML panel, to an editor that declared nothing: its text",
            per_call(n(20_000), || {
                black_box(adapt("session/update", black_box(&panel), &silent));
            }),
        ),
    ];
    println!("| message, hop | ns per message |");
    println!("|---|---|");
    for (what, ns) in rows {
        println!("| {what} | {ns:.0} |");
    }
}
