//! A handler may return its own error type when it converts into `sacp::Error`.

use sacp::acp::{NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse};
use sacp::proxy::Cx;

#[derive(Debug)]
enum GateError {
    Closed,
    Agent(sacp::Error),
}

impl From<GateError> for sacp::Error {
    fn from(e: GateError) -> Self {
        match e {
            GateError::Closed => sacp::Error::new(-32042, "the gate is closed"),
            GateError::Agent(e) => e,
        }
    }
}

struct Gate {
    open: bool,
}

#[sacp::proxy]
impl Gate {
    #[on_request]
    async fn new_session(
        &self,
        req: NewSessionRequest,
        cx: &Cx,
    ) -> Result<NewSessionResponse, GateError> {
        if !self.open {
            return Err(GateError::Closed);
        }
        cx.successor().request(req).await.map_err(GateError::Agent)
    }

    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> Result<PromptResponse, GateError> {
        cx.successor().request(req).await.map_err(GateError::Agent)
    }
}

fn main() {
    let _ = sacp::proxy::serve_stdio(Gate { open: true });
}
