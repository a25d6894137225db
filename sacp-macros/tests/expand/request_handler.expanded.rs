use sacp::acp::{PromptRequest, PromptResponse};
use sacp::proxy::Cx;
struct Sparkle {
    prompts: u64,
}
impl Sparkle {
    async fn prompt(
        &mut self,
        req: PromptRequest,
        cx: &Cx,
    ) -> sacp::Result<PromptResponse> {
        self.count();
        cx.successor().request(req).await
    }
    /// Not a handler: left as it is.
    fn count(&mut self) {
        self.prompts += 1;
    }
}
#[automatically_derived]
impl ::sacp::proxy::Proxy for Sparkle {
    fn takes(method: &str, from: ::sacp::acp::Side) -> bool {
        <PromptRequest as ::sacp::__private::RequestFromClient>::matches(method, from)
    }
    async fn dispatch(
        &mut self,
        message: ::sacp::proxy::Incoming,
        cx: &::sacp::proxy::Cx,
    ) {
        let message = match <PromptRequest as ::sacp::__private::RequestFromClient>::take(
            message,
        ) {
            ::core::result::Result::Ok((message, reply)) => {
                let result = Self::prompt(self, message, cx).await;
                return reply.answer(result);
            }
            ::core::result::Result::Err(message) => message,
        };
        ::sacp::__private::unhandled(message, cx)
    }
}
