use sacp::acp::{CancelNotification, PromptRequest, PromptResponse, StopReason};
use sacp::agent::Cx;
struct Echo;
impl Echo {
    async fn prompt(
        &self,
        _req: PromptRequest,
        _cx: &Cx,
    ) -> sacp::Result<PromptResponse> {
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
    async fn cancel(&self, _n: CancelNotification, _cx: &Cx) -> sacp::Result<()> {
        Ok(())
    }
}
const _: () = ::core::assert!(
    ::sacp::__private::speaks(::sacp::protocol::version::SPOKEN, < PromptRequest as
    ::sacp::__private::RequestFromClient > ::VERSION),
    "this handler takes a message of an ACP version the agent does not declare: add `protocol = 2` (a `sacp::acp::v2` type) or `protocol = [1, 2]` to its `#[sacp::agent]`, or take the message type of a version it speaks (`sacp::acp` is v1)"
);
const _: () = ::core::assert!(
    ::sacp::__private::speaks(::sacp::protocol::version::SPOKEN, < CancelNotification as
    ::sacp::__private::NotificationFromClient > ::VERSION),
    "this handler takes a message of an ACP version the agent does not declare: add `protocol = 2` (a `sacp::acp::v2` type) or `protocol = [1, 2]` to its `#[sacp::agent]`, or take the message type of a version it speaks (`sacp::acp` is v1)"
);
#[automatically_derived]
impl ::sacp::agent::Agent for Echo {
    const INFO: (&'static str, &'static str) = (
        ::core::env!("CARGO_PKG_NAME"),
        ::core::env!("CARGO_PKG_VERSION"),
    );
    fn takes(method: &str, from: ::sacp::acp::Side) -> bool {
        <PromptRequest as ::sacp::__private::RequestFromClient>::matches(method, from)
            || <CancelNotification as ::sacp::__private::NotificationFromClient>::matches(
                method,
                from,
            )
    }
    async fn dispatch(&self, message: ::sacp::agent::Incoming, cx: &::sacp::agent::Cx) {
        let message = match <PromptRequest as ::sacp::__private::RequestFromClient>::take(
            message,
        ) {
            ::core::result::Result::Ok((message, reply)) => {
                let result = Self::prompt(self, message, cx).await;
                return reply.answer(result);
            }
            ::core::result::Result::Err(message) => message,
        };
        let message = match <CancelNotification as ::sacp::__private::NotificationFromClient>::take(
            message,
        ) {
            ::core::result::Result::Ok(message) => {
                let result = Self::cancel(self, message, cx).await;
                return <CancelNotification as ::sacp::__private::NotificationFromClient>::finish(
                    result,
                );
            }
            ::core::result::Result::Err(message) => message,
        };
        ::sacp::__private::unhandled(message, cx).await
    }
}
