//! The proxy-chain dialects on the wire: ours (the spec's), symposium's `sacp` 11 ("S11") and
//! ACP's proxy-chains RFD as `agent-client-protocol` 5 ships it ("RFD").
//!
//! They differ in the method that initializes a proxy and in the names of the successor
//! envelope; the envelope's params are the same shape in all three (`{"method", "params"?}` plus
//! hop-local metadata, `_meta` or S11's `meta`), and every dialect's method names are disjoint
//! from the others', so a message says which dialect its sender speaks.
//!
//! | | ours | S11 | RFD |
//! |---|---|---|---|
//! | init | `initialize` + `_meta.proxy: true`, accepted with the marker | `_proxy/initialize` | `proxy/initialize` |
//! | envelope, request | `_proxy/successor/request` | `_proxy/successor` | `proxy/successor` |
//! | envelope, notification | `_proxy/successor/notification` | `_proxy/successor` | `proxy/successor` |
//!
//! A proxy of another SDK refuses our `initialize` with `-32600` naming its own init method and
//! stays usable on the same connection: [`Dialect::asked_for`] reads that refusal.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::jsonrpc::{Error, code};

/// A proxy-chain dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Dialect {
    /// This project's (the spec's): `initialize` with `_meta.proxy`, `_proxy/successor/*`.
    #[default]
    Sacp,
    /// symposium's `sacp` 11: `_proxy/initialize`, one `_proxy/successor` envelope.
    S11,
    /// ACP's RFD (`agent-client-protocol` 5, the TS SDK's `/unstable`): `proxy/initialize`,
    /// one `proxy/successor` envelope.
    Rfd,
}

/// What kind of message an envelope carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carried {
    /// A request (the envelope has an id).
    Request,
    /// A notification.
    Notification,
}

impl Dialect {
    /// Every dialect, ours first (the one a conductor offers first).
    pub const ALL: [Dialect; 3] = [Dialect::Sacp, Dialect::S11, Dialect::Rfd];

    /// Its name on command lines, in chain files and in logs: `sacp`, `s11`, `rfd`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Sacp => "sacp",
            Dialect::S11 => "s11",
            Dialect::Rfd => "rfd",
        }
    }

    /// The method that initializes a proxy.
    pub fn init_method(self) -> &'static str {
        match self {
            Dialect::Sacp => "initialize",
            Dialect::S11 => "_proxy/initialize",
            Dialect::Rfd => "proxy/initialize",
        }
    }

    /// The envelope method for a message of this kind to or from a successor.
    pub fn envelope(self, carried: Carried) -> &'static str {
        match (self, carried) {
            (Dialect::Sacp, Carried::Request) => super::envelope::SUCCESSOR_REQUEST,
            (Dialect::Sacp, Carried::Notification) => super::envelope::SUCCESSOR_NOTIFICATION,
            (Dialect::S11, _) => "_proxy/successor",
            (Dialect::Rfd, _) => "proxy/successor",
        }
    }

    /// The dialect whose envelope `method` is, if it is one.
    pub fn of_envelope(method: &str) -> Option<Dialect> {
        match method {
            super::envelope::SUCCESSOR_REQUEST | super::envelope::SUCCESSOR_NOTIFICATION => {
                Some(Dialect::Sacp)
            }
            "_proxy/successor" => Some(Dialect::S11),
            "proxy/successor" => Some(Dialect::Rfd),
            _ => None,
        }
    }

    /// The dialect whose proxy initialization `method` is, for the two that have a method of
    /// their own (ours is `initialize` with the offer in `_meta`).
    pub fn of_init_method(method: &str) -> Option<Dialect> {
        match method {
            "_proxy/initialize" => Some(Dialect::S11),
            "proxy/initialize" => Some(Dialect::Rfd),
            _ => None,
        }
    }

    /// The dialect a refusal of an offered `initialize` asks for: `-32600` whose message or
    /// data names `_proxy/initialize` (S11) or `proxy/initialize` (RFD).
    pub fn asked_for(error: &Error) -> Option<Dialect> {
        if error.code != code::INVALID_REQUEST {
            return None;
        }
        let data = match &error.data {
            Some(serde_json::Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let names = |method: &str| error.message.contains(method) || data.contains(method);
        // `proxy/initialize` is a part of `_proxy/initialize`: the longer name first.
        if names("_proxy/initialize") {
            Some(Dialect::S11)
        } else if names("proxy/initialize") {
            Some(Dialect::Rfd)
        } else {
            None
        }
    }
}

/// The dialect a proxy's conductor spoke in its `initialize`, shared by everything that sends
/// on that connection: set once the proxy is initialized, ours until then.
#[derive(Debug, Default)]
pub struct ConductorDialect(AtomicU8);

impl ConductorDialect {
    /// The dialect in use.
    pub fn get(&self) -> Dialect {
        match self.0.load(Ordering::Relaxed) {
            1 => Dialect::S11,
            2 => Dialect::Rfd,
            _ => Dialect::Sacp,
        }
    }

    /// Sets the dialect in use (at `initialize`).
    pub fn set(&self, dialect: Dialect) {
        let n = match dialect {
            Dialect::Sacp => 0,
            Dialect::S11 => 1,
            Dialect::Rfd => 2,
        };
        self.0.store(n, Ordering::Relaxed);
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A dialect's name that is none of the three (`sacp`, `s11`/`symposium`, `rfd`/`acp`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown proxy dialect {0:?}: expected `sacp` (this project's), `s11` (symposium's sacp 11) \
     or `rfd` (ACP's RFD, agent-client-protocol 5)"
)]
pub struct UnknownDialect(pub String);

impl FromStr for Dialect {
    type Err = UnknownDialect;

    fn from_str(s: &str) -> Result<Dialect, UnknownDialect> {
        match s.to_ascii_lowercase().as_str() {
            "sacp" => Ok(Dialect::Sacp),
            "s11" | "symposium" => Ok(Dialect::S11),
            "rfd" | "acp" => Ok(Dialect::Rfd),
            _ => Err(UnknownDialect(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_dialect_it_wants() {
        let s11 = Error::new(code::INVALID_REQUEST, "Invalid request")
            .with_data("proxies must be initialized with `_proxy/initialize`");
        assert_eq!(Dialect::asked_for(&s11), Some(Dialect::S11));
        let rfd = Error::new(code::INVALID_REQUEST, "Invalid request")
            .with_data("proxies must be initialized with `proxy/initialize`");
        assert_eq!(Dialect::asked_for(&rfd), Some(Dialect::Rfd));
        let other = Error::new(code::INVALID_PARAMS, "proxy/initialize");
        assert_eq!(Dialect::asked_for(&other), None);
        assert_eq!(
            Dialect::asked_for(&Error::invalid_request("no")),
            None,
            "a refusal that names no dialect"
        );
    }

    #[test]
    fn envelope_names_are_disjoint_and_read_back() {
        for d in Dialect::ALL {
            for carried in [Carried::Request, Carried::Notification] {
                assert_eq!(Dialect::of_envelope(d.envelope(carried)), Some(d));
            }
            assert_eq!(d.name().parse::<Dialect>(), Ok(d));
        }
        assert_eq!(Dialect::of_envelope("session/prompt"), None);
    }
}
