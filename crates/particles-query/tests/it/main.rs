//! Integration tests of the ranking on the fixture stores: one module per topic.
//! (The response's are `particles-respond`'s, the deterministic modes'
//! `particles-structural`'s.)

mod band;
mod batch;
mod errors;
mod observer;
mod snapshot;
mod snapshots;
