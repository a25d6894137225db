//! A registry agent as the command that runs it on this machine (see the module docs of
//! `registry`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{Agent, Error, Registry, platform};
use crate::chain::registry::wanted;

/// How a registry agent is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to its environment.
    pub env: BTreeMap<String, String>,
    /// What it is, in words (`npx`, `uvx`, `binary linux-x86_64`), for logs.
    pub how: String,
}

/// The command that runs the agent `spec` (`ID` or `ID@VERSION`) of `registry` here: its
/// archive for this platform (downloaded into the cache once), else its npx package, else its
/// uvx one.
pub async fn resolve(registry: &Registry, spec: &str) -> Result<Launch, Error> {
    let (id, version) = wanted(spec);
    let agent = registry.agent(id)?;
    let here = platform();
    let target = here.and_then(|p| agent.distribution.binary.as_ref()?.get(p).map(|t| (p, t)));
    if let Some((platform, binary)) = target {
        let version = version.unwrap_or(&agent.version);
        let dir = match registry.cache.installed(id, version, platform) {
            Some(dir) => dir,
            None if version == agent.version => {
                registry
                    .cache
                    .install(&registry.source.to_string(), id, version, platform, binary)
                    .await?
            }
            None => {
                return Err(Error::Version {
                    id: id.to_owned(),
                    registry: registry.source.to_string(),
                    wanted: version.to_owned(),
                    have: agent.version.clone(),
                });
            }
        };
        let program: PathBuf = dir.join(&binary.cmd);
        return Ok(Launch {
            program: program.to_string_lossy().into_owned(),
            args: binary.args.clone(),
            env: binary.env.clone(),
            how: format!("binary {platform}, {version}"),
        });
    }
    // npx's `-y`: install without asking (there is nobody to ask).
    let runners = [
        ("npx", &agent.distribution.npx, Some("-y")),
        ("uvx", &agent.distribution.uvx, None),
    ];
    for (runner, package, flag) in runners {
        if let Some(package) = package {
            let mut args: Vec<String> = flag.map(str::to_owned).into_iter().collect();
            args.push(pinned(&package.package, agent, version));
            args.extend(package.args.iter().cloned());
            return Ok(Launch {
                program: runner.to_owned(),
                args,
                env: package.env.clone(),
                how: runner.to_owned(),
            });
        }
    }
    Err(Error::MissingPlatform {
        id: id.to_owned(),
        platform: here.unwrap_or(std::env::consts::OS).to_owned(),
        have: agent
            .distribution
            .binary
            .as_ref()
            .map(|b| b.keys().cloned().collect())
            .unwrap_or_default(),
    })
}

/// `package` as the registry gives it, or pinned to `version` when one other than the
/// registry's is asked for (`name@VERSION`, as npx and uvx both take it).
fn pinned(package: &str, agent: &Agent, version: Option<&str>) -> String {
    match version {
        Some(version) if version != agent.version => {
            // npm's `@scope/name@1.2.3`, PyPI's `name==1.2.3` or `name@1.2.3`.
            let name = package.split_once("==").map_or(package, |(name, _)| name);
            let name = match name.rfind('@') {
                Some(at) if at > 0 => &name[..at],
                _ => name,
            };
            format!("{name}@{version}")
        }
        _ => package.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Distribution, Package};

    #[test]
    fn a_version_asked_for_pins_the_package() {
        let agent = Agent {
            distribution: Distribution {
                npx: Some(Package {
                    package: "@acme/a@1.0.0".into(),
                    args: Vec::new(),
                    env: BTreeMap::new(),
                }),
                ..Distribution::default()
            },
            ..Agent::sample("a")
        };
        assert_eq!(pinned("@acme/a@1.0.0", &agent, None), "@acme/a@1.0.0");
        assert_eq!(
            pinned("@acme/a@1.0.0", &agent, Some("1.0.0")),
            "@acme/a@1.0.0"
        );
        assert_eq!(
            pinned("@acme/a@1.0.0", &agent, Some("0.9.1")),
            "@acme/a@0.9.1"
        );
        assert_eq!(pinned("@acme/a", &agent, Some("0.9.1")), "@acme/a@0.9.1");
        assert_eq!(pinned("tool==1.0.0", &agent, Some("2.0.0")), "tool@2.0.0");
        assert_eq!(wanted("gemini@0.27.3"), ("gemini", Some("0.27.3")));
        assert_eq!(wanted("gemini"), ("gemini", None));
    }
}
