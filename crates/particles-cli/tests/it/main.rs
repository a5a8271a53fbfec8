//! Integration tests of the `particles-rs` binary: one module per topic.

mod bad_input;
mod configured;
mod federation;
mod import;
mod reference;
mod serve;
mod sidecar;
mod support;
