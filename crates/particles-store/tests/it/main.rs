//! Integration tests of particles-store, one binary, one module per topic.
//!
//! - `fuzz`: the differential fuzz of `decode_embedding` against the reference's
//!   own decoder, in batches.
//! - `replica`: a Litestream follow-mode copy read by a long-lived store.

mod fuzz;
mod replica;
