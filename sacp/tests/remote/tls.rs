//! `https://` and `wss://`: a server with a certificate of a CA made here, a client that
//! trusts that CA (and one that does not).

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use sacp::jsonrpc::remote::Remote;
use sacp::testing::{ScriptedAgent, ScriptedEditor, within};

use crate::{serve, ws};

/// A CA, and a certificate it signed for `localhost` and 127.0.0.1, as PEM files in a fresh
/// directory: `(ca.pem, cert.pem, key.pem)`.
fn certificates() -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("sacp-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let leaf =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();
    let paths = (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    );
    std::fs::write(&paths.0, ca_cert.pem()).unwrap();
    std::fs::write(&paths.1, leaf_cert.pem()).unwrap();
    std::fs::write(&paths.2, leaf_key.serialize_pem()).unwrap();
    paths
}

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
