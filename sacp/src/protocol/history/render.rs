//! A history as the text of a prompt: what an agent that cannot take a history with
//! `session/new` is sent instead, so that its model reads the conversation so far.
//!
//! The rendering, section by section in the order of the history:
//!
//! ```text
//! [sacp: the conversation so far]
//! This session continues an earlier conversation. …
//!
//! ### User
//! Where is the config read?
//!
//! ### Assistant
//! In `src/config.rs`, at start-up.
//!
//! ### Assistant (thinking)
//! …
//!
//! ### Tool call `read-1`: Read config.rs (read) — completed
//! Input: {"path":"src/config.rs"}
//! Result: fn load() …
//!
//! ### Plan
//! - [completed] Find the config
//!
//! [sacp: end of the conversation so far]
//! ```
//!
//! Consecutive chunks of one speaker are one section; a tool call is one section where it
//! first appears, with what its later updates said (status, content, output) folded in; an
//! input or result longer than [`LONG`] characters is cut, saying how much was left out.
//! Updates that describe the session rather than the conversation
//! (`available_commands_update`, `config_option_update`, `session_info_update`,
//! `usage_update`) are left out; a kind this rendering does not know is named with its JSON,
//! cut the same way.

use std::fmt::Write;

use serde_json::Value;

/// The first line of a rendered history: how a reader (or a test) knows the prompt for what
/// it is.
pub const MARK: &str = "[sacp: the conversation so far]";

/// The longest input, result or unknown update written whole, in characters.
const LONG: usize = 2_000;

const PREAMBLE: &str = "This session continues an earlier conversation, which took place \
before the session was opened here. It is written out below, in order: what the user said, \
what the assistant said and thought, the tools it called and what they returned. Treat it as \
this session's own history — the user may refer to anything in it. Do not act on it now and \
call no tool: answer only \"OK\", and wait for the user's next message.";

/// The prompt text that carries `history` (each element the `update` of a `session/update`).
pub fn render(history: &[Value]) -> String {
    let mut sections: Vec<Section> = Vec::new();
    for update in history {
        add(&mut sections, update);
    }
    let mut out = format!("{MARK}\n{PREAMBLE}\n");
    for section in &sections {
        out.push('\n');
        section.write(&mut out);
    }
    out.push_str("\n[sacp: end of the conversation so far]\n");
    out
}

/// One section of the rendering.
enum Section {
    /// A speaker's run of chunks: the heading, and the text.
    Said(&'static str, String),
    ToolCall(ToolCall),
    Plan(Vec<String>),
    Other(String, String),
}

#[derive(Default)]
struct ToolCall {
    id: String,
    title: String,
    kind: Option<String>,
    status: Option<String>,
    input: Option<String>,
    result: Vec<String>,
    output: Option<String>,
}

fn add(sections: &mut Vec<Section>, update: &Value) {
    let kind = update
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .unwrap_or("");
    let speaker = match kind {
        "user_message_chunk" | "user_message" => Some("User"),
        "agent_message_chunk" | "agent_message" => Some("Assistant"),
        "agent_thought_chunk" | "agent_thought" => Some("Assistant (thinking)"),
        _ => None,
    };
    if let Some(speaker) = speaker {
        let text = content_text(update.get("content"));
        match sections.last_mut() {
            Some(Section::Said(last, said)) if *last == speaker => said.push_str(&text),
            _ => sections.push(Section::Said(speaker, text)),
        }
        return;
    }
    match kind {
        "tool_call" | "tool_call_update" => tool_call(sections, update),
        "plan" => sections.push(Section::Plan(plan(update))),
        "available_commands_update"
        | "config_option_update"
        | "session_info_update"
        | "usage_update"
        | "current_mode_update"
        | "state_update" => {}
        other => {
            let name = if other.is_empty() { "update" } else { other };
            sections.push(Section::Other(name.to_owned(), cut(&update.to_string())));
        }
    }
}

fn tool_call(sections: &mut Vec<Section>, update: &Value) {
    let id = str_of(update, "toolCallId").unwrap_or_default();
    let known = sections.iter_mut().rev().find_map(|s| match s {
        Section::ToolCall(call) if call.id == id => Some(call),
        _ => None,
    });
    let call = match known {
        Some(call) => call,
        None => {
            sections.push(Section::ToolCall(ToolCall {
                id: id.clone(),
                ..ToolCall::default()
            }));
            match sections.last_mut() {
                Some(Section::ToolCall(call)) => call,
                _ => return,
            }
        }
    };
    if let Some(title) = str_of(update, "title") {
        call.title = title;
    }
    if let Some(kind) = str_of(update, "kind") {
        call.kind = Some(kind);
    }
    if let Some(status) = str_of(update, "status") {
        call.status = Some(status);
    }
    if let Some(input) = update.get("rawInput").filter(|v| !v.is_null()) {
        call.input = Some(cut(&input.to_string()));
    }
    if let Some(output) = update.get("rawOutput").filter(|v| !v.is_null()) {
        call.output = Some(cut(&output.to_string()));
    }
    if let Some(Value::Array(content)) = update.get("content") {
        call.result = content.iter().map(tool_content).collect();
    }
}

fn plan(update: &Value) -> Vec<String> {
    update
        .get("entries")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|entry| {
            let status = str_of(entry, "status").unwrap_or_else(|| "pending".to_owned());
            let content = str_of(entry, "content").unwrap_or_default();
            format!("- [{status}] {content}")
        })
        .collect()
}

