//! `PyRegex` against its Python counterpart through `particles_testkit::fuzz`
//! (one oracle process, batched verdicts, shrunk disagreements; regressions in
//! `tests/fuzz-regressions/regex.jsonl`).
//!
//! - `regex`: `PyRegex` against `re.compile` and `re.search`.

mod regex;
