//! The binaries the tests run, and their command lines.

use std::path::PathBuf;
use std::sync::OnceLock;

use sacp_conductor::Component;

/// A binary of the examples package (built on first use, a no-op after `cargo test --workspace`).
pub fn example(name: &str) -> String {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        sacp_examples::bins::built_like_tests().expect("build the example binaries")
    });
    let path = dir.join(name);
    assert!(path.exists(), "{} was not built", path.display());
    path.to_string_lossy().into_owned()
}

pub fn agent() -> String {
    example("test-agent")
}

pub fn passthrough() -> String {
    example("passthrough-proxy")
}

/// `conductor agent` arguments for `count` copies of the example proxy `proxy` and the test
/// agent.
pub fn chain_of(proxy: &str, count: usize) -> Vec<String> {
    let mut args = vec!["agent".to_owned()];
    args.extend(std::iter::repeat_n(example(proxy), count));
    args.push(agent());
    args
}

/// A path as a word of a component command line, quoted the way the conductor splits it.
pub fn quoted(word: &str) -> String {
    Component::from_argv(vec![word.to_owned()]).map_or_else(String::new, |c| c.command_line())
}

/// `conductor agent` arguments for `proxies` pass-through proxies and the test agent.
pub fn flat_chain(proxies: usize) -> Vec<String> {
    let mut args = vec!["agent".to_owned()];
    args.extend(std::iter::repeat_n(passthrough(), proxies));
    args.push(agent());
    args
}
