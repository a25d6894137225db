//! What the listening conductor allocates per streamed `session/update`: a test binary of its
//! own, because it counts with its own global allocator.
//!
//! The conductor (`serve_listen`, no journal) runs in this process on a runtime of its own
//! whose threads are the only ones counted; the agent is the test agent's process and the
//! editor `sacp`'s WebSocket client on the test's own thread, so neither is counted. Over
//! 10,000 updates of one turn to one attached client, the conductor may allocate no more per
//! update than the commit before the session layer (`a42b5ad`) did, measured the same way
//! (this file, run at that commit): [`BEFORE_THE_LAYER`].

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use sacp::testing::{ScriptedEditor, within};
use sacp_conductor::{Chain, Listen, Options};

/// Allocations per update of `a42b5ad`'s listening conductor, measured by this test at that
/// commit (debug build, as `cargo test` builds; `sacp::remote` was `sacp::jsonrpc::remote`
/// then): 4.19, 4.20 and 4.19 in three runs — the lowest taken. Its two on the chain's side
/// (the method's `String` and `serde_json`'s scratch for a nested `params` when the agent's
/// line is parsed) are still paid; the WebSocket writer's two (a text's `Vec` and its shared
/// header) and the layer's three (the renamed copy, its shared header, the method `String`
/// sent on) are not.
const BEFORE_THE_LAYER: f64 = 4.19;

/// The system's allocator, counting the allocations (and reallocations) of counted threads.
struct Counting;

thread_local! {
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

fn count(size: usize) {
    if COUNTED.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(size as u64, Ordering::Relaxed);
    }
}

// The one `unsafe` of the tests: a global allocator is an unsafe trait. Every call is passed to
// `System` as it came; counting touches no allocation.
#[allow(unsafe_code)]
// SAFETY: `System` does the allocating, with the caller's arguments unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller's guarantees, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller's guarantees, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: the caller's guarantees, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's guarantees, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const TOKEN: &str = "c0unted-t0ken";
const UPDATES: u64 = 10_000;

/// A port of loopback nothing listens on (as far as one can tell without holding it).
fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    probe.local_addr().expect("its address").port()
}

/// The conductor serving the test agent on `port`, on a runtime whose threads are counted,
/// and its run (which ends at once when it cannot listen there).
fn conductor(
    port: u16,
    token_file: std::path::PathBuf,
) -> (
    tokio::runtime::Runtime,
    tokio::task::JoinHandle<sacp_conductor::Exit>,
) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(|| COUNTED.set(true))
        .build()
        .expect("the conductor's runtime");
    let chain =
        Chain::from_command_lines(&[sacp_test_support::quoted(&sacp_test_support::agent())])
            .expect("the test agent's command line");
    let listen = Listen::new(format!("127.0.0.1:{port}")).token_file(token_file);
    let run = runtime.spawn(sacp_conductor::serve_listen(
        chain,
        Options::default(),
        listen,
    ));
    (runtime, run)
}

/// The editor on `url`, once the conductor listens there; `None` when the conductor ended
/// first (another process took its port between the probe and its bind).
async fn connected(
    url: &str,
    run: &tokio::task::JoinHandle<sacp_conductor::Exit>,
) -> Option<ScriptedEditor> {
    let deadline = tokio::time::Instant::now() + sacp::testing::PATIENCE;
    let transport = loop {
        let remote = sacp::remote::Remote::new(url)
            .header("Authorization", &format!("Bearer {TOKEN}"))
            .expect("the header")
            .connect();
        match within("a WebSocket", remote).await {
            Ok(transport) => break transport,
            Err(_) if run.is_finished() => return None,
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::debug!("not listening yet: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Err(e) => panic!("the conductor never listened on {url}: {e}"),
        }
    };
    let editor = ScriptedEditor::new().connect(transport);
    within("initialize", editor.initialize()).await.unwrap();
    Some(editor)
}

/// One client streams 10,000 updates of one turn; the conductor's allocations over it,
/// divided by the updates, are at most what `a42b5ad`'s were.
#[test]
fn a_streamed_update_costs_the_listening_conductor_no_more_allocations_than_before_the_layer() {
    let dir = tempfile_dir();
    let token_file = dir.join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    // The editor's runtime: this thread alone, not counted.
    let editor = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the editor's runtime");
    let mut conductors = Vec::new();
    let (allocations, bytes) = editor.block_on(async {
        let editor = loop {
            let port = free_port();
            let (runtime, run) = conductor(port, token_file.clone());
            let found = connected(&format!("ws://127.0.0.1:{port}/acp"), &run).await;
            conductors.push(runtime);
            match found {
                Some(editor) => break editor,
                None => assert!(
                    conductors.len() < 5,
                    "the conductor could not listen on five free ports in a row"
                ),
            }
        };
        let session = within("session/new", editor.new_session()).await.unwrap();
        // A first turn warms what grows once (buffers, tables) and is not counted.
        within("the warm-up turn", session.prompt("stream 1000"))
            .await
            .unwrap();
        let before = (
            ALLOCATIONS.load(Ordering::Relaxed),
            BYTES.load(Ordering::Relaxed),
        );
        let turn = within(
            "the counted turn",
            session.prompt(format!("stream {UPDATES}")),
        )
        .await
        .unwrap();
        let after = (
            ALLOCATIONS.load(Ordering::Relaxed),
            BYTES.load(Ordering::Relaxed),
        );
        assert!(
            turn.text().ends_with(&format!("chunk {UPDATES}")),
            "the turn streamed all its updates"
        );
        (after.0 - before.0, after.1 - before.1)
    });
    let per_update = allocations as f64 / UPDATES as f64;
    eprintln!(
        "the listening conductor allocated {per_update:.2} times ({} bytes) per update; \
         a42b5ad: {BEFORE_THE_LAYER:.2}",
        bytes / UPDATES
    );
    drop(editor);
    for conductor in conductors {
        conductor.shutdown_timeout(std::time::Duration::from_secs(1));
    }
    let _ = std::fs::remove_dir_all(dir);
    assert!(
        per_update <= BEFORE_THE_LAYER,
        "{per_update:.2} allocations per streamed update, more than a42b5ad's {BEFORE_THE_LAYER:.2}"
    );
}

/// A directory of this test's own.
fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sacp-allocations-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
