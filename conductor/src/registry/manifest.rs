//! A chain as a registry entry (`conductor registry manifest`): an `agent.json` whose
//! distribution runs the conductor with the chain, and an `icon.svg` placeholder where none is
//! given, so that a team lists its chain in its own registry or the public one.
//!
//! - A **binary** entry (`--archive PLATFORM=URL`, one a platform) runs `./conductor` from the
//!   archive with the chain: `agent --chain FILE` when the chain is a file (the archive holds
//!   the conductor, the chain file beside it and the programs of the chain's own components;
//!   a `registry:` component is fetched by the conductor itself), or `agent` and its
//!   components as command lines.
//! - An **npx** or **uvx** entry (`--npx PACKAGE`, `--uvx PACKAGE`: a package whose program is
//!   the conductor) runs it with `agent` and the components as command lines; a chain that
//!   needs its file (names, environments, working directories, WebAssembly grants) is refused
//!   for them with the reason.
//!
//! The entry never carries a `sha256` (the registry's schema has no place for it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Agent, Binary, Distribution, Package};
use crate::chain::{Chain, Component};

/// What `conductor registry manifest` is told.
#[derive(Debug, Clone, Default)]
pub struct Asked {
    /// The chain file, when the chain is one.
    pub chain_file: Option<PathBuf>,
    /// The entry's id (default: the chain file's name, else `sacp-chain`).
    pub id: Option<String>,
    /// Its name (default: its id).
    pub name: Option<String>,
    /// Its version (default: the conductor's).
    pub version: Option<String>,
    /// Its description (default: the chain, in words).
    pub description: Option<String>,
    /// `PLATFORM=URL` archives.
    pub archives: Vec<String>,
    /// A package whose program is the conductor, run with npx.
    pub npx: Option<String>,
    /// The same, with uvx.
    pub uvx: Option<String>,
    /// Its repository, authors, license.
    pub repository: Option<String>,
    pub authors: Vec<String>,
    pub license: Option<String>,
}

/// The platforms the registry names.
const PLATFORMS: [&str; 6] = [
    "darwin-aarch64",
    "darwin-x86_64",
    "linux-aarch64",
    "linux-x86_64",
    "windows-aarch64",
    "windows-x86_64",
];

/// The entry for `chain` as `asked`, or why there is none.
pub fn manifest(chain: &Chain, asked: &Asked) -> Result<Agent, String> {
    if chain.components.is_empty() {
        return Err("the chain has no component".to_owned());
    }
    let (id, version) = id_and_version(asked)?;
    let lines = command_lines(chain);
    let mut distribution = Distribution::default();
    if !asked.archives.is_empty() {
        let args = match &asked.chain_file {
            Some(file) => vec![
                "agent".to_owned(),
                "--chain".to_owned(),
                file.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .ok_or("the chain file has no name")?,
            ],
            None => with_agent(lines.clone()?),
        };
        distribution.binary = Some(binaries(&asked.archives, &args)?);
    }
    for (package, slot) in [
        (&asked.npx, &mut distribution.npx),
        (&asked.uvx, &mut distribution.uvx),
    ] {
        if let Some(package) = package {
            let args = lines.clone().map_err(|why| {
                format!("a package runs the conductor with the chain's command lines, and {why}")
            })?;
            *slot = Some(Package {
                package: package.clone(),
                args: with_agent(args),
                env: BTreeMap::new(),
            });
        }
    }
    if distribution.binary.is_none() && distribution.npx.is_none() && distribution.uvx.is_none() {
        return Err("give at least one distribution: --archive PLATFORM=URL, --npx PACKAGE or --uvx PACKAGE".to_owned());
    }
    let names: Vec<&str> = chain.components.iter().map(|c| c.name.as_str()).collect();
    Ok(Agent {
        name: asked.name.clone().unwrap_or_else(|| id.clone()),
        id,
        version,
        description: asked.description.clone().unwrap_or_else(|| {
            format!(
                "A chain of ACP components run by the sacp conductor: {}",
                names.join(" → ")
            )
        }),
        repository: asked.repository.clone(),
        authors: asked.authors.clone(),
        license: asked.license.clone(),
        icon: None,
        distribution,
    })
}

/// The entry's id and version, as asked or by default, checked as the registry wants them.
fn id_and_version(asked: &Asked) -> Result<(String, String), String> {
    let id = asked
        .id
        .clone()
        .or_else(|| {
            let stem = asked.chain_file.as_ref()?.file_stem()?.to_string_lossy();
            Some(slug(&stem))
        })
        .unwrap_or_else(|| "sacp-chain".to_owned());
    if !valid_id(&id) {
        return Err(format!(
            "the id {id:?} is not a registry id (lowercase letters, digits and hyphens, from a letter)"
        ));
    }
    let version = asked
        .version
        .clone()
        .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned());
    if !version
        .split('.')
        .take(3)
        .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        || version.split('.').count() < 3
    {
        return Err(format!("the version {version:?} is not MAJOR.MINOR.PATCH"));
    }
    Ok((id, version))
}

