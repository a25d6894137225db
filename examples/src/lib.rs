//! Runnable examples of `sacp`.
//!
//! - [`demo`]: a tiny agent/client protocol used by the `jsonrpc-demo` binary (the README's
//!   main job until the conductor demo arrives) and by the child-process tests.

pub mod demo;
