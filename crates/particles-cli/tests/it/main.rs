//! Integration tests of the `particles-rs` binary: one module per topic.

mod bad_config;
mod bad_input;
mod configured;
mod entry_points;
mod federation;
mod help;
mod import;
mod reference;
mod serve;
mod sidecar;
mod subjects;
mod support;
