//! Reading processes from `/proc`, for the benchmarks and the process-level tests: who is whose
//! child, what a process is called, and how much memory and CPU it has used.

/// The direct children of `parent`.
pub fn children(parent: u32) -> Vec<u32> {
    every_process()
        .into_iter()
        .filter(|(_, ppid)| *ppid == parent)
        .map(|(pid, _)| pid)
        .collect()
}

/// Every descendant of `root`, with its name.
pub fn process_tree(root: u32) -> Vec<(u32, String)> {
    let all = every_process();
    let mut tree = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for (pid, ppid) in &all {
            if *ppid == parent {
                tree.push((*pid, name(*pid)));
                frontier.push(*pid);
            }
        }
    }
    tree
}

/// The id of every process in `/proc`.
pub fn pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .collect()
}

/// Every process, with its parent.
fn every_process() -> Vec<(u32, u32)> {
    pids()
        .into_iter()
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The name is in parentheses and may hold spaces; the parent pid follows it.
            let after = &stat[stat.rfind(')')? + 2..];
            let ppid = after.split(' ').nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect()
}

/// A process's name (`/proc/PID/comm`).
pub fn name(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`), in KiB; `None` if the process is
/// gone.
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Resident memory now.
pub fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS")
}

/// Peak resident memory so far.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmHWM")
}

/// CPU time (ns, from the `schedstat` of each of its threads: `/proc/PID/schedstat` is the
/// main thread's alone) and syscalls (reads + writes) of a process so far.
pub fn usage(pid: u32) -> Option<(u64, u64)> {
    let nanos = std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
        .filter_map(|task| run_ns(&task.path()))
        .sum();
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    let count = |key: &str| {
        io.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some((nanos, count("syscr:")? + count("syscw:")?))
}

/// CPU time (ns, from its `schedstat`) of a process's main thread so far: the conductor's event
/// loop, without the threads beside it (the trace's writer, the stderr readers).
pub fn main_thread_ns(pid: u32) -> Option<u64> {
    run_ns(std::path::Path::new(&format!("/proc/{pid}/task/{pid}")))
}

/// The CPU time (ns) a thread ran so far: the first field of its `schedstat`.
fn run_ns(task: &std::path::Path) -> Option<u64> {
    std::fs::read_to_string(task.join("schedstat"))
        .ok()?
        .split(' ')
        .next()?
        .parse()
        .ok()
}

/// The scale a benchmark was asked for (`cargo bench ... -- 0.1`), 1 by default.
pub fn scale() -> f64 {
    std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1.0)
}

/// Runs a benchmark's future on a current-thread runtime.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(future)
}

/// Processes that keep a core each busy (`sh -c 'while :; do :; done'`) until dropped: a
/// build beside the chain, for a benchmark's figures on a busy machine.
#[derive(Debug)]
pub struct BusyLoops(Vec<std::process::Child>);

impl BusyLoops {
    pub fn start(n: usize) -> BusyLoops {
        BusyLoops(
            (0..n)
                .map(|_| {
                    std::process::Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .expect("a busy loop")
                })
                .collect(),
        )
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
