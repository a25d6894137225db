//! `cargo xtask layers`: the module graph of the workspace's crates, checked against the
//! layering below ([`CHECKS`], the layers `sacp`'s crate docs list): no import circle between the modules of a layer list.
//!
//! Every `.rs` file under a crate's `src/` is parsed (`syn`); each path it names — in `use`
//! items and in code, `crate::…`, `super::…`, `self::…` — is resolved to the module it points
//! into, and the edge "file's module → that module" is kept at the granularity of a [`Check`]
//! (for `sacp`, its top-level modules; for `sacp::jsonrpc`, its own modules). Code under
//! `#[cfg(test)]` is left out: a test may reach anywhere. A check fails on a circle between
//! its units (a strongly connected component of more than one), unless all of its units are
//! in the check's one allowed group; on an edge into a unit that must stay a leaf (nothing
//! of the crate below it) or out of a unit nothing may import; and on an edge from a unit to
//! one of a higher layer of the check's rank order (or a unit placed in no layer).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// One layering rule set over a crate (or a module of it).
pub(crate) struct Check {
    /// The crate's folder, from the workspace root.
    pub(crate) krate: &'static str,
    /// The module whose children are the units (`""` for the crate root).
    pub(crate) within: &'static str,
    /// Units that may form one circle among themselves (a type and its handles).
    pub(crate) allowed_group: &'static [&'static str],
    /// Units that import nothing of the crate outside themselves.
    pub(crate) leaves: &'static [&'static str],
    /// Units that no other unit imports.
    pub(crate) roots: &'static [&'static str],
    /// The layers, lowest first: a unit imports only units of its own layer or below. Every
    /// unit must be in one (a new module is placed on purpose); empty: no order is checked.
    pub(crate) ranks: &'static [&'static [&'static str]],
}

/// The workspace's layering.
pub(crate) const CHECKS: &[Check] = &[
    Check {
        krate: "sacp",
        within: "",
        allowed_group: &[],
        leaves: &[],
        roots: &["__private", "mcp", "testing"],
        ranks: &[
            &["lock"],
            &["jsonrpc"],
            &["acp", "protocol", "remote", "fuzzing", "run"],
            &["runtime"],
            &["proxy", "agent"],
            &["mcp"],
            &["__private", "testing"],
        ],
    },
    Check {
        krate: "sacp",
        within: "jsonrpc",
        allowed_group: &["connection", "responder", "response"],
        leaves: &[],
        roots: &[],
        // Data → framing → transports → tables → handler and connection → the
        // connection's reader and writer → the builder that starts them.
        ranks: &[
            &["error", "id", "hold", "budget", "member", "arena"],
            &["payload"],
            &["message", "typed"],
            &["framing", "transport", "lossless", "pending", "in_flight"],
            &["lanes"],
            &["connection", "responder", "response", "handler", "relay"],
            &["reader", "writer"],
            &["builder"],
        ],
    },
    Check {
        krate: "sacp",
        within: "runtime",
        allowed_group: &[],
        leaves: &[],
        roots: &[],
        ranks: &[],
    },
    Check {
        krate: "conductor",
        within: "",
        allowed_group: &[],
        leaves: &["chain"],
        roots: &["cli"],
        // Descriptions and helpers; the session journal, the ACP registry and a terminal
        // authentication; the session layer; a chain's
        // connections, processes, bridges and router; what records them and runs the router;
        // the chain's loop; serving it over the network; the command line.
        ranks: &[
            &["lock", "account", "launch", "stderr", "versions", "chain"],
            &["journal", "registry", "auth"],
            &["sessions"],
            &[
                "endpoint",
                "process",
                "in_process",
                "wasm",
                "router",
                "bridge",
            ],
            &["trace", "route"],
            &["conductor", "fuzzing"],
            &["listen"],
            &["cli"],
        ],
    },
    Check {
        krate: "conductor",
        within: "sessions",
        // The connections' adapters still call one another (a client's request reaches a
        // chain, a chain's answer a client); the core, the session adapter around it and what
        // they stand on import none of them.
        allowed_group: &["attach", "chain", "client", "port", "requests", "restore"],
        leaves: &["who", "position", "turns"],
        roots: &[],
        // What a client is, where it resumes, the turns; an agent's request and the
        // editor-facing hub (the router's too); the record; what the layer says itself; the
        // core; the session's adapter; the connections'.
        ranks: &[
            &["who", "position", "turns", "rewrite", "table", "offers"],
            &["ask", "hub"],
            &["record"],
            &["notices"],
            &["core"],
            &["session"],
            &["port", "attach", "chain", "client", "requests", "restore"],
        ],
    },
];

