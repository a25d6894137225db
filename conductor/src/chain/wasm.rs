//! Components that are WebAssembly components (WASI 0.2): `wasm:PATH` on the command line,
//! `wasm = "PATH"` in a chain file. The conductor runs each in its own process with wasmtime
//! (see `crate::wasm`), in a sandbox of its own: what it may reach is what its chain-file
//! entry grants it, and nothing by default.
//!
//! ```toml
//! [[component]]
//! wasm = "sparkle.wasm"
//! args = ["--embodiment-file", "/notes/embodiment.md"]
//! env = { SPARKLE_MOOD = "calm" }     # its whole environment: it inherits none
//! dirs = ["/home/me/notes:/notes:ro"] # HOST:GUEST, `:ro` for read-only; none by default
//! network = true                      # TCP, UDP and name lookups; off by default
//! memory = "128MiB"                   # the most linear memory it may grow to (default 256MiB)
//! busy_timeout = "5s"                 # the longest it may compute without waiting (default 10s)
//! ```

use std::path::PathBuf;
use std::time::Duration;

/// What a component's single word starts with when it is a WebAssembly component.
pub(crate) const PREFIX: &str = "wasm:";

/// A WebAssembly component: its file, what it is granted, its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wasm {
    /// The component's file (`.wasm`).
    pub(crate) path: PathBuf,
    /// Host directories it sees, each at a path of its own.
    pub(crate) dirs: Vec<Dir>,
    /// Whether it may use the network.
    pub(crate) network: bool,
    /// The most linear memory it may grow to, in bytes.
    pub(crate) memory: usize,
    /// The longest it may compute without waiting for input or output.
    pub(crate) busy_timeout: Duration,
}

/// A host directory a component sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dir {
    pub(crate) host: PathBuf,
    pub(crate) guest: String,
    pub(crate) read_only: bool,
}

/// The most linear memory a component may grow to unless its entry says otherwise.
pub(crate) const DEFAULT_MEMORY: usize = 256 << 20;
/// The longest a component may compute without waiting, unless its entry says otherwise.
pub(crate) const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

impl Wasm {
    /// A component at `path`, granted nothing, with the default limits.
    pub(crate) fn new(path: impl Into<PathBuf>) -> Wasm {
        Wasm {
            path: path.into(),
            dirs: Vec::new(),
            network: false,
            memory: DEFAULT_MEMORY,
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
        }
    }

    /// What it is granted, in words: the trace's and the viewer's lane title.
    pub(crate) fn grants(&self) -> String {
        let mut grants: Vec<String> = self
            .dirs
            .iter()
            .map(|d| {
                format!(
                    "{}:{}{}",
                    d.host.display(),
                    d.guest,
                    if d.read_only { ":ro" } else { "" }
                )
            })
            .collect();
        if self.network {
            grants.push("network".to_owned());
        }
        if grants.is_empty() {
            "nothing granted".to_owned()
        } else {
            grants.join(", ")
        }
    }
}

/// A chain-file entry's sandbox settings, as written.
#[derive(Debug, Default)]
pub(crate) struct Sandbox {
    pub(crate) dirs: Vec<String>,
    pub(crate) network: Option<bool>,
    pub(crate) memory: Option<String>,
    pub(crate) busy_timeout: Option<String>,
}

impl Sandbox {
    /// Whether the entry says nothing of a sandbox.
    pub(crate) fn is_empty(&self) -> bool {
        self.dirs.is_empty()
            && self.network.is_none()
            && self.memory.is_none()
            && self.busy_timeout.is_none()
    }

    /// Grants and limits `wasm` as the entry says.
    pub(crate) fn apply(self, wasm: &mut Wasm) -> Result<(), String> {
        for dir in &self.dirs {
            wasm.dirs.push(parse_dir(dir)?);
        }
        wasm.network = self.network.unwrap_or(false);
        if let Some(memory) = &self.memory {
            wasm.memory = super::parse_size(memory).map_err(|why| format!("memory: {why}"))?;
        }
        if let Some(busy) = &self.busy_timeout {
            wasm.busy_timeout = humantime::parse_duration(busy)
                .map_err(|e| format!("busy_timeout {busy:?}: {e}"))?;
        }
        Ok(())
    }
}

/// Parses a directory grant, `HOST:GUEST` or `HOST:GUEST:ro` (`HOST` alone: seen at the same
/// path).
pub(crate) fn parse_dir(text: &str) -> Result<Dir, String> {
    let (rest, read_only) = match text.strip_suffix(":ro") {
        Some(rest) => (rest, true),
        None => (text.strip_suffix(":rw").unwrap_or(text), false),
    };
    let (host, guest) = match rest.split_once(':') {
        Some((host, guest)) => (host, guest),
        None => (rest, rest),
    };
    if host.is_empty() || guest.is_empty() {
        return Err(format!(
            "directory grant {text:?}: expected HOST:GUEST or HOST:GUEST:ro"
        ));
    }
    Ok(Dir {
        host: PathBuf::from(host),
        guest: guest.to_owned(),
        read_only,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_and_sizes_parse() {
        assert_eq!(
            parse_dir("/home/me/notes:/notes:ro").unwrap(),
            Dir {
                host: "/home/me/notes".into(),
                guest: "/notes".into(),
                read_only: true
            }
        );
        let same = parse_dir("/data").unwrap();
        assert_eq!((same.guest.as_str(), same.read_only), ("/data", false));
        assert!(!parse_dir("/a:/b:rw").unwrap().read_only);
        assert!(parse_dir(":/b").is_err());
        assert_eq!(crate::chain::parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(crate::chain::parse_size("1 GiB").unwrap(), 1 << 30);
        assert_eq!(crate::chain::parse_size("4096").unwrap(), 4096);
        assert!(
            crate::chain::parse_size("12 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        let mut w = Wasm::new("p.wasm");
        assert_eq!(w.grants(), "nothing granted");
        w.dirs.push(same);
        w.network = true;
        assert_eq!(w.grants(), "/data:/data, network");
    }
}
