//! A proxy that gives the agent tools (`tool-proxy [NAME]`): an MCP server named `NAME`
//! (default `tools`), served over ACP, with
//! - `echo {text}`: says the text back;
//! - `add {a, b}`: adds two numbers (a structured result, `{"sum": …}`);
//! - `whoami`: the ACP session of the call;
//! - `status`: how many of this proxy's prompt handlers are awaiting the agent right now;
//! - `steps {n}`: reports progress `n` times (when the caller asked for progress), then pings
//!   the caller's MCP client: messages from the server to the client during a call.
//!
//! Its prompt handler awaits the agent; the agent calls the tools during that very turn, and
//! `status` shows it.

use std::sync::atomic::{AtomicU64, Ordering};

use sacp::acp::{PromptRequest, PromptResponse};
use sacp::mcp::ToolCx;
use sacp::proxy::Cx;

/// `echo`'s input.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct EchoInput {
    /// What to say back.
    pub text: String,
}

/// `add`'s input.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct AddInput {
    /// The first number.
    pub a: i64,
    /// The second number.
    pub b: i64,
}

/// `add`'s output.
#[derive(Debug, serde::Serialize)]
pub struct Sum {
    /// `a + b`.
    pub sum: i64,
}

/// `steps`' input.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct StepsInput {
    /// How many progress notifications to send.
    pub n: u32,
}

/// The tool proxy; see the module docs.
#[derive(Debug)]
pub struct Toolbox {
    name: String,
    awaiting: AtomicU64,
}

impl Toolbox {
    /// A toolbox whose MCP server is named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Toolbox {
            name: name.into(),
            awaiting: AtomicU64::new(0),
        }
    }
}

#[sacp::proxy(mcp_name = self.name.clone())]
impl Toolbox {
    /// Says the text back.
    #[tool]
    async fn echo(&self, input: EchoInput, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(input.text)
    }

    /// Adds two numbers.
    #[tool]
    async fn add(&self, input: AddInput, _cx: &ToolCx) -> sacp::Result<Sum> {
        Ok(Sum {
            sum: input.a + input.b,
        })
    }

    /// The ACP session of the call.
    #[tool]
    async fn whoami(&self, cx: &ToolCx) -> sacp::Result<String> {
        Ok(cx
            .session_id()
            .map_or_else(|| "unknown".to_owned(), |s| s.0))
    }

    /// How many prompt handlers of this proxy are awaiting the agent.
    #[tool]
    async fn status(&self, _cx: &ToolCx) -> sacp::Result<String> {
        let n = self.awaiting.load(Ordering::SeqCst);
        Ok(format!("{n} prompt handler(s) awaiting the agent"))
    }

    /// Reports progress `n` times, then pings the client.
    #[tool]
    async fn steps(&self, input: StepsInput, cx: &ToolCx) -> sacp::Result<String> {
        for i in 1..=input.n {
            let message = format!("step {i}");
            cx.progress(f64::from(i), Some(f64::from(input.n)), Some(&message))
                .await?;
        }
        cx.ping().await?;
        Ok(format!(
            "{} steps done, and the client answered a ping",
            input.n
        ))
    }

    /// Passes the prompt on and awaits the agent's answer.
    #[on_request]
    async fn prompt(&self, req: PromptRequest, cx: &Cx) -> sacp::Result<PromptResponse> {
        self.awaiting.fetch_add(1, Ordering::SeqCst);
        let answer = cx.successor().request(req).await;
        self.awaiting.fetch_sub(1, Ordering::SeqCst);
        answer
    }
}
