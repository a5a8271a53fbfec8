//! Integration tests of the query path on the fixture stores: one module per topic.

mod errors;
mod snapshot;
mod snapshots;
mod structural;
