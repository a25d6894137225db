//! A headless Chromium driven over WebDriver (Debian's `chromium` and `chromium-driver`), with
//! a few calls of the W3C protocol over an HTTP client: new session, navigate, execute script,
//! delete session. The viewer's browser tests and its benchmark use it.
//!
//! A browser says on stderr which Chromium and ChromeDriver it runs, so a test's log shows the
//! version it ran with. The window has a fixed size and a device scale factor of 1; what the
//! tests measure on a page they take from the page's own boxes, so a new Chromium's fonts or
//! scrollbar widths do not change what they check.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Where Debian puts them (`CHROMIUM`, `CHROMEDRIVER` override).
fn programs() -> Option<(PathBuf, PathBuf)> {
    let find = |var: &str, default: &str| {
        let path = std::env::var_os(var).map_or_else(|| PathBuf::from(default), PathBuf::from);
        path.exists().then_some(path)
    };
    Some((
        find("CHROMIUM", "/usr/bin/chromium")?,
        find("CHROMEDRIVER", "/usr/bin/chromedriver")?,
    ))
}

/// A headless Chromium with a WebDriver session, and the ChromeDriver that runs it: both go
/// (the whole process group) when it is closed or dropped.
#[derive(Debug)]
pub struct Browser {
    driver: tokio::process::Child,
    http: reqwest::Client,
    session: String,
    profile: PathBuf,
}

impl Browser {
    /// A browser, or `None` (said on stderr) where Chromium is not installed. Under CI it must
    /// be: `.ci/run` installs it.
    pub async fn start() -> Option<Browser> {
        let Some((chromium, chromedriver)) = programs() else {
            let why = "skipped: no /usr/bin/chromium and /usr/bin/chromedriver (install Debian's \
                       `chromium` and `chromium-driver`, as .ci/run does)";
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("{why}");
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        // In a process group of its own, with the browser it starts: a test that fails (a
        // panic drops the `Browser`) takes them all down, not only chromedriver.
        let driver = tokio::process::Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .expect("start chromedriver");
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let ready = Instant::now() + Duration::from_secs(20);
        while http.get(format!("{base}/status")).send().await.is_err() {
            assert!(Instant::now() < ready, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let profile = std::env::temp_dir().join(format!(
            "sacp-viewer-chromium-{}-{port}",
            std::process::id()
        ));
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-quic", "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--window-size=1400,900",
                    "--force-device-scale-factor=1",
                    format!("--user-data-dir={}", profile.display()),
                ],
            },
        }}});
        let mut browser = Browser {
            driver,
            http,
            session: String::new(),
            profile,
        };
        let created = browser
            .call("POST", &format!("{base}/session"), capabilities)
            .await;
        let id = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {created}"));
        browser.session = format!("{base}/session/{id}");
        say_version(&created["capabilities"]);
        Some(browser)
    }

    async fn call(&self, method: &str, url: &str, body: Value) -> Value {
        let request = match method {
            "POST" => self.http.post(url).body(body.to_string()),
            "DELETE" => self.http.delete(url),
            _ => self.http.get(url),
        };
        let response = tokio::time::timeout(
            Duration::from_secs(120),
            request.header("content-type", "application/json").send(),
        )
        .await
        .expect("WebDriver answered within 120 s")
        .expect("WebDriver is reachable");
        let bytes = response.bytes().await.unwrap();
        let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if let Some(error) = value["value"].get("error") {
            panic!("WebDriver error {error}: {}", value["value"]["message"]);
        }
        value["value"].clone()
    }

    /// Opens `url`.
    pub async fn goto(&self, url: &str) {
        self.call(
            "POST",
            &format!("{}/url", self.session),
            json!({"url": url}),
        )
        .await;
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page: what it returns.
    pub async fn js(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            &format!("{}/execute/sync", self.session),
            json!({"script": script, "args": args}),
        )
        .await
    }

    /// Runs `script`, which calls `done(value)` (the last argument) when it is done.
    pub async fn js_async(&self, script: &str, args: Value) -> Value {
        let script = format!("const done = arguments[arguments.length - 1];\n{script}");
        self.call(
            "POST",
            &format!("{}/execute/async", self.session),
            json!({"script": script, "args": args}),
        )
        .await
    }

    /// Sets the window's size (in headless Chromium, the viewport's): a phone's width, say.
    pub async fn resize(&self, width: u32, height: u32) {
        self.call(
            "POST",
            &format!("{}/window/rect", self.session),
            json!({"width": width, "height": height}),
        )
        .await;
    }

    /// Polls `expression` until it is truthy (at most `within`): its value.
    pub async fn until(&self, expression: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        let script = format!("return ({expression});");
        loop {
            let value = self.js(&script, json!([])).await;
            let truthy = match &value {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "`{expression}` did not hold within {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn close(mut self) {
        let _ = tokio::time::timeout(
            Duration::from_secs(10),
            self.http.delete(&self.session).send(),
        )
        .await;
        self.kill_group();
        let _ = self.driver.wait().await;
        let _ = std::fs::remove_dir_all(&self.profile);
    }

    /// Kills chromedriver's process group: it, Chromium and Chromium's helpers.
    fn kill_group(&self) {
        if let Some(pid) = self.driver.id().and_then(|pid| i32::try_from(pid).ok()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// Says once a process, on the real stderr (a test's captured output is shown only when it
/// fails; this line is for every run's log), which Chromium and ChromeDriver the browser is.
fn say_version(capabilities: &Value) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        use std::io::Write;
        let unknown = "of an unknown version";
        let line = format!(
            "browser: Chromium {} (ChromeDriver {})\n",
            capabilities["browserVersion"].as_str().unwrap_or(unknown),
            capabilities["chrome"]["chromedriverVersion"]
                .as_str()
                .and_then(|v| v.split(' ').next())
                .unwrap_or(unknown),
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
    });
}

impl Drop for Browser {
    /// Whatever is left of the browser, also when a test panics before [`Browser::close`].
    fn drop(&mut self) {
        self.kill_group();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
