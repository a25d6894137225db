use sacp::acp::{RequestPermissionRequest, RequestPermissionResponse, SessionNotification};
use sacp::proxy::Cx;

struct Watcher;

#[sacp::proxy]
impl Watcher {
    #[on_notification(from = agent)]
    async fn update(&self, n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        cx.client().notify(n).await
    }

    #[sacp::on_request(from = agent)]
    async fn permission(
        &self,
        req: RequestPermissionRequest,
        cx: &Cx,
    ) -> sacp::Result<RequestPermissionResponse> {
        cx.client().request(req).await
    }
}
