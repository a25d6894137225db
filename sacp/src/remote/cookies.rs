//! The cookies a server — or the load balancer in front of it — sets, sent back on every
//! request of the connection: what HTTP affinity runs on (see *Cookies and affinity* in
//! [`crate::remote`]).

use std::sync::{Arc, Mutex};

use http::HeaderMap;
use http::header::{COOKIE, HeaderValue, SET_COOKIE};

use crate::lock::lock;

/// A cookie jar for [`Remote`](super::Remote) connections: name → value, as the TypeScript SDK
/// keeps them (attributes such as `Path` or `Max-Age` are not applied: every cookie goes back to
/// the one endpoint). Cheap to clone; clones share their cookies.
///
/// A connection made without one gets a jar of its own, emptied when the connection ends. Give
/// the same jar to the connection that replaces a lost one, and a load balancer's affinity
/// cookie takes it back to the same server.
#[derive(Debug, Clone, Default)]
pub struct CookieJar(Arc<Mutex<Vec<(String, String)>>>);

impl CookieJar {
    /// An empty jar.
    pub fn new() -> CookieJar {
        CookieJar::default()
    }

    /// The value of cookie `name`, if the jar has it.
    pub fn get(&self, name: &str) -> Option<String> {
        lock(&self.0)
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    /// Sets cookie `name` to `value`, as a server's `Set-Cookie` would: how a client sends its
    /// next connection to a server of its choosing behind a load balancer that routes by an
    /// affinity cookie — the conductor that holds a session, say, which another conductor
    /// names in a `-32002` error's `data.heldBy`.
    pub fn set(&self, name: &str, value: &str) {
        let mut jar = lock(&self.0);
        match jar.iter_mut().find(|(n, _)| n == name) {
            Some(kept) => value.clone_into(&mut kept.1),
            None => jar.push((name.to_owned(), value.to_owned())),
        }
    }

    /// Forgets every cookie.
    pub fn clear(&self) {
        lock(&self.0).clear();
    }

    /// Keeps the cookies of a response's `Set-Cookie` headers (a later one of a name replaces
    /// the earlier).
    pub(crate) fn store(&self, headers: &HeaderMap) {
        let mut jar = lock(&self.0);
        for value in headers.get_all(SET_COOKIE) {
            let Ok(text) = value.to_str() else { continue };
            let pair = text.split(';').next().unwrap_or_default();
            let Some((name, value)) = pair.split_once('=') else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim());
            if name.is_empty() {
                continue;
            }
            match jar.iter_mut().find(|(n, _)| n == name) {
                Some(kept) => kept.1 = value.to_owned(),
                None => jar.push((name.to_owned(), value.to_owned())),
            }
        }
    }

    /// Adds the jar's cookies to `headers`' `Cookie` (cookies the caller set there win).
    pub(crate) fn apply(&self, headers: &mut HeaderMap) {
        let jar = lock(&self.0);
        if jar.is_empty() {
            return;
        }
        let own = headers
            .get(COOKIE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let named = |name: &str| {
            own.split(';')
                .any(|c| c.trim().split('=').next() == Some(name))
        };
        let mut cookies: Vec<String> = own
            .split(';')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect();
        cookies.extend(
            jar.iter()
                .filter(|(n, _)| !named(n))
                .map(|(n, v)| format!("{n}={v}")),
        );
        if let Ok(value) = HeaderValue::from_str(&cookies.join("; ")) {
            headers.insert(COOKIE, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_kept_by_name_and_sent_back_under_the_callers_own() {
        let jar = CookieJar::new();
        let mut set = HeaderMap::new();
        set.append(
            SET_COOKIE,
            HeaderValue::from_static("lb=node-3; Path=/; HttpOnly"),
        );
        set.append(SET_COOKIE, HeaderValue::from_static("theme=dark"));
        jar.store(&set);
        let mut again = HeaderMap::new();
        again.append(SET_COOKIE, HeaderValue::from_static("lb=node-4"));
        jar.store(&again);
        assert_eq!(jar.get("lb").as_deref(), Some("node-4"));
        let mut request = HeaderMap::new();
        request.insert(COOKIE, HeaderValue::from_static("theme=light"));
        jar.apply(&mut request);
        assert_eq!(request[COOKIE], "theme=light; lb=node-4");
        jar.clear();
        let mut empty = HeaderMap::new();
        jar.apply(&mut empty);
        assert!(empty.get(COOKIE).is_none());
    }
}
