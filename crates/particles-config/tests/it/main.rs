//! Integration tests of particles-config, one binary, one module per topic.
//!
//! - `reference`: the differential fuzz against the reference's own loader
//!   (generated documents from `generate`, plus the committed regressions).
//! - `loading`: the public API on files in temporary directories: discovery,
//!   precedence, provenance, errors that name file, line and key.

mod generate;
mod loading;
mod reference;
