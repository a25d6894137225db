//! A proxy that ends every turn with an HTML panel (`panel-proxy`): a summary of the tools the
//! turn used, as an embedded `text/html` resource in an `agent_message_chunk`, sent just before
//! the prompt's answer.
//!
//! It writes HTML whatever the editor takes: an editor that declares `text/html` in its
//! `initialize` (`_meta.sacp.content`) gets the panel as it was written, and the conductor
//! turns it into readable text for one that does not (see `sacp::protocol::content`).
//!
//! The tools are what the agent reported in the turn — `tool_call` and `tool_call_update`
//! updates, and the tool calls it asked permission for — with their last status (for one
//! asked about: the editor's answer, `permission: allow`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::lock::lock;
use sacp::acp::{
    ContentBlock, ContentChunk, EmbeddedResource, EmbeddedResourceResource, PromptRequest,
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SessionNotification, SessionUpdate, TextResourceContents,
};
use sacp::proxy::Cx;

/// A tool the turn used: its title and last status.
#[derive(Debug, Clone)]
struct Tool {
    id: String,
    title: String,
    status: String,
}

/// The panel proxy: see the module docs.
#[derive(Debug, Default)]
pub struct Panel {
    /// The tools of each session's turn in progress, in the order they came.
    turns: Mutex<HashMap<String, Vec<Tool>>>,
    /// Panels sent so far (their resources' uris are numbered by it).
    pub panels: AtomicU64,
}

impl Panel {
    /// Notes what the agent said of tool `id` in `session`'s turn.
    fn saw(&self, session: &str, id: &str, title: Option<&str>, status: Option<String>) {
        let mut turns = lock(&self.turns);
        let Some(tools) = turns.get_mut(session) else {
            return;
        };
        match tools.iter_mut().find(|t| t.id == id) {
            Some(tool) => {
                if let Some(title) = title {
                    title.clone_into(&mut tool.title);
                }
                if let Some(status) = status {
                    tool.status = status;
                }
            }
            None => tools.push(Tool {
                id: id.to_owned(),
                title: title.unwrap_or(id).to_owned(),
                status: status.unwrap_or_else(|| "pending".to_owned()),
            }),
        }
    }
}

#[sacp::proxy]
impl Panel {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        let session = req.session_id.clone();
        lock(&self.turns).insert(session.0.clone(), Vec::new());
        let answer = cx.successor().request(req).await;
        let tools = lock(&self.turns).remove(&session.0).unwrap_or_default();
        let ended = match &answer {
            Ok(answer) => format!("The turn ended: {}.", answer.stop_reason),
            Err(e) => format!("The turn failed: {}.", e.message),
        };
        let n = self.panels.fetch_add(1, Ordering::Relaxed) + 1;
        let page = TextResourceContents::new(html(&ended, &tools), format!("panel:turn-{n}"))
            .mime_type("text/html");
        let block = ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::TextResourceContents(page),
        ));
        let update = SessionUpdate::AgentMessageChunk(ContentChunk::new(block));
        cx.client()
            .notify(SessionNotification::new(session, update))
            .await?;
        answer
    }

    #[on_notification(from = agent)]
    async fn update(&self, n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        match &n.update {
            SessionUpdate::ToolCall(call) => self.saw(
                &n.session_id.0,
                &call.tool_call_id.0,
                Some(&call.title),
                call.status.as_ref().map(ToString::to_string),
            ),
            SessionUpdate::ToolCallUpdate(update) => self.saw(
                &n.session_id.0,
                &update.tool_call_id.0,
                update.title.as_deref(),
                update.status.as_ref().map(ToString::to_string),
            ),
            _ => {}
        }
        cx.client().notify(n).await
    }

    #[on_request(from = agent)]
    async fn permission(
        &self,
        req: RequestPermissionRequest,
        cx: &Cx,
    ) -> sacp::Result<RequestPermissionResponse> {
        let call = &req.tool_call;
        self.saw(
            &req.session_id.0,
            &call.tool_call_id.0,
            call.title.as_deref(),
            call.status.as_ref().map(ToString::to_string),
        );
        let (session, id) = (req.session_id.0.clone(), call.tool_call_id.0.clone());
        let answer = cx.client().request(req).await?;
        let outcome = match &answer.outcome {
            RequestPermissionOutcome::Selected(selected) => {
                format!("permission: {}", selected.option_id.0)
            }
            _ => "permission: cancelled".to_owned(),
        };
        self.saw(&session, &id, None, Some(outcome));
        Ok(answer)
    }
}

/// The panel's page.
fn html(ended: &str, tools: &[Tool]) -> String {
    let mut page = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><style>\
         body{font:14px system-ui,sans-serif;margin:0}section{padding:8px 12px}\
         h2{font-size:15px;margin:0 0 6px}li{margin:2px 0}.status{color:#666}\
         </style></head><body><section class=\"sacp-panel\"><h2>Turn summary</h2>",
    );
    page.push_str("<p>");
    page.push_str(&escape(ended));
    page.push_str("</p>");
    if tools.is_empty() {
        page.push_str("<p>No tools were used.</p>");
    } else {
        page.push_str("<h3>Tools used</h3><ul>");
        for tool in tools {
            page.push_str("<li>");
            page.push_str(&escape(&tool.title));
            page.push_str(" <span class=\"status\">(");
            page.push_str(&escape(&tool.status));
            page.push_str(")</span></li>");
        }
        page.push_str("</ul>");
    }
    page.push_str("</section></body></html>");
    page
}

/// `text` as HTML text.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_escapes_what_the_agent_named() {
        let tools = [Tool {
            id: "t".into(),
            title: "<script>alert(1)</script> & more".into(),
            status: "completed".into(),
        }];
        let page = html("The turn ended: end_turn.", &tools);
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; more"));
        assert!(!page.contains("<script>"));
        assert!(html("x", &[]).contains("No tools were used."));
    }
}
