//! Integration tests of the semantic response on the fixture stores: one module
//! per topic.
//!
//! - `respond`: the response's fields around the hits, its typed errors, one
//!   snapshot for the ranking and the response.
//! - `batch`: the streaming batch the engine runs, each response built in the
//!   ranking's snapshot.

mod batch;
mod respond;
mod support;
