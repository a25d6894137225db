//! A proxy that sends the editor a message between turns: a prompt `/remind 2s TEXT` ends its
//! turn at once, and two seconds later the editor gets `reminder: TEXT` in that session. Run
//! it in a chain: `conductor agent reminder-proxy <agent>`.

use sacp_examples::reminder::Reminder;

#[tokio::main(flavor = "current_thread")]
async fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    sacp::proxy::serve_stdio(Reminder::default()).await
}
