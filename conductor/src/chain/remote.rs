//! Components reached over the network instead of spawned: a URL in the chain (`ws://…/acp`,
//! `wss://…`, `http://…`, `https://…`) is an ACP server speaking ACP's remote transport
//! (see [`sacp::remote`]), reached with [`sacp::remote::Remote`] — as the agent, or as a
//! proxy (which must then speak a proxy dialect over it like any other).
//!
//! A remote component ends as a process does, only with its connection as the one sign of its
//! end: when the server closes it, drops it or refuses it, the chain fails, and the editor's
//! requests in flight get an error naming the component and its URL (never its credentials:
//! user info and query are left out, headers are never shown).

use std::path::PathBuf;
use std::time::Duration;

use sacp::remote::{Remote, RemoteTransport};

/// How long connecting to a remote component (the WebSocket handshake) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a remote component is, and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Address {
    /// As given, credentials and all.
    pub(crate) url: String,
    /// Sent with every request and the WebSocket upgrade, in order.
    pub(crate) headers: Vec<(String, String)>,
    /// PEM files of CAs to trust besides the system's.
    pub(crate) ca_files: Vec<PathBuf>,
}

/// Whether a component's single word is a URL to reach rather than a program to run.
pub(crate) fn is_url(word: &str) -> bool {
    ["ws://", "wss://", "http://", "https://"]
        .iter()
        .any(|scheme| {
            word.len() > scheme.len()
                && word
                    .get(..scheme.len())
                    .is_some_and(|start| start.eq_ignore_ascii_case(scheme))
        })
}

/// Parses a `Name: value` header as given on the command line.
pub(crate) fn parse_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("--header {text:?}: expected 'Name: value'"))?;
    let name = name.trim();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
        return Err(format!("--header {text:?}: {name:?} is not a header name"));
    }
    Ok((name.to_owned(), value.trim().to_owned()))
}

impl Address {
    pub(crate) fn new(url: impl Into<String>) -> Address {
        Address {
            url: url.into(),
            headers: Vec::new(),
            ca_files: Vec::new(),
        }
    }

    fn remote(&self) -> std::io::Result<Remote> {
        let mut remote = Remote::new(self.url.clone());
        for (name, value) in &self.headers {
            remote = remote.header(name, value)?;
        }
        for file in &self.ca_files {
            remote = remote.ca_file(file.clone());
        }
        Ok(remote)
    }

    /// The URL as errors, logs and traces show it: without credentials.
    pub(crate) fn display_url(&self) -> String {
        Remote::new(self.url.clone()).display_url()
    }

    /// The remote transport's profile, as the trace names it.
    pub(crate) fn transport(&self) -> &'static str {
        let scheme = self.url.split(':').next().unwrap_or_default();
        if scheme.eq_ignore_ascii_case("ws") || scheme.eq_ignore_ascii_case("wss") {
            "websocket"
        } else {
            "http"
        }
    }

    /// A name for the component when none is given: the URL's host.
    pub(crate) fn default_name(&self) -> String {
        let display = self.display_url();
        let rest = display
            .split_once("://")
            .map_or(&*display, |(_, rest)| rest);
        let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
        let host = match authority.strip_prefix('[') {
            // An IPv6 literal keeps its brackets.
            Some(v6) => v6
                .split(']')
                .next()
                .map_or(authority.to_owned(), |h| format!("[{h}]")),
            None => authority.split(':').next().unwrap_or(authority).to_owned(),
        };
        if host.is_empty() { display } else { host }
    }

    /// Connects (the WebSocket handshake; for HTTP the connection opens with `initialize`).
    /// The error says what failed, with the URL without credentials.
    pub(crate) async fn connect(&self) -> std::io::Result<RemoteTransport> {
        let url = self.display_url();
        let remote = self
            .remote()
            .map_err(|e| std::io::Error::new(e.kind(), format!("{url}: {e}")))?;
        match tokio::time::timeout(CONNECT_TIMEOUT, remote.connect()).await {
            Ok(Ok(transport)) => Ok(transport),
            Ok(Err(e)) => Err(std::io::Error::new(
                e.kind(),
                format!("cannot reach {url}: {e}"),
            )),
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("cannot reach {url}: no answer within {CONNECT_TIMEOUT:?}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_programs() {
        assert!(is_url("ws://devbox:8080/acp"));
        assert!(is_url("WSS://devbox/acp"));
        assert!(is_url("https://agents.example/acp"));
        assert!(!is_url("http://"));
        assert!(!is_url("my-agent"));
        assert!(!is_url("./ws://x"));
        // Not a char boundary where a scheme would end: not a URL, and no panic.
        assert!(!is_url("wéé://x"));
    }

    #[test]
    fn names_and_urls_leave_credentials_out() {
        let endpoint = Address::new("wss://me:s3cret@devbox.lan:8443/acp?token=abc");
        assert_eq!(endpoint.default_name(), "devbox.lan");
        let shown = endpoint.display_url();
        assert!(
            !shown.contains("s3cret") && !shown.contains("abc"),
            "{shown}"
        );
        assert_eq!(endpoint.transport(), "websocket");
        assert_eq!(Address::new("http://[::1]:9/acp").default_name(), "[::1]");
        assert_eq!(Address::new("https://a/acp").transport(), "http");
    }

    #[test]
    fn headers_are_name_colon_value() {
        assert_eq!(
            parse_header("Authorization: Bearer x:y").unwrap(),
            ("Authorization".to_owned(), "Bearer x:y".to_owned())
        );
        assert!(parse_header("no colon").is_err());
        assert!(parse_header(": empty").is_err());
        assert!(parse_header("two words: v").is_err());
    }
}
