//! WebAssembly components as chain members (feature `wasm`): run in the conductor's process
//! with wasmtime, each in a sandbox of its own.
//!
//! - **Shape.** A member is a WASI 0.2 *command* component (what `cargo build --target
//!   wasm32-wasip2` makes of a `main`): the conductor runs its `wasi:cli/run` and talks to it
//!   over its stdin and stdout, newline-delimited JSON-RPC as with a process. So a proxy built
//!   with `sacp` builds unchanged as a component (its `main` runs [`sacp::run`]), and every
//!   part of the conductor that serves a process — routing, the proxy handshake, MCP bridges,
//!   ending — serves a component the same way.
//! - **One store and one WASI context per component.** Its environment is what its entry
//!   gives, and nothing of the conductor's; it sees the directories its entry grants and no
//!   other; it has no network unless granted. Two components of one chain share nothing.
//! - **A thread of its own**, with a runtime of its own, as a process has a core of its own to
//!   run on: a component that computes holds up neither the conductor's loop nor the other
//!   components, and the components of a chain work in parallel as processes do.
//! - **Limits.** Its linear memory grows to its `memory` and no further; a component that
//!   computes for longer than its `busy_timeout` without waiting for input or output is
//!   stopped (checked every [`TICK`], by wasmtime's epochs). A trap, a limit or an exit code
//!   ends the member as a process's exit does: the chain fails with its name and the reason.
//!   Where a process would get a signal, its run is stopped.
//! - **Compiling** a component (Cranelift, on every core) is done on a blocking thread, once
//!   per file and modification time in a conductor's life, and kept on disk (the user's cache
//!   directory, `sacp/wasm`) for the conductors after it.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use sacp::protocol::routing::life::Exited;
use tokio::io::{ReadHalf, SimplexStream, WriteHalf};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{CallHook, Config, Engine, ResourceLimiter, Store, UpdateDeadline};
use wasmtime_wasi::cli::{AsyncStdinStream, AsyncStdoutStream};
use wasmtime_wasi::p2::bindings::Command;
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::chain::wasm::Wasm;
use crate::lock::lock;

/// How often wasmtime's epoch moves on: how often a busy component is checked (and lets the
/// other tasks of its thread's runtime, its pipes' workers, run).
pub(crate) const TICK: Duration = Duration::from_millis(10);

/// The bytes each of a component's pipes holds before its writer waits.
const PIPE: usize = 64 * 1024;

/// The most table elements a component may grow a table to.
const TABLE_ELEMENTS: usize = 1 << 20;

/// The engine, its linker with WASI 0.2, and the components compiled so far.
struct Host {
    engine: Engine,
    linker: Linker<Member>,
    compiled: Mutex<HashMap<PathBuf, (Option<SystemTime>, Component)>>,
}

