//! The chain: which components to run, in order (the last one is the agent).
//!
//! Components come from three places, concatenated in this order:
//! 1. a chain file (`--chain FILE`, TOML), for components that need an environment or a
//!    working directory;
//! 2. command lines given as single arguments (`conductor agent "my-proxy --flag" my-agent`),
//!    split the way a POSIX shell would split them;
//! 3. separate argv words after `--`, one component per group, groups separated by a `--` of
//!    their own (`conductor agent -- my-proxy --flag -- my-agent --acp`).
//!
//! The chain file:
//! ```toml
//! [[component]]
//! name = "sparkle"               # optional; defaults to the program's file name (see below)
//! command = "sparkle-proxy -v"   # a command line, split like a shell would
//! args = ["--extra", "two words"] # optional, appended as they are
//! cwd = "/work/project"          # optional
//! env = { SPARKLE_HOME = "/tmp/sparkle" } # optional, added to the conductor's environment
//! dialect = "sacp"               # optional: "sacp", "s11" or "rfd"; found by probing otherwise
//!
//! [[component]]
//! command = "my-agent --acp"
//! ```
//!
//! A component may also be an ACP server reached over the network (ACP's remote transport,
//! [`sacp::remote`]) instead of a process: a single word that is a `ws://`, `wss://`,
//! `http://` or `https://` URL on the command line (with `--header 'Name: value'` and
//! `--ca-file FILE` for every such component), or in a chain file:
//! ```toml
//! [[component]]
//! name = "devbox"                                # optional; defaults to the URL's host
//! url = "wss://devbox.lan:8443/acp"
//! headers = { Authorization = "Bearer s3cret" }  # optional
//! ca_files = ["/etc/devbox/ca.pem"]              # optional: CAs to trust besides the system's
//! ```
//!
//! A component may also be an agent of an ACP registry (see [`crate::registry`]):
//! `registry:ID` or `registry:ID@VERSION`, resolved before the chain starts into the command
//! its distribution gives for this platform (`npx`, `uvx`, or an archive downloaded once into
//! sacp's cache); the public registry unless `--registry URL|FILE` or, at the top of a chain
//! file, `registry = "URL|FILE"` names another:
//! ```toml
//! registry = "https://registry.example.com/registry.json"
//!
//! [[component]]
//! command = "registry:gemini@0.27.3 --debug"   # arguments after the registry's own
//! env = { GEMINI_API_KEY = "…" }               # added over the registry's
//! ```
//!
//! A chain file may also say, at its top, how the proxies' MCP servers reach an agent that does
//! not speak MCP over ACP: `mcp_bridge = "stdio"`, `"http"` or `"auto"` (the default; see
//! [`BridgeMode`]). `--mcp-bridge` on the command line wins over it.
//!
//! A component without a `name` is named after its program's file name — or, when the program
//! is an interpreter or a launcher (`node`, `python3`, `npx`, `uvx`, `bash -c`, `java -jar`,
//! …), after the script, module or package it runs: `node /opt/agent.mjs` is `agent.mjs`,
//! `npx -y @zed-industries/claude-code-acp` is `claude-code-acp`, `python3 -m my_agent` is
//! `my_agent`.

pub(crate) mod registry;
pub(crate) mod remote;
pub(crate) mod wasm;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sacp::protocol::dialect::Dialect;
use serde::Deserialize;

/// A chain that cannot be run as given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChainError {
    /// A command line that does not split (an unclosed quote) or is empty.
    #[error("component {position}: {why} in {line:?}")]
    CommandLine {
        /// 1-based position in the chain.
        position: usize,
        /// The command line as given.
        line: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The chain file could not be read.
    #[error("cannot read the chain file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The chain file is not valid.
    #[error("the chain file {path} is not valid: {why}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong (with line and column).
        why: String,
    },
    /// A chain file's text (given as text, not as a file) is not valid.
    #[error("the chain is not valid: {why}")]
    Text {
        /// What is wrong (with line and column).
        why: String,
    },
    /// A dialect declaration (`POSITION=DIALECT`) that cannot be applied.
    #[error("--dialect {declaration:?}: {why}")]
    Dialect {
        /// The declaration as given.
        declaration: String,
        /// What is wrong with it.
        why: String,
    },
}

/// How the conductor bridges MCP servers over ACP for an agent that does not speak it (the
/// chain file's `mcp_bridge`, the command line's `--mcp-bridge`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum BridgeMode {
    /// HTTP when the agent declared `mcpCapabilities.http`, stdio otherwise.
    #[default]
    Auto,
    /// Always the stdio bridge (`conductor mcp PORT`).
    Stdio,
    /// Always the HTTP bridge.
    Http,
}

