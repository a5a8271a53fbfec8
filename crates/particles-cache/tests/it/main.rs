//! Integration tests of the candidate cache: one module per topic.

mod freshness;
mod support;
