use sacp::acp::{CancelNotification, PromptRequest, PromptResponse, StopReason};
use sacp::agent::AgentCx;
struct Echo;
impl Echo {
    async fn prompt(
        &mut self,
        _req: PromptRequest,
        _cx: &AgentCx,
    ) -> sacp::Result<PromptResponse> {
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
    async fn cancel(
        &mut self,
        _n: CancelNotification,
        _cx: &AgentCx,
    ) -> sacp::Result<()> {
        Ok(())
    }
}
#[automatically_derived]
impl ::sacp::agent::Agent for Echo {
    fn takes(method: &str, from: ::sacp::acp::Side) -> bool {
        ::sacp::__private::request::<PromptRequest, ::sacp::__private::client>()
            .matches(method, from)
            || ::sacp::__private::notification::<
                CancelNotification,
                ::sacp::__private::client,
            >()
                .matches(method, from)
    }
    async fn dispatch(
        &mut self,
        message: ::sacp::agent::Incoming,
        cx: &::sacp::agent::AgentCx,
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
        let route = ::sacp::__private::notification::<
            CancelNotification,
            ::sacp::__private::client,
        >();
        let message = match route.take(message) {
            ::core::result::Result::Ok(notification) => {
                return route.finish(Self::cancel(self, notification, cx).await);
            }
            ::core::result::Result::Err(message) => message,
        };
        ::sacp::__private::unhandled(message, cx)
    }
}
