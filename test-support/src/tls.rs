//! Certificates for the TLS tests: a CA made on the spot and a server certificate it signed.

use std::path::PathBuf;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

/// PEM files of a CA, and of a certificate it signed for `localhost` and 127.0.0.1 with its
/// key, in a fresh directory: `(ca.pem, cert.pem, key.pem)`.
pub fn certificates() -> (PathBuf, PathBuf, PathBuf) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "sacp-tls-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("a directory for the certificates");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().expect("a CA key");
    let ca_cert = ca.self_signed(&ca_key).expect("the CA certificate");
    let issuer = Issuer::new(ca, ca_key);
    let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .expect("server certificate parameters");
    let leaf_key = KeyPair::generate().expect("a server key");
    let leaf_cert = leaf
        .signed_by(&leaf_key, &issuer)
        .expect("the server certificate");
    let paths = (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    );
    std::fs::write(&paths.0, ca_cert.pem()).expect("write ca.pem");
    std::fs::write(&paths.1, leaf_cert.pem()).expect("write cert.pem");
    std::fs::write(&paths.2, leaf_key.serialize_pem()).expect("write key.pem");
    paths
}