/// The `binary` distribution of `archives` (`PLATFORM=URL`), each running the conductor with
/// `args`.
fn binaries(archives: &[String], args: &[String]) -> Result<BTreeMap<String, Binary>, String> {
    let mut binary = BTreeMap::new();
    for archive in archives {
        let (platform, url) = archive
            .split_once('=')
            .ok_or_else(|| format!("--archive {archive:?}: expected PLATFORM=URL"))?;
        if !PLATFORMS.contains(&platform) {
            return Err(format!(
                "--archive {archive:?}: the registry's platforms are {}",
                PLATFORMS.join(", ")
            ));
        }
        if !url.contains("://") {
            return Err(format!("--archive {archive:?}: {url:?} is not a URL"));
        }
        let cmd = if platform.starts_with("windows") {
            "./conductor.exe"
        } else {
            "./conductor"
        };
        binary.insert(
            platform.to_owned(),
            Binary {
                archive: url.to_owned(),
                cmd: cmd.to_owned(),
                args: args.to_vec(),
                env: BTreeMap::new(),
                sha256: None,
            },
        );
    }
    Ok(binary)
}

/// `agent` and the components' command lines.
fn with_agent(lines: Vec<String>) -> Vec<String> {
    std::iter::once("agent".to_owned()).chain(lines).collect()
}

/// The components as the command lines that make them again, or why they cannot be: what only
/// a chain file says.
fn command_lines(chain: &Chain) -> Result<Vec<String>, String> {
    chain
        .components
        .iter()
        .map(|c| plain_line(c).ok_or_else(|| format!("the component {:?} needs the chain file (a name, an environment, a working directory, a dialect, headers or grants)", c.name)))
        .collect()
}

/// A component's command line, if that is all it is.
fn plain_line(component: &Component) -> Option<String> {
    let again = Component::parse(&component.command_line(), 1).ok()?;
    (again == *component).then(|| component.command_line())
}

/// `text` as a registry id: lowercase, hyphens for anything else.
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

fn valid_id(id: &str) -> bool {
    let mut bytes = id.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A 16×16 placeholder icon: the chain's initial on a rounded square.
pub fn placeholder_icon(id: &str) -> String {
    let initial = id.chars().next().unwrap_or('s').to_ascii_uppercase();
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#5b5bd6"/><text x="8" y="12" font-family="sans-serif" font-size="11" text-anchor="middle" fill="#fff">{initial}</text></svg>
"##
    )
}

/// Writes `agent.json` (and `icon.svg`: `icon`'s content, or the placeholder) into `dir`:
/// the files written.
pub fn write(agent: &Agent, icon: Option<&Path>, dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let json = dir.join("agent.json");
    let text = serde_json::to_string_pretty(agent).map_err(|e| e.to_string())? + "\n";
    std::fs::write(&json, text).map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    let svg = dir.join("icon.svg");
    let icon_text = match icon {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the icon {}: {e}", path.display()))?,
        None => placeholder_icon(&agent.id),
    };
    std::fs::write(&svg, icon_text).map_err(|e| format!("cannot write {}: {e}", svg.display()))?;
    Ok(vec![json, svg])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_of_command_lines_is_an_entry_and_one_that_needs_its_file_names_why() {
        let chain = Chain::from_command_lines(&["sparkle", "registry:gemini"]).unwrap();
        let asked = Asked {
            id: Some("sparkle-gemini".into()),
            npx: Some("@acme/sparkle-chain@1.0.0".into()),
            archives: vec!["linux-x86_64=https://example.com/c.tar.gz".into()],
            ..Asked::default()
        };
        let agent = manifest(&chain, &asked).unwrap();
        let npx = agent.distribution.npx.as_ref().unwrap();
        assert_eq!(npx.args, ["agent", "sparkle", "registry:gemini"]);
        let binary = &agent.distribution.binary.as_ref().unwrap()["linux-x86_64"];
        assert_eq!((binary.cmd.as_str(), binary.args.len()), ("./conductor", 3));
        let mut named = Chain::default();
        named
            .push_toml("[[component]]\nname = \"s\"\ncommand = \"sparkle\"\nenv = { A = \"1\" }\n")
            .unwrap();
        let refused = manifest(&named, &asked).unwrap_err();
        assert!(refused.contains("needs the chain file"), "{refused}");
        assert!(
            manifest(&chain, &Asked::default())
                .unwrap_err()
                .contains("distribution")
        );
        assert_eq!(slug("My Chain_v2"), "my-chain-v2");
    }
}