/// An MCP bridge's name that is none of `stdio`, `http`, `auto`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown MCP bridge {0:?}: expected stdio, http or auto")]
pub struct UnknownBridgeMode(pub String);

impl std::str::FromStr for BridgeMode {
    type Err = UnknownBridgeMode;

    fn from_str(s: &str) -> Result<Self, UnknownBridgeMode> {
        match s {
            "auto" => Ok(BridgeMode::Auto),
            "stdio" => Ok(BridgeMode::Stdio),
            "http" => Ok(BridgeMode::Http),
            other => Err(UnknownBridgeMode(other.to_owned())),
        }
    }
}

/// An in-process proxy's run, until the conductor closes its channel.
pub(crate) type Serving =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), sacp::Error>> + Send>>;

/// A component that runs inside the conductor's process, over an in-memory channel: what
/// [`Chain::proxy`] and [`Chain::agent`] add.
#[derive(Clone)]
pub struct InProcess(
    pub(crate) std::sync::Arc<dyn Fn(sacp::jsonrpc::Channel) -> Serving + Send + Sync>,
);

impl InProcess {
    /// Runs the component on `channel` until the conductor closes it.
    pub(crate) fn run(&self, channel: sacp::jsonrpc::Channel) -> Serving {
        (self.0)(channel)
    }
}

impl std::fmt::Debug for InProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InProcess")
    }
}

impl PartialEq for InProcess {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for InProcess {}

/// One component of the chain: a proxy, or (the last one) the agent. A process, or a Rust
/// proxy running in the conductor's own process ([`Chain::proxy`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    /// The name used in error messages, logs and traces.
    pub name: String,
    /// The program to run (looked up in `PATH` when it has no `/`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the environment it inherits.
    pub env: BTreeMap<String, String>,
    /// Its working directory (the conductor's when `None`).
    pub cwd: Option<PathBuf>,
    /// The proxy-chain dialect it speaks, when declared (`--dialect`, or `dialect` in a chain
    /// file); found by probing its `initialize` otherwise (see [`Dialect`]).
    pub dialect: Option<Dialect>,
    /// Set for a proxy that runs in the conductor's process: then there is no program.
    pub(crate) in_process: Option<InProcess>,
    /// Set for a component reached over the network: then `program` is its URL.
    pub(crate) remote: Option<remote::Address>,
    /// Set for a WebAssembly component: then `program` is `wasm:PATH`.
    pub(crate) wasm: Option<wasm::Wasm>,
    /// Set for a registry agent not resolved yet (`ID` or `ID@VERSION`): then `program` is
    /// `registry:…` (see [`crate::registry::resolve_chain`]).
    pub(crate) registry: Option<String>,
}

impl Component {
    /// A component from its argv: the program, then its arguments.
    ///
    /// Returns `None` when `argv` is empty. A single word that is a `ws://`, `wss://`,
    /// `http://` or `https://` URL is a component reached over the network (see
    /// [`Component::from_url`]).
    pub fn from_argv(argv: Vec<String>) -> Option<Component> {
        if let [url] = argv.as_slice()
            && remote::is_url(url)
        {
            return Some(Component::from_url(url));
        }
        let mut words = argv.into_iter();
        let program = words.next()?;
        if let Some(path) = program.strip_prefix(wasm::PREFIX) {
            return Some(Component::from_wasm(path, words.collect()));
        }
        if let Some(spec) = program.strip_prefix(registry::PREFIX) {
            return Some(Component::from_registry(spec, words.collect()));
        }
        let name = default_name(&program, words.as_slice());
        Some(Component::plain(name, program, words.collect()))
    }

    /// A process component `program` with `args`, named `name`, and nothing else set.
    fn plain(name: String, program: String, args: Vec<String>) -> Component {
        Component {
            name,
            program,
            args,
            env: BTreeMap::new(),
            cwd: None,
            dialect: None,
            in_process: None,
            remote: None,
            wasm: None,
            registry: None,
        }
    }

    /// A component reached over the network with ACP's remote transport instead of spawned:
    /// the ACP server at `url` (`ws://` or `wss://` for WebSocket, `http://` or `https://`
    /// for Streamable HTTP; by convention its path is `/acp`). Named after the URL's host.
    pub fn from_url(url: &str) -> Component {
        let address = remote::Address::new(url);
        let name = address.default_name();
        Component {
            remote: Some(address),
            ..Component::plain(name, url.to_owned(), Vec::new())
        }
    }

