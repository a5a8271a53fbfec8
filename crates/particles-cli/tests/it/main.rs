//! Integration tests of the `particles-rs` binary: one module per topic.

mod bad_input;
mod import;
mod model;
mod reference;
mod serve;
mod sidecar;
mod support;
