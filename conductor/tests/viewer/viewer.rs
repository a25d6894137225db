//! The viewer, as a user sees it in a browser.

use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::common::*;

/// One browser at a time (the machine has two cores).
pub(crate) static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// The browser (one at a time: hold the guard), a chain named `name` of `components` with
/// `--serve`, and its page open; `None` where there is no browser.
async fn open(
    name: &str,
    components: &[String],
) -> Option<(tokio::sync::MutexGuard<'static, ()>, Browser, Served)> {
    let one = ONE_AT_A_TIME.lock().await;
    let browser = Browser::start().await?;
    let chain = serve(conductor(), name, components).await;
    browser.goto(&chain.url).await;
    Some((one, browser, chain))
}

#[tokio::test]
async fn lanes_come_in_chain_order_before_the_first_prompt_and_rows_arrive_as_they_happen() {
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
    // Every message row reached the page live, pushed to it (its arrival time is the page's
    // own); how soon is the viewer benchmark's figure, not a test's.
    let lags = arrival_lags(&browser, &chain.file).await;
    assert!(lags.len() > 50, "{lags:?}");
    eprintln!(
        "viewer: {} message rows, worst delay {} ms",
        lags.len(),
        lags.iter().max().unwrap()
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

/// Looks at every message row of the page, scrolled into the rows' view in turn (hit tests see
/// only what is on screen), and gives for each: its arrow's ends and its lanes' centres, what a
/// hit test finds at the arrow's middle and just past its head (`true`: the arrow itself),
/// whether its label stays above the arrow and whether the label ends inside its row. Also
/// whether the rows scroll sideways. Sizes come from the page's own boxes (the rows' client
/// area, not the scroller's border box), so neither the fonts nor the scrollbars' width of a
/// Chromium version change what is checked.
const ARROWS: &str = r#"
const lanes = {};
for (const l of document.querySelectorAll('[data-testid=lane]')) {
  const r = l.getBoundingClientRect(); lanes[l.dataset.lane] = r.left + r.width / 2;
}
const sc = document.getElementById('scroller');
const seen = new Map();
const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
(async () => {
  for (let top = 0; ; top += Math.max(sc.clientHeight / 2, 28)) {
    sc.scrollTop = top; sc.dispatchEvent(new Event('scroll')); await frame();
    const box = sc.getBoundingClientRect();
    const viewTop = box.top + sc.clientTop, viewBottom = viewTop + sc.clientHeight;
    for (const row of document.querySelectorAll('[data-testid=row]')) {
      const a = row.querySelector('[data-testid=arrow]');
      const r = a && a.getBoundingClientRect();
      if (!a || seen.has(row.dataset.seq) || r.top < viewTop + 8 || r.bottom > viewBottom - 8) continue;
      const y = r.top + r.height / 2;
      const right = a.classList.contains('right');
      const tip = right ? r.right + 4 : r.left - 4;
      const at = (x) => {
        const e = document.elementFromPoint(x, y);
        return e === a || (e ? (e.className || e.tagName + (e.id ? '#' + e.id : '')) : 'nothing');
      };
      const label = row.querySelector('.label').getBoundingClientRect();
      const track = row.querySelector('.track').getBoundingClientRect();
      seen.set(row.dataset.seq, {
        seq: row.dataset.seq, from: a.dataset.from, to: a.dataset.to,
        start: right ? r.left : r.right, end: right ? r.right : r.left,
        fromX: lanes[a.dataset.from], toX: lanes[a.dataset.to],
        middle: at(r.left + r.width / 2), head: at(tip),
        label: label.bottom <= r.top - 3, labelInside: label.right <= track.right + 0.5,
      });
    }
    if (top + sc.clientHeight >= sc.scrollHeight) break;
  }
  done({ arrows: [...seen.values()], sideways: sc.scrollWidth > sc.clientWidth });
})();
"#;

/// What [`ARROWS`] finds on the page now.
async fn arrows(browser: &Browser) -> (Vec<Value>, bool) {
    let checked = browser.js_async(ARROWS, json!([])).await;
    let arrows = checked["arrows"].as_array().expect("a list").clone();
    (arrows, checked["sideways"] == true)
}

/// Every drawn row's arrow is visible (its middle and its head are the arrow's, not covered by
/// its label or anything else) and runs from the sender's lane to the receiver's, for a
/// permission round trip through two proxies (requests and answers both ways); no label runs
/// out of its row and the rows never scroll sideways. Then the same check on the same page
/// made wrong on purpose (an arrow covered, labels pushed down onto the arrows, labels let out
/// of their rows) finds each fault.
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
    let (checked, sideways) = arrows(&browser).await;
    assert!(
        checked.len() >= 12,
        "a round trip through 2 proxies: {checked:?}"
    );
    assert!(!sideways, "the rows scroll sideways");
    for a in &checked {
        assert_eq!(a["middle"], true, "the arrow's middle is covered: {a}");
        assert_eq!(
            a["head"], true,
            "the arrow's head is covered or missing: {a}"
        );
        assert_eq!(
            a["label"], true,
            "the label reaches down into the arrow: {a}"
        );
        assert_eq!(a["labelInside"], true, "the label runs out of its row: {a}");
        let near = |x: &Value, y: &Value| (x.as_f64().unwrap() - y.as_f64().unwrap()).abs() < 3.0;
        assert!(
            near(&a["start"], &a["fromX"]) && near(&a["end"], &a["toX"]),
            "the arrow does not run from its sender's lane to its receiver's: {a}"
        );
        assert_ne!(a["from"], a["to"], "{a}");
    }

    // The check, against faults put in on purpose. An opaque box over the rows' lower half
    // (rows are drawn anew as the check scrolls, so the box is the page's, fixed in place):
    // the arrows under it are found covered, those above it are not.
    browser
        .js(
            "const sc = document.getElementById('scroller').getBoundingClientRect(); \
             const box = document.createElement('div'); box.id = 'cover'; \
             Object.assign(box.style, {position: 'fixed', left: `${sc.left}px`, width: `${sc.width}px`, \
               top: `${sc.top + sc.height / 2}px`, height: `${sc.height / 2}px`, background: '#fff', zIndex: 5}); \
             document.body.append(box);",
            json!([]),
        )
        .await;
    let (covered, _) = arrows(&browser).await;
    let under = |a: &&Value| a["middle"] == "DIV#cover" && a["head"] == "DIV#cover";
    assert!(
        covered.iter().any(|a| under(&a)) && covered.iter().any(|a| a["middle"] == true),
        "the box over half the rows went unseen: {covered:?}"
    );
    assert!(
        covered.iter().all(|a| a["middle"] == true || under(&a)),
        "{covered:?}"
    );
    browser
        .js("document.getElementById('cover').remove();", json!([]))
        .await;
    // Labels pushed down onto the arrows, then labels let out of their rows.
    let broken = |css: &str| {
        format!(
            "const s = document.createElement('style'); s.id = 'broken'; s.textContent = {css:?}; \
             document.head.append(s);"
        )
    };
    browser
        .js(&broken(".row .label { top: 12px !important; }"), json!([]))
        .await;
    let (low, _) = arrows(&browser).await;
    assert!(low.iter().all(|a| a["label"] == false), "{low:?}");
    browser
        .js("document.getElementById('broken').remove();", json!([]))
        .await;
    browser
        .js(
            &broken(".row .track { overflow: visible !important; } .row .label { max-width: none !important; }"),
            json!([]),
        )
        .await;
    let (out, sideways) = arrows(&browser).await;
    assert!(
        sideways && out.iter().any(|a| a["labelInside"] == false),
        "labels out of their rows went unseen: {out:?}"
    );
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

/// 100k updates through a proxy are all rows of the page, and row 150,000 is drawn when it is
/// typed into "go to row". (How long the page's longest main-thread task takes meanwhile, and
/// the jump, are the viewer benchmark's figures.)
#[tokio::test]
async fn a_hundred_thousand_updates_are_all_rows_and_row_150k_a_jump_away() {
    let Some((_one, browser, mut chain)) = open("many", &[passthrough(), agent()]).await else {
        return;
    };
    browser
        .until(
            "document.querySelectorAll('[data-testid=lane]').length >= 3",
            PATIENT,
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
    let held = browser
        .js(
            "return [sacpViewer.rows.length, sacpViewer.rows.every((r, i) => r.seq === i)];",
            json!([]),
        )
        .await;
    assert_eq!(held, json!([last + 1, true]), "the page's rows");
    let took = jump_to(&browser, 150_000).await;
    assert!(took.is_some(), "row 150000 was not drawn after the jump");
    browser.close().await;
    chain.editor.close_stdin();
    chain.editor.exit().await;
}

#[tokio::test]
async fn a_webassembly_member_shows_as_such_with_its_grants_in_its_lanes_title() {
    let components = match sacp_examples::bins::components() {
        Ok(dir) => dir,
        Err(why) => {
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("skipped: {why}");
            return;
        }
    };
    let wasm = format!(
        "wasm:{}",
        components.join("passthrough-proxy.wasm").display()
    );
    let Some((_one, browser, _chain)) = open("wasm", &[wasm, agent()]).await else {
        return;
    };
    let lane = browser
        .until(
            "(() => { const l = document.querySelector('[data-testid=lane][data-lane=c1]'); \
               return l && l.title && [l.querySelector('.name').textContent, \
                 l.querySelector('[data-testid=lane-status]').textContent, l.title]; })()",
            PATIENT,
        )
        .await;
    assert_eq!(lane[0], "1:passthrough-proxy", "{lane}");
    assert_eq!(lane[1], "WebAssembly", "{lane}");
    assert!(
        lane[2]
            .as_str()
            .unwrap()
            .ends_with("(WebAssembly: nothing granted)"),
        "{lane}"
    );
    browser.close().await;
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

/// A session shared by the stdio editor (`--share`) with a network client attached as an
/// observer: the editor's lane lists the session's clients, and a row says who attached.
#[tokio::test]
async fn the_editors_lane_lists_a_sessions_clients_and_rows_say_who_attached() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(browser) = Browser::start().await else {
        return;
    };
    const TOKEN: &str = "v1ewer-t0ken";
    let token = std::env::temp_dir().join(format!("sacp-viewer-token-{}", std::process::id()));
    std::fs::write(&token, TOKEN).unwrap();
    let dir = std::env::temp_dir().join(format!("sacp-viewer-shared-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("shared.jsonl");
    let args = [
        "agent".to_owned(),
        "--serve".to_owned(),
        "--trace".to_owned(),
        file.to_string_lossy().into_owned(),
        "--share".to_owned(),
        "127.0.0.1:0".to_owned(),
        "--no-journal".to_owned(),
        "--listen-token-file".to_owned(),
        token.to_string_lossy().into_owned(),
        agent(),
    ];
    let mut editor = Editor::start(conductor(), &args);
    // The editor's chain (and its viewer) starts at its `initialize`.
    let session = editor.open_session().await;
    let on_stderr = |what: &'static str| {
        let stderr = editor.stderr();
        let line = stderr.lines().find(|l| l.contains(what)).map(str::to_owned);
        match line.and_then(|l| l.split(what).nth(1).map(str::to_owned)) {
            Some(rest) => Ok(rest.split_whitespace().next().unwrap_or("").to_owned()),
            None => Err(stderr),
        }
    };
    let url = until("the shared URL on stderr", PATIENT, || {
        on_stderr("serving the chain at ")
    })
    .await;
    let viewer = until("the viewer's URL on stderr", PATIENT, || {
        on_stderr("trace viewer: ")
    })
    .await;
    let chain = Served {
        editor,
        url: viewer,
        file,
    };
    browser.goto(&chain.url).await;

    let transport = sacp::remote::Remote::new(url.replacen("http", "ws", 1))
        .header("Authorization", &format!("Bearer {TOKEN}"))
        .unwrap()
        .connect();
    let transport = within("the observer's connection", transport)
        .await
        .unwrap();
    let observer = sacp::testing::ScriptedEditor::new().connect(transport);
    within("initialize", observer.initialize()).await.unwrap();
    let params = sacp::jsonrpc::RawJson::to_raw(
        &json!({"sessionId": session, "clientId": "phone", "role": "observer"}),
    )
    .unwrap();
    within(
        "session/attach",
        observer
            .connection()
            .request_raw("session/attach", Some(params)),
    )
    .await
    .unwrap();
    let listed = browser
        .until(
            "(document.querySelector('[data-testid=session-clients]') || {}).textContent \
             ?.includes('phone') && \
             document.querySelector('[data-testid=session-clients]').textContent",
            PATIENT,
        )
        .await;
    assert_eq!(listed, json!(format!("{session}: stdio, phone (observer)")));
    let said = browser
        .until(
            "[...document.querySelectorAll('[data-testid=rows] .row')].map(r => r.textContent) \
             .find(t => t.includes('attached by phone'))",
            PATIENT,
        )
        .await;
    assert!(said.as_str().unwrap().contains("an observer"), "{said}");
    let _ = std::fs::remove_file(&token);
}
