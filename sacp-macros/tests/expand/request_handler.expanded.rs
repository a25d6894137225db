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
        ::sacp::__private::request::<PromptRequest, ::sacp::__private::client>()
            .matches(method, from)
    }
    async fn dispatch(
        &mut self,
        message: ::sacp::proxy::Incoming,
        cx: &::sacp::proxy::Cx,
    ) {
        let route = ::sacp::__private::request::<
            PromptRequest,
            ::sacp::__private::client,
        >();
        let message = match route.take(message) {
            ::core::result::Result::Ok((request, reply)) => {
                return route.answer(reply, Self::prompt(self, request, cx).await);
            }
            ::core::result::Result::Err(message) => message,
        };
        ::sacp::__private::unhandled(message, cx)
    }
}
