//! The SACP wire protocol's own pieces (spec §2 and §3), shared by the proxy runtime and the
//! conductor: the successor envelope, the proxy-capability handshake, the `_mcp/*` messages,
//! and the conductor's routing table. They sit below the runtimes and know nothing of
//! handlers.

pub mod content;
pub mod dialect;
pub mod envelope;
pub mod handshake;
pub mod history;
pub mod mcp;
pub mod routing;
pub mod version;
