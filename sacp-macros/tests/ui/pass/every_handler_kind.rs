use sacp::acp::{
    CancelNotification, PromptRequest, PromptResponse, RequestPermissionRequest,
    RequestPermissionResponse, SessionNotification,
};
use sacp::proxy::Cx;

struct Everything {
    seen: usize,
}

#[sacp::proxy]
impl Everything {
    #[on_request]
    async fn prompt(&mut self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        self.seen += 1;
        let first = cx.successor().request(req.clone()).await?;
        let _ = first;
        cx.successor().request(req).await
    }

    #[on_request(from = agent)]
    async fn permission(
        &mut self,
        req: RequestPermissionRequest,
        cx: &Cx,
    ) -> sacp::Result<RequestPermissionResponse> {
        cx.client().request(req).await
    }

    #[on_notification(from = client)]
    async fn cancel(&mut self, n: CancelNotification, cx: &Cx) -> sacp::Result<()> {
        cx.successor().notify(n)
    }

    #[sacp::on_notification(from = agent)]
    async fn update(&mut self, n: SessionNotification, cx: &Cx) -> sacp::Result<()> {
        self.helper();
        cx.client().notify(n)
    }

    fn helper(&mut self) {
        self.seen += 1;
    }
}

fn main() {
    let _ = sacp::proxy::serve_stdio(Everything { seen: 0 });
}
