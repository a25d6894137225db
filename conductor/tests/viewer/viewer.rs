//! The viewer, as a user sees it in a browser.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::browser::Browser;
use crate::common::*;

/// One browser at a time (the machine has two cores).
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

const PATIENT: Duration = Duration::from_secs(30);

/// A chain with `--serve` and a trace file, and the viewer's URL.
struct Served {
    editor: Editor,
    url: String,
    file: std::path::PathBuf,
}

/// The trace file goes with the test (the 100k-update one is ~90 MB), and its directory with
/// the last of them.
impl Drop for Served {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
        if let Some(dir) = self.file.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

async fn serve(name: &str, components: &[String]) -> Served {
    let dir = std::env::temp_dir().join(format!("sacp-viewer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.jsonl"));
    let mut args = vec![
        "agent".to_owned(),
        "--serve".to_owned(),
        "--trace".to_owned(),
        file.to_string_lossy().into_owned(),
    ];
    args.extend_from_slice(components);
    let editor = Editor::start(conductor(), &args);
    let url = until("the viewer's URL on stderr", PATIENT, || {
        let stderr = editor.stderr();
        let line = stderr.lines().find(|l| l.contains("trace viewer: "));
        match line.and_then(|l| l.split("trace viewer: ").nth(1)) {
            Some(url) => Ok(url.trim().to_owned()),
            None => Err(stderr),
        }
    })
    .await;
    Served { editor, url, file }
}

/// The browser (one at a time: hold the guard), a chain named `name` of `components` with
/// `--serve`, and its page open; `None` where there is no browser.
async fn open(
    name: &str,
    components: &[String],
) -> Option<(tokio::sync::MutexGuard<'static, ()>, Browser, Served)> {
    let one = ONE_AT_A_TIME.lock().await;
    let browser = Browser::start().await?;
    let chain = serve(name, components).await;
    browser.goto(&chain.url).await;
    Some((one, browser, chain))
}

/// The page's rows so far, as the page holds them.
async fn rows(browser: &Browser) -> Vec<Value> {
    browser
        .js(
            "return sacpViewer.rows.map(r => Object.assign({}, r, {payloadText: undefined}));",
            json!([]),
        )
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Waits until the trace file has stopped growing (the conductor is idle: it writes within
/// 20 ms) and the page has every line of it.
async fn caught_up(browser: &Browser, file: &std::path::Path) -> u64 {
    let deadline = std::time::Instant::now() + PATIENT;
    let mut size = None;
    loop {
        let now = std::fs::metadata(file).unwrap().len();
        if size != Some(now) {
            size = Some(now);
            assert!(
                std::time::Instant::now() < deadline,
                "the trace never settled"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        // The last whole line: the writer may be in the middle of the next one.
        let whole = &text[..text.rfind('\n').map_or(0, |end| end + 1)];
        let last: Value = serde_json::from_str(whole.lines().last().unwrap()).unwrap();
        let last = last["seq"].as_u64().unwrap();
        let seen = browser.js("return sacpViewer.lastSeq;", json!([])).await;
        if seen.as_u64() == Some(last) {
            return last;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the page stopped at {seen}, the file is at {last}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn lanes_come_in_chain_order_before_the_first_prompt_and_rows_within_250_ms() {
    let Some((_one, browser, mut chain)) =
        open("lanes", &[passthrough(), passthrough(), agent()]).await
    else {
        return;
    };
    let lanes = browser
        .until(
            "document.querySelectorAll('[data-testid=lane]').length >= 4 && \
             [...document.querySelectorAll('[data-testid=lane] .name')].map(e => e.textContent)",
            PATIENT,
        )
        .await;
    assert_eq!(
        lanes,
        json!([
            "editor",
            "1:passthrough-proxy",
            "2:passthrough-proxy",
            "3:test-agent"
        ])
    );
    let session = chain.editor.open_session().await;
    chain.editor.prompt(&session, "stream 20").await;
    caught_up(&browser, &chain.file).await;
    // Every message row reached the page within 250 ms of the conductor recording it (at the
    // first line's `start` plus its `t`).
    let first = std::fs::read_to_string(&chain.file).expect("the trace file");
    let first: Value = serde_json::from_str(first.lines().next().expect("a first line")).unwrap();
    let start = humantime::parse_rfc3339(first["start"].as_str().unwrap())
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let lags: Vec<i64> = rows(&browser)
        .await
        .iter()
        .filter(|r| r["type"] == "message")
        .map(|r| {
            let t = Duration::from_secs_f64(r["t"].as_f64().unwrap());
            let recorded = (start + t).as_millis() as i64;
            r["arrived"].as_i64().unwrap() - recorded
        })
        .collect();
    assert!(lags.len() > 50, "{lags:?}");
    let worst = lags.iter().max().unwrap();
    assert!(
        *worst <= 250,
        "a row took {worst} ms to reach the page: {lags:?}"
    );
    eprintln!(
        "viewer: {} message rows, worst delay {worst} ms, median {} ms",
        lags.len(),
        {
            let mut sorted = lags.clone();
            sorted.sort();
            sorted[sorted.len() / 2]
        }
    );
    // Rows are drawn in the lanes' frame: the last one is the prompt's answer to the editor.
    let last = browser
        .until(
            "[...document.querySelectorAll('[data-testid=row]')].map(r => r.title).filter(t => t.includes('session/prompt')).pop()",
            PATIENT,
        )
        .await;
    assert!(
        last.as_str()
            .unwrap()
            .starts_with("response session/prompt"),
        "{last}"
    );
    browser.close().await;
    chain.editor.close_stdin();
    chain.editor.exit().await;
}

/// Every drawn row's arrow is visible (its middle and its head are the arrow's, not covered by
/// its label or anything else) and runs from the sender's lane to the receiver's, for a
/// permission round trip through two proxies (requests and answers both ways).
#[tokio::test]
async fn every_rows_arrow_is_visible_and_points_from_sender_to_receiver() {
    let Some((_one, browser, mut chain)) =
        open("arrows", &[passthrough(), passthrough(), agent()]).await
    else {
        return;
    };
    let session = chain.editor.open_session().await;
    chain.editor.prompt(&session, "permission").await;
    caught_up(&browser, &chain.file).await;
    // Row by row, scrolled into the rows' view (hit tests see only what is on screen).
    let checked = browser
        .js_async(
            "const lanes = {}; \
             for (const l of document.querySelectorAll('[data-testid=lane]')) { \
               const r = l.getBoundingClientRect(); lanes[l.dataset.lane] = r.left + r.width / 2; } \
             const sc = document.getElementById('scroller'); \
             const seen = new Map(); \
             const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))); \
             (async () => { \
               for (let top = 0; ; top += Math.max(sc.clientHeight / 2, 28)) { \
                 sc.scrollTop = top; sc.dispatchEvent(new Event('scroll')); await frame(); \
                 const view = sc.getBoundingClientRect(); \
                 for (const row of document.querySelectorAll('[data-testid=row]')) { \
                   const a = row.querySelector('[data-testid=arrow]'); \
                   const r = a && a.getBoundingClientRect(); \
                   if (!a || seen.has(row.dataset.seq) || r.top < view.top + 8 || r.bottom > view.bottom - 8) continue; \
                   const y = r.top + r.height / 2; \
                   const right = a.classList.contains('right'); \
                   const tip = right ? r.right + 4 : r.left - 4; \
                   const at = (x) => { const e = document.elementFromPoint(x, y); \
                     return e === a || (e ? (e.className || e.tagName) : 'nothing'); }; \
                   seen.set(row.dataset.seq, { seq: row.dataset.seq, from: a.dataset.from, to: a.dataset.to, \
                     start: right ? r.left : r.right, end: right ? r.right : r.left, \
                     fromX: lanes[a.dataset.from], toX: lanes[a.dataset.to], \
                     middle: at(r.left + r.width / 2), head: at(tip), \
                     label: row.querySelector('.label').getBoundingClientRect().bottom <= r.top - 3 }); \
                 } \
                 if (top + sc.clientHeight >= sc.scrollHeight) break; \
               } \
               done([...seen.values()]); \
             })();",
            json!([]),
        )
        .await;
    let arrows = checked.as_array().expect("a list");
    assert!(
        arrows.len() >= 12,
        "a round trip through 2 proxies: {arrows:?}"
    );
    for a in arrows {
        assert_eq!(a["middle"], true, "the arrow's middle is covered: {a}");
        assert_eq!(
            a["head"], true,
            "the arrow's head is covered or missing: {a}"
        );
        assert_eq!(
            a["label"], true,
            "the label reaches down into the arrow: {a}"
        );
        let near = |x: &Value, y: &Value| (x.as_f64().unwrap() - y.as_f64().unwrap()).abs() < 3.0;
        assert!(
            near(&a["start"], &a["fromX"]) && near(&a["end"], &a["toX"]),
            "the arrow does not run from its sender's lane to its receiver's: {a}"
        );
        assert_ne!(a["from"], a["to"], "{a}");
    }
    browser.close().await;
    chain.editor.close_stdin();
    chain.editor.exit().await;
}

#[tokio::test]
async fn a_permission_round_trip_is_paired_on_every_hop_and_a_prompts_hops_are_linked() {
    let Some((_one, browser, mut chain)) =
        open("pairs", &[passthrough(), passthrough(), agent()]).await
    else {
        return;
    };
    let session = chain.editor.open_session().await;
    chain.editor.prompt(&session, "permission").await;
    caught_up(&browser, &chain.file).await;
    let rows = rows(&browser).await;
    let asked: Vec<&Value> = rows
        .iter()
        .filter(|r| r["method"] == "session/request_permission" && r["kind"] == "request")
        .collect();
    // Up from the agent: agent → 2 → 1 → editor.
    assert_eq!(asked.len(), 3, "{asked:?}");
    for request in &asked {
        let answers: Vec<&Value> = rows
            .iter()
            .filter(|r| r["pair"] == request["pair"] && r["kind"] == "response")
            .collect();
        assert_eq!(answers.len(), 1, "{request} unpaired");
        assert_eq!(answers[0]["from"], request["to"]);
        assert_eq!(answers[0]["flow"], request["flow"]);
    }
    assert!(
        asked.iter().all(|r| r["flow"] == asked[0]["flow"]),
        "one flow across the hops: {asked:?}"
    );
    // The prompt: picked in the page, its hops listed with the time inside each proxy and
    // each hop's answer time.
    let prompt = rows
        .iter()
        .find(|r| r["method"] == "session/prompt" && r["kind"] == "request")
        .unwrap();
    browser
        .js(
            "sacpViewer.show(arguments[0]);",
            json!([prompt["seq"].as_u64().unwrap()]),
        )
        .await;
    let hops = browser
        .until(
            "[...document.querySelectorAll('[data-testid=flow-hop]')].map(e => e.textContent)",
            PATIENT,
        )
        .await;
    let hops: Vec<&str> = hops
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    assert_eq!(hops.len(), 3, "{hops:?}");
    assert!(
        hops[0].starts_with("editor → 1:passthrough-proxy"),
        "{hops:?}"
    );
    assert!(hops[0].contains("inside 1:passthrough-proxy: "), "{hops:?}");
    assert!(hops[1].contains("inside 2:passthrough-proxy: "), "{hops:?}");
    assert!(
        hops.iter().all(|h| h.contains("answered after")),
        "{hops:?}"
    );
    let duration = browser
        .js(
            "return document.querySelector('[data-testid=pair-duration]').textContent;",
            json!([]),
        )
        .await;
    assert!(duration.as_str().unwrap().contains(" ms"), "{duration}");
    browser.close().await;
    chain.editor.close_stdin();
    chain.editor.exit().await;
}

#[tokio::test]
async fn a_hundred_thousand_updates_keep_the_page_responsive_and_row_150k_a_jump_away() {
    let Some((_one, browser, mut chain)) = open("many", &[passthrough(), agent()]).await else {
        return;
    };
    browser
        .until(
            "document.querySelectorAll('[data-testid=lane]').length >= 3",
            PATIENT,
        )
        .await;
    browser
        .js(
            "window.longTasks = []; \
             new PerformanceObserver(list => { for (const e of list.getEntries()) longTasks.push(e.duration); }) \
               .observe({type: 'longtask', buffered: true});",
            json!([]),
        )
        .await;
    let session = chain.editor.open_session().await;
    // 100k updates make two lines each; the writer drops what it cannot keep up with (the
    // chain never waits for it), and a busy machine may make it drop some: stream on until
    // the file has its 200k lines.
    let mut last = 0;
    for _ in 0..5 {
        chain.editor.prompt(&session, "stream 100000").await;
        last = caught_up(&browser, &chain.file).await;
        eprintln!("viewer: {} lines in the trace", last + 1);
        if last > 200_000 {
            break;
        }
    }
    assert!(last > 200_000, "{last}");
    let long = browser.js("return longTasks;", json!([])).await;
    let longest = long
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .fold(0.0, f64::max);
    eprintln!(
        "viewer: {} lines; {} long tasks, the longest {longest:.0} ms",
        last + 1,
        long.as_array().unwrap().len()
    );
    assert!(longest <= 200.0, "a main-thread task took {longest} ms");
    // Jump to row 150,000: typed in, drawn.
    let took = browser
        .js_async(
            "const start = performance.now(); \
             const input = document.querySelector('[data-testid=goto]'); \
             input.value = '150000'; \
             input.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'})); \
             requestAnimationFrame(() => requestAnimationFrame(() => { \
               const row = document.querySelector('[data-testid=row][data-index=\"150000\"]'); \
               done(row ? performance.now() - start : -1); \
             }));",
            json!([]),
        )
        .await;
    let took = took.as_f64().unwrap();
    eprintln!("viewer: jumped to row 150000 in {took:.1} ms");
    assert!(
        (0.0..=500.0).contains(&took),
        "the jump took {took} ms (-1: not drawn)"
    );
    browser.close().await;
    chain.editor.close_stdin();
    chain.editor.exit().await;
}

#[tokio::test]
async fn a_crashed_agent_shows_its_exit_status_and_stderr_tail_on_its_lane() {
    let Some((_one, browser, mut chain)) = open("crash", &[passthrough(), agent()]).await else {
        return;
    };
    browser
        .until(
            "document.querySelectorAll('[data-testid=lane]').length >= 3",
            PATIENT,
        )
        .await;
    let session = chain.editor.open_session().await;
    chain.editor.prompt(&session, "crash 3").await;
    chain.editor.exit().await;
    let lane = browser
        .until(
            "(() => { const l = document.querySelector('[data-testid=lane][data-lane=c2]'); \
               return l.classList.contains('crashed') && \
                 [l.querySelector('[data-testid=lane-status]').textContent, \
                  l.querySelector('[data-testid=lane-stderr]').textContent]; })()",
            PATIENT,
        )
        .await;
    assert_eq!(lane[0], "exited with status 3 (crashed)", "{lane}");
    assert!(
        lane[1].as_str().unwrap().contains("crashing on purpose"),
        "{lane}"
    );
    // The exit is a red row of its own.
    let red = browser
        .js(
            "return [...document.querySelectorAll('[data-testid=row].crash')].map(r => r.title);",
            json!([]),
        )
        .await;
    assert!(
        red.to_string().contains("exit: exited with status 3"),
        "{red}"
    );
    browser.close().await;
}

#[tokio::test]
async fn filters_and_search_act_on_live_rows_and_a_dropped_connection_resumes_without_gaps() {
    let Some((_one, browser, mut chain)) = open("filters", &[passthrough(), agent()]).await else {
        return;
    };
    browser
        .until(
            "document.querySelectorAll('[data-testid=lane]').length >= 3",
            PATIENT,
        )
        .await;
    let session = chain.editor.open_session().await;
    // A method filter set before the rows come applies to them as they come.
    browser
        .js(
            "const m = document.querySelector('[data-testid=filter-method]'); \
             m.value = 'session/update'; m.dispatchEvent(new Event('input'));",
            json!([]),
        )
        .await;
    chain.editor.prompt(&session, "stream 30").await;
    caught_up(&browser, &chain.file).await;
    let shown = browser
        .until(
            "sacpViewer.view.length === 60 && sacpViewer.view.map(i => sacpViewer.rows[i].method)",
            PATIENT,
        )
        .await;
    assert!(
        shown
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m == "session/update"),
        "{shown}"
    );
    // Text search over the payloads, with the filter: one update, on both hops.
    browser
        .js(
            "const s = document.querySelector('[data-testid=search]'); \
             s.value = '\"chunk 17\"'; s.dispatchEvent(new Event('input'));",
            json!([]),
        )
        .await;
    browser.until("sacpViewer.view.length === 2", PATIENT).await;
    // Errors only: none yet.
    browser
        .js(
            "for (const id of ['search', 'filter-method']) { const e = document.querySelector(`[data-testid=${id}]`); e.value = ''; e.dispatchEvent(new Event('input')); } \
             const e = document.querySelector('[data-testid=filter-errors]'); e.checked = true; e.dispatchEvent(new Event('change'));",
            json!([]),
        )
        .await;
    browser.until("sacpViewer.view.length === 0", PATIENT).await;
    browser
        .js(
            "const e = document.querySelector('[data-testid=filter-errors]'); e.checked = false; e.dispatchEvent(new Event('change'));",
            json!([]),
        )
        .await;
    // Paused: new rows are counted, not scrolled to; following again shows them.
    browser
        .js(
            "document.querySelector('[data-testid=follow]').click();",
            json!([]),
        )
        .await;
    chain.editor.prompt(&session, "stream 10").await;
    caught_up(&browser, &chain.file).await;
    let counted = browser
        .until(
            "document.querySelector('[data-testid=new-count]').textContent",
            PATIENT,
        )
        .await;
    assert!(counted.as_str().unwrap().ends_with(" new"), "{counted}");
    browser
        .js(
            "document.querySelector('[data-testid=follow]').click();",
            json!([]),
        )
        .await;
    browser
        .until(
            "document.querySelector('[data-testid=new-count]').textContent === '' && \
             (() => { const s = document.querySelector('[data-testid=rows]'); return s.scrollTop + s.clientHeight >= s.scrollHeight - 30; })()",
            PATIENT,
        )
        .await;
    // The connection drops while the chain goes on; the page resumes after its last line.
    browser.js("sacpViewer.disconnect();", json!([])).await;
    chain.editor.prompt(&session, "stream 25").await;
    browser.js("sacpViewer.reconnect();", json!([])).await;
    let last = caught_up(&browser, &chain.file).await;
    let gapless = browser
        .js(
            "return sacpViewer.gaps === 0 && sacpViewer.rows.every((r, i) => r.seq === i);",
            json!([]),
        )
        .await;
    assert_eq!(gapless, json!(true), "rows up to {last} with a gap");
    browser.close().await;
    chain.editor.close_stdin();
    chain.editor.exit().await;
}

#[tokio::test]
async fn the_export_is_the_file_strangers_get_403_and_bridge_secrets_show_nowhere() {
    // The HTTP bridge gives the agent a bearer token in `session/new`.
    let Some((_one, browser, mut chain)) = open(
        "export",
        &[
            format!("{} tools", quoted(&example("tool-proxy"))),
            format!("{} --mcp-http", quoted(&agent())),
        ],
    )
    .await
    else {
        return;
    };
    let session = chain.editor.open_session().await;
    chain.editor.prompt(&session, "tools").await;
    assert!(
        said(&chain.editor)[0].starts_with("tools: "),
        "{:?}",
        said(&chain.editor)
    );
    caught_up(&browser, &chain.file).await;
    let file = std::fs::read_to_string(&chain.file).unwrap();
    assert!(
        file.contains(r#""name":"Authorization","value":"[redacted]""#),
        "the bridge's header is in the trace, redacted"
    );
    let bearer = regex_free_bearer(&file);
    assert!(bearer.is_none(), "a bearer token in the trace: {bearer:?}");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&chain.file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // The download is the file; the export holds it.
    let downloaded = browser
        .js_async(
            "fetch(document.querySelector('[data-testid=download]').href).then(r => r.text()).then(done);",
            json!([]),
        )
        .await;
    assert_eq!(downloaded.as_str().unwrap(), file);
    let exported = browser
        .js_async(
            "fetch(document.querySelector('[data-testid=export]').href).then(r => r.text()).then(t => { \
               const doc = new DOMParser().parseFromString(t, 'text/html'); \
               done(doc.getElementById('trace-data').textContent); });",
            json!([]),
        )
        .await;
    assert_eq!(exported.as_str().unwrap().replace("<\\/", "</"), file);
    let page_text = browser
        .js(
            "return document.body.innerText + sacpViewer.rows.map(r => r.payloadText || '').join('\\n');",
            json!([]),
        )
        .await;
    assert!(regex_free_bearer(page_text.as_str().unwrap()).is_none());
    // Strangers: no token, a foreign origin, a foreign host name.
    let base = chain.url.split("/?").next().unwrap().to_owned();
    let token = chain.url.split("token=").nth(1).unwrap().to_owned();
    let http = reqwest::Client::new();
    let status = |request: reqwest::RequestBuilder| async move {
        tokio::time::timeout(PATIENT, request.send())
            .await
            .unwrap()
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(status(http.get(format!("{base}/"))).await, 403);
    assert_eq!(
        status(http.get(format!("{base}/events?token=wrong"))).await,
        403
    );
    assert_eq!(status(http.get(format!("{base}/trace.jsonl"))).await, 403);
    assert_eq!(
        status(
            http.get(format!("{base}/trace.jsonl?token={token}"))
                .header("origin", "http://evil.example")
        )
        .await,
        403
    );
    assert_eq!(
        status(
            http.get(format!("{base}/?token={token}"))
                .header("host", "evil.example")
        )
        .await,
        403
    );
    assert_eq!(
        status(http.get(format!("{base}/?token={token}"))).await,
        200
    );
    browser.close().await;
    chain.editor.close_stdin();
    chain.editor.exit().await;
}

/// A bearer token (`Bearer ` and 32 or more hex digits) in `text`, if there is one.
fn regex_free_bearer(text: &str) -> Option<String> {
    text.match_indices("Bearer ").find_map(|(at, _)| {
        let token: String = text[at + 7..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect();
        (token.len() >= 32).then_some(token)
    })
}
