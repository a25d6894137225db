//! `conductor`: see `conductor --help`.

fn main() -> std::process::ExitCode {
    memory::give_big_buffers_back();
    sacp_conductor::cli::main()
}

mod memory {
    /// One huge message (tens of MiB) must not leave the conductor that much bigger for the rest
    /// of its life. glibc serves big allocations with `mmap` and gives them back when freed, but
    /// after freeing one it raises its threshold for `mmap` to that size (up to 32 MiB) and its
    /// threshold for returning heap memory to twice that: the next big buffers then come from
    /// the heap and stay with the process. Fixing the threshold turns that adjustment off.
    ///
    /// This is the workspace's only `unsafe` code.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    pub(super) fn give_big_buffers_back() {
        // SAFETY: `mallopt` only sets a tuning parameter of the C allocator; it takes plain
        // integers, touches no memory of ours, and is called first thing in `main`, before any
        // other thread exists. Its result (0 if the value were refused) needs no handling: the
        // default behaviour stays.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        }
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub(super) fn give_big_buffers_back() {}
}
