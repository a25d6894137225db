//! Components die with the conductor, even when it cannot clean up (`kill -9`).
//!
//! Linux kills a process whose parent dies when the process asked for it with
//! `prctl(PR_SET_PDEATHSIG)`; the request survives `exec`. Setting it between `fork` and `exec`
//! would take `unsafe` code (`pre_exec`), so the conductor starts each component through
//! itself instead: `conductor __launch PID -- program args...` asks for `SIGKILL` on its parent's
//! death, checks that its parent is still the conductor `PID` (which closes the gap in which the
//! conductor could die before the request), and then `exec`s the component in its own place —
//! same process, same process group, same pipes. Nothing of this depends on the component
//! reading its stdin.
//!
//! The signal follows the *thread* that started the child: the conductor starts its
//! components from the thread that runs its event loop, which lives as long as the process.
//! Elsewhere than Linux the launcher just `exec`s (the conductor's own shutdown still ends every
//! component's process group).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

/// The hidden subcommand.
pub(crate) const SUBCOMMAND: &str = "__launch";

/// Runs the launcher: `argv` is `PID -- program args...`. Returns only if it cannot `exec`.
pub(crate) fn run(argv: Vec<OsString>) -> ExitCode {
    let mut argv = argv.into_iter();
    let parent = argv.next().and_then(|p| p.to_str()?.parse::<i32>().ok());
    let separator = argv.next();
    let (Some(parent), Some(true), Some(program)) =
        (parent, separator.map(|s| s == "--"), argv.next())
    else {
        eprintln!("conductor {SUBCOMMAND}: expected `PID -- PROGRAM [ARGS...]`");
        return ExitCode::from(2);
    };
    #[cfg(target_os = "linux")]
    {
        use nix::sys::signal::Signal;
        if let Err(e) = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL) {
            eprintln!("conductor {SUBCOMMAND}: cannot ask to die with the conductor: {e}");
        }
    }
    if nix::unistd::getppid().as_raw() != parent {
        // The conductor died before the request took effect: nobody is left to serve.
        return ExitCode::from(1);
    }
    let error = Command::new(&program).args(argv).exec();
    eprintln!(
        "cannot start {}: {error}",
        std::path::Path::new(&program).display()
    );
    ExitCode::from(127)
}
