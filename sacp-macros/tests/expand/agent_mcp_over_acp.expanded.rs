use sacp::acp::{NewSessionRequest, NewSessionResponse};
use sacp::agent::Cx;
struct Client;
impl Client {
    async fn new_session(
        &self,
        _req: NewSessionRequest,
        _cx: &Cx,
    ) -> sacp::Result<NewSessionResponse> {
        Ok(NewSessionResponse::new("s1"))
    }
}
#[automatically_derived]
impl ::sacp::agent::Agent for Client {
    const MCP_OVER_ACP: bool = true;
    const INFO: (&'static str, &'static str) = (
        ::core::env!("CARGO_PKG_NAME"),
        ::core::env!("CARGO_PKG_VERSION"),
    );
    fn takes(method: &str, from: ::sacp::acp::Side) -> bool {
        <NewSessionRequest as ::sacp::__private::RequestFromClient>::matches(
            method,
            from,
        )
    }
    async fn dispatch(&self, message: ::sacp::agent::Incoming, cx: &::sacp::agent::Cx) {
        let message = match <NewSessionRequest as ::sacp::__private::RequestFromClient>::take(
            message,
        ) {
            ::core::result::Result::Ok((message, reply)) => {
                let result = Self::new_session(self, message, cx).await;
                return reply.answer(result);
            }
            ::core::result::Result::Err(message) => message,
        };
        ::sacp::__private::unhandled(message, cx).await
    }
}
