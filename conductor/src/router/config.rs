//! Which backend a session's `cwd` belongs to, and how paths look from there.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use sacp::jsonrpc::{Error, RawJson};

/// How the router picks and runs backends.
///
/// As TOML (`conductor route --config FILE`):
///
/// ```toml
/// backend = "docker exec -i ws-{workspace} claude-agent-acp"   # the default template
/// idle_timeout = "10m"
/// start_timeout = "30s"
///
/// # What the router answers to `initialize` (it answers it itself, and replays the editor's
/// # `initialize` to each backend it starts): `agentCapabilities` as ACP writes them. The
/// # default is below; say what your backends can do.
/// [capabilities]
/// loadSession = true
/// promptCapabilities = { image = true, embeddedContext = true }
/// sessionCapabilities = { list = {}, close = {} }
///
/// [[rule]]
/// prefix = "/home/me/work"                 # sessions whose cwd is under it...
/// backend = "ssh box agent --acp --cwd {cwd}"  # ...run here (optional: the default otherwise)
/// translate = { host = "/home/me/work", backend = "/workspace" }  # optional
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The command template of backends no rule names. Placeholders: `{workspace}` (the
    /// workspace's name: its root directory's name), `{root}` (its root, as the backend sees
    /// it) and `{cwd}` (the session's `cwd`, as the backend sees it).
    #[serde(default)]
    pub backend: Option<String>,
    /// Rules by `cwd` prefix; the longest matching prefix wins.
    #[serde(default, rename = "rule")]
    pub rules: Vec<Rule>,
    /// How long a backend without sessions lives on (default 10 minutes).
    #[serde(default, with = "humane_duration")]
    pub idle_timeout: Option<Duration>,
    /// How long a backend has to start and answer the editor's `initialize` (and
    /// `authenticate`), replayed to it (default 30 seconds). Past it, the `session/new` that
    /// started it fails, naming the workspace and what did not answer.
    #[serde(default, with = "humane_duration")]
    pub start_timeout: Option<Duration>,
    /// The `agentCapabilities` the router answers `initialize` with (as ACP writes them); the
    /// default is [`Config::DEFAULT_CAPABILITIES`].
    #[serde(default)]
    pub capabilities: Option<serde_json::Value>,
}

/// Where the sessions of a part of the file system run.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The rule applies to sessions whose `cwd` is this directory or under it. It is also the
    /// workspace root of those sessions.
    pub prefix: PathBuf,
    /// Their backend's command template (the config's default when absent).
    #[serde(default)]
    pub backend: Option<String>,
    /// How host paths look from the backend.
    #[serde(default)]
    pub translate: Option<PathMap>,
}

/// A host directory, and where the backend sees it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathMap {
    /// The directory on the host (the editor's side).
    pub host: PathBuf,
    /// The same directory as the backend sees it.
    pub backend: PathBuf,
}

impl PathMap {
    /// `path` as the backend sees it, when it is under [`PathMap::host`].
    pub fn to_backend(&self, path: &str) -> Option<String> {
        let rest = Path::new(path).strip_prefix(&self.host).ok()?;
        let seen = if rest.as_os_str().is_empty() {
            self.backend.clone()
        } else {
            self.backend.join(rest)
        };
        Some(seen.to_string_lossy().into_owned())
    }
}

/// One workspace: what runs its sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// Its root directory (on the host); one backend per root.
    pub root: PathBuf,
    /// Its name: the root's last component.
    pub name: String,
    /// The backend's command line, placeholders filled in.
    pub command: String,
    /// How host paths look from the backend, if they look different.
    pub paths: Option<PathMap>,
}

impl Workspace {
    /// The backend's command as errors and logs show it: a URL without its credentials (user
    /// info, query), a command line as it is.
    pub fn shown_command(&self) -> String {
        if crate::chain::remote::is_url(&self.command) {
            crate::chain::remote::Address::new(self.command.clone()).display_url()
        } else {
            self.command.clone()
        }
    }
}

impl Config {
    /// The workspace of a session in `cwd`: the longest rule whose prefix holds it, or else
    /// the nearest ancestor with a `.git` (or `cwd` itself), with the default backend.
    pub fn workspace_for(&self, cwd: &Path) -> Result<Workspace, Error> {
        let rule = self
            .rules
            .iter()
            .filter(|rule| cwd.starts_with(&rule.prefix))
            .max_by_key(|rule| rule.prefix.components().count());
        let root = match rule {
            Some(rule) => rule.prefix.clone(),
            None => cwd
                .ancestors()
                .find(|dir| dir.join(".git").exists())
                .unwrap_or(cwd)
                .to_path_buf(),
        };
        let template = rule
            .and_then(|r| r.backend.clone())
            .or_else(|| self.backend.clone())
            .ok_or_else(|| {
                Error::invalid_params(format!(
                    "no backend for {}: give a default backend or a rule for it",
                    cwd.display()
                ))
            })?;
        let paths = rule.and_then(|r| r.translate.clone());
        let seen = |path: &Path| {
            let text = path.to_string_lossy();
            paths
                .as_ref()
                .and_then(|p| p.to_backend(&text))
                .unwrap_or_else(|| text.into_owned())
        };
        let name = root
            .file_name()
            .map_or_else(|| "root".to_owned(), |n| n.to_string_lossy().into_owned());
        // Quoted for a shell in a command line; percent-encoded in a URL.
        let url = crate::chain::remote::is_url(&template);
        let quote = |s: &str| {
            if url {
                percent_encode(s)
            } else {
                format!("'{}'", s.replace('\'', r"'\''"))
            }
        };
        let command = template
            .replace("{workspace}", &quote(&name))
            .replace("{root}", &quote(&seen(&root)))
            .replace("{cwd}", &quote(&seen(cwd)));
        Ok(Workspace {
            root,
            name,
            command,
            paths,
        })
    }

