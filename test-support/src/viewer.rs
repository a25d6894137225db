//! The trace viewer of a real chain (`conductor agent --serve --trace FILE …`) and a page of
//! it in a [`Browser`]: what the viewer's browser tests and its benchmark both start from.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::browser::Browser;
use crate::{Editor, until};

/// How long a step of the viewer may take on a busy 2-core machine.
pub const PATIENT: Duration = Duration::from_secs(30);

/// A chain with `--serve` and a trace file, and the viewer's URL. The trace file goes with it
/// (a 100k-update one is ~90 MB), and its directory with the last of them.
#[derive(Debug)]
pub struct Served {
    pub editor: Editor,
    pub url: String,
    pub file: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
        if let Some(dir) = self.file.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// `conductor agent --serve --trace FILE components…` (the file named after `name`), once it
/// has printed its viewer's URL.
pub async fn serve(conductor: &str, name: &str, components: &[String]) -> Served {
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
    let editor = Editor::start(conductor, &args);
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

/// The page's rows so far, as the page holds them (without their payloads' text).
pub async fn rows(browser: &Browser) -> Vec<Value> {
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
/// 20 ms) and the page has every line of it: the last line's `seq`.
pub async fn caught_up(browser: &Browser, file: &Path) -> u64 {
    let deadline = Instant::now() + PATIENT;
    let mut size = None;
    loop {
        let now = std::fs::metadata(file).unwrap().len();
        if size != Some(now) {
            size = Some(now);
            assert!(Instant::now() < deadline, "the trace never settled");
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
            Instant::now() < deadline,
            "the page stopped at {seen}, the file is at {last}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How long after the conductor recorded it (the trace's `start` plus the line's `t`) each
/// message row reached the page, in ms.
pub async fn arrival_lags(browser: &Browser, file: &Path) -> Vec<i64> {
    let text = std::fs::read_to_string(file).expect("the trace file");
    let first: Value = serde_json::from_str(text.lines().next().expect("a first line")).unwrap();
    let start = humantime::parse_rfc3339(first["start"].as_str().unwrap())
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    rows(browser)
        .await
        .iter()
        .filter(|r| r["type"] == "message")
        .map(|r| {
            let t = Duration::from_secs_f64(r["t"].as_f64().unwrap());
            let recorded = (start + t).as_millis() as i64;
            r["arrived"].as_i64().unwrap() - recorded
        })
        .collect()
}

/// Types `row` into the page's "go to row" box and waits two frames: how many ms until that
/// row was drawn, or `None` if it was not.
pub async fn jump_to(browser: &Browser, row: u64) -> Option<f64> {
    let took = browser
        .js_async(
            "const start = performance.now(), n = arguments[0]; \
             const input = document.querySelector('[data-testid=goto]'); \
             input.value = String(n); \
             input.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'})); \
             requestAnimationFrame(() => requestAnimationFrame(() => { \
               const row = document.querySelector(`[data-testid=row][data-index=\"${n}\"]`); \
               done(row ? performance.now() - start : -1); \
             }));",
            json!([row]),
        )
        .await;
    took.as_f64().filter(|took| *took >= 0.0)
}
