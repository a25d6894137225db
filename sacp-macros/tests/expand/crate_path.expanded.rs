use my_sacp::acp::CancelNotification;
use my_sacp::proxy::Cx;
struct Renamed;
impl Renamed {
    async fn cancel(&mut self, n: CancelNotification, cx: &Cx) -> my_sacp::Result<()> {
        cx.successor().notify(n)
    }
}
#[automatically_derived]
impl ::my_sacp::proxy::Proxy for Renamed {
    fn takes(method: &str, from: ::my_sacp::acp::Side) -> bool {
        ::my_sacp::__private::notification::<
            CancelNotification,
            ::my_sacp::__private::client,
        >()
            .matches(method, from)
    }
    async fn dispatch(
        &mut self,
        message: ::my_sacp::proxy::Incoming,
        cx: &::my_sacp::proxy::Cx,
    ) {
        let route = ::my_sacp::__private::notification::<
            CancelNotification,
            ::my_sacp::__private::client,
        >();
        let message = match route.take(message) {
            ::core::result::Result::Ok(notification) => {
                return route.finish(Self::cancel(self, notification, cx).await);
            }
            ::core::result::Result::Err(message) => message,
        };
        ::my_sacp::__private::unhandled(message, cx)
    }
}