    /// A WebAssembly component (WASI 0.2) that the conductor runs in its own process, in a
    /// sandbox of its own, with `args`: granted nothing (no directory, no network, an empty
    /// environment) and limited to 256 MiB of memory and 10 s of computing without waiting
    /// until a chain file says otherwise. Named after its file, without `.wasm`.
    pub fn from_wasm(path: &str, args: Vec<String>) -> Component {
        let name = file_name(path);
        let name = name.strip_suffix(".wasm").unwrap_or(&name).to_owned();
        Component {
            wasm: Some(wasm::Wasm::new(path)),
            ..Component::plain(name, format!("{}{path}", wasm::PREFIX), args)
        }
    }

    /// An agent of an ACP registry, `ID` or `ID@VERSION` (`spec`), with `args` after the
    /// registry's own: resolved into a process before the chain starts (see
    /// [`crate::registry::resolve_chain`]). Named after its id.
    pub fn from_registry(spec: &str, args: Vec<String>) -> Component {
        let (id, _) = registry::wanted(spec);
        Component {
            registry: Some(spec.to_owned()),
            ..Component::plain(id.to_owned(), format!("{}{spec}", registry::PREFIX), args)
        }
    }

    /// What a WebAssembly component is granted, in words (`None` for any other component).
    pub fn grants(&self) -> Option<String> {
        self.wasm.as_ref().map(wasm::Wasm::grants)
    }

