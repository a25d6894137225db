use sacp::proxy::Cx;

struct P;

#[sacp::proxy]
impl P {
    #[on_request]
    async fn text(&self, req: String, _cx: &Cx) -> sacp::Result<String> {
        Ok(req)
    }
}

fn main() {}
