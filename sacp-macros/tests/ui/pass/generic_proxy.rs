use sacp::acp::SessionNotification;
use sacp::proxy::Cx;

struct Tap<T> {
    sink: T,
}

#[sacp::proxy]
impl<T> Tap<T>
where
    T: FnMut(&SessionNotification) + Send + 'static,
{
    #[on_notification(from = agent)]
    async fn update(&mut self, n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        (self.sink)(&n);
        cx.client().notify(n)
    }
}

fn main() {
    let mut seen = Vec::new();
    let _ = sacp::proxy::serve_stdio(Tap {
        sink: move |n: &SessionNotification| seen.push(n.session_id.clone()),
    });
}
