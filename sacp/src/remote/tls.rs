//! TLS for `https://` and `wss://`, with rustls (and its `ring` provider): as a client, the
//! system's root certificates plus any CA files given; as a server, a certificate chain and a
//! key from PEM files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn invalid(what: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, what)
}

/// The certificates of a PEM file.
fn certificates(path: &Path) -> std::io::Result<Vec<CertificateDer<'static>>> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| {
            invalid(format!(
                "cannot read certificates from {}: {e}",
                path.display()
            ))
        })?
        .collect::<Result<_, _>>()
        .map_err(|e| {
            invalid(format!(
                "{} is not a PEM certificate file: {e}",
                path.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(invalid(format!("{} holds no certificate", path.display())));
    }
    Ok(certs)
}

/// A client configuration trusting the system's roots and the certificates of `ca_files`,
/// offering `alpn` (`h2` and `http/1.1` for HTTP; only `http/1.1` for WebSocket).
pub(crate) fn client(
    ca_files: &[PathBuf],
    alpn: &[&[u8]],
) -> std::io::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for error in &native.errors {
        tracing::debug!("a system root certificate could not be read: {error}");
    }
    roots.add_parsable_certificates(native.certs);
    for file in ca_files {
        for cert in certificates(file)? {
            roots
                .add(cert)
                .map_err(|e| invalid(format!("{}: {e}", file.display())))?;
        }
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// A server configuration for the certificate chain in `cert` and the private key in `key`
/// (PEM), offering HTTP/2 and HTTP/1.1.
pub(crate) fn server(cert: &Path, key: &Path) -> std::io::Result<Arc<rustls::ServerConfig>> {
    let chain = certificates(cert)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        invalid(format!(
            "cannot read a private key from {}: {e}",
            key.display()
        ))
    })?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(format!("TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| {
            invalid(format!(
                "the certificate and key do not make a TLS identity: {e}"
            ))
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
