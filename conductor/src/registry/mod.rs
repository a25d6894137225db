//! The ACP agent registry: agents as chain components (`registry:ID`, `registry:ID@VERSION`),
//! what a registry offers (`conductor registry list|show`), and a chain as a registry entry of
//! its own (`conductor registry manifest`).
//!
//! A registry is one JSON document (`registry.json`: `{"version", "agents", "extensions"}`),
//! each agent an `agent.json` — `id`, `name`, `version`, `description`, and a `distribution`:
//! an `npx` or `uvx` package (with `args` and `env`), or `binary` archives per platform
//! (`darwin-aarch64`, `linux-x86_64`, …: `archive`, `cmd`, `args`, `env`, and `sha256` where the
//! entry gives one). The public registry is [`PUBLIC`]; `--registry URL|FILE` (or `registry =`
//! at the top of a chain file) names a company's own.
//!
//! **Resolving** `registry:ID` ([`resolve()`]) makes it the command its distribution says for
//! this platform: `npx -y PACKAGE ARGS…` or `uvx PACKAGE ARGS…` with `ENV` (the tools fetch and
//! cache the package themselves); a `binary` archive downloaded once into the cache, checked
//! against its `sha256` when the entry has one (a mismatch is [`Error::Checksum`], and nothing
//! is unpacked or run), unpacked (`.tar.gz`, `.tgz`, `.zip`), and run as its `cmd` with `args`
//! and `env`. An npx or uvx agent whose version the registry no longer lists runs the version
//! asked for (`PACKAGE@VERSION`); a binary one runs if that version is in the cache.
//!
//! **The cache** is sacp's cache directory's `registry/`: each registry's list
//! with the time it was fetched, refreshed when it is older than [`REFRESH`] (an hour), and
//! the unpacked archives. Offline, a registry's cached list (however old) and a cached archive
//! are used; what is not cached is an error naming the agent, the registry and what to do.

mod archive;
mod cache;
mod fetch;
pub mod manifest;
pub mod resolve;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::chain::Chain;

pub use self::resolve::{Launch, resolve};

pub use crate::chain::registry::{PREFIX, PUBLIC, Source};

/// How long a registry's list is used before it is fetched again.
pub const REFRESH: Duration = Duration::from_secs(3600);

/// A registry's document.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Index {
    /// The format's version.
    pub version: String,
    /// Its agents.
    #[serde(default)]
    pub agents: Vec<Agent>,
    /// Its extensions (entries of the same shape).
    #[serde(default)]
    pub extensions: Vec<Agent>,
}

/// One entry: an `agent.json`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Agent {
    /// `^[a-z][a-z0-9-]*$`.
    pub id: String,
    /// What people read.
    pub name: String,
    /// Its semantic version.
    pub version: String,
    /// A sentence.
    pub description: String,
    /// Its source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Who made it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authors: Vec<String>,
    /// An SPDX identifier, or `proprietary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// An icon's path or URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// How it is run.
    pub distribution: Distribution,
}

/// How an agent is run: at least one of these.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct Distribution {
    /// Archives per platform (`linux-x86_64`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<BTreeMap<String, Binary>>,
    /// An npm package, run with `npx`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npx: Option<Package>,
    /// A PyPI package, run with `uvx`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uvx: Option<Package>,
}

/// One platform's archive.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Binary {
    /// Where the archive is (`.tar.gz`, `.tgz` or `.zip`).
    pub archive: String,
    /// What to run, in the unpacked archive (`./codex-acp`).
    pub cmd: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables added to its environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The archive's SHA-256, in hex, where the entry gives one (the pinned schema has no
    /// place for it: a manifest of ours never writes it).
    #[serde(default, skip_serializing)]
    pub sha256: Option<String>,
}

/// A package and how it is run.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Package {
    /// The package, with its version where it pins one (`@scope/name@1.2.3`).
    pub package: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables added to its environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// This machine's platform as the registry names it, if it names it.
pub fn platform() -> Option<&'static str> {
    Some(match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "linux-x86_64",
        ("linux", "aarch64") => "linux-aarch64",
        ("macos", "x86_64") => "darwin-x86_64",
        ("macos", "aarch64") => "darwin-aarch64",
        ("windows", "x86_64") => "windows-x86_64",
        ("windows", "aarch64") => "windows-aarch64",
        _ => return None,
    })
}

