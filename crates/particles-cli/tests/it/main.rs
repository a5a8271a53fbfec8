//! Integration tests of the `particles-rs` binary: one module per topic.

mod bad_config;
mod bad_input;
mod chaos;
mod configured;
mod crash;
mod demo;
mod digest;
mod entry_points;
mod federation;
mod help;
mod import;
mod mcp;
mod model;
mod one_engine;
mod operate;
mod projection;
mod reference;
mod replica;
mod response;
mod serve;
mod serve_load;
mod sidecar;
mod structural;
mod subjects;
mod support;
mod wheel;
