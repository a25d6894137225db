//! The trace viewer's responsiveness, in a real headless Chromium against real chains
//! (`conductor agent --serve --trace FILE …`, release builds):
//!
//! - how soon a message row reaches the page after the conductor recorded it (a prompt of
//!   2,000 updates through two pass-through proxies): the worst and the median delay;
//! - the page under a flood (100,000 updates through a pass-through proxy, streamed until the
//!   trace holds 200,000 lines): its main-thread tasks over 50 ms (a `PerformanceObserver` of
//!   `longtask`s), how many and the longest; then how long "go to row" 150,000 takes to draw.
//!
//! ```text
//! cargo bench -p sacp-chain --bench viewer            # the figures, idle
//! cargo bench -p sacp-chain --bench viewer -- busy    # beside two busy loops
//! cargo bench -p sacp-chain --bench viewer -- 0.3     # a flood of 30,000 updates
//! ```
//!
//! Needs Debian's `chromium` and `chromium-driver` (as the viewer's tests do); it says so and
//! stops without them. Each figure is printed against its goal (met or not): rows within
//! 250 ms, no main-thread task over 200 ms, the jump within 500 ms. These are figures of a
//! page on a shared machine, so they are a benchmark's, never a test's.

#![allow(clippy::print_stdout, missing_docs)]

use sacp_test_support::browser::Browser;
use sacp_test_support::processes::{self, BusyLoops};
use sacp_test_support::viewer::{PATIENT, Served, arrival_lags, caught_up, jump_to, serve};
use serde_json::{Value, json};

fn main() {
    let scale = processes::scale();
    let busy = std::env::args().any(|a| a == "busy");
    let bins = sacp_examples::bins::built(&["sacp-examples"]).expect("the examples build");
    let bin = |name: &str| bins.join(name).to_string_lossy().into_owned();
    let (agent, passthrough) = (bin("test-agent"), bin("passthrough-proxy"));
    let _loops = busy.then(|| BusyLoops::start(2));
    processes::block_on(async move {
        println!(
            "viewer bench: {}",
            if busy {
                "beside two busy loops"
            } else {
                "idle"
            }
        );
        let Some(browser) = Browser::start().await else {
            println!("no browser: install Debian's chromium and chromium-driver");
            return;
        };
        let rows = [passthrough.clone(), passthrough.clone(), agent.clone()];
        let (worst, median) = delays(&browser, &rows).await;
        goal("worst delay of a row", worst, 250.0, "ms");
        println!("  median delay of a row: {median:.0} ms");
        let browser = restarted(browser).await;
        let updates = ((100_000.0 * scale) as u64).max(1_000);
        let flood = flood(&browser, &[passthrough, agent], updates).await;
        println!(
            "  {} trace lines; {} main-thread tasks over 50 ms",
            flood.lines, flood.long_tasks
        );
        goal("longest main-thread task", flood.longest, 200.0, "ms");
        match flood.jump {
            Some(took) => goal("go to row 150,000 (scaled)", took, 500.0, "ms"),
            None => println!("  go to row: NOT DRAWN"),
        }
        browser.close().await;
    });
}

/// Prints `what` against its goal.
fn goal(what: &str, value: f64, limit: f64, unit: &str) {
    let verdict = if value <= limit { "met" } else { "NOT MET" };
    println!("  {what}: {value:.0} {unit} (goal <= {limit:.0} {unit}: {verdict})");
}

/// A fresh browser, so that one measure's page leaves nothing to the next one's.
async fn restarted(browser: Browser) -> Browser {
    browser.close().await;
    Browser::start().await.expect("the browser starts again")
}

async fn opened(browser: &Browser, name: &str, components: &[String]) -> Served {
    let chain = serve(env!("CARGO_BIN_EXE_conductor"), name, components).await;
    browser.goto(&chain.url).await;
    browser
        .until(
            &format!(
                "document.querySelectorAll('[data-testid=lane]').length >= {}",
                components.len() + 1
            ),
            PATIENT,
        )
        .await;
    chain
}

/// A prompt of 2,000 updates: the worst and the median delay of a message row, in ms.
async fn delays(browser: &Browser, components: &[String]) -> (f64, f64) {
    let mut chain = opened(browser, "delays", components).await;
    let session = chain.editor.open_session().await;
    chain.editor.prompt(&session, "stream 2000").await;
    caught_up(browser, &chain.file).await;
    let mut lags = arrival_lags(browser, &chain.file).await;
    lags.sort_unstable();
    chain.editor.close_stdin();
    chain.editor.exit().await;
    (
        *lags.last().expect("message rows") as f64,
        lags[lags.len() / 2] as f64,
    )
}

struct Flood {
    lines: u64,
    long_tasks: usize,
    longest: f64,
    jump: Option<f64>,
}

/// Streams `updates` updates a prompt until the trace holds twice as many lines: the page's
/// long tasks meanwhile, and the jump to row 150,000 (scaled) afterwards.
async fn flood(browser: &Browser, components: &[String], updates: u64) -> Flood {
    let mut chain = opened(browser, "flood", components).await;
    browser
        .js(
            "window.longTasks = []; \
             new PerformanceObserver(list => { for (const e of list.getEntries()) longTasks.push(e.duration); }) \
               .observe({type: 'longtask', buffered: true});",
            json!([]),
        )
        .await;
    let session = chain.editor.open_session().await;
    let mut last = 0;
    for _ in 0..5 {
        chain
            .editor
            .prompt(&session, &format!("stream {updates}"))
            .await;
        last = caught_up(browser, &chain.file).await;
        if last > 2 * updates {
            break;
        }
    }
    let long = browser.js("return longTasks;", json!([])).await;
    let long: Vec<f64> = long
        .as_array()
        .map(|tasks| tasks.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    let jump = jump_to(browser, updates * 3 / 2).await;
    chain.editor.close_stdin();
    chain.editor.exit().await;
    Flood {
        lines: last + 1,
        long_tasks: long.len(),
        longest: long.iter().copied().fold(0.0, f64::max),
        jump,
    }
}
