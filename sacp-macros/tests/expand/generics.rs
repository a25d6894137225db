use sacp::acp::SessionNotification;
use sacp::proxy::Cx;

struct Tap<T> {
    sink: T,
}

#[sacp::proxy]
impl<T> Tap<T>
where
    T: Fn(&SessionNotification) + Send + Sync + 'static,
{
    #[on_notification(from = agent)]
    async fn update(&self, n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        (self.sink)(&n);
        cx.client().notify(n).await
    }
}
