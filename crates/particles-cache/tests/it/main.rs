//! Integration tests of the candidate cache: one module per topic.

mod equivalence;
mod freshness;
mod shared;
mod sidecar;
mod support;
