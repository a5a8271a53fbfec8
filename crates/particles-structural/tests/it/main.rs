//! Integration tests of the deterministic modes on the fixture stores: one
//! module per topic.
//!
//! - `structural`: each mode on its path, the aggregates' buckets, one snapshot
//!   for the rows and their counts.

mod structural;