    /// What the router says it can do when the configuration does not say: sessions load and
    /// are listed and closed (the router does all three across backends), prompts may carry
    /// images and embedded context (what the agents people run take).
    pub const DEFAULT_CAPABILITIES: &str = r#"{"loadSession":true,"promptCapabilities":{"image":true,"embeddedContext":true},"sessionCapabilities":{"list":{},"close":{}}}"#;

    /// The answer to the editor's `initialize`: ACP v1, the configured capabilities.
    pub fn initialize_result(&self) -> Result<RawJson, Error> {
        let capabilities = match &self.capabilities {
            Some(capabilities) => capabilities.clone(),
            None => serde_json::from_str(Self::DEFAULT_CAPABILITIES)?,
        };
        RawJson::to_raw(&serde_json::json!({
            "protocolVersion": 1,
            "agentCapabilities": capabilities,
            "authMethods": [],
            "agentInfo": {"name": "sacp-router", "version": env!("CARGO_PKG_VERSION")},
        }))
    }

    /// How long a backend without sessions lives on.
    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout.unwrap_or(Duration::from_secs(600))
    }

    /// How long a backend has to start and answer the replayed `initialize`.
    pub fn start_timeout(&self) -> Duration {
        self.start_timeout.unwrap_or(Duration::from_secs(30))
    }
}

/// Durations in config files, in the grammar of the command line's (`humantime`): `"90s"`,
/// `"10m"`, `"1h 30m"`, `"500ms"`.
mod humane_duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => humantime::parse_duration(&text).map(Some).map_err(|e| {
                serde::de::Error::custom(format!(
                    "{text:?} is not a duration ({e}; write \"90s\", \"10m\", \"1h 30m\" or \"500ms\")"
                ))
            }),
        }
    }
}

/// `text` with every byte but URL-unreserved ones and `/` percent-encoded.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The README's config file reads, durations in the command line's grammar.
    #[test]
    fn the_readme_config_reads() {
        let readme = include_str!("../../docs/router.md");
        let start = readme
            .find("```toml\nbackend = \"docker exec")
            .expect("the README shows a config");
        let text = &readme[start + "```toml\n".len()..];
        let text = &text[..text.find("```").unwrap()];
        let config: Config = toml::from_str(text).unwrap();
        assert_eq!(config.idle_timeout(), Duration::from_secs(600));
        assert_eq!(config.rules.len(), 1);
        let default: Value = serde_json::from_str(Config::DEFAULT_CAPABILITIES).unwrap();
        assert_eq!(
            config.capabilities,
            Some(default),
            "the README shows the default"
        );
        let answer: Value = config.initialize_result().unwrap().parse().unwrap();
        assert_eq!(answer["protocolVersion"], 1);
        // The recipes for backends on other machines read too.
        let start = readme
            .find("```toml\n# Over ssh")
            .expect("the README shows the recipes");
        let text = &readme[start + "```toml\n".len()..];
        let recipes: Config = toml::from_str(&text[..text.find("```").unwrap()]).unwrap();
        assert_eq!(recipes.rules.len(), 3);
        assert!(recipes.rules.iter().all(|r| r.translate.is_some()));
        let timed: Config = toml::from_str("idle_timeout = \"1h 30m\"").unwrap();
        assert_eq!(timed.idle_timeout(), Duration::from_secs(5400));
        assert!(toml::from_str::<Config>("idle_timeout = 90").is_err());
    }

    #[test]
    fn the_longest_rule_wins_and_paths_are_translated() {
        let config = Config {
            backend: Some("agent --root {root} --cwd {cwd} --name {workspace}".into()),
            rules: vec![
                Rule {
                    prefix: "/home/me".into(),
                    backend: None,
                    translate: None,
                },
                Rule {
                    prefix: "/home/me/work/app".into(),
                    backend: Some("docker exec -i ws-{workspace} agent {cwd}".into()),
                    translate: Some(PathMap {
                        host: "/home/me/work/app".into(),
                        backend: "/workspace".into(),
                    }),
                },
            ],
            ..Config::default()
        };
        let ws = config
            .workspace_for(Path::new("/home/me/work/app/src"))
            .unwrap();
        assert_eq!(ws.name, "app");
        assert_eq!(ws.command, "docker exec -i ws-'app' agent '/workspace/src'");
        let ws = config.workspace_for(Path::new("/home/me/notes")).unwrap();
        assert_eq!(
            ws.command,
            "agent --root '/home/me' --cwd '/home/me/notes' --name 'me'"
        );
        assert!(Config::default().workspace_for(Path::new("/tmp")).is_err());
    }

    #[test]
    fn a_url_template_is_filled_in_percent_encoded() {
        let config = Config {
            backend: Some("ws://{workspace}.devbox:8080/acp?cwd={cwd}".into()),
            ..Config::default()
        };
        let ws = config
            .workspace_for(Path::new("/home/me/my app's/src"))
            .unwrap();
        assert_eq!(
            ws.command,
            "ws://src.devbox:8080/acp?cwd=/home/me/my%20app%27s/src"
        );
        // Errors show it without user info or query, where credentials ride.
        let secret = Workspace {
            command: "wss://me:s3cret@devbox:8443/acp?token=t0k".into(),
            ..ws
        };
        assert_eq!(secret.shown_command(), "wss://devbox:8443/acp");
    }
}
