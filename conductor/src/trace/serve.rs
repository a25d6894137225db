//! The trace viewer's server: `conductor agent --serve [ADDR]` (live, as the trace file grows)
//! and `conductor trace view FILE` (a finished trace), on 127.0.0.1 by default.
//!
//! - `GET /?token=…`: the page (`page.html`: plain HTML, CSS and JS, served from the binary);
//! - `GET /events?token=…[&from=SEQ]`: the trace as server-sent events, each up to
//!   [`BATCH_LINES`] lines ([`BATCH_BYTES`] bytes) of it (one `data:` line each), its `id`
//!   the `seq` of its last line; a reconnecting `EventSource` sends that back as
//!   `Last-Event-ID` and resumes right after it, without gaps;
//! - `GET /trace.jsonl?token=…`: the file as it is now; `GET /export.html?token=…`: the page
//!   with the trace in it, one file that works offline.
//!
//! Every request needs the token (printed with the URL on stderr), a `Host` that names the
//! listener's loopback address (a DNS-rebinding page's requests name its own host), and, when
//! it has an `Origin`, the same origin: anything else is `403`. Events are read from the file
//! itself, at each page's own pace: the chain never waits for a page, and a page that stops
//! reading holds nothing but its place in the file.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::lock::lock;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;

/// The page.
const PAGE: &str = include_str!("page.html");
/// Lines per event at most.
const BATCH_LINES: usize = 1000;
/// Bytes per event at most (a line is never split). The page takes in an event in one task:
/// beside two busy loops a 380 KB event took 57–70 ms, and this limit keeps that task well
/// under the 200 ms that makes a page feel stuck.
const BATCH_BYTES: usize = 256 * 1024;

/// What the viewer shows.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// A trace being written: `written` says how many lines are in the file.
    Live {
        path: PathBuf,
        written: watch::Receiver<u64>,
    },
    /// A finished trace.
    Finished { path: PathBuf },
}

impl Source {
    fn path(&self) -> &PathBuf {
        match self {
            Source::Live { path, .. } | Source::Finished { path } => path,
        }
    }
}

#[derive(Debug)]
struct Viewer {
    source: Source,
    token: String,
    /// The `Host` values that name the listener.
    hosts: Vec<String>,
    pages: Arc<Pages>,
}

/// The pages reading events, and how far each got.
#[derive(Debug, Default)]
struct Pages {
    next: AtomicU64,
    sent: Mutex<HashMap<u64, u64>>,
    changed: tokio::sync::Notify,
}

/// A running viewer.
#[derive(Debug)]
pub(crate) struct Served {
    /// The page's URL, with its token.
    pub(crate) url: String,
    pages: Arc<Pages>,
}

impl Served {
    /// Waits (at most `within`) until every open page has been sent the line `last`: at the
    /// end of a chain, so that a crash is on the page before the viewer goes with the
    /// conductor.
    pub(crate) async fn caught_up(&self, last: u64, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let changed = self.pages.changed.notified();
            if lock(&self.pages.sent).values().all(|&sent| sent >= last) {
                return;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return;
            }
        }
    }
}

/// Starts serving `source` on `addr` (port 0: any).
pub(crate) async fn start(addr: SocketAddr, source: Source) -> std::io::Result<Served> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let token = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let port = bound.port();
    let mut hosts = vec![bound.to_string()];
    if bound.ip().is_loopback() {
        hosts.push(format!("localhost:{port}"));
        hosts.push(format!("127.0.0.1:{port}"));
        hosts.push(format!("[::1]:{port}"));
    }
    let pages = Arc::new(Pages::default());
    let viewer = Arc::new(Viewer {
        source,
        token: token.clone(),
        hosts,
        pages: pages.clone(),
    });
    let app = axum::Router::new()
        .route("/", axum::routing::get(page))
        .route("/events", axum::routing::get(events))
        .route("/trace.jsonl", axum::routing::get(download))
        .route("/export.html", axum::routing::get(export))
        .with_state(viewer);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::warn!("the trace viewer stopped: {e}");
        }
    });
    Ok(Served {
        url: format!("http://{bound}/?token={token}"),
        pages,
    })
}

