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
const _: () = ::core::assert!(
    ::sacp::__private::speaks(::sacp::protocol::version::SPOKEN, < NewSessionRequest as
    ::sacp::__private::RequestFromClient > ::VERSION),
    "this handler takes a message of an ACP version the agent does not declare: add `protocol = 2` (a `sacp::acp::v2` type) or `protocol = [1, 2]` to its `#[sacp::agent]`, or take the message type of a version it speaks (`sacp::acp` is v1)"
);
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
