//! Integration tests of particles-rank, one binary, one module per topic.
//!
//! - `fuzz`: the differential fuzz of the URL decoder (`netloc`) against
//!   Python's `urllib.parse`, in batches.

mod fuzz;
