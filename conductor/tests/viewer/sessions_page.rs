//! A session in the browser: the sessions page of a conductor an editor started on stdio and
//! that shares its sessions (`--share 127.0.0.1:0 --serve`), in a real headless Chromium —
//! as an observer and as a controller, at a phone's width, and without the token.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;
use crate::viewer::ONE_AT_A_TIME;

/// A panel whose script tries to read the page it is shown in, and says what it could.
const PROBE: &str = "<p>probe panel</p><script>\
    let doc = 'parent.document blocked', token = 'token blocked';\
    try { if (parent.document.body) doc = 'parent.document read'; } catch (e) {}\
    try { if (parent.location.href) token = 'parent.location read'; } catch (e) {}\
    parent.postMessage({panel: doc}, '*');\
    parent.postMessage({panel: token}, '*');\
    </script>";

/// The conductor, its stdio editor (initialized, with a session: its id) and the page's URL
/// (with the token in its fragment).
async fn sharing() -> (Editor, String, String) {
    let args = vec![
        "agent".to_owned(),
        "--share".to_owned(),
        "127.0.0.1:0".to_owned(),
        "--no-journal".to_owned(),
        "--serve".to_owned(),
        example("panel-proxy"),
        agent(),
    ];
    let mut editor = Editor::start(conductor(), &args);
    let url = until("the sessions page's URL on stderr", PATIENT, || {
        let stderr = editor.stderr();
        let line = stderr.lines().find(|l| l.contains("the sessions page: "));
        match line.and_then(|l| l.split("the sessions page: ").nth(1)) {
            Some(url) => Ok(url.trim().to_owned()),
            None => Err(stderr),
        }
    })
    .await;
    let session = editor.open_session().await;
    (editor, session, url)
}

/// The page's text.
async fn text(browser: &Browser) -> String {
    browser
        .js("return document.body.innerText;", json!([]))
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Clicks the element `element` (a JS expression) names.
async fn click(browser: &Browser, element: &str) {
    browser
        .js(&format!("{element}.click(); return true;"), json!([]))
        .await;
}

/// Types `text` in the page's prompt box and sends it.
async fn type_prompt(browser: &Browser, text: &str) {
    let script = format!(
        "document.getElementById('prompt').value = {}; \
         document.getElementById('send').click(); return true;",
        json!(text)
    );
    browser.js(&script, json!([])).await;
}

/// Opens the page and attaches to `session` with the button `which` (`watch` or `control`).
async fn attach(browser: &Browser, url: &str, session: &str, which: &str) {
    browser.goto(url).await;
    let button = format!(
        "[...document.querySelectorAll('#sessions li')].find(li => li.textContent.includes({}))\
         ?.querySelector('.{which}')",
        json!(session)
    );
    browser.until(&button, PATIENT).await;
    click(browser, &button).await;
    browser
        .until("!document.getElementById('session').hidden", PATIENT)
        .await;
}

#[tokio::test]
async fn an_observer_sees_the_editors_turn_and_panels_in_a_sandbox_and_has_no_prompt_box() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(browser) = Browser::start().await else {
        return;
    };
    let (mut editor, session, url) = sharing().await;
    // Not in the page's own address once it has read it.
    assert!(url.contains("#token="), "{url}");
    attach(&browser, &url, &session, "watch").await;
    assert_eq!(
        browser
            .js(
                "return document.getElementById('session').dataset.role;",
                json!([])
            )
            .await,
        "observer"
    );

    // The stdio editor's turn: a plan, a tool call that completes, text, then the panel.
    let answer = editor.prompt(&session, "plan").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    browser
        .until(
            "document.querySelector('.tool[data-id=\"think-1\"]')?.dataset.status === 'completed'",
            PATIENT,
        )
        .await;
    browser
        .until(
            "[...document.querySelectorAll('.plan li')].map(l => l.dataset.status).join() === 'completed,completed'",
            PATIENT,
        )
        .await;
    browser
        .until("document.body.innerText.includes('planned')", PATIENT)
        .await;
    // The panel-proxy's panel, as HTML (the page declares it), in a frame of its own origin.
    let sandbox = browser
        .until(
            "document.querySelector('iframe.panel')?.getAttribute('sandbox')",
            PATIENT,
        )
        .await;
    assert_eq!(sandbox, "allow-scripts");
    // A panel with a script: it can read neither the page nor its address.
    let probe = json!({"sessionId": session, "prompt": [
        {"type": "text", "text": "look"},
        {"type": "resource", "resource": {"uri": "probe:1", "mimeType": "text/html", "text": PROBE}},
    ]});
    let answer = editor.request("session/prompt", probe).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let reports = browser
        .until(
            "window.panelReports.length >= 2 && window.panelReports.slice().sort()",
            PATIENT,
        )
        .await;
    assert_eq!(
        reports,
        json!(["parent.document blocked", "token blocked"]),
        "a panel reached the page"
    );
    assert_eq!(
        browser
            .js(
                "return document.querySelectorAll('iframe.panel').length;",
                json!([])
            )
            .await,
        3,
        "two panels of the proxy's and the probe"
    );
    // An observer is offered no prompt box.
    assert_eq!(
        browser
            .js(
                "const c = document.getElementById('composer'); return c.hidden && c.offsetParent === null;",
                json!([])
            )
            .await,
        true
    );
    // The token is in neither the page's address nor its text.
    let href = browser.js("return location.href;", json!([])).await;
    assert!(!href.as_str().unwrap().contains("token"), "{href}");
    editor.close_stdin();
    browser.close().await;
}