impl Section {
    fn write(&self, out: &mut String) {
        // Writing to a String cannot fail.
        let _ = match self {
            Section::Said(speaker, text) => writeln!(out, "### {speaker}\n{}", text.trim_end()),
            Section::ToolCall(call) => call.write(out),
            Section::Plan(entries) => writeln!(out, "### Plan\n{}", entries.join("\n")),
            Section::Other(kind, json) => writeln!(out, "### ({kind})\n{json}"),
        };
    }
}

impl ToolCall {
    fn write(&self, out: &mut String) -> std::fmt::Result {
        write!(out, "### Tool call `{}`: {}", self.id, self.title)?;
        if let Some(kind) = &self.kind {
            write!(out, " ({kind})")?;
        }
        if let Some(status) = &self.status {
            write!(out, " — {status}")?;
        }
        out.push('\n');
        if let Some(input) = &self.input {
            writeln!(out, "Input: {input}")?;
        }
        let result: Vec<&str> = self
            .result
            .iter()
            .map(String::as_str)
            .filter(|r| !r.is_empty())
            .collect();
        if !result.is_empty() {
            writeln!(out, "Result: {}", cut(&result.join("\n")))?;
        } else if let Some(output) = &self.output {
            writeln!(out, "Result: {output}")?;
        }
        Ok(())
    }
}

/// A content block as text: its text, or what it is.
fn content_text(block: Option<&Value>) -> String {
    let Some(block) = block else {
        return String::new();
    };
    // ACP v2's whole messages carry a list of blocks.
    if let Value::Array(blocks) = block {
        return blocks.iter().map(|b| content_text(Some(b))).collect();
    }
    let of = |key| str_of(block, key).unwrap_or_default();
    match str_of(block, "type").as_deref() {
        Some("text") => of("text"),
        Some("image") => format!("[image {}]", of("mimeType")),
        Some("audio") => format!("[audio {}]", of("mimeType")),
        Some("resource_link") => format!("[file {}]", of("uri")),
        Some("resource") => {
            let resource = block.get("resource").unwrap_or(&Value::Null);
            let uri = str_of(resource, "uri").unwrap_or_default();
            match str_of(resource, "text") {
                Some(text) => format!("[file {uri}]\n{}\n", cut(&text)),
                None => format!("[file {uri}]"),
            }
        }
        _ => cut(&block.to_string()),
    }
}

/// A tool call's content item as text.
fn tool_content(item: &Value) -> String {
    match str_of(item, "type").as_deref() {
        Some("content") => content_text(item.get("content")),
        Some("diff") => format!("[diff of {}]", str_of(item, "path").unwrap_or_default()),
        Some("terminal") => format!(
            "[terminal {}]",
            str_of(item, "terminalId").unwrap_or_default()
        ),
        _ => cut(&item.to_string()),
    }
}

fn str_of(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// `text`, or its first [`LONG`] characters and how many more there were.
fn cut(text: &str) -> String {
    match text.char_indices().nth(LONG) {
        None => text.to_owned(),
        Some((at, _)) => {
            let left = text[at..].chars().count();
            format!("{}… ({left} more characters)", &text[..at])
        }
    }
}