    /// Adds a header to every request to a component reached over the network
    /// (`Authorization: Bearer …`, say); nothing for a process.
    pub fn with_header(mut self, name: &str, value: &str) -> Component {
        if let Some(remote) = &mut self.remote {
            remote.headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    /// Trusts the CA certificates of a PEM file too, for a component reached over `wss://` or
    /// `https://` with a certificate of its own CA; nothing for a process.
    pub fn with_ca_file(mut self, path: impl Into<PathBuf>) -> Component {
        if let Some(remote) = &mut self.remote {
            remote.ca_files.push(path.into());
        }
        self
    }

    /// The URL of a component reached over the network, without credentials.
    pub fn url(&self) -> Option<String> {
        self.remote.as_ref().map(remote::Address::display_url)
    }

    /// A component from a command line, split like a POSIX shell would (quotes and
    /// backslashes; no variables, globs or redirections). `position` (1-based) only serves the
    /// error message.
    pub fn parse(line: &str, position: usize) -> Result<Component, ChainError> {
        let error = |why| ChainError::CommandLine {
            position,
            line: line.to_owned(),
            why,
        };
        let words =
            shlex::split(line).ok_or_else(|| error("unbalanced quotes or a trailing backslash"))?;
        Component::from_argv(words).ok_or_else(|| error("no program"))
    }

    /// The command line, quoted so that [`Component::parse`] gives it back; for a component
    /// reached over the network, its URL without credentials.
    pub fn command_line(&self) -> String {
        if let Some(url) = self.url() {
            return url;
        }
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|w| shlex::try_quote(w).map_or_else(|_| w.clone(), |q| q.into_owned()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What names a component unless told otherwise: its program's file name, or what an
/// interpreter or launcher runs (see the module docs).
fn default_name(program: &str, args: &[String]) -> String {
    let program_name = file_name(program);
    if !is_interpreter(&program_name) {
        return program_name;
    }
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            // A shell's script: named after the command it runs, if it is a simple one.
            "-c" => {
                if let Some(script) = words.next()
                    && !script.contains([';', '&', '|', '<', '>', '(', '$', '`'])
                {
                    let mut argv = shlex::split(script).unwrap_or_default();
                    argv.retain(|w| w != "exec");
                    if let Some((first, rest)) = argv.split_first() {
                        return default_name(first, rest);
                    }
                }
            }
            // The next word is what runs: a module, a jar.
            "-m" | "-jar" => {
                if let Some(what) = words.next() {
                    return file_name(what);
                }
            }
            // Launchers' subcommands, and `env`'s assignments.
            "run" | "exec" | "x" | "dlx" | "tool" | "--" => {}
            w if w.starts_with('-') || w.contains('=') => {}
            w => return file_name(w),
        }
    }
    program_name
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or_else(|| path.to_owned(), |n| n.to_string_lossy().into_owned())
}

/// Programs that run something else named among their arguments.
fn is_interpreter(name: &str) -> bool {
    let name = name.trim_end_matches(".exe");
    // `python3.12`, `node20`: the version does not matter.
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    matches!(
        base,
        "node"
            | "nodejs"
            | "python"
            | "pypy"
            | "ruby"
            | "perl"
            | "php"
            | "java"
            | "deno"
            | "bun"
            | "bunx"
            | "npx"
            | "npm"
            | "pnpm"
            | "yarn"
            | "uv"
            | "uvx"
            | "pipx"
            | "tsx"
            | "ts-node"
            | "sh"
            | "bash"
            | "zsh"
            | "dash"
            | "env"
    )
}

/// The components of a chain, in order: proxies first, the agent last.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chain {
    /// The components.
    pub components: Vec<Component>,
    /// How MCP servers over ACP are bridged for the agent, when the chain file says so.
    pub mcp_bridge: Option<BridgeMode>,
    /// The registry its `registry:` components come from (the public one when `None`).
    pub registry: Option<registry::Source>,
}

impl Chain {
    /// An empty chain, to add components to:
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// #[derive(Default)]
    /// struct Quiet;
    /// #[sacp::proxy]
    /// impl Quiet {}
    ///
    /// // One binary: this proxy in-process, any agent as a process.
    /// let chain = sacp_conductor::Chain::new()
    ///     .proxy(Quiet)
    ///     .agent_command("my-agent --acp")?;
    /// let exit = chain.serve_stdio(sacp_conductor::Options::default()).await;
    /// std::process::exit(exit.code().into());
    /// # }
    /// ```
    pub fn new() -> Chain {
        Chain::default()
    }

    /// A chain of these components.
    pub fn from_components(components: Vec<Component>) -> Chain {
        Chain {
            components,
            mcp_bridge: None,
            registry: None,
        }
    }

    /// Adds a process component from its command line (the last one added is the agent).
    pub fn agent_command(mut self, line: &str) -> Result<Chain, ChainError> {
        self.push_command_lines(&[line])?;
        Ok(self)
    }

    /// A chain from command lines, one per component.
    pub fn from_command_lines<S: AsRef<str>>(lines: &[S]) -> Result<Chain, ChainError> {
        let mut chain = Chain::default();
        chain.push_command_lines(lines)?;
        Ok(chain)
    }

    /// Appends components given as command lines.
    pub fn push_command_lines<S: AsRef<str>>(&mut self, lines: &[S]) -> Result<(), ChainError> {
        for line in lines {
            let position = self.components.len() + 1;
            self.components
                .push(Component::parse(line.as_ref(), position)?);
        }
        Ok(())
    }

    /// Appends components given as argv words, one component per group; a word `--` separates
    /// groups (so an argument `--` itself can only be passed in a quoted command line).
    pub fn push_argv_groups(&mut self, words: Vec<String>) {
        let mut group = Vec::new();
        for word in words.into_iter().chain(std::iter::once("--".to_owned())) {
            if word == "--" {
                self.components
                    .extend(Component::from_argv(std::mem::take(&mut group)));
            } else {
                group.push(word);
            }
        }
    }

    /// Declares the proxy-chain dialect of components by their 1-based position, from
    /// `POSITION=DIALECT` words (the command line's `--dialect`).
    pub fn declare_dialects<S: AsRef<str>>(
        &mut self,
        declarations: &[S],
    ) -> Result<(), ChainError> {
        for declaration in declarations {
            let declaration = declaration.as_ref();
            let refused = |why: String| ChainError::Dialect {
                declaration: declaration.to_owned(),
                why,
            };
            let (position, dialect) = declaration
                .split_once('=')
                .ok_or_else(|| refused("expected POSITION=DIALECT, e.g. 1=rfd".to_owned()))?;
            let position: usize = position
                .trim()
                .parse()
                .map_err(|_| refused(format!("{position:?} is not a position")))?;
            let count = self.components.len();
            let component = position
                .checked_sub(1)
                .and_then(|i| self.components.get_mut(i))
                .ok_or_else(|| {
                    refused(format!(
                        "the chain has no component {position} (it has {count})"
                    ))
                })?;
            component.dialect =
                Some(dialect.trim().parse().map_err(
                    |e: sacp::protocol::dialect::UnknownDialect| refused(e.to_string()),
                )?);
        }
        Ok(())
    }

    /// Reads a chain file and appends its components.
    pub fn push_file(&mut self, path: &Path) -> Result<(), ChainError> {
        let text = std::fs::read_to_string(path).map_err(|source| ChainError::Read {
            path: path.to_owned(),
            source,
        })?;
        self.push_toml(&text).map_err(|e| match e {
            ChainError::Text { why } => ChainError::File {
                path: path.to_owned(),
                why,
            },
            other => other,
        })
    }

    /// Appends the components of a chain file's text.
    pub fn push_toml(&mut self, text: &str) -> Result<(), ChainError> {
        self.push_toml_text(text)
            .map_err(|why| ChainError::Text { why })
    }

    fn push_toml_text(&mut self, text: &str) -> Result<(), String> {
        let file: File = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_owned())?;
        if file.mcp_bridge.is_some() {
            self.mcp_bridge = file.mcp_bridge;
        }
        if let Some(registry) = &file.registry {
            self.registry = Some(registry::Source::parse(registry));
        }
        for entry in file.component {
            let position = self.components.len() + 1;
            self.components.push(entry.into_component(position)?);
        }
        Ok(())
    }
}

impl Chain {
    /// Whether a component is a registry agent not resolved yet.
    pub fn needs_registry(&self) -> bool {
        self.components.iter().any(|c| c.registry.is_some())
    }
}

/// Parses a size with its unit: `64MiB`, `1 GiB`, `512KiB`, or bytes (`1048576`): the
/// command line's buffers, a WebAssembly component's `memory`.
pub(crate) fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: usize = number
        .parse()
        .map_err(|_| format!("size {text:?}: expected a number and a unit, as in 64MiB"))?;
    let shift = match unit.trim() {
        "" | "B" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        other => {
            return Err(format!(
                "size {text:?}: unknown unit {other:?} (B, KiB, MiB or GiB)"
            ));
        }
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("size {text:?} is too large"))
}

