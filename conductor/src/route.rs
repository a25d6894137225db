//! `conductor route`: the session router of [`crate::router`] on stdio, with backends as
//! processes — each in its own process group, its stderr relayed with a `[workspace]`
//! prefix, dying with the conductor (see `launch.rs`), and all of them ended when the editor
//! closes stdin — or as ACP servers reached over the network, when the backend's template is
//! a URL (`ws://{workspace}.devbox:8080/acp`).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::router::{BackendError, BackendProcess, Config, Launched, Launcher, Workspace};
use nix::sys::signal::Signal;
use sacp::jsonrpc::{ByteStream, Either, Error};
use tokio::sync::watch;

use crate::chain::Component;
use crate::lock::lock;
use crate::process;

/// How long a backend has between `SIGTERM` and `SIGKILL`.
const TERM_GRACE: Duration = Duration::from_millis(300);

/// Starts backends as processes, or reaches them over the network when their command is a
/// URL (`ws://`, `wss://`, `http://`, `https://`).
#[derive(Debug)]
pub(crate) struct ProcessLauncher {
    /// `conductor __launch`, so that backends die with the conductor.
    launcher: Option<PathBuf>,
    /// For backends reached over the network: headers for every request, and CA files.
    remote: Remote,
    started: AtomicUsize,
    pids: Mutex<Vec<u32>>,
}

/// How backends that are URLs are reached (`conductor route --header`, `--ca-file`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Remote {
    headers: Vec<(String, String)>,
    ca_files: Vec<PathBuf>,
}

impl Remote {
    /// A header sent with every request and the WebSocket upgrade (`Authorization: Bearer …`).
    pub(crate) fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Remote {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Trusts the CA certificates of a PEM file too.
    pub(crate) fn ca_file(mut self, path: impl Into<PathBuf>) -> Remote {
        self.ca_files.push(path.into());
        self
    }
}

impl ProcessLauncher {
    /// A launcher that starts backends through `launcher` (`conductor __launch`), if given,
    /// and reaches backends that are URLs as `remote` says.
    pub(crate) fn with_remote(launcher: Option<PathBuf>, remote: Remote) -> ProcessLauncher {
        ProcessLauncher {
            launcher,
            remote,
            started: AtomicUsize::new(0),
            pids: Mutex::default(),
        }
    }

    /// A backend that is an ACP server: connected to, nothing started.
    async fn reach(&self, workspace: &Workspace) -> Result<Launched, BackendError> {
        let mut address = crate::chain::remote::Address::new(workspace.command.clone());
        address.headers = self.remote.headers.clone();
        address.ca_files = self.remote.ca_files.clone();
        let url = address.display_url();
        let transport = address
            .connect()
            .await
            .map_err(|source| BackendError::Unreachable {
                workspace: workspace.name.clone(),
                source,
            })?;
        tracing::info!(workspace = %workspace.name, %url, "reached a backend");
        Ok(Launched {
            transport: Either::Right(transport),
            process: Box::new(RemoteBackend { url }),
        })
    }

    /// Kills every backend's process group (at the router's end).
    pub(crate) fn kill_all(&self) {
        for pid in lock(&self.pids).drain(..) {
            process::signal_group(pid, Signal::SIGKILL);
        }
    }
}

impl Launcher for ProcessLauncher {
    fn launch(
        &self,
        workspace: &Workspace,
    ) -> Pin<Box<dyn Future<Output = Result<Launched, BackendError>> + Send + '_>> {
        let workspace = workspace.clone();
        Box::pin(async move {
            if crate::chain::remote::is_url(&workspace.command) {
                return self.reach(&workspace).await;
            }
            let mut component =
                Component::parse(&workspace.command, 1).map_err(|why| BackendError::Command {
                    workspace: workspace.name.clone(),
                    why,
                })?;
            component.name = workspace.name.clone();
            if workspace.root.is_dir() {
                component.cwd = Some(workspace.root.clone());
            }
            let position = self.started.fetch_add(1, Ordering::Relaxed) + 1;
            let started = process::spawn(position, &component, self.launcher.as_deref(), None)
                .map_err(|source| BackendError::Start {
                    workspace: workspace.name.clone(),
                    command: workspace.command.clone(),
                    source,
                })?;
            tracing::info!(workspace = %workspace.name, pid = started.pid, command = %workspace.command, "started a backend");
            lock(&self.pids).push(started.pid);
            let (status_tx, status) = watch::channel(None);
            let mut child = started.child;
            tokio::spawn(async move {
                let how = match child.wait().await {
                    Ok(status) => process::describe_exit(status),
                    Err(e) => format!("could not be waited for: {e}"),
                };
                let _ = status_tx.send(Some(how));
            });
            Ok(Launched {
                transport: Either::Left(ByteStream::new(
                    Box::new(started.stdout) as Box<dyn tokio::io::AsyncRead + Send + Unpin>,
                    Box::new(started.stdin) as Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
                )),
                process: Box::new(BackendGroup {
                    pid: started.pid,
                    status,
                }),
            })
        })
    }
}

/// A backend's process group.
#[derive(Debug)]
struct BackendGroup {
    pid: u32,
    status: watch::Receiver<Option<String>>,
}

impl BackendProcess for BackendGroup {
    fn stop(&self) {
        process::signal_group(self.pid, Signal::SIGTERM);
        let pid = self.pid;
        let mut status = self.status.clone();
        tokio::spawn(async move {
            let ended = tokio::time::timeout(TERM_GRACE, status.wait_for(Option::is_some)).await;
            if ended.is_err() {
                process::signal_group(pid, Signal::SIGKILL);
            }
        });
    }

    fn ended(&self) -> Pin<Box<dyn Future<Output = String> + Send + '_>> {
        let mut status = self.status.clone();
        Box::pin(async move {
            let waited =
                tokio::time::timeout(Duration::from_millis(500), status.wait_for(Option::is_some))
                    .await;
            match waited {
                Ok(Ok(how)) => how.clone().unwrap_or_default(),
                _ => "closed its stdout".to_owned(),
            }
        })
    }
}

/// A backend reached over the network: its connection is all there is of it (the router
/// closes it to end the backend).
#[derive(Debug)]
struct RemoteBackend {
    /// Without credentials.
    url: String,
}

impl BackendProcess for RemoteBackend {
    fn stop(&self) {}

    fn ended(&self) -> Pin<Box<dyn Future<Output = String> + Send + '_>> {
        Box::pin(async move { format!("at {} closed its connection", self.url) })
    }
}

/// Runs the router on stdin/stdout until the editor closes it.
pub(crate) async fn run_stdio(
    config: Config,
    launcher: Option<PathBuf>,
    remote: Remote,
) -> Result<(), Error> {
    let launcher = std::sync::Arc::new(ProcessLauncher::with_remote(launcher, remote));
    let result = crate::router::serve(
        config,
        SharedLauncher(launcher.clone()),
        ByteStream::stdio(),
    )
    .await;
    // What the backends got was a SIGTERM (with a SIGKILL to follow); at the very end, the
    // groups go whatever they are doing.
    tokio::time::sleep(TERM_GRACE + Duration::from_millis(50)).await;
    launcher.kill_all();
    result
}

/// The launcher, kept by the caller too.
#[derive(Debug)]
struct SharedLauncher(std::sync::Arc<ProcessLauncher>);

impl Launcher for SharedLauncher {
    fn launch(
        &self,
        workspace: &Workspace,
    ) -> Pin<Box<dyn Future<Output = Result<Launched, BackendError>> + Send + '_>> {
        self.0.launch(workspace)
    }
}