/// What went wrong with a registry or one of its agents.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The registry could not be read, and nothing of it is cached.
    #[error("cannot read the registry {registry}: {why}")]
    Unreachable {
        /// The registry.
        registry: String,
        /// Why.
        why: String,
    },
    /// The registry's document is not a registry.
    #[error("the registry {registry} is not valid: {why}")]
    Invalid {
        /// The registry.
        registry: String,
        /// What is wrong.
        why: String,
    },
    /// No agent of that id.
    #[error(
        "the registry {registry} has no agent {id:?}{}",
        if nearest.is_empty() { String::new() } else { format!(" (did you mean {}?)", nearest.join(", ")) }
    )]
    UnknownAgent {
        /// The id asked for.
        id: String,
        /// The registry.
        registry: String,
        /// The nearest ids it has.
        nearest: Vec<String>,
    },
    /// The agent has no archive for this platform, nor a package.
    #[error(
        "the agent {id} has no archive for {platform} (it has: {}) and no npx or uvx package",
        have.join(", ")
    )]
    MissingPlatform {
        /// The agent.
        id: String,
        /// This platform.
        platform: String,
        /// The platforms it has archives for.
        have: Vec<String>,
    },
    /// A binary agent's version that the registry does not list and the cache does not have.
    #[error(
        "the registry {registry} offers {id} {have}, not {wanted}, and {id} {wanted} is not in the cache: ask for registry:{id} or registry:{id}@{have}"
    )]
    Version {
        /// The agent.
        id: String,
        /// The registry.
        registry: String,
        /// The version asked for.
        wanted: String,
        /// The version the registry has.
        have: String,
    },
    /// The archive is not what the registry says it is.
    #[error(
        "the archive of {id} ({url}) has SHA-256 {got}, but the registry says {expected}: nothing was unpacked or run"
    )]
    Checksum {
        /// The agent.
        id: String,
        /// The archive.
        url: String,
        /// What the registry says.
        expected: String,
        /// What was downloaded.
        got: String,
    },
    /// The archive is not in the cache, and cannot be downloaded.
    #[error(
        "the agent {id} of the registry {registry} is not in the cache ({}), and its archive {url} cannot be downloaded: {why}. Run the conductor once with the network, or give the agent as a command",
        cache.display()
    )]
    Offline {
        /// The agent.
        id: String,
        /// The registry.
        registry: String,
        /// The archive.
        url: String,
        /// Where it would be cached.
        cache: PathBuf,
        /// Why it cannot be downloaded.
        why: String,
    },
    /// The archive could not be unpacked (or holds no `cmd`).
    #[error("the archive of {id} ({url}): {why}")]
    Archive {
        /// The agent.
        id: String,
        /// The archive.
        url: String,
        /// What is wrong.
        why: String,
    },
    /// A file of the cache, or a file given, could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    fn io(what: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}