/// The edges between the units of one check, with a place each comes from.
pub(crate) type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// The parsed sources of one crate: each file's module, what it names, and the names each
/// module re-exports (`use` items), so that `super::Handler` counts as a use of the module
/// that defines `Handler`.
struct Sources {
    files: Vec<(PathBuf, Vec<String>, Vec<Vec<String>>)>,
    modules: BTreeSet<Vec<String>>,
    aliases: BTreeMap<(Vec<String>, String), Vec<String>>,
}

impl Sources {
    fn read(src: &Path) -> Result<Sources, String> {
        let mut sources = Sources {
            files: Vec::new(),
            modules: BTreeSet::new(),
            aliases: BTreeMap::new(),
        };
        let mut tests = Vec::new();
        for file in rust_files(src)? {
            let Some(module) = module_of(src, &file) else {
                continue;
            };
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            let ast = syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
            let mut paths = Paths::default();
            paths.visit_file(&ast);
            for (name, path) in paths.imports {
                if let Some(target) = resolve(&module, &path) {
                    sources.aliases.insert((module.clone(), name), target);
                }
            }
            for name in paths.test_modules {
                let mut test_module = module.clone();
                test_module.push(name);
                tests.push(test_module);
            }
            sources.modules.insert(module.clone());
            sources.files.push((file, module, paths.found));
        }
        // Files of test-only modules are left out like the rest of the test code.
        sources
            .files
            .retain(|(_, module, _)| !tests.iter().any(|t| module.starts_with(t)));
        Ok(sources)
    }

    /// Follows re-exports: the path of the item `path` names, as defined.
    fn canonical(&self, mut path: Vec<String>) -> Vec<String> {
        for _ in 0..16 {
            let Some(known) = (0..=path.len())
                .rev()
                .find(|&n| self.modules.contains(&path[..n]))
            else {
                return path;
            };
            let Some(next) = path.get(known) else {
                return path;
            };
            match self.aliases.get(&(path[..known].to_vec(), next.clone())) {
                Some(target) if *target != path[..=known] => {
                    let mut resolved = target.clone();
                    resolved.extend_from_slice(&path[known + 1..]);
                    path = resolved;
                }
                _ => return path,
            }
        }
        path
    }
}

/// Builds the graph of `check` from the sources under `root` (the workspace).
pub(crate) fn graph(root: &Path, check: &Check) -> Result<Graph, String> {
    let src = root.join(check.krate).join("src");
    let sources = Sources::read(&src)?;
    let within: Vec<&str> = split(check.within);
    let mut graph = Graph::new();
    for (file, module, found) in &sources.files {
        let Some(from) = unit(module, &within, &sources.modules) else {
            continue;
        };
        graph.entry(from.clone()).or_default();
        for path in found {
            let Some(target) = resolve(module, path) else {
                continue;
            };
            let target = sources.canonical(target);
            let Some(to) = unit(&target, &within, &sources.modules) else {
                continue;
            };
            if to != from {
                let place = format!(
                    "{} ({})",
                    file.strip_prefix(root).unwrap_or(file).display(),
                    path.join("::")
                );
                graph
                    .entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_insert(place);
            }
        }
    }
    Ok(graph)
}