/// The query parameter `name` of `uri`.
fn query<'a>(uri: &'a Uri, name: &str) -> Option<&'a str> {
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

impl Viewer {
    /// `Err(why)` (a `403`) unless the request names this listener, comes from its origin (if
    /// from any) and has the token.
    fn admit(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), &'static str> {
        let forbidden = Err;
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        if !host.is_some_and(|h| self.hosts.iter().any(|ours| ours == h)) {
            return forbidden("this viewer answers only on its own loopback address\n");
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let ours = origin
                .to_str()
                .ok()
                .and_then(|o| o.strip_prefix("http://"))
                .is_some_and(|o| self.hosts.iter().any(|h| h == o));
            if !ours {
                return forbidden("requests from other origins are refused\n");
            }
        }
        let presented = query(uri, "token").unwrap_or_default().as_bytes();
        let token = self.token.as_bytes();
        let same = presented.len() == token.len()
            && presented
                .iter()
                .zip(token)
                .fold(0u8, |d, (a, b)| d | (a ^ b))
                == 0;
        if !same {
            return forbidden("a token is needed: open the URL the conductor printed\n");
        }
        Ok(())
    }
}

const SECURITY: [(header::HeaderName, &str); 3] = [
    (header::CACHE_CONTROL, "no-store"),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::REFERRER_POLICY, "no-referrer"),
];

/// Adds the [`SECURITY`] headers every answer has.
fn secured(response: &mut Response) {
    for (name, value) in SECURITY {
        response
            .headers_mut()
            .insert(name, header::HeaderValue::from_static(value));
    }
}

fn html(body: String) -> Response {
    let mut response = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response();
    secured(&mut response);
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        header::HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             connect-src 'self'; img-src data:",
        ),
    );
    response
}

async fn page(State(viewer): State<Arc<Viewer>>, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(why) = viewer.admit(&headers, &uri) {
        return (StatusCode::FORBIDDEN, why).into_response();
    }
    html(PAGE.to_owned())
}

async fn download(State(viewer): State<Arc<Viewer>>, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(why) = viewer.admit(&headers, &uri) {
        return (StatusCode::FORBIDDEN, why).into_response();
    }
    match tokio::fs::read(viewer.source.path()).await {
        Ok(bytes) => {
            let mut response = (
                [
                    (header::CONTENT_TYPE, "application/x-ndjson"),
                    (
                        header::CONTENT_DISPOSITION,
                        "attachment; filename=\"trace.jsonl\"",
                    ),
                ],
                bytes,
            )
                .into_response();
            secured(&mut response);
            response
        }
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read the trace: {e}\n"),
        )
            .into_response(),
    }
}

/// The page with the trace in it: the data goes in a `<script type="application/x-ndjson">`
/// whose text cannot end it (`</` is written `<\/`, the same string inside JSON).
pub(crate) fn export_page(trace: &str) -> String {
    let data = trace.replace("</", "<\\/");
    PAGE.replacen(
        "<script id=\"trace-data\" type=\"application/x-ndjson\"></script>",
        &format!("<script id=\"trace-data\" type=\"application/x-ndjson\">{data}</script>"),
        1,
    )
}

async fn export(State(viewer): State<Arc<Viewer>>, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(why) = viewer.admit(&headers, &uri) {
        return (StatusCode::FORBIDDEN, why).into_response();
    }
    match tokio::fs::read_to_string(viewer.source.path()).await {
        Ok(text) => {
            let mut response = html(export_page(&text));
            response.headers_mut().insert(
                header::CONTENT_DISPOSITION,
                header::HeaderValue::from_static("attachment; filename=\"trace.html\""),
            );
            response
        }
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read the trace: {e}\n"),
        )
            .into_response(),
    }
}

/// Where a page's event stream starts: right after the last event a reconnecting page had
/// (`Last-Event-ID`), or where it asks (`?from=`), or at the first line.
pub(crate) fn resume_from(last_event_id: Option<&[u8]>, from: Option<&str>) -> u64 {
    let resumed = last_event_id
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        // (No line comes after the last seq there can be.)
        .map(|last| last.saturating_add(1));
    resumed
        .or_else(|| from.and_then(|f| f.parse().ok()))
        .unwrap_or(0)
}

