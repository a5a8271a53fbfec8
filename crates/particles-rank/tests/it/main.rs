//! Integration tests of particles-rank, one binary, one module per topic.
//!
//! - `fuzz`: the differential fuzz of the URL decoders against Python, in
//!   batches.

mod fuzz;