/// The ids of `agents` nearest `id` (by edit distance, or sharing a word), nearest first: at
/// most three.
fn nearest<'a>(id: &str, agents: impl Iterator<Item = &'a Agent>) -> Vec<String> {
    let mut scored: Vec<(usize, &str)> = agents
        .map(|a| (distance(id, &a.id), a.id.as_str()))
        .filter(|(d, other)| {
            *d <= id.len().max(other.len()) / 2 || other.contains(id) || id.contains(other)
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(3)
        .map(|(_, id)| id.to_owned())
        .collect()
}

/// Levenshtein's distance between `a` and `b`.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// A registry, read (from its source or its cache).
#[derive(Debug, Clone)]
pub struct Registry {
    /// Where it is.
    pub source: Source,
    /// What it holds.
    pub index: Index,
    /// Where its archives are cached.
    cache: cache::Cache,
}

impl Registry {
    /// Reads the registry at `source`, through the cache for a URL (see the module docs).
    pub async fn open(source: Source) -> Result<Registry, Error> {
        Registry::open_in(source, cache::Cache::default_dir()?).await
    }

    /// [`Registry::open`] with the cache in `dir`.
    pub async fn open_in(source: Source, dir: PathBuf) -> Result<Registry, Error> {
        let cache = cache::Cache::new(dir);
        let text = match &source {
            Source::File(path) => {
                std::fs::read_to_string(path).map_err(|e| Error::Unreachable {
                    registry: source.to_string(),
                    why: e.to_string(),
                })?
            }
            Source::Url(url) => cache.list(url, REFRESH).await?,
        };
        let index: Index = serde_json::from_str(&text).map_err(|e| Error::Invalid {
            registry: source.to_string(),
            why: e.to_string(),
        })?;
        Ok(Registry {
            source,
            index,
            cache,
        })
    }

    /// The agent `id`, or an error naming the nearest ones.
    pub fn agent(&self, id: &str) -> Result<&Agent, Error> {
        self.index
            .agents
            .iter()
            .find(|a| a.id == id)
            .ok_or_else(|| Error::UnknownAgent {
                id: id.to_owned(),
                registry: self.source.to_string(),
                nearest: nearest(id, self.index.agents.iter()),
            })
    }

    /// What it offers, as a table for people.
    pub fn table(&self) -> String {
        let rows: Vec<[String; 4]> = self
            .index
            .agents
            .iter()
            .map(|a| [a.id.clone(), a.version.clone(), kinds(a), a.name.clone()])
            .collect();
        let mut widths = [2, 7, 12, 4];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: [&str; 4]| {
            let mut out = String::new();
            for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
                if i == 3 {
                    out.push_str(cell);
                } else {
                    out.push_str(&format!("{cell:<w$}  "));
                }
            }
            out.trim_end().to_owned() + "\n"
        };
        let mut out = line(["ID", "VERSION", "DISTRIBUTION", "NAME"]);
        for row in &rows {
            out.push_str(&line([&row[0], &row[1], &row[2], &row[3]]));
        }
        out
    }
}

/// How an agent is distributed, in words: `npx`, `uvx`, `binary (linux-x86_64, …)`.
pub(crate) fn kinds(agent: &Agent) -> String {
    let d = &agent.distribution;
    let mut kinds = Vec::new();
    if d.npx.is_some() {
        kinds.push("npx".to_owned());
    }
    if d.uvx.is_some() {
        kinds.push("uvx".to_owned());
    }
    if let Some(binary) = &d.binary {
        kinds.push(format!(
            "binary ({})",
            binary.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    kinds.join(", ")
}

/// Makes each `registry:` component of `chain` the process its registry says: the chain's
/// registry is read once (through the cache), archives downloaded as needed. Nothing to do
/// for a chain without one.
pub async fn resolve_chain(chain: &mut Chain) -> Result<(), Error> {
    if !chain.needs_registry() {
        return Ok(());
    }
    let source = chain.registry.clone().unwrap_or_default();
    let registry = Registry::open(source).await?;
    for component in &mut chain.components {
        let Some(spec) = component.registry.take() else {
            continue;
        };
        let launch = resolve(&registry, &spec).await?;
        tracing::info!(agent = %spec, program = %launch.program, how = %launch.how, "a registry agent");
        component.program = launch.program;
        component.args = launch
            .args
            .into_iter()
            .chain(component.args.drain(..))
            .collect();
        let mut env = launch.env;
        env.append(&mut component.env);
        component.env = env;
    }
    Ok(())
}

#[cfg(test)]
impl Agent {
    /// An agent `id` at version 1.0.0 with no way to run it, for tests to fill in.
    pub(crate) fn sample(id: &str) -> Agent {
        Agent {
            id: id.into(),
            name: id.into(),
            version: "1.0.0".into(),
            description: "d".into(),
            repository: None,
            authors: Vec::new(),
            license: None,
            icon: None,
            distribution: Distribution::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(id: &str) -> Agent {
        Agent::sample(id)
    }

    #[test]
    fn the_nearest_ids_are_named() {
        let agents = [
            agent("gemini"),
            agent("codex-acp"),
            agent("claude-code-acp"),
            agent("qwen-code"),
        ];
        assert_eq!(nearest("gemni", agents.iter()), ["gemini"]);
        assert_eq!(nearest("codex", agents.iter()), ["codex-acp"]);
        assert!(nearest("zzzzzz", agents.iter()).is_empty());
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn entries_of_each_kind_are_read_and_a_checksum_is_never_written() {
        let npx = r#"{"id": "an-npx-agent", "name": "N", "version": "0.1.0", "description": "d",
            "distribution": {"npx": {"package": "@acme/agent@0.1.0", "args": ["--acp"]}}}"#;
        let binary = r#"{"id": "a-binary-agent", "name": "B", "version": "2.0.0", "description": "d",
            "distribution": {"binary": {"linux-x86_64": {"archive": "https://example.com/b.tar.gz",
            "cmd": "./b", "sha256": "00ff"}}}}"#;
        let npx: Agent = serde_json::from_str(npx).unwrap();
        assert_eq!(kinds(&npx), "npx");
        let binary: Agent = serde_json::from_str(binary).unwrap();
        assert_eq!(kinds(&binary), "binary (linux-x86_64)");
        let target = &binary.distribution.binary.as_ref().unwrap()["linux-x86_64"];
        assert_eq!(target.sha256.as_deref(), Some("00ff"));
        let written = serde_json::to_value(&binary).unwrap();
        assert!(
            written
                .pointer("/distribution/binary/linux-x86_64/sha256")
                .is_none()
        );
    }
}
