//! Integration tests of particles-rank, one binary, one module per topic.
//!
//! - `fuzz`: the differential fuzz of the URL decoders (`netloc`, `PyRegex`)
//!   against Python's `urllib.parse` and `re`, in batches.

mod fuzz;
