use sacp::acp::SessionNotification;
use sacp::proxy::Cx;
struct Tap<T> {
    sink: T,
}
impl<T> Tap<T>
where
    T: Fn(&SessionNotification) + Send + Sync + 'static,
{
    async fn update(&self, n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        (self.sink)(&n);
        cx.client().notify(n).await
    }
}
#[automatically_derived]
impl<T> ::sacp::proxy::Proxy for Tap<T>
where
    T: Fn(&SessionNotification) + Send + Sync + 'static,
{
    fn takes(method: &str, from: ::sacp::acp::Side) -> bool {
        <SessionNotification as ::sacp::__private::NotificationFromAgent>::matches(
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
        ::sacp::__private::unhandled(message, cx).await
    }
}
