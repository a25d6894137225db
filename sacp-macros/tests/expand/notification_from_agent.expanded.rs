use sacp::acp::{
    RequestPermissionRequest, RequestPermissionResponse, SessionNotification,
};
use sacp::proxy::Cx;
struct Watcher;
impl Watcher {
    async fn update(&self, n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        cx.client().notify(n).await
    }
    async fn permission(
        &self,
        req: RequestPermissionRequest,
        cx: &Cx,
    ) -> sacp::Result<RequestPermissionResponse> {
        cx.client().request(req).await
    }
}
const _: () = ::core::assert!(
    ::sacp::__private::speaks(::sacp::protocol::version::SPOKEN, < SessionNotification as
    ::sacp::__private::NotificationFromAgent > ::VERSION),
    "this handler takes a message of an ACP version the proxy does not declare: add `protocol = 2` (a `sacp::acp::v2` type) or `protocol = [1, 2]` to its `#[sacp::proxy]`, or take the message type of a version it speaks (`sacp::acp` is v1)"
);
const _: () = ::core::assert!(
    ::sacp::__private::speaks(::sacp::protocol::version::SPOKEN, <
    RequestPermissionRequest as ::sacp::__private::RequestFromAgent > ::VERSION),
    "this handler takes a message of an ACP version the proxy does not declare: add `protocol = 2` (a `sacp::acp::v2` type) or `protocol = [1, 2]` to its `#[sacp::proxy]`, or take the message type of a version it speaks (`sacp::acp` is v1)"
);
#[automatically_derived]
impl ::sacp::proxy::Proxy for Watcher {
    fn takes(method: &str, from: ::sacp::acp::Side) -> bool {
        <SessionNotification as ::sacp::__private::NotificationFromAgent>::matches(
            method,
            from,
        )
            || <RequestPermissionRequest as ::sacp::__private::RequestFromAgent>::matches(
                method,
                from,
            )
    }
    async fn dispatch(&self, message: ::sacp::proxy::Incoming, cx: &::sacp::proxy::Cx) {
        let message = match <SessionNotification as ::sacp::__private::NotificationFromAgent>::take(
            message,
        ) {
            ::core::result::Result::Ok(message) => {
                let result = Self::update(self, message, cx).await;
                return <SessionNotification as ::sacp::__private::NotificationFromAgent>::finish(
                    result,
                );
            }
            ::core::result::Result::Err(message) => message,
        };
        let message = match <RequestPermissionRequest as ::sacp::__private::RequestFromAgent>::take(
            message,
        ) {
            ::core::result::Result::Ok((message, reply)) => {
                let result = Self::permission(self, message, cx).await;
                return reply.answer(result);
            }
            ::core::result::Result::Err(message) => message,
        };
        ::sacp::__private::unhandled(message, cx).await
    }
}
