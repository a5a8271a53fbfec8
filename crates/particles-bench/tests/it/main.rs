//! Integration tests of the benchmark: one module per topic.
//!
//! - `tiny_run`: a whole run on a 2k store (cells as child processes of the
//!   `particles-bench-cell` binary), read back by our report and the reference's.

mod tiny_run;
