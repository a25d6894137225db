use sacp::acp::{
    RequestPermissionRequest, RequestPermissionResponse, SessionNotification,
};
use sacp::proxy::Cx;
struct Watcher;
impl Watcher {
    async fn update(&mut self, n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        cx.client().notify(n)
    }
    async fn permission(
        &mut self,
        req: RequestPermissionRequest,
        cx: &Cx,
    ) -> sacp::Result<RequestPermissionResponse> {
        cx.client().request(req).await
    }
}
#[automatically_derived]
impl ::sacp::proxy::Proxy for Watcher {
    fn takes(method: &str, from: ::sacp::acp::Side) -> bool {
        ::sacp::__private::notification::<
            SessionNotification,
            ::sacp::__private::agent,
        >()
            .matches(method, from)
            || ::sacp::__private::request::<
                RequestPermissionRequest,
                ::sacp::__private::agent,
            >()
                .matches(method, from)
    }
    async fn dispatch(
        &mut self,
        message: ::sacp::proxy::Incoming,
        cx: &::sacp::proxy::Cx,
    ) {
        let route = ::sacp::__private::notification::<
            SessionNotification,
            ::sacp::__private::agent,
        >();
        let message = match route.take(message) {
            ::core::result::Result::Ok(notification) => {
                return route.finish(Self::update(self, notification, cx).await);
            }
            ::core::result::Result::Err(message) => message,
        };
        let route = ::sacp::__private::request::<
            RequestPermissionRequest,
            ::sacp::__private::agent,
        >();
        let message = match route.take(message) {
            ::core::result::Result::Ok((request, reply)) => {
                return route.answer(reply, Self::permission(self, request, cx).await);
            }
            ::core::result::Result::Err(message) => message,
        };
        ::sacp::__private::unhandled(message, cx)
    }
}
