//! The ACP registry, with no network: a local HTTP server (in the test) serves a
//! `registry.json` — the three entries the shared schemas carry, and a fixture agent whose
//! archive holds this workspace's test agent — and the archive. `registry:fixture-agent` runs as
//! a chain's agent from an archive downloaded once; a wrong checksum, a missing platform and an
//! unknown id are named errors; npx and uvx entries run as those tools run them; `conductor
//! registry manifest` writes an entry the registry's schema takes; the agent's auth methods
//! reach the editor, `authenticate` reaches the agent, and its terminal method runs through the
//! conductor; `conductor registry list` prints what the registry offers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::common::*;

/// A fresh directory for one test.
fn fresh(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sacp-registry-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The entries of the shared schemas' registry directory, when `SACP_SCHEMA_DIR` names it
/// (missing under `CI` fails the test).
fn shared_entries() -> Vec<Value> {
    let Some(dir) = std::env::var_os("SACP_SCHEMA_DIR") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "SACP_SCHEMA_DIR is not set (under CI it must be)"
        );
        eprintln!("SACP_SCHEMA_DIR is not set: the registry's shared entries are left out");
        return Vec::new();
    };
    let dir = Path::new(&dir).join("acp-registry");
    let mut entries: Vec<Value> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .filter(|f| f.file_name().to_string_lossy().ends_with("_agent.json"))
        .map(|f| serde_json::from_str(&std::fs::read_to_string(f.path()).unwrap()).unwrap())
        .collect();
    entries.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    entries
}

/// This machine's platform as the registry names it.
fn platform() -> &'static str {
    sacp_conductor::registry::platform().expect("a platform the registry names")
}

/// A `.tar.gz` holding the test agent as `test-agent`.
fn agent_archive() -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    {
        let mut tar = tar::Builder::new(&mut gz);
        tar.append_path_with_name(agent(), "test-agent").unwrap();
        tar.finish().unwrap();
    }
    gz.finish().unwrap()
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The test's registry server: what it serves, and how many requests each path had.
struct Server {
    url: String,
    hits: Arc<std::sync::Mutex<BTreeMap<String, usize>>>,
    archive_sha256: String,
    _task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Serves `/registry.json` (the shared entries, the fixture agent and `extra` entries) and
    /// `/fixture-agent.tar.gz`; the fixture's `sha256` is `checksum` when given, else the
    /// archive's own.
    async fn start(checksum: Option<&str>, extra: Vec<Value>) -> Server {
        let archive = agent_archive();
        let archive_sha256 = sha256(&archive);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let mut binary = json!({});
        binary[platform()] = json!({
            "archive": format!("{url}/fixture-agent.tar.gz"),
            "cmd": "./test-agent",
            "args": ["--auth"],
            "env": {"FIXTURE": "1"},
            "sha256": checksum.unwrap_or(&archive_sha256),
        });
        let mut agents = shared_entries();
        agents.push(json!({
            "id": "fixture-agent",
            "name": "Fixture agent",
            "version": "1.0.0",
            "description": "This workspace's test agent, from an archive",
            "distribution": {"binary": binary},
        }));
        agents.extend(extra);
        let registry = json!({"version": "1.0.0", "agents": agents, "extensions": []});
        let hits = Arc::new(std::sync::Mutex::new(BTreeMap::new()));
        let counted = hits.clone();
        let archive = Arc::new(archive);
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
            let (counted, archive, registry) = (counted.clone(), archive.clone(), registry.clone());
            async move {
                *counted
                    .lock()
                    .unwrap()
                    .entry(uri.path().to_owned())
                    .or_insert(0) += 1;
                match uri.path() {
                    "/registry.json" => (
                        axum::http::StatusCode::OK,
                        registry.to_string().into_bytes(),
                    ),
                    "/fixture-agent.tar.gz" => (axum::http::StatusCode::OK, archive.to_vec()),
                    _ => (axum::http::StatusCode::NOT_FOUND, Vec::new()),
                }
            }
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Server {
            url,
            hits,
            archive_sha256,
            _task: task,
        }
    }

