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
