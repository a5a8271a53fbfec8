//! Integration tests of particles-store, one binary, one module per topic.
//!
//! - `fuzz`: the differential fuzz of `decode_embedding` against the reference's
//!   own decoder, in batches.

mod fuzz;
