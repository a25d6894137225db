//! A typed proxy for ACP's unstable surface (`sacp`'s feature `unstable`): forks, subagents
//! and elicitations, each handled as a typed value and passed on with every byte it did not
//! change (`steward-proxy`).
//!
//! - **`session/fork`** (from the client): it forwards the request as it came and marks the
//!   fork in the answer's `_meta` (`"forkedFrom": <the session forked>`), so the editor can
//!   show where a thread came from.
//! - **`subagent_update`** (from the agent, inside `session/update`): it names each subagent
//!   after its parent — the title `Searcher` becomes `Searcher (in session-1)` — and keeps
//!   the parent of each child, leaving every other field (nulls, fields newer than the
//!   schema) as the agent wrote it.
//! - **`elicitation/create`** (from the agent): a form it can fill from its own answers
//!   (`--answer name=Ada`: every required field known) is answered here, for the editor,
//!   and never shown to it; any other elicitation goes to the editor, unchanged.

use std::collections::HashMap;
use std::sync::Mutex;

use sacp::acp::{
    CreateElicitationRequest, CreateElicitationRequestKind, CreateElicitationResponse,
    CreateElicitationResponseCommon, CreateElicitationResponseKind, ElicitationAcceptAction,
    ElicitationContentValue, ForkSessionRequest, ForkSessionResponse, SessionNotification,
    SessionUpdate,
};
use sacp::proxy::Cx;

use crate::lock::lock;

/// The steward; see the module docs.
#[derive(Debug, Default)]
pub struct Steward {
    /// The answers it gives to form fields, by field name.
    answers: HashMap<String, String>,
    /// Each subagent's parent session.
    parents: Mutex<HashMap<String, String>>,
}

impl Steward {
    /// A steward that fills form fields named in `answers` (`name` → value).
    pub fn with_answers(answers: impl IntoIterator<Item = (String, String)>) -> Self {
        Steward {
            answers: answers.into_iter().collect(),
            ..Steward::default()
        }
    }

    /// The parent of subagent `child`, once its announcement passed.
    pub fn parent_of(&self, child: &str) -> Option<String> {
        lock(&self.parents).get(child).cloned()
    }

    /// What it answers for a form elicitation whose every required field it knows.
    fn fill(&self, request: &CreateElicitationRequest) -> Option<CreateElicitationResponse> {
        let CreateElicitationRequestKind::Form(form) = &request.kind else {
            return None;
        };
        let schema = &form.common.requested_schema;
        let required = schema.required.as_deref().unwrap_or_default();
        if required.is_empty() || !required.iter().all(|f| self.answers.contains_key(f)) {
            return None;
        }
        let content: indexmap::IndexMap<String, ElicitationContentValue> = schema
            .properties
            .iter()
            .flat_map(|properties| properties.keys())
            .filter_map(|field| {
                let value = self.answers.get(field)?;
                Some((
                    field.clone(),
                    ElicitationContentValue::String(value.clone()),
                ))
            })
            .collect();
        let accept = ElicitationAcceptAction::new().content(content);
        Some(CreateElicitationResponse::new(
            CreateElicitationResponseCommon::default(),
            CreateElicitationResponseKind::Accept(accept),
        ))
    }
}

#[sacp::proxy]
impl Steward {
    /// Forwards the fork as it came; marks the answer with the session it came from.
    #[on_request(from = client)]
    async fn fork(&self, req: ForkSessionRequest, cx: &Cx) -> sacp::Result<ForkSessionResponse> {
        let parent = req.session_id.0.clone();
        let mut answer = cx.successor().request(req).await?;
        answer
            .meta
            .get_or_insert_with(Default::default)
            .insert("forkedFrom".into(), parent.into());
        Ok(answer)
    }

    /// Answers the forms it can fill; passes the others to the editor.
    #[on_request(from = agent)]
    async fn elicit(
        &self,
        req: CreateElicitationRequest,
        cx: &Cx,
    ) -> sacp::Result<CreateElicitationResponse> {
        match self.fill(&req) {
            Some(answer) => Ok(answer),
            None => cx.client().request(req).await,
        }
    }

    /// Names subagents after their parent session.
    #[on_notification(from = agent)]
    async fn update(&self, mut n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        if let SessionUpdate::SubagentUpdate(child) = &mut n.update {
            let parent = n.session_id.0.clone();
            lock(&self.parents).insert(child.session_id.0.clone(), parent.clone());
            if let Some(title) = child.title.value_mut() {
                title.push_str(&format!(" (in {parent})"));
            }
        }
        cx.client().notify(n).await
    }
}
