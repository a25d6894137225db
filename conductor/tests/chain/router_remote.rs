//! `conductor route` with backends that are ACP servers over the network: a backend template
//! that is a URL, one server per workspace (the test agent listening, a real process), with a
//! bearer token given by `--header` and the paths translated for each server.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::*;
use crate::router::{ask, initialize, new_session, workspaces};

const TOKEN: &str = "r0uter-t0ken";

/// The test agent serving ACP on a free port of 127.0.0.1 (killed when dropped).
struct Server {
    child: Child,
    url: String,
}

impl Server {
    async fn start() -> Server {
        let mut child = Command::new(agent())
            .args(["--listen", "127.0.0.1:0", "--token", TOKEN])
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = within("the server's URL", lines.next_line())
            .await
            .unwrap()
            .expect("the server printed its URL");
        Server { child, url }
    }

    fn ws(&self) -> String {
        self.url.replacen("http", "ws", 1)
    }
}

/// Where a workspace lives on its server (which sees another root).
fn remote_of(host: &Path) -> PathBuf {
    Path::new("/srv").join(host.file_name().unwrap())
}

#[tokio::test]
async fn url_backends_run_each_workspace_on_its_own_server_and_fail_alone() {
    let ws = workspaces(&["east", "west"]);
    // One over WebSocket, one over Streamable HTTP.
    let servers = [Server::start().await, Server::start().await];
    let urls = [servers[0].ws(), servers[1].url.clone()];
    let mut config = String::new();
    for (host, url) in ws.iter().zip(&urls) {
        config.push_str(&format!(
            "[[rule]]\nprefix = {host:?}\nbackend = {url:?}\ntranslate = {{ host = {host:?}, backend = {:?} }}\n",
            remote_of(host)
        ));
    }
    let config_file = ws[0].parent().unwrap().join("router.toml");
    std::fs::write(&config_file, config).unwrap();
    let args = [
        "route",
        "--config",
        config_file.to_str().unwrap(),
        "--header",
        &format!("Authorization: Bearer {TOKEN}"),
    ]
    .map(str::to_owned);
    let mut editor = Editor::start(conductor(), &args);
    initialize(&mut editor).await;
    let mut sessions = Vec::new();
    for host in &ws {
        for _ in 0..2 {
            sessions.push((
                new_session(&mut editor, &host.join("src")).await,
                host.clone(),
            ));
        }
    }
    // Nothing was started here: the router only connected.
    assert!(
        processes_tagged(&editor.tag)
            .iter()
            .all(|pid| processes::name(*pid) == "conductor"),
        "the router started no process"
    );
    // Each server got the paths as it sees them.
    for (session, host) in &sessions {
        let (_, said) = ask(&mut editor, session, "setup").await;
        let remote_cwd = remote_of(host).join("src");
        assert!(
            said[0].starts_with(&format!("cwd={}", remote_cwd.display())),
            "{said:?}"
        );
    }
    // Parallel sessions: four streams at once, each in order before its answer.
    let mut waiting = Vec::new();
    for (session, _) in &sessions {
        waiting.push(editor.send_prompt(session, "stream 20").await);
    }
    let answers = editor.until_responses(&waiting).await;
    assert!(
        answers
            .iter()
            .all(|a| a["result"]["stopReason"] == "end_turn"),
        "{answers:?}"
    );
    // A killed server fails only its own workspace's sessions, naming the workspace.
    let east_waiting = editor.start_waiting(&sessions[0].0).await;
    let [mut east, west] = servers;
    east.child.kill().await.unwrap();
    let failed = editor.until_response(&east_waiting).await;
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(r#"workspace "east""#), "{failed}");
    assert!(!message.contains(TOKEN), "no secret in {message}");
    let (answer, said) = ask(&mut editor, &sessions[2].0, "west goes on").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(said, ["west goes on"]);
    editor.close_and_expect_a_clean_exit().await;
    drop(west);
    let _ = std::fs::remove_dir_all(ws[0].parent().unwrap());
}
