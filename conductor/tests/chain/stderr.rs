//! The conductor's stderr: whatever writes to fd 2 in its process (a raw `eprintln!` in an
//! in-process proxy, a panic message, a library) goes through the one non-blocking path.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::PATIENCE;

/// Set in the child run of [`raw_writes_to_fd_2_never_wait_for_a_reader`].
const CHILD: &str = "SACP_TEST_STDERR_CHILD";
const LINES: usize = 100_000;

/// This test binary, run again as the child: it sets up the conductor's stderr, then writes
/// 100,000 lines with `eprintln!` (10 MB, far more than a pipe holds) to a stderr nobody
/// reads. Without the drain, the first full pipe would hold the child for good.
#[test]
fn raw_writes_to_fd_2_never_wait_for_a_reader() {
    if std::env::var_os(CHILD).is_some() {
        sacp_conductor::stderr::init();
        let padding = "x".repeat(100);
        for i in 0..LINES {
            eprintln!("line {i} {padding}");
        }
        // (stdout: the parent reads it; stderr is the pipe under test.)
        #[allow(clippy::print_stdout)]
        {
            println!("written, {} dropped", sacp_conductor::stderr::dropped());
        }
        sacp_conductor::stderr::finish(Duration::from_millis(100));
        return;
    }
    // `/proc/self/exe`: this very binary, even if cargo has relinked the file meanwhile (the
    // tests' own `cargo build --tests` may).
    let mut child = Command::new("/proc/self/exe")
        .args([
            "--exact",
            "stderr::raw_writes_to_fd_2_never_wait_for_a_reader",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the test binary again");
    // stderr is not read until the child says it wrote everything.
    let stderr = child.stderr.take().expect("stderr");
    let stdout = child.stdout.take().expect("stdout");
    let (said, hear) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // (After libtest's `test NAME ... `, on the same line.)
            if let Some(at) = line.find("written, ") {
                let _ = said.send(line[at..].to_owned());
            }
        }
    });
    let written = match hear.recv_timeout(PATIENCE) {
        Ok(line) => line,
        Err(_) => {
            let _ = child.kill();
            panic!("the child's eprintln! calls waited for a stderr nobody reads");
        }
    };
    let dropped: usize = written
        .trim_start_matches("written, ")
        .trim_end_matches(" dropped")
        .parse()
        .expect("a count");
    assert!(dropped > 0, "{written}: lines could not all have fit");
    // Now read it: what got through is whole lines, in order.
    let mut text = String::new();
    let reader = std::thread::spawn(move || {
        let mut stderr = stderr;
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let status = child.wait().expect("the child ends");
    assert!(status.success(), "{status}");
    let text = reader.join().expect("the reader");
    let mut last = None;
    for line in text.lines().filter(|l| l.starts_with("line ")) {
        let n: usize = line.split(' ').nth(1).unwrap().parse().unwrap();
        assert!(last.is_none_or(|l| n > l), "lines out of order at {n}");
        assert!(line.ends_with(&"x".repeat(100)), "a line cut: {line}");
        last = Some(n);
    }
    assert!(
        last.is_some(),
        "the first lines reached stderr: {text:.200}"
    );
}
