//! Integration tests of particles-model, one binary, one module per topic.
//!
//! - `fuzz`: the differential fuzz of the model's decoders against the reference,
//!   in batches.

mod fuzz;
