//! `conductor route`: the session router of `sacp::router` on stdio, with backends as
//! processes — each in its own process group, its stderr relayed with a `[workspace]`
//! prefix, dying with the conductor (see `launch.rs`), and all of them ended when the editor
//! closes stdin.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::router::{BackendProcess, Config, Launched, Launcher, Workspace};
use nix::sys::signal::Signal;
use sacp::jsonrpc::{ByteStream, Error};
use tokio::sync::watch;

use crate::chain::Component;
use crate::lock::lock;
use crate::process;

/// How long a backend has between `SIGTERM` and `SIGKILL`.
const TERM_GRACE: Duration = Duration::from_millis(300);

/// Starts backends as processes.
#[derive(Debug)]
pub struct ProcessLauncher {
    /// `conductor __launch`, so that backends die with the conductor.
    launcher: Option<PathBuf>,
    started: AtomicUsize,
    pids: Mutex<Vec<u32>>,
}

impl ProcessLauncher {
    /// A launcher that starts backends through `launcher` (`conductor __launch`), if given.
    pub fn new(launcher: Option<PathBuf>) -> ProcessLauncher {
        ProcessLauncher {
            launcher,
            started: AtomicUsize::new(0),
            pids: Mutex::default(),
        }
    }

    /// Kills every backend's process group (at the router's end).
    pub fn kill_all(&self) {
        for pid in lock(&self.pids).drain(..) {
            process::signal_group(pid, Signal::SIGKILL);
        }
    }
}

impl Launcher for ProcessLauncher {
    fn launch(
        &self,
        workspace: &Workspace,
    ) -> Pin<Box<dyn Future<Output = Result<Launched, Error>> + Send + '_>> {
        let workspace = workspace.clone();
        Box::pin(async move {
            let mut component = Component::parse(&workspace.command, 1)
                .map_err(|e| Error::invalid_params(format!("the backend command: {e}")))?;
            component.name = workspace.name.clone();
            if workspace.root.is_dir() {
                component.cwd = Some(workspace.root.clone());
            }
            let position = self.started.fetch_add(1, Ordering::Relaxed) + 1;
            let started = process::spawn(position, &component, self.launcher.as_deref(), None)
                .map_err(|e| {
                    Error::internal_error(format!(
                        "cannot start the backend of workspace {:?} (`{}`): {e}",
                        workspace.name, workspace.command
                    ))
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
                transport: ByteStream::new(Box::new(started.stdout), Box::new(started.stdin)),
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

/// Runs the router on stdin/stdout until the editor closes it.
pub async fn run_stdio(config: Config, launcher: Option<PathBuf>) -> Result<(), Error> {
    let launcher = std::sync::Arc::new(ProcessLauncher::new(launcher));
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
    ) -> Pin<Box<dyn Future<Output = Result<Launched, Error>> + Send + '_>> {
        self.0.launch(workspace)
    }
}