#[tokio::test]
async fn a_controller_page_answers_first_and_prompts_a_turn_the_editor_sees() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(browser) = Browser::start().await else {
        return;
    };
    let (mut editor, session, url) = sharing().await;
    attach(&browser, &url, &session, "control").await;
    browser
        .until("!document.getElementById('composer').hidden", PATIENT)
        .await;

    // The stdio editor prompts; the agent asks permission of both controllers; the page
    // answers, the editor does not.
    let id = editor.send_prompt(&session, "permission").await;
    let asked = loop {
        let message = editor.next_message().await.expect("the permission request");
        if message["method"] == "session/request_permission" {
            break message;
        }
    };
    browser
        .until(
            "document.querySelector('.ask button[data-option=\"allow\"]')",
            PATIENT,
        )
        .await;
    click(
        &browser,
        "document.querySelector('.ask button[data-option=\"allow\"]')",
    )
    .await;
    // The editor's copy is withdrawn, and the agent got the page's answer.
    let mut withdrawn = false;
    loop {
        let message = editor.next_message().await.expect("the prompt's answer");
        if message["method"] == "$/cancel_request" {
            assert_eq!(message["params"]["requestId"], asked["id"]);
            withdrawn = true;
        }
        if message.get("method").is_none() && message["id"] == id {
            assert_eq!(message["result"]["stopReason"], "end_turn", "{message}");
            break;
        }
        editor.transcript.push(message.to_string());
    }
    assert!(withdrawn, "the editor's copy was not withdrawn");
    assert!(
        editor
            .transcript
            .iter()
            .any(|l| l.contains("permission: allow")),
        "{:?}",
        editor.transcript
    );
    browser
        .until(
            "document.body.innerText.includes('permission: allow')",
            PATIENT,
        )
        .await;

    // A prompt typed in the page: a turn the stdio editor sees.
    editor.transcript.clear();
    type_prompt(&browser, "stream 2").await;
    browser
        .until(
            "document.body.innerText.includes('the turn ended: end_turn')",
            PATIENT,
        )
        .await;
    let mut saw = Vec::new();
    while saw.len() < 3 {
        let message = tokio::time::timeout(Duration::from_secs(30), editor.next_message())
            .await
            .expect("the page's turn reaches the editor")
            .expect("the conductor is running");
        if message["method"] == "session/update" {
            let content = &message["params"]["update"]["content"];
            if let Some(text) = content["text"].as_str() {
                saw.push(text.to_owned());
            }
        }
    }
    assert_eq!(saw, ["stream 2", "chunk 1", "chunk 2"]);

    // A turn the page starts and cancels.
    type_prompt(&browser, "wait").await;
    browser
        .until("document.body.innerText.includes('waiting')", PATIENT)
        .await;
    click(&browser, "document.getElementById('cancel')").await;
    browser
        .until(
            "document.body.innerText.includes('the turn ended: cancelled')",
            PATIENT,
        )
        .await;
    editor.close_stdin();
    browser.close().await;
}

#[tokio::test]
async fn at_a_phones_width_nothing_scrolls_sideways_and_the_buttons_are_in_reach() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(browser) = Browser::start().await else {
        return;
    };
    browser.resize(390, 844).await;
    let (mut editor, session, url) = sharing().await;
    attach(&browser, &url, &session, "control").await;
    let width = browser.js("return window.innerWidth;", json!([])).await;
    assert!(
        width.as_u64().unwrap() <= 400,
        "the viewport is {width} wide"
    );
    let _id = editor.send_prompt(&session, "permission").await;
    browser
        .until("document.querySelector('.ask button')", PATIENT)
        .await;
    let fits = browser
        .js(
            "const w = window.innerWidth; \
             const buttons = [...document.querySelectorAll('.ask button, #send, #cancel')]; \
             return { scroll: document.documentElement.scrollWidth, width: w, \
               buttons: buttons.map(b => { const r = b.getBoundingClientRect(); \
                 return r.left >= 0 && r.right <= w && r.width > 0; }) };",
            json!([]),
        )
        .await;
    assert!(
        fits["scroll"].as_u64() <= fits["width"].as_u64(),
        "the page scrolls sideways: {fits}"
    );
    let buttons = fits["buttons"].as_array().unwrap();
    assert!(buttons.len() >= 4, "{fits}");
    assert!(buttons.iter().all(|b| b == &Value::Bool(true)), "{fits}");
    editor.close_stdin();
    browser.close().await;
}

#[tokio::test]
async fn a_page_without_the_token_sees_no_session() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(browser) = Browser::start().await else {
        return;
    };
    let (mut editor, session, url) = sharing().await;
    let bare = url.split('#').next().unwrap().to_owned();
    browser.goto(&bare).await;
    browser
        .until("!document.getElementById('login').hidden", PATIENT)
        .await;
    // A wrong token: the server refuses the connection; still nothing.
    browser
        .js(
            "document.getElementById('token').value = 'not the token'; \
             document.querySelector('#login button').click(); return true;",
            json!([]),
        )
        .await;
    browser
        .until(
            "document.getElementById('status').textContent.includes('not connected') || \
             document.getElementById('status').textContent.includes('could not connect')",
            PATIENT,
        )
        .await;
    let seen = text(&browser).await;
    assert!(!seen.contains(&session), "{seen}");
    assert!(!seen.contains("session-"), "{seen}");
    assert_eq!(
        browser
            .js(
                "return document.querySelectorAll('#sessions li').length;",
                json!([])
            )
            .await,
        0
    );
    editor.close_stdin();
    browser.close().await;
}
