use sacp::acp::{NewSessionRequest, NewSessionResponse};
use sacp::agent::Cx;

struct Client;

#[sacp::agent(mcp_over_acp)]
impl Client {
    #[on_request]
    async fn new_session(&self, _req: NewSessionRequest, _cx: &Cx) -> sacp::Result<NewSessionResponse> {
        Ok(NewSessionResponse::new("s1"))
    }
}