    fn registry(&self) -> String {
        format!("{}/registry.json", self.url)
    }

    /// Requests so far, by path.
    fn hits(&self) -> BTreeMap<String, usize> {
        self.hits.lock().unwrap().clone()
    }
}

/// `conductor agent --registry … ARGS` as an editor runs it, its cache in `cache`.
fn editor(server: &Server, cache: &Path, args: &[&str]) -> Editor {
    let mut all = vec![
        "agent".to_owned(),
        "--registry".to_owned(),
        server.registry(),
    ];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    let cache = cache.to_str().unwrap();
    Editor::start_with(conductor(), &all, &[("XDG_CACHE_HOME", cache)], true)
}

/// The seed's Sparkle flow through `editor`: Sparkle's embodiment turn calls its tool on the
/// agent's first prompt, then the prompt runs.
async fn sparkle_flow(editor: &mut Editor) {
    let session = editor.open_session().await;
    let answer = editor.prompt(&session, "hello from the registry").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let transcript = editor.transcript.join("\n");
    assert!(transcript.contains("embody_sparkle"), "{transcript}");
    assert!(
        transcript.contains("hello from the registry"),
        "{transcript}"
    );
}

#[tokio::test]
async fn a_registry_agent_runs_from_an_archive_downloaded_once() {
    let server = Server::start(None, Vec::new()).await;
    let cache = fresh("once");
    let sparkle = example("sparkle");
    let mut first = editor(&server, &cache, &[&sparkle, "registry:fixture-agent"]);
    sparkle_flow(&mut first).await;
    first.close_and_expect_a_clean_exit().await;
    let hits = server.hits();
    assert_eq!(hits.get("/registry.json"), Some(&1), "{hits:?}");
    assert_eq!(hits.get("/fixture-agent.tar.gz"), Some(&1), "{hits:?}");
    let installed = cache.join(format!(
        "sacp/registry/agents/fixture-agent/1.0.0/{}",
        platform()
    ));
    assert!(installed.join("test-agent").is_file());
    // The second start: the list and the archive from the cache, no request at all.
    let mut second = editor(&server, &cache, &[&sparkle, "registry:fixture-agent"]);
    sparkle_flow(&mut second).await;
    second.close_and_expect_a_clean_exit().await;
    assert_eq!(
        server.hits(),
        hits,
        "the second start asked the server nothing"
    );
    let _ = std::fs::remove_dir_all(&cache);
}

/// Runs `conductor ARGS` (its cache in `cache`, `path` first on `PATH` when given) to its end:
/// its status, stdout, stderr.
async fn conductor_run(
    args: &[&str],
    cache: &Path,
    path: Option<&Path>,
) -> (Option<i32>, String, String) {
    let mut command = tokio::process::Command::new(conductor());
    command
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .stdin(std::process::Stdio::null());
    if let Some(dir) = path {
        let path = format!(
            "{}:{}",
            dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        command.env("PATH", path);
    }
    let out = within("the conductor's end", command.output())
        .await
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_wrong_checksum_a_missing_platform_and_an_unknown_id_are_named() {
    let others: Vec<&str> = [
        "darwin-aarch64",
        "darwin-x86_64",
        "linux-aarch64",
        "linux-x86_64",
        "windows-x86_64",
    ]
    .into_iter()
    .filter(|p| *p != platform())
    .take(2)
    .collect();
    let mut elsewhere = json!({});
    for p in &others {
        elsewhere[*p] = json!({"archive": "https://example.invalid/a.tar.gz", "cmd": "./a"});
    }
    let elsewhere = json!({"id": "elsewhere-agent", "name": "E", "version": "1.0.0",
        "description": "only for other machines", "distribution": {"binary": elsewhere}});
    let server = Server::start(Some(&"0".repeat(64)), vec![elsewhere]).await;
    let cache = fresh("errors");
    let registry = server.registry();
    let run = |agent: &'static str| {
        let (registry, cache) = (registry.clone(), cache.clone());
        async move { conductor_run(&["agent", "--registry", &registry, agent], &cache, None).await }
    };
    let (status, _, stderr) = run("registry:fixture-agent").await;
    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.contains("SHA-256") && stderr.contains(&server.archive_sha256),
        "{stderr}"
    );
    assert!(stderr.contains(&"0".repeat(64)), "{stderr}");
    let agents = cache.join("sacp/registry/agents/fixture-agent/1.0.0");
    let left: Vec<_> = std::fs::read_dir(&agents)
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "nothing unpacked into the cache: {left:?}");
    assert!(!stderr.contains("test-agent"), "nothing ran: {stderr}");

    let (status, _, stderr) = run("registry:elsewhere-agent").await;
    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.contains("no archive for") && stderr.contains(platform()),
        "{stderr}"
    );
    for p in &others {
        assert!(stderr.contains(p), "{p}: {stderr}");
    }

    let (status, _, stderr) = run("registry:fixture-agnt").await;
    assert_eq!(status, Some(1), "{stderr}");
    assert!(stderr.contains("no agent \"fixture-agnt\""), "{stderr}");
    assert!(stderr.contains("did you mean fixture-agent"), "{stderr}");
    let _ = std::fs::remove_dir_all(&cache);
}

