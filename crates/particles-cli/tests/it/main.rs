//! Integration tests of the `particles-rs` binary: one module per topic.

mod bad_input;
mod crash;
mod demo;
mod import;
mod mcp;
mod model;
mod reference;
mod response;
mod serve;
mod sidecar;
mod structural;
mod support;
