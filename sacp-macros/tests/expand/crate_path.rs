use my_sacp::acp::CancelNotification;
use my_sacp::proxy::Cx;

struct Renamed;

#[my_sacp::proxy(crate = ::my_sacp)]
impl Renamed {
    #[on_notification]
    async fn cancel(&self, n: CancelNotification, cx: &Cx) -> my_sacp::Result<()> {
        cx.successor().notify(n).await
    }
}