/// A chain file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    component: Vec<Entry>,
    mcp_bridge: Option<BridgeMode>,
    registry: Option<String>,
}

/// A chain file's `[[component]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: Option<String>,
    command: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    ca_files: Vec<PathBuf>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    dialect: Option<String>,
    wasm: Option<String>,
    #[serde(default)]
    dirs: Vec<String>,
    network: Option<bool>,
    memory: Option<String>,
    busy_timeout: Option<String>,
}

impl Entry {
    /// The component the entry at `position` describes.
    fn into_component(self, position: usize) -> Result<Component, String> {
        let mut component = self.kind(position)?;
        let sandbox = wasm::Sandbox {
            dirs: self.dirs,
            network: self.network,
            memory: self.memory,
            busy_timeout: self.busy_timeout,
        };
        match &mut component.wasm {
            Some(_) if self.cwd.is_some() => {
                return Err(format!(
                    "component {position}: a `wasm` component has no working directory; \
                     grant it directories with `dirs`"
                ));
            }
            Some(wasm) => sandbox
                .apply(wasm)
                .map_err(|why| format!("component {position}: {why}"))?,
            None if !sandbox.is_empty() => {
                return Err(format!(
                    "component {position}: `dirs`, `network`, `memory` and `busy_timeout` are \
                     for a `wasm` component"
                ));
            }
            None => {}
        }
        if component.remote.is_none() && (!self.headers.is_empty() || !self.ca_files.is_empty()) {
            return Err(format!(
                "component {position}: `headers` and `ca_files` are for a `url` component"
            ));
        }
        if component.remote.is_some()
            && (!self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some())
        {
            return Err(format!(
                "component {position}: `args`, `env` and `cwd` are for a `command` component"
            ));
        }
        if let Some(name) = self.name {
            component.name = name;
        }
        component.args.extend(self.args);
        component.env = self.env;
        component.cwd = self.cwd;
        component.dialect = self
            .dialect
            .map(|d| d.parse())
            .transpose()
            .map_err(|e: sacp::protocol::dialect::UnknownDialect| e.to_string())?;
        Ok(component)
    }

    /// A process, a server over the network or a WebAssembly component, as the entry names
    /// exactly one of them.
    fn kind(&self, position: usize) -> Result<Component, String> {
        match (&self.command, &self.url, &self.wasm) {
            (Some(command), None, None) => {
                Component::parse(command, position).map_err(|e| e.to_string())
            }
            (None, Some(url), None) if remote::is_url(url) => {
                let mut component = Component::from_url(url);
                for (name, value) in &self.headers {
                    component = component.with_header(name, value);
                }
                for file in &self.ca_files {
                    component = component.with_ca_file(file);
                }
                Ok(component)
            }
            (None, Some(url), None) => Err(format!(
                "component {position}: url {url:?} is not a ws://, wss://, http:// or https:// URL"
            )),
            (None, None, Some(path)) => Ok(Component::from_wasm(path, Vec::new())),
            _ => Err(format!(
                "component {position}: give one of `command` (a process), `url` (an ACP \
                 server) or `wasm` (a WebAssembly component)"
            )),
        }
    }
}

#[cfg(test)]
mod tests;
