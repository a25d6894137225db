extern crate sacp as renamed;

use renamed::acp::CancelNotification;
use renamed::proxy::Cx;

struct Renamed;

#[renamed::proxy(crate = ::renamed)]
impl Renamed {
    #[on_notification]
    async fn cancel(&self, n: CancelNotification, cx: &Cx) -> renamed::Result<()> {
        cx.successor().notify(n).await
    }
}

fn main() {
    let _ = renamed::proxy::serve_stdio(Renamed);
}
