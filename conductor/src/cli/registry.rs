//! `conductor registry list|show|manifest`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use crate::chain::Chain;
use crate::registry::{Registry, Source, manifest};

#[derive(Debug, Subcommand)]
pub(super) enum RegistryCommand {
    /// Lists what a registry offers: a table (id, version, distribution, name), or its
    /// document with --json.
    List {
        /// The registry: a URL or a file (default: the public one).
        #[arg(long, value_name = "URL|FILE")]
        registry: Option<String>,
        /// Prints the registry's document as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Shows one agent of a registry: its entry, and how it runs on this machine.
    Show {
        /// The agent's id.
        id: String,
        /// The registry: a URL or a file (default: the public one).
        #[arg(long, value_name = "URL|FILE")]
        registry: Option<String>,
        /// Prints the entry as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Writes a registry entry for a chain (`agent.json`, and an `icon.svg` placeholder unless
    /// --icon gives one) into --out: its distribution runs the conductor with the chain.
    Manifest(Box<ManifestArgs>),
}

/// The arguments of `conductor registry manifest`.
#[derive(Debug, clap::Args)]
pub(super) struct ManifestArgs {
    /// The components as command lines (after the chain file's, as for `conductor agent`).
    #[arg(value_name = "COMPONENT")]
    components: Vec<String>,
    /// The chain file; a binary entry runs `./conductor agent --chain FILE` from its
    /// archive.
    #[arg(long, value_name = "FILE")]
    chain: Option<PathBuf>,
    /// The entry's id (lowercase letters, digits, hyphens; default: the chain file's name).
    #[arg(long)]
    id: Option<String>,
    /// Its display name (default: its id).
    #[arg(long)]
    name: Option<String>,
    /// Its version, MAJOR.MINOR.PATCH (default: the conductor's).
    #[arg(long)]
    version: Option<String>,
    /// Its description (default: the chain, in words).
    #[arg(long)]
    description: Option<String>,
    /// An archive of the conductor (and the chain's own programs) for a platform:
    /// `linux-x86_64=https://…/chain-linux-x86_64.tar.gz`. Repeatable.
    #[arg(long, value_name = "PLATFORM=URL")]
    archive: Vec<String>,
    /// An npm package whose program is the conductor, run with npx.
    #[arg(long, value_name = "PACKAGE")]
    npx: Option<String>,
    /// A PyPI package whose program is the conductor, run with uvx.
    #[arg(long, value_name = "PACKAGE")]
    uvx: Option<String>,
    /// Its source repository's URL.
    #[arg(long)]
    repository: Option<String>,
    /// An author. Repeatable.
    #[arg(long)]
    author: Vec<String>,
    /// Its license (SPDX, or `proprietary`).
    #[arg(long)]
    license: Option<String>,
    /// An SVG icon (16×16) to write as icon.svg.
    #[arg(long, value_name = "FILE")]
    icon: Option<PathBuf>,
    /// Where to write agent.json and icon.svg.
    #[arg(long, value_name = "DIR", default_value = ".")]
    out: PathBuf,
}

pub(super) fn run(command: RegistryCommand) -> ExitCode {
    let result = match command {
        RegistryCommand::List { registry, json } => open(registry).map(|r| {
            if json {
                serde_json::to_string_pretty(&r.index).unwrap_or_default() + "\n"
            } else {
                r.table()
            }
        }),
        RegistryCommand::Show { id, registry, json } => open(registry).and_then(|r| {
            let agent = r.agent(&id).map_err(|e| e.to_string())?;
            Ok(if json {
                serde_json::to_string_pretty(agent).unwrap_or_default() + "\n"
            } else {
                describe(agent)
            })
        }),
        RegistryCommand::Manifest(args) => {
            let ManifestArgs {
                components,
                chain,
                id,
                name,
                version,
                description,
                archive,
                npx,
                uvx,
                repository,
                author,
                license,
                icon,
                out,
            } = *args;
            let asked = manifest::Asked {
                chain_file: chain.clone(),
                id,
                name,
                version,
                description,
                archives: archive,
                npx,
                uvx,
                repository,
                authors: author,
                license,
            };
            chain_of(chain.as_deref(), &components)
                .and_then(|c| manifest::manifest(&c, &asked))
                .and_then(|agent| manifest::write(&agent, icon.as_deref(), &out))
                .map(|files| {
                    files
                        .iter()
                        .map(|f| format!("wrote {}\n", f.display()))
                        .collect()
                })
        }
    };
    super::printed(result, "conductor registry")
}

/// The registry `given`, or the public one.
fn open(given: Option<String>) -> Result<Registry, String> {
    let source = given.map(|g| Source::parse(&g)).unwrap_or_default();
    match super::on_runtime(Registry::open(source)) {
        Ok(opened) => opened.map_err(|e| e.to_string()),
        Err(_) => Err("cannot start the async runtime".to_owned()),
    }
}

/// The chain of a chain file and command lines.
fn chain_of(file: Option<&std::path::Path>, lines: &[String]) -> Result<Chain, String> {
    let mut chain = Chain::default();
    if let Some(file) = file {
        chain.push_file(file).map_err(|e| e.to_string())?;
    }
    chain.push_command_lines(lines).map_err(|e| e.to_string())?;
    Ok(chain)
}

/// An agent, for people.
fn describe(agent: &crate::registry::Agent) -> String {
    let mut out = format!(
        "{} {} — {}\n{}\n",
        agent.id, agent.version, agent.name, agent.description
    );
    for (what, value) in [
        ("repository", agent.repository.as_deref()),
        ("license", agent.license.as_deref()),
    ] {
        if let Some(value) = value {
            out.push_str(&format!("{what}: {value}\n"));
        }
    }
    if !agent.authors.is_empty() {
        out.push_str(&format!("authors: {}\n", agent.authors.join(", ")));
    }
    let d = &agent.distribution;
    for (tool, package) in [("npx -y", &d.npx), ("uvx", &d.uvx)] {
        if let Some(p) = package {
            out.push_str(&format!(
                "runs: {tool} {} {}\n",
                p.package,
                p.args.join(" ")
            ));
        }
    }
    if let Some(binary) = &d.binary {
        let here = crate::registry::platform();
        for (platform, target) in binary {
            let mark = if Some(platform.as_str()) == here {
                " (this machine)"
            } else {
                ""
            };
            out.push_str(&format!(
                "{platform}{mark}: {} {} from {}\n",
                target.cmd,
                target.args.join(" "),
                target.archive
            ));
        }
    }
    out.push_str(&format!("as a component: registry:{}\n", agent.id));
    out
}