/// A fake `npx` and `uvx` on `PATH`: each writes its arguments to `ran.NAME` and runs the test
/// agent, so that the chain works.
fn fake_tools(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for tool in ["npx", "uvx"] {
        let script = format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" > '{}'\nexec '{}'\n",
            dir.join(format!("ran.{tool}")).display(),
            agent()
        );
        let path = dir.join(tool);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[tokio::test]
async fn npx_and_uvx_entries_run_as_those_tools_run_them() {
    let packages = vec![
        json!({"id": "npx-agent", "name": "N", "version": "2.1.0", "description": "d",
            "distribution": {"npx": {"package": "@acme/npx-agent@2.1.0", "args": ["--acp", "--quiet"],
            "env": {"ACME": "1"}}}}),
        json!({"id": "uvx-agent", "name": "U", "version": "0.3.0", "description": "d",
            "distribution": {"uvx": {"package": "uvx-agent==0.3.0", "args": ["serve"]}}}),
    ];
    let server = Server::start(None, packages).await;
    let dir = fresh("tools");
    fake_tools(&dir);
    for (agent, tool, want) in [
        (
            "registry:npx-agent",
            "npx",
            "-y @acme/npx-agent@2.1.0 --acp --quiet",
        ),
        (
            "registry:npx-agent@2.0.5",
            "npx",
            "-y @acme/npx-agent@2.0.5 --acp --quiet",
        ),
        ("registry:uvx-agent", "uvx", "uvx-agent==0.3.0 serve"),
    ] {
        let args = vec![
            "agent".to_owned(),
            "--registry".to_owned(),
            server.registry(),
            agent.to_owned(),
        ];
        let path = format!(
            "{}:{}",
            dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let cache = dir.to_str().unwrap();
        let mut ed = Editor::start_with(
            conductor(),
            &args,
            &[("PATH", &path), ("XDG_CACHE_HOME", cache)],
            true,
        );
        let session = ed.open_session().await;
        let answer = ed.prompt(&session, "stream 1").await;
        assert_eq!(
            answer["result"]["stopReason"], "end_turn",
            "{agent}: {answer}"
        );
        ed.close_and_expect_a_clean_exit().await;
        let ran = std::fs::read_to_string(dir.join(format!("ran.{tool}"))).unwrap();
        assert_eq!(ran.trim_end(), want, "{agent}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Under `CI`, the real `npx` runs a package from a local directory (an npm package whose
/// program runs the test agent): the conductor's command is the one npx takes.
#[tokio::test]
async fn the_real_npx_runs_a_local_package_the_registry_names() {
    if which("npx").is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "npx cannot run here: Node.js's npx is not on PATH"
        );
        eprintln!("skipped: npx cannot run here: Node.js's npx is not on PATH");
        return;
    }
    let dir = fresh("real-npx");
    let package = dir.join("local-agent");
    std::fs::create_dir_all(package.join("bin")).unwrap();
    std::fs::write(
        package.join("package.json"),
        json!({"name": "local-agent", "version": "1.0.0", "bin": {"local-agent": "bin/agent.js"}})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        package.join("bin/agent.js"),
        format!(
            "#!/usr/bin/env node\nconst {{ spawn }} = require('child_process');\nconst c = spawn({:?}, process.argv.slice(2), {{ stdio: 'inherit' }});\nc.on('exit', (code) => process.exit(code ?? 1));\n",
            agent()
        ),
    )
    .unwrap();
    let entry = json!({"id": "local-agent", "name": "L", "version": "1.0.0", "description": "d",
        "distribution": {"npx": {"package": package.to_str().unwrap()}}});
    let server = Server::start(None, vec![entry]).await;
    let args = vec![
        "agent".to_owned(),
        "--registry".to_owned(),
        server.registry(),
        "registry:local-agent".to_owned(),
    ];
    let cache = dir.to_str().unwrap();
    let npm_cache = dir.join("npm-cache");
    let mut ed = Editor::start_with(
        conductor(),
        &args,
        &[
            ("XDG_CACHE_HOME", cache),
            ("npm_config_cache", npm_cache.to_str().unwrap()),
            ("npm_config_offline", "true"),
        ],
        true,
    );
    let session = ed.open_session().await;
    let answer = ed.prompt(&session, "stream 2").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    ed.close_and_expect_a_clean_exit().await;
    let _ = std::fs::remove_dir_all(&dir);
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
}

/// The registry's schema of an entry, when `SACP_SCHEMA_DIR` names it.
fn agent_schema() -> Option<Value> {
    let Some(dir) = std::env::var_os("SACP_SCHEMA_DIR") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "SACP_SCHEMA_DIR is not set (under CI it must be)"
        );
        eprintln!("SACP_SCHEMA_DIR is not set: the manifests are not validated");
        return None;
    };
    let path = Path::new(&dir).join("acp-registry/agent.schema.json");
    Some(serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap())
}

#[tokio::test]
async fn a_chains_manifest_is_an_entry_the_registrys_schema_takes() {
    let Some(schema) = agent_schema() else {
        return;
    };
    let validator = jsonschema::draft7::new(&schema).unwrap();
    let dir = fresh("manifest");
    let chain = dir.join("sparkle-gemini.toml");
    std::fs::write(
        &chain,
        "registry = \"https://registry.example.com/registry.json\"\n\n[[component]]\nname = \"sparkle\"\ncommand = \"sparkle\"\nenv = { SPARKLE_HOME = \"/var/sparkle\" }\n\n[[component]]\ncommand = \"registry:gemini\"\n",
    )
    .unwrap();
    let binary_out = dir.join("binary");
    let (status, stdout, stderr) = conductor_run(
        &[
            "registry",
            "manifest",
            "--chain",
            chain.to_str().unwrap(),
            "--archive",
            "linux-x86_64=https://example.com/sparkle-gemini-linux-x86_64.tar.gz",
            "--archive",
            "darwin-aarch64=https://example.com/sparkle-gemini-darwin-aarch64.tar.gz",
            "--license",
            "Apache-2.0",
            "--out",
            binary_out.to_str().unwrap(),
        ],
        &dir,
        None,
    )
    .await;
    assert_eq!(status, Some(0), "{stderr}");
    assert!(
        stdout.contains("agent.json") && stdout.contains("icon.svg"),
        "{stdout}"
    );
    let npx_out = dir.join("npx");
    let (status, _, stderr) = conductor_run(
        &[
            "registry",
            "manifest",
            "sparkle",
            "registry:gemini",
            "--id",
            "sparkle-gemini",
            "--name",
            "Sparkle on Gemini",
            "--version",
            "1.2.0",
            "--npx",
            "@acme/sparkle-chain@1.2.0",
            "--out",
            npx_out.to_str().unwrap(),
        ],
        &dir,
        None,
    )
    .await;
    assert_eq!(status, Some(0), "{stderr}");
    for (out, kind) in [(&binary_out, "binary"), (&npx_out, "npx")] {
        let entry: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("agent.json")).unwrap())
                .unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&entry)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{kind}: {errors:?}\n{entry:#}");
        assert!(entry["distribution"][kind].is_object(), "{entry:#}");
        let icon = std::fs::read_to_string(out.join("icon.svg")).unwrap();
        assert!(
            icon.starts_with("<svg") && icon.contains("width=\"16\""),
            "{icon}"
        );
    }
    let binary: Value =
        serde_json::from_str(&std::fs::read_to_string(binary_out.join("agent.json")).unwrap())
            .unwrap();
    assert_eq!(binary["id"], "sparkle-gemini");
    assert_eq!(
        binary["distribution"]["binary"]["linux-x86_64"]["args"],
        json!(["agent", "--chain", "sparkle-gemini.toml"])
    );
    let npx: Value =
        serde_json::from_str(&std::fs::read_to_string(npx_out.join("agent.json")).unwrap())
            .unwrap();
    assert_eq!(
        npx["distribution"]["npx"]["args"],
        json!(["agent", "sparkle", "registry:gemini"])
    );
    // The schema refuses what the registry would refuse: the check can fail.
    let mut broken = npx.clone();
    broken["id"] = json!("Not An Id");
    assert!(!validator.is_valid(&broken));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_agents_auth_methods_reach_the_editor_and_its_terminal_method_runs_through_the_conductor()
 {
    let server = Server::start(None, Vec::new()).await;
    let cache = fresh("auth");
    let mut ed = editor(&server, &cache, &["registry:fixture-agent"]);
    let init = ed
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": true}}}),
        )
        .await;
    let methods = init["result"]["authMethods"].clone();
    assert_eq!(methods[0]["id"], "login", "{init}");
    assert_eq!(
        methods[1],
        json!({"id": "setup", "name": "Set up in a terminal", "type": "terminal",
            "args": ["--terminal-auth", "setup"], "env": {"TEST_AGENT_SETUP": "1"}}),
        "{init}"
    );
    let done = ed
        .request("authenticate", json!({"methodId": "login"}))
        .await;
    assert_eq!(done["result"], json!({}), "{done}");
    eventually("the agent to say it authenticated", || {
        ed.stderr().contains("test-agent: authenticated with login")
    })
    .await;
    ed.close_and_expect_a_clean_exit().await;
    // The editor runs the terminal method as the conductor's answer says: its own command
    // line, the method's args appended, its env set.
    let registry = server.registry();
    let mut args = vec!["agent", "--registry", &registry, "registry:fixture-agent"];
    args.extend(
        methods[1]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap()),
    );
    let (status, stdout, stderr) = conductor_run(&args, &cache, None).await;
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(
        stdout.trim(),
        "test-agent: set up (TEST_AGENT_SETUP=1)",
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&cache);
}

#[tokio::test]
async fn the_registry_list_shows_the_shared_entries_and_the_fixture() {
    let server = Server::start(None, Vec::new()).await;
    let cache = fresh("list");
    let registry = server.registry();
    let (status, stdout, stderr) =
        conductor_run(&["registry", "list", "--registry", &registry], &cache, None).await;
    assert_eq!(status, Some(0), "{stderr}");
    let mut want: Vec<String> = shared_entries()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    want.push("fixture-agent".to_owned());
    let ids: Vec<&str> = stdout
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(ids, want, "{stdout}");
    assert!(stdout.starts_with("ID"), "{stdout}");
    let (status, stdout, _) = conductor_run(
        &["registry", "list", "--registry", &registry, "--json"],
        &cache,
        None,
    )
    .await;
    assert_eq!(status, Some(0));
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(listed["agents"].as_array().unwrap().len(), want.len());
    let (status, stdout, _) = conductor_run(
        &["registry", "show", "fixture-agent", "--registry", &registry],
        &cache,
        None,
    )
    .await;
    assert_eq!(status, Some(0));
    assert!(
        stdout.contains("(this machine)") && stdout.contains("registry:fixture-agent"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&cache);
}
