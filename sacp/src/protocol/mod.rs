//! The SACP wire protocol's own pieces (spec §2 and §3), shared by the proxy runtime and the
//! conductor: the successor envelope and the proxy-capability handshake. They sit below the
//! runtimes and know nothing of handlers.

pub mod envelope;
pub mod handshake;
pub mod mcp;