/// The conductor's one host, made on first use (with its epoch ticker thread).
fn host() -> Result<&'static Host, String> {
    static HOST: OnceLock<Result<Host, String>> = OnceLock::new();
    HOST.get_or_init(|| {
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.cache(disk_cache());
        let engine = Engine::new(&config).map_err(|e| format!("cannot start wasmtime: {e}"))?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| format!("cannot link WASI: {e}"))?;
        let ticking = engine.clone();
        std::thread::Builder::new()
            .name("wasm-epoch".to_owned())
            .spawn(move || {
                loop {
                    std::thread::sleep(TICK);
                    ticking.increment_epoch();
                }
            })
            .map_err(|e| format!("cannot start the epoch thread: {e}"))?;
        Ok(Host {
            engine,
            linker,
            compiled: Mutex::default(),
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Where compiled components are kept between runs (the user's cache directory, `sacp/wasm`):
/// a chain that starts a component it ran before compiles nothing. Without one (no cache
/// directory, or it cannot be made), every conductor compiles its components once.
fn disk_cache() -> Option<wasmtime::Cache> {
    let dir = dirs::cache_dir()?.join("sacp").join("wasm");
    let mut config = wasmtime::CacheConfig::new();
    config.with_directory(&dir);
    wasmtime::Cache::new(config)
        .inspect_err(|e| {
            tracing::warn!(
                "compiled WebAssembly components are not cached in {}: {e}",
                dir.display()
            );
        })
        .ok()
}

impl Host {
    /// The component at `path`, compiled (or as compiled before, when the file is the same).
    async fn component(&'static self, path: &std::path::Path) -> std::io::Result<Component> {
        let modified = std::fs::metadata(path)
            .map_err(|e| with_context(e, format!("cannot read {}", path.display())))?
            .modified()
            .ok();
        if let Some((when, component)) = lock(&self.compiled).get(path)
            && *when == modified
        {
            return Ok(component.clone());
        }
        let file = path.to_owned();
        let compiled = tokio::task::spawn_blocking(move || {
            Component::from_file(&self.engine, &file).map_err(|e| {
                // On one line: wasmtime's reasons may list bytes, one a line.
                let why = format!("{e:#}")
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                std::io::Error::other(format!(
                    "{} is not a WebAssembly component this conductor can run: {why}",
                    file.display()
                ))
            })
        })
        .await
        .map_err(std::io::Error::other)??;
        lock(&self.compiled).insert(path.to_owned(), (modified, compiled.clone()));
        Ok(compiled)
    }
}

fn with_context(e: std::io::Error, what: String) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// One component's store data: its WASI context and resources, its limits, and what stopped
/// it.
struct Member {
    wasi: WasiCtx,
    table: ResourceTable,
    memory: usize,
    /// Since when it computes without waiting: set when it starts and whenever it comes back
    /// from a call to the host (WASI's `poll`, a stream's read or write, …) other than the
    /// epoch's check.
    since: Instant,
    /// Set by the epoch's check, which is itself a call to the host: its return is not a wait.
    in_epoch_check: bool,
    /// Why the host stopped it, when it did.
    stopped: Option<String>,
}

impl WasiView for Member {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl ResourceLimiter for Member {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory {
            let why = format!(
                "was stopped: it tried to grow its memory to {} MiB, beyond its limit of {} MiB",
                desired >> 20,
                self.memory >> 20
            );
            self.stopped = Some(why.clone());
            return Err(wasmtime::format_err!(why));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= TABLE_ELEMENTS)
    }
}

/// A started component: the conductor's ends of its pipes, how it ends, and how to stop it.
pub(crate) struct Running {
    /// Its standard input (the conductor writes).
    pub(crate) stdin: WriteHalf<SimplexStream>,
    /// Its standard output (the conductor reads).
    pub(crate) stdout: ReadHalf<SimplexStream>,
    /// Its standard error (the conductor copies it, as a process's).
    pub(crate) stderr: ReadHalf<SimplexStream>,
    /// How it ended, once it did.
    pub(crate) ended: oneshot::Receiver<Exited>,
    /// Stops its run (its stand-in for a signal).
    pub(crate) stop: CancellationToken,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Running")
    }
}

/// What a component runs with: its name, arguments, environment, grants and limits.
struct Settings {
    name: String,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    wasm: Wasm,
}

/// The component's ends of its pipes.
struct Pipes {
    stdin: ReadHalf<SimplexStream>,
    stdout: WriteHalf<SimplexStream>,
    stderr: WriteHalf<SimplexStream>,
}

/// Compiles (or finds compiled) the component `wasm`, named `name`, and starts it with its
/// arguments and environment on a thread of its own: a component that computes holds up
/// neither the conductor nor the other components, as a process would not. Returns once it
/// is instantiated with its grants (a grant that cannot be made is an error here).
pub(crate) async fn start(
    name: &str,
    wasm: &Wasm,
    args: &[String],
    env: &BTreeMap<String, String>,
) -> std::io::Result<Running> {
    let host = host().map_err(std::io::Error::other)?;
    let component = host.component(&wasm.path).await?;
    let (stdin_r, stdin_w) = tokio::io::simplex(PIPE);
    let (stdout_r, stdout_w) = tokio::io::simplex(PIPE);
    let (stderr_r, stderr_w) = tokio::io::simplex(PIPE);
    let pipes = Pipes {
        stdin: stdin_r,
        stdout: stdout_w,
        stderr: stderr_w,
    };
    let settings = Settings {
        name: name.to_owned(),
        args: args.to_vec(),
        env: env.clone(),
        wasm: wasm.clone(),
    };
    let (ready_tx, ready_rx) = oneshot::channel();
    let (ended_tx, ended_rx) = oneshot::channel();
    let stop = CancellationToken::new();
    let stopping = stop.clone();
    std::thread::Builder::new()
        .name(format!("wasm {name}"))
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            runtime.block_on(async move {
                let mut store = match store(host, &settings, pipes) {
                    Ok(store) => store,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                let ended = tokio::select! {
                    ended = run(&mut store, &component, &host.linker) => ended,
                    () = stopping.cancelled() => killed(),
                };
                let _ = ended_tx.send(ended);
            });
        })?;
    ready_rx.await.map_err(|_| {
        std::io::Error::other("the component's thread ended before the component started")
    })??;
    Ok(Running {
        stdin: stdin_w,
        stdout: stdout_r,
        stderr: stderr_r,
        ended: ended_rx,
        stop,
    })
}

/// The component's store: its WASI context (its pipes, arguments, environment and grants),
/// its limits, and the epoch's check of how long it computes.
fn store(host: &Host, settings: &Settings, pipes: Pipes) -> std::io::Result<Store<Member>> {
    let wasm = &settings.wasm;
    let mut wasi = WasiCtxBuilder::new();
    wasi.stdin(AsyncStdinStream::new(pipes.stdin))
        .stdout(AsyncStdoutStream::new(PIPE, pipes.stdout))
        .stderr(AsyncStdoutStream::new(PIPE, pipes.stderr))
        .arg(&settings.name)
        .args(&settings.args);
    for (key, value) in &settings.env {
        wasi.env(key, value);
    }
    for dir in &wasm.dirs {
        let perms = if dir.read_only {
            FsPerms::ReadOnly
        } else {
            FsPerms::ReadWrite
        };
        wasi.preopened_dir(&dir.host, &dir.guest, perms)
            .map_err(|e| {
                std::io::Error::other(format!(
                    "cannot grant the directory {}: {e}",
                    dir.host.display()
                ))
            })?;
    }
    if wasm.network {
        wasi.inherit_network()
            .allow_tcp(true)
            .allow_udp(true)
            .allow_ip_name_lookup(true);
    }
    let mut store = Store::new(
        &host.engine,
        Member {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            memory: wasm.memory,
            since: Instant::now(),
            in_epoch_check: false,
            stopped: None,
        },
    );
    store.limiter(|member| member as &mut dyn ResourceLimiter);
    store.call_hook(|mut cx, hook| {
        let member = cx.data_mut();
        match hook {
            CallHook::ReturningFromHost if member.in_epoch_check => member.in_epoch_check = false,
            CallHook::CallingWasm | CallHook::ReturningFromHost => member.since = Instant::now(),
            CallHook::CallingHost | CallHook::ReturningFromWasm => {}
        }
        Ok(())
    });
    let busy = wasm.busy_timeout;
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |mut cx| {
        let member = cx.data_mut();
        if member.since.elapsed() > busy {
            let why = format!(
                "was stopped: it computed for more than {} without waiting for input or \
                 output (its busy_timeout)",
                humantime::format_duration(busy)
            );
            member.stopped = Some(why.clone());
            return Err(wasmtime::format_err!(why));
        }
        member.in_epoch_check = true;
        Ok(UpdateDeadline::Yield(1))
    });
    Ok(store)
}

/// Instantiates the component and runs its `wasi:cli/run`: how it ended.
async fn run(store: &mut Store<Member>, component: &Component, linker: &Linker<Member>) -> Exited {
    let ran = async {
        let command = Command::instantiate_async(&mut *store, component, linker).await?;
        command.wasi_cli_run().call_run(&mut *store).await
    }
    .await;
    ended(ran, store.data_mut().stopped.take())
}

/// How a component's run ended, for the chain.
fn ended(ran: wasmtime::Result<Result<(), ()>>, stopped: Option<String>) -> Exited {
    let exit = |code: i32| Exited {
        description: format!("exited with status {code}"),
        code: Some(code),
        status: u8::try_from(code & 0xff).unwrap_or(1),
    };
    match ran {
        Ok(Ok(())) => exit(0),
        Ok(Err(())) => exit(1),
        Err(e) => {
            if let Some(code) = e.downcast_ref::<I32Exit>() {
                return exit(code.0);
            }
            let description = stopped.unwrap_or_else(|| match e.downcast_ref::<wasmtime::Trap>() {
                Some(trap) => format!("trapped: {trap}"),
                None => format!("failed: {}", e.to_string().lines().next().unwrap_or("")),
            });
            Exited {
                description,
                code: None,
                status: 1,
            }
        }
    }
}

/// How a component the conductor stopped (at the chain's end, or its own) ended.
pub(crate) fn killed() -> Exited {
    Exited {
        description: "was stopped by the conductor".to_owned(),
        code: None,
        status: 137,
    }
}