/// The `seq` a trace line starts with.
fn seq_of(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("{\"seq\":")?;
    let end = rest.find(|c: char| !c.is_ascii_digit())?;
    rest[..end].parse().ok()
}

/// Where a page's event stream is in the file.
struct Tail {
    reader: BufReader<tokio::fs::File>,
    /// A line read before the writer finished it.
    partial: String,
    from: u64,
    written: Option<watch::Receiver<u64>>,
    page: u64,
    pages: Arc<Pages>,
}

impl Drop for Tail {
    fn drop(&mut self) {
        lock(&self.pages.sent).remove(&self.page);
        self.pages.changed.notify_waiters();
    }
}

impl Tail {
    /// The next batch of whole lines at `seq >= from`, waiting for more when there are none.
    async fn next(&mut self) -> Option<(u64, String)> {
        loop {
            let mut batch = String::new();
            let mut last = None;
            while batch.len() < BATCH_BYTES {
                match self.reader.read_line(&mut self.partial).await {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) => {
                        tracing::debug!("the trace viewer cannot read the trace: {e}");
                        return None;
                    }
                }
                if !self.partial.ends_with('\n') {
                    // The writer is in the middle of it: the rest comes later.
                    break;
                }
                let mut line = std::mem::take(&mut self.partial);
                line.pop();
                let Some(seq) = seq_of(&line) else {
                    continue;
                };
                if seq < self.from {
                    continue;
                }
                if last.is_some() {
                    batch.push('\n');
                }
                batch.push_str(&line);
                last = Some(seq);
                if batch.len() >= BATCH_BYTES
                    || last.is_some_and(|l| l + 1 - self.from >= BATCH_LINES as u64)
                {
                    break;
                }
            }
            if let Some(last) = last {
                self.from = last + 1;
                lock(&self.pages.sent).insert(self.page, last);
                self.pages.changed.notify_waiters();
                return Some((last, batch));
            }
            // Nothing new: wait for the writer (a finished trace waits for ever).
            match &mut self.written {
                Some(written) => {
                    if written.changed().await.is_err() {
                        // The conductor ended; what it wrote last is in the file.
                        self.written = None;
                    }
                }
                None => std::future::pending::<()>().await,
            }
        }
    }
}

async fn events(State(viewer): State<Arc<Viewer>>, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(why) = viewer.admit(&headers, &uri) {
        return (StatusCode::FORBIDDEN, why).into_response();
    }
    let from = resume_from(
        headers.get("last-event-id").map(|v| v.as_bytes()),
        query(&uri, "from"),
    );
    let file = match tokio::fs::File::open(viewer.source.path()).await {
        Ok(file) => file,
        Err(e) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot read the trace: {e}\n"),
            )
                .into_response();
        }
    };
    let written = match &viewer.source {
        Source::Live { written, .. } => Some(written.clone()),
        Source::Finished { .. } => None,
    };
    let page = viewer.pages.next.fetch_add(1, Ordering::Relaxed);
    lock(&viewer.pages.sent).insert(page, from.saturating_sub(1));
    let tail = Tail {
        reader: BufReader::with_capacity(256 * 1024, file),
        partial: String::new(),
        from,
        written,
        page,
        pages: viewer.pages.clone(),
    };
    let stream = futures_util::stream::unfold(tail, |mut tail| async move {
        let (last, batch) = tail.next().await?;
        let event = Event::default().id(last.to_string()).data(batch);
        Some((Ok::<_, std::convert::Infallible>(event), tail))
    });
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response();
    secured(&mut response);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_tell_their_seq_and_exports_cannot_close_their_script() {
        assert_eq!(seq_of(r#"{"seq":42,"t":0.1}"#), Some(42));
        assert_eq!(seq_of(r#"{"t":0.1}"#), None);
        let page = export_page("{\"seq\":0,\"text\":\"</script><b>x</b>\"}\n");
        assert!(page.contains(r#"<\/script><b>x<\/b>"#));
        assert_eq!(
            page.matches("</script>").count(),
            PAGE.matches("</script>").count()
        );
    }
}
