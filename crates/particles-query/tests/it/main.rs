//! Integration tests of the query path on the fixture stores: one module per topic.

mod band;
mod batch;
mod errors;
mod respond;
mod snapshot;
mod snapshots;
mod structural;