/// What is wrong with `graph` under `check`.
pub(crate) fn problems(check: &Check, graph: &Graph) -> Vec<String> {
    let mut problems = Vec::new();
    for component in circles(graph) {
        if component
            .iter()
            .all(|u| check.allowed_group.contains(&u.as_str()))
        {
            continue;
        }
        let mut lines = vec![format!(
            "an import circle between {}:",
            component.iter().cloned().collect::<Vec<_>>().join(", ")
        )];
        for from in &component {
            for (to, place) in &graph[from] {
                if component.contains(to) {
                    lines.push(format!("    {from} -> {to}: {place}"));
                }
            }
        }
        problems.push(lines.join("\n"));
    }
    let rank = |unit: &str| check.ranks.iter().position(|layer| layer.contains(&unit));
    if !check.ranks.is_empty() {
        for unit in graph.keys().chain(graph.values().flat_map(|e| e.keys())) {
            if rank(unit).is_none() {
                problems.push(format!(
                    "{unit} is in no layer: place it in the check's ranks"
                ));
            }
        }
        problems.dedup();
    }
    for (from, edges) in graph {
        for (to, place) in edges {
            if let (Some(low), Some(high)) = (rank(from), rank(to))
                && high > low
            {
                problems.push(format!(
                    "{from} (layer {low}) imports {to} of a layer above it (layer {high}): {place}"
                ));
            }
            if check.leaves.contains(&from.as_str()) {
                problems.push(format!("{from} must be a leaf, but uses {to}: {place}"));
            }
            if check.roots.contains(&to.as_str()) {
                problems.push(format!("nothing may import {to}, but {from} does: {place}"));
            }
        }
    }
    problems
}

