use sacp::acp::{PromptRequest, PromptResponse};
use sacp::proxy::Cx;
use std::sync::atomic::{AtomicU64, Ordering};
struct Sparkle {
    prompts: AtomicU64,
}
impl Sparkle {
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        self.count();
        cx.successor().request(req).await
    }
    /// Not a handler: left as it is.
    fn count(&self) {
        self.prompts.fetch_add(1, Ordering::Relaxed);
    }
}
const _: () = ::core::assert!(
    ::sacp::__private::speaks(::sacp::protocol::version::SPOKEN, < PromptRequest as
    ::sacp::__private::RequestFromClient > ::VERSION),
    "this handler takes a message of an ACP version the proxy does not declare: add `protocol = 2` (a `sacp::acp::v2` type) or `protocol = [1, 2]` to its `#[sacp::proxy]`, or take the message type of a version it speaks (`sacp::acp` is v1)"
);
#[automatically_derived]
impl ::sacp::proxy::Proxy for Sparkle {
    fn takes(method: &str, from: ::sacp::acp::Side) -> bool {
        <PromptRequest as ::sacp::__private::RequestFromClient>::matches(method, from)
    }
    async fn dispatch(&self, message: ::sacp::proxy::Incoming, cx: &::sacp::proxy::Cx) {
        let message = match <PromptRequest as ::sacp::__private::RequestFromClient>::take(
            message,
        ) {
            ::core::result::Result::Ok((message, reply)) => {
                let result = Self::prompt(self, message, cx).await;
                return reply.answer(result);
            }
            ::core::result::Result::Err(message) => message,
        };
        ::sacp::__private::unhandled(message, cx).await
    }
}
