//! Downloads over HTTP(S) with hyper (the client `sacp`'s remote transport uses): redirects
//! followed (an archive on GitHub's releases is one), the system's roots trusted, a bound on
//! the size and on how long the server may stay silent.

use std::io::Write;
use std::time::Duration;

use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// How many redirects are followed.
const REDIRECTS: usize = 8;

/// How long a server may take to answer, or stay silent in the middle of a body.
const SILENCE: Duration = Duration::from_secs(30);

/// Sends `url`'s body to `sink`, at most `limit` bytes: how many.
pub(crate) async fn get_to(url: &str, sink: &mut impl Write, limit: u64) -> Result<u64, String> {
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(rustls::crypto::ring::default_provider())
        .map_err(|e| format!("TLS: {e}"))?
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .build();
    let client: Client<_, http_body_util::Empty<bytes::Bytes>> =
        Client::builder(TokioExecutor::new()).build(connector);
    let mut at = url.to_owned();
    for _ in 0..=REDIRECTS {
        let uri: http::Uri = at.parse().map_err(|e| format!("{at}: {e}"))?;
        let request = http::Request::get(uri.clone())
            .header(
                http::header::USER_AGENT,
                concat!("sacp-conductor/", env!("CARGO_PKG_VERSION")),
            )
            .body(http_body_util::Empty::new())
            .map_err(|e| e.to_string())?;
        let response = tokio::time::timeout(SILENCE, client.request(request))
            .await
            .map_err(|_| format!("no answer within {}", humantime::format_duration(SILENCE)))?
            .map_err(|e| describe(&e))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(http::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| format!("a redirect ({status}) without a location"))?;
            at = join(&uri, location);
            continue;
        }
        if !status.is_success() {
            return Err(format!("the server answered {status}"));
        }
        let mut body = response.into_body();
        let mut written = 0u64;
        loop {
            let frame = tokio::time::timeout(SILENCE, body.frame())
                .await
                .map_err(|_| {
                    format!(
                        "the server was silent for {}",
                        humantime::format_duration(SILENCE)
                    )
                })?;
            let Some(frame) = frame else {
                return Ok(written);
            };
            let frame = frame.map_err(|e| e.to_string())?;
            if let Ok(data) = frame.into_data() {
                written += data.len() as u64;
                if written > limit {
                    return Err(format!("larger than {limit} bytes"));
                }
                sink.write_all(&data).map_err(|e| e.to_string())?;
            }
        }
    }
    Err(format!("more than {REDIRECTS} redirects"))
}

/// `location` (absolute, or a path) against the URL `base` it came from.
fn join(base: &http::Uri, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    let scheme = base.scheme_str().unwrap_or("https");
    let authority = base.authority().map_or("", |a| a.as_str());
    if location.starts_with('/') {
        format!("{scheme}://{authority}{location}")
    } else {
        let path = base.path();
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        format!("{scheme}://{authority}{dir}{location}")
    }
}

/// A client error with its causes (the connection refused, the name not found).
fn describe(e: &hyper_util::client::legacy::Error) -> String {
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_are_followed_from_where_they_came() {
        let base: http::Uri = "https://example.com/a/b/c.tar.gz".parse().unwrap();
        assert_eq!(
            join(&base, "https://cdn.example.net/x"),
            "https://cdn.example.net/x"
        );
        assert_eq!(join(&base, "/y/z"), "https://example.com/y/z");
        assert_eq!(join(&base, "d.zip"), "https://example.com/a/b/d.zip");
    }
}