/// The strongly connected components of more than one unit (Tarjan).
fn circles(graph: &Graph) -> Vec<BTreeSet<String>> {
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flat_map(|e| e.keys()) {
            if !s.index.contains_key(w.as_str()) {
                visit(s, w);
                let low = s.low[w.as_str()].min(s.low[v]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w.as_str()) {
                let low = s.index[w.as_str()].min(s.low[v]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.insert(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.found
}

fn split(path: &str) -> Vec<&str> {
    path.split("::").filter(|s| !s.is_empty()).collect()
}

/// The unit of `path` under `within`: the module one level below `within` that it points
/// into, or `None` when it points elsewhere (or at an item of `within` itself).
fn unit(path: &[String], within: &[&str], modules: &BTreeSet<Vec<String>>) -> Option<String> {
    if path.len() <= within.len() || path.iter().zip(within).any(|(a, b)| a != b) {
        return None;
    }
    let unit = &path[..=within.len()];
    modules
        .contains(&unit.to_vec())
        .then(|| unit[within.len()].clone())
}

/// The module path of a source file (`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`); `None`
/// for a binary's root and what only it uses.
fn module_of(src: &Path, file: &Path) -> Option<Vec<String>> {
    let relative = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    if parts.first().is_some_and(|p| p == "bin") || (parts.is_empty() && last == "main.rs") {
        return None;
    }
    match last.as_str() {
        "lib.rs" if parts.is_empty() => {}
        "mod.rs" => {}
        name => parts.push(name.trim_end_matches(".rs").to_owned()),
    }
    Some(parts)
}

/// The module a path points into, from a file of `module`; `None` for paths outside the crate.
fn resolve(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut segments = path.iter();
    let mut base: Vec<String> = match segments.next()?.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => {
            let mut m = module.to_vec();
            m.pop()?;
            m
        }
        _ => return None,
    };
    for segment in segments {
        if segment == "super" {
            base.pop()?;
        } else {
            base.push(segment.clone());
        }
    }
    Some(base)
}

/// Every path a file names outside `#[cfg(test)]` code; and the names its
/// `use` items bring in, with their paths.
#[derive(Default)]
struct Paths {
    found: Vec<Vec<String>>,
    imports: Vec<(String, Vec<String>)>,
    /// Inside an inline `mod { }`: its `use` items are not the file module's.
    depth: usize,
    /// Child modules declared under `#[cfg(test)]`.
    test_modules: Vec<String>,
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Struct(s) => &s.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_test_only(attrs) {
            syn::visit::visit_item(self, item);
        } else if let syn::Item::Mod(m) = item
            && self.depth == 0
        {
            self.test_modules.push(m.ident.to_string());
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        self.depth += 1;
        syn::visit::visit_item_mod(self, item);
        self.depth -= 1;
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut stack = Vec::new();
        let mut uses = Vec::new();
        collect_use(&item.tree, &mut stack, &mut |name, p| uses.push((name, p)));
        for (name, path) in uses {
            if self.depth == 0
                && let Some(name) = name
            {
                self.imports.push((name, path.clone()));
            }
            self.found.push(path);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            self.found.push(segments);
        }
        syn::visit::visit_path(self, path);
    }
}

/// Calls `out` with the name each leaf of a `use` tree brings in (none for a glob) and its
/// path.
fn collect_use(
    tree: &syn::UseTree,
    stack: &mut Vec<String>,
    out: &mut dyn FnMut(Option<String>, Vec<String>),
) {
    match tree {
        syn::UseTree::Path(p) => {
            stack.push(p.ident.to_string());
            collect_use(&p.tree, stack, out);
            stack.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = stack.clone();
            let name = if n.ident == "self" {
                stack.last().cloned()
            } else {
                path.push(n.ident.to_string());
                Some(n.ident.to_string())
            };
            out(name, path);
        }
        syn::UseTree::Rename(r) => {
            let mut path = stack.clone();
            path.push(r.ident.to_string());
            out(Some(r.rename.to_string()), path);
        }
        syn::UseTree::Glob(_) => out(None, stack.clone()),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                collect_use(tree, stack, out);
            }
        }
    }
}

fn rust_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// `cargo xtask layers [--graph]`: checks every [`Check`]; prints the graphs with `--graph`.
pub(crate) fn run(root: &Path, print: bool) -> Result<(), String> {
    let mut problems = Vec::new();
    for check in CHECKS {
        let graph = graph(root, check)?;
        let name = if check.within.is_empty() {
            check.krate.to_owned()
        } else {
            format!("{}::{}", check.krate, check.within)
        };
        if print {
            eprintln!("{name}:");
            for (from, edges) in &graph {
                let to: Vec<&str> = edges.keys().map(String::as_str).collect();
                eprintln!("  {from} -> {}", to.join(", "));
            }
        }
        problems.extend(
            self::problems(check, &graph)
                .into_iter()
                .map(|p| format!("{name}: {p}")),
        );
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the workspace root")
            .to_path_buf()
    }

    #[test]
    fn the_workspace_follows_its_layers() {
        if let Err(problems) = run(&workspace(), false) {
            panic!("{problems}");
        }
    }

    /// The JSON-RPC layer knows no ACP: outside its tests, no file of `sacp::jsonrpc` names
    /// a method of ACP or of the proxy dialects.
    #[test]
    fn the_jsonrpc_layer_names_no_acp_method() {
        const ACP: [&str; 7] = [
            "\"initialize\"",
            "\"authenticate\"",
            "\"session/",
            "\"fs/",
            "\"terminal/",
            "\"_proxy/",
            "\"proxy/",
        ];
        let mut named = Vec::new();
        let mut dirs = vec![workspace().join("sacp/src/jsonrpc")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                // Tests sit at the end of a file, from their `#[cfg(test)]` on.
                let code = text.split("#[cfg(test)]").next().unwrap_or_default();
                let proptests = path.file_name().is_some_and(|n| n == "proptests.rs");
                for method in ACP.iter().filter(|m| !proptests && code.contains(**m)) {
                    named.push(format!("{}: {method}", path.display()));
                }
            }
        }
        assert!(named.is_empty(), "{named:#?}");
    }

    /// The session core decides and does nothing: outside its tests, no file of it names a
    /// lock, a task, a clock, a thread or a connection (its adapter, `session.rs`, does).
    #[test]
    fn the_session_core_holds_no_lock_task_or_clock() {
        const DOING: [&str; 9] = [
            "Mutex",
            "RwLock",
            "tokio",
            "Instant",
            "SystemTime",
            "spawn",
            "crate::lock",
            "std::thread",
            "Connection",
        ];
        let sessions = workspace().join("conductor/src/sessions");
        let mut files = vec![sessions.join("core.rs")];
        for entry in std::fs::read_dir(sessions.join("core")).unwrap().flatten() {
            // The model test drives the core; it is a test as a whole.
            if entry.file_name() != "model.rs" {
                files.push(entry.path());
            }
        }
        let mut named = Vec::new();
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            // Tests sit at the end of a file, from their `#[cfg(test)]` on.
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for word in DOING.iter().filter(|w| code.contains(**w)) {
                named.push(format!("{}: {word}", path.display()));
            }
        }
        assert!(named.is_empty(), "{named:#?}");
    }

    /// Adds the edge `a -> b` (from `a.rs:1`) to `g`.
    fn edge(g: &mut Graph, a: &str, b: &str) {
        g.entry(a.into())
            .or_default()
            .insert(b.into(), format!("{a}.rs:1"));
    }

    #[test]
    fn a_circle_is_found_and_named() {
        let mut graph = Graph::new();
        edge(&mut graph, "acp", "ladder");
        edge(&mut graph, "ladder", "proxy");
        edge(&mut graph, "proxy", "acp");
        edge(&mut graph, "proxy", "jsonrpc");
        let check = Check {
            krate: "x",
            within: "",
            allowed_group: &[],
            leaves: &["jsonrpc"],
            roots: &["ladder"],
            ranks: &[],
        };
        let problems = problems(&check, &graph);
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(
            problems[0].contains("acp, ladder, proxy"),
            "{}",
            problems[0]
        );
        assert!(
            problems[1].contains("nothing may import ladder"),
            "{}",
            problems[1]
        );
    }

    #[test]
    fn a_layer_never_imports_one_above_it() {
        let mut graph = Graph::new();
        edge(&mut graph, "proxy", "jsonrpc");
        edge(&mut graph, "jsonrpc", "proxy");
        edge(&mut graph, "stray", "jsonrpc");
        let check = Check {
            krate: "x",
            within: "",
            allowed_group: &["jsonrpc", "proxy"],
            leaves: &[],
            roots: &[],
            ranks: &[&["jsonrpc"], &["proxy"]],
        };
        let problems = problems(&check, &graph);
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(
            problems[0].contains("stray is in no layer"),
            "{}",
            problems[0]
        );
        assert!(
            problems[1].contains("jsonrpc (layer 0) imports proxy of a layer above it"),
            "{}",
            problems[1]
        );
    }

    #[test]
    fn paths_resolve_from_their_module() {
        let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
        assert_eq!(
            resolve(&m("jsonrpc::lanes"), &m("super::connection::Connection")),
            Some(m("jsonrpc::connection::Connection"))
        );
        assert_eq!(
            resolve(&m("proxy"), &m("crate::acp::Side")),
            Some(m("acp::Side"))
        );
        assert_eq!(resolve(&m("proxy"), &m("sacp_schema::acp")), None);
        let modules: BTreeSet<_> = [m("jsonrpc"), m("jsonrpc::lanes"), m("acp")].into();
        assert_eq!(
            unit(&m("jsonrpc::lanes::Lane"), &["jsonrpc"], &modules),
            Some("lanes".to_owned())
        );
        assert_eq!(unit(&m("jsonrpc::Error"), &["jsonrpc"], &modules), None);
        assert_eq!(unit(&m("acp::Side"), &["jsonrpc"], &modules), None);
    }
}
