//! `https://` and `wss://`: a server with a certificate of a CA made here, a client that
//! trusts that CA (and one that does not).

use sacp::remote::Remote;
use sacp::testing::{ScriptedAgent, ScriptedEditor, within};

use sacp_test_support::tls::certificates;

use crate::{serve, ws};

#[tokio::test]
async fn https_and_wss_reach_a_server_of_a_ca_the_client_trusts_and_only_that() {
    let (ca, cert, key) = certificates();
    let (url, token, shutdown) =
        serve(ScriptedAgent::new(), |b| b.tls_pem(&cert, &key).unwrap()).await;
    assert!(url.starts_with("https://"), "{url}");
    for url in [url.clone(), ws(&url)] {
        let transport = Remote::new(&url)
            .header("Authorization", &format!("Bearer {token}"))
            .unwrap()
            .ca_file(&ca)
            .connect();
        let transport = within("a TLS connection", transport).await.unwrap();
        let editor = ScriptedEditor::new().connect(transport);
        within("initialize", editor.initialize()).await.unwrap();
        let session = within("session/new", editor.new_session()).await.unwrap();
        let turn = within("a turn", session.prompt("hi")).await.unwrap();
        assert_eq!(turn.text(), "hi", "over {url}");
    }
    // A client that does not trust the CA gets nowhere, and says why.
    let refused = Remote::new(ws(&url))
        .header("Authorization", &format!("Bearer {token}"))
        .unwrap()
        .connect();
    let error = within("the refusal", refused).await.unwrap_err();
    assert!(error.to_string().contains("certificate"), "{error}");
    shutdown.shutdown();
    let _ = std::fs::remove_dir_all(ca.parent().unwrap());
}
