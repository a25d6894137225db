//! A typed proxy for ACP's unstable surface (see `sacp_examples::steward`):
//! `steward-proxy [--answer FIELD=VALUE]...`. It marks forks with the session they came from,
//! names subagents after their parent, and answers the agent's form elicitations whose every
//! required field it has an answer for. Run it in a chain:
//! `conductor agent "steward-proxy --answer name=Ada" <agent>`.

use sacp_examples::steward::Steward;

#[tokio::main(flavor = "current_thread")]
async fn main() -> sacp::Result<()> {
    sacp_examples::init_logging();
    let mut answers = Vec::new();
    let mut words = std::env::args().skip(1);
    while let Some(word) = words.next() {
        let answer = match word.as_str() {
            "--answer" => words.next(),
            _ => None,
        };
        match answer.as_deref().and_then(|a| a.split_once('=')) {
            Some((field, value)) => answers.push((field.to_owned(), value.to_owned())),
            None => {
                eprintln!("steward-proxy: expected --answer FIELD=VALUE, got {word:?}");
                std::process::exit(2);
            }
        }
    }
    sacp::proxy::serve_stdio(Steward::with_answers(answers)).await
}
