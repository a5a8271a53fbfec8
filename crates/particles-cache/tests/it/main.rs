//! Integration tests of the candidate cache: one module per topic.

mod build;
mod equivalence;
mod faults;
mod freshness;
mod shared;
mod sidecar;
mod support;
mod writeback;
