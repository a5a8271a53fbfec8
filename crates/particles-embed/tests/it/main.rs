//! Integration tests of the encoder: parity with sentence-transformers.

mod parity;
