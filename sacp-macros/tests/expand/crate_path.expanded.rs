use my_sacp::acp::CancelNotification;
use my_sacp::proxy::Cx;
struct Renamed;
impl Renamed {
    async fn cancel(&self, n: CancelNotification, cx: &Cx) -> my_sacp::Result<()> {
        cx.successor().notify(n).await
    }
}
const _: () = ::core::assert!(
    ::my_sacp::__private::speaks(::my_sacp::protocol::version::SPOKEN, <
    CancelNotification as ::my_sacp::__private::NotificationFromClient > ::VERSION),
    "this handler takes a message of an ACP version the proxy does not declare: add `protocol = 2` (a `sacp::acp::v2` type) or `protocol = [1, 2]` to its `#[sacp::proxy]`, or take the message type of a version it speaks (`sacp::acp` is v1)"
);
#[automatically_derived]
impl ::my_sacp::proxy::Proxy for Renamed {
    fn takes(method: &str, from: ::my_sacp::acp::Side) -> bool {
        <CancelNotification as ::my_sacp::__private::NotificationFromClient>::matches(
            method,
            from,
        )
    }
    async fn dispatch(
        &self,
        message: ::my_sacp::proxy::Incoming,
        cx: &::my_sacp::proxy::Cx,
    ) {
        let message = match <CancelNotification as ::my_sacp::__private::NotificationFromClient>::take(
            message,
        ) {
            ::core::result::Result::Ok(message) => {
                let result = Self::cancel(self, message, cx).await;
                return <CancelNotification as ::my_sacp::__private::NotificationFromClient>::finish(
                    result,
                );
            }
            ::core::result::Result::Err(message) => message,
        };
        ::my_sacp::__private::unhandled(message, cx).await
    }
}
