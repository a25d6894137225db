//! Component processes: spawning, stderr, exit statuses and process groups.
//!
//! Each component runs in a process group of its own, so that ending the chain also ends
//! whatever a component started (a shell wrapper's child, an agent's tool processes): the
//! conductor signals the whole group. Its stderr is copied to the conductor's stderr, each line
//! prefixed with the component's position and name, and the last lines are kept for error
//! messages.

use std::collections::VecDeque;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::chain::Component;
use crate::lock::lock;
use crate::stderr;

/// How many stderr lines are kept for error messages.
const TAIL_LINES: usize = 20;
/// How much of one stderr line is kept for error messages.
const TAIL_LINE_CHARS: usize = 400;
/// A stderr line longer than this is passed through in pieces.
const STDERR_CHUNK: usize = 16 * 1024;

/// A started component.
#[derive(Debug)]
pub(crate) struct Process {
    /// Its process id, which is also its process group id.
    pub(crate) pid: u32,
    pub(crate) child: Child,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) tail: Tail,
}

/// Starts a component at `position` (1-based), in its own process group; through `launcher`
/// (`conductor __launch`, see `launch.rs`) when given.
pub(crate) fn spawn(
    position: usize,
    component: &Component,
    launcher: Option<&Path>,
    tap: Option<Tap>,
) -> io::Result<Process> {
    let mut command = match launcher {
        Some(launcher) => {
            // The launcher cannot tell us that the program is missing before it execs; look
            // for it here, so that the error is the usual one.
            find_program(component)?;
            let mut command = Command::new(launcher);
            command
                .arg(crate::launch::SUBCOMMAND)
                .arg(std::process::id().to_string())
                .arg("--")
                .arg(&component.program);
            command
        }
        None => Command::new(&component.program),
    };
    command
        .args(&component.args)
        .envs(&component.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(dir) = &component.cwd {
        command.current_dir(dir);
    }
    let mut child = command.spawn()?;
    let missing = || io::Error::other("the child's pipes were not set up");
    let pid = child.id().ok_or_else(missing)?;
    let stdin = child.stdin.take().ok_or_else(missing)?;
    let stdout = child.stdout.take().ok_or_else(missing)?;
    let stderr = child.stderr.take().ok_or_else(missing)?;
    let tail = Tail::default();
    let prefix = format!("[{position} {}] ", component.name);
    tokio::spawn(copy_stderr(
        stderr,
        prefix,
        tail.clone(),
        tap.map(|tap| (position, tap)),
    ));
    Ok(Process {
        pid,
        child,
        stdin,
        stdout,
        tail,
    })
}

/// Fails like `exec` would when `component`'s program cannot be found or run.
fn find_program(component: &Component) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |path: &Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let program = Path::new(&component.program);
    let found = if component.program.contains('/') {
        match &component.cwd {
            Some(cwd) if program.is_relative() => runnable(&cwd.join(program)),
            _ => runnable(program),
        }
    } else {
        let path = component
            .env
            .get("PATH")
            .cloned()
            .or_else(|| std::env::var("PATH").ok())
            .unwrap_or_default();
        std::env::split_paths(&path).any(|dir| runnable(&dir.join(program)))
    };
    if found {
        Ok(())
    } else {
        Err(io::Error::from(io::ErrorKind::NotFound))
    }
}

/// Sends `signal` to the process group led by `pid`. A group that is already gone is fine.
pub(crate) fn signal_group(pid: u32, signal: Signal) {
    let Ok(pid) = i32::try_from(pid) else { return };
    match killpg(Pid::from_raw(pid), signal) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
        Err(e) => tracing::warn!(pid, ?signal, "cannot signal the process group: {e}"),
    }
}

/// How a component ended, in words: `exited with status 3`, `was killed by signal 9 (SIGKILL)`.
pub(crate) fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        format!("exited with status {code}")
    } else if let Some(signal) = status.signal() {
        match Signal::try_from(signal) {
            Ok(name) => format!("was killed by signal {signal} ({name})"),
            Err(_) => format!("was killed by signal {signal}"),
        }
    } else {
        format!("ended ({status})")
    }
}

/// The last lines a component wrote to stderr.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tail(Arc<Mutex<VecDeque<String>>>);

impl Tail {
    fn push(&self, line: &[u8]) {
        let mut text = String::from_utf8_lossy(line).into_owned();
        if let Some((cut, _)) = text.char_indices().nth(TAIL_LINE_CHARS) {
            text.truncate(cut);
            text.push('…');
        }
        let mut lines = lock(&self.0);
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(text);
    }

    /// The kept lines, joined.
    pub(crate) fn text(&self) -> String {
        let lines = lock(&self.0);
        lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Copies a component's stderr to ours, line by line, with `prefix`. It keeps reading whatever
/// happens to our stderr (lines are dropped when nobody reads it; see [`crate::stderr`]), so a
/// component never blocks on a full pipe.
/// Where a component's stderr lines go besides the conductor's stderr (the trace), by
/// position; a line that finds it full is not waited for.
pub(crate) type Tap = tokio::sync::mpsc::Sender<(usize, Vec<u8>)>;

pub(crate) async fn copy_stderr(
    mut stderr: impl tokio::io::AsyncRead + Unpin,
    prefix: String,
    tail: Tail,
    tap: Option<(usize, Tap)>,
) {
    let copy = |line: &[u8]| {
        if let Some((position, tap)) = &tap {
            let _ = tap.try_send((*position, line.to_vec()));
        }
    };
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = vec![0; 8 * 1024];
    loop {
        let n = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&chunk[..n]);
        let mut lines = Vec::new();
        let mut start = 0;
        while let Some(pos) = pending[start..].iter().position(|&b| b == b'\n') {
            lines.push(start..start + pos);
            start += pos + 1;
        }
        if lines.is_empty() && pending.len() >= STDERR_CHUNK {
            lines.push(0..pending.len());
            start = pending.len();
        }
        for range in lines {
            let line = &pending[range];
            tail.push(line);
            copy(line);
            stderr::write_line(prefixed(&prefix, line));
        }
        pending.drain(..start);
    }
    if !pending.is_empty() {
        tail.push(&pending);
        copy(&pending);
        stderr::write_line(prefixed(&prefix, &pending));
    }
}

fn prefixed(prefix: &str, line: &[u8]) -> Vec<u8> {
    let mut text = Vec::with_capacity(prefix.len() + line.len() + 1);
    text.extend_from_slice(prefix.as_bytes());
    text.extend_from_slice(line);
    text.push(b'\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_read_well() {
        assert_eq!(
            describe_exit(ExitStatus::from_raw(3 << 8)),
            "exited with status 3"
        );
        assert_eq!(
            describe_exit(ExitStatus::from_raw(9)),
            "was killed by signal 9 (SIGKILL)"
        );
    }

    #[test]
    fn the_tail_keeps_the_last_lines_cut_short() {
        let tail = Tail::default();
        for i in 0..30 {
            tail.push(format!("line {i}").as_bytes());
        }
        tail.push("x".repeat(1000).as_bytes());
        let text = tail.text();
        assert!(text.starts_with("line 11\n"), "{text}");
        assert!(text.ends_with('…'));
        assert_eq!(text.lines().count(), TAIL_LINES);
    }
}
