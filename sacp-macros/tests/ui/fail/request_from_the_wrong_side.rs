use sacp::acp::{RequestPermissionRequest, RequestPermissionResponse};
use sacp::proxy::Cx;

struct P;

#[sacp::proxy]
impl P {
    // The agent sends this request: it needs `#[on_request(from = agent)]`.
    #[on_request]
    async fn permission(
        &self,
        req: RequestPermissionRequest,
        cx: &Cx,
    ) -> sacp::Result<RequestPermissionResponse> {
        cx.client().request(req).await
    }
}

fn main() {}
