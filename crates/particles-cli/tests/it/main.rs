//! Integration tests of the `particles-rs` binary: one module per topic.

mod bad_input;
mod import;
mod mcp;
mod reference;
mod serve;
mod sidecar;
mod support;
