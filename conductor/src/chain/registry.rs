//! A chain's components from an ACP registry, as a chain describes them: `registry:ID` or
//! `registry:ID@VERSION`, and the registry they come from. Resolving them into processes is
//! [`crate::registry`]'s ([`crate::registry::resolve_chain`]).

use std::path::PathBuf;

/// The public ACP registry.
pub const PUBLIC: &str = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json";

/// The prefix of a component that is a registry agent: `registry:ID` or `registry:ID@VERSION`.
pub const PREFIX: &str = "registry:";

/// Where a registry is: a URL (`http://`, `https://`) or a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Fetched, and cached with its time.
    Url(String),
    /// Read as it is, every time.
    File(PathBuf),
}

impl Source {
    /// A URL (`http://`, `https://`, `file://`) or a file's path.
    pub fn parse(text: &str) -> Source {
        if text.starts_with("http://") || text.starts_with("https://") {
            Source::Url(text.to_owned())
        } else {
            Source::File(PathBuf::from(text.strip_prefix("file://").unwrap_or(text)))
        }
    }
}

impl Default for Source {
    fn default() -> Self {
        Source::Url(PUBLIC.to_owned())
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Url(url) => f.write_str(url),
            Source::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Splits `ID@VERSION` (or `ID`).
pub(crate) fn wanted(spec: &str) -> (&str, Option<&str>) {
    match spec.split_once('@') {
        Some((id, version)) if !version.is_empty() => (id, Some(version)),
        Some((id, _)) => (id, None),
        None => (spec, None),
    }
}
