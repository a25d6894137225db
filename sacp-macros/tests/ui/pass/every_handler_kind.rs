use sacp::acp::{
    CancelNotification, PromptRequest, PromptResponse, RequestPermissionRequest,
    RequestPermissionResponse, SessionNotification,
};
use sacp::proxy::Cx;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Everything {
    seen: AtomicUsize,
}

#[sacp::proxy]
impl Everything {
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        self.seen.fetch_add(1, Ordering::Relaxed);
        let first = cx.successor().request(req.clone()).await?;
        let _ = first;
        cx.successor().request(req).await
    }

    #[on_request(from = agent)]
    async fn permission(
        &self,
        req: RequestPermissionRequest,
        cx: &Cx,
    ) -> sacp::Result<RequestPermissionResponse> {
        cx.client().request(req).await
    }

    #[on_notification(from = client)]
    async fn cancel(&self, n: CancelNotification, cx: &Cx) -> sacp::Result<()> {
        cx.successor().notify(n).await
    }

    #[sacp::on_notification(from = agent)]
    async fn update(&self, n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        self.helper();
        cx.client().notify(n).await
    }

    fn helper(&self) {
        self.seen.fetch_add(1, Ordering::Relaxed);
    }
}

fn main() {
    let _ = sacp::proxy::serve_stdio(Everything {
        seen: AtomicUsize::new(0),
    });
}
