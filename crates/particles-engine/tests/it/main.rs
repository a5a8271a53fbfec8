//! Integration tests of the engine: one module per topic.

mod concurrency;
mod replica;
mod structural;
