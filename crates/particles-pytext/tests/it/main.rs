//! Integration tests of particles-pytext, one binary, one module per topic.
//!
//! - `cases`: named cases through the public API, the Unicode 14 versus 16
//!   letters among them; no Python needed.
//! - `reference`: Python 3.11 itself over every code point and over seeded
//!   random strings, compared with this crate operation by operation.

mod cases;
mod reference;
