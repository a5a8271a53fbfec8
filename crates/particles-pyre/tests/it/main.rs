//! Integration tests of particles-pyre, one binary, one module per topic.
//!
//! - `fuzz`: the differential fuzz of `PyRegex` against Python's `re`, in
//!   batches.

mod fuzz;
