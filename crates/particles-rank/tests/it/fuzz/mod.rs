//! The URL decoders the trust and decay policies run, against their Python
//! counterparts through `particles_testkit::fuzz` (one oracle process per decoder,
//! batched verdicts, shrunk disagreements; regressions in
//! `tests/fuzz-regressions/<decoder>.jsonl`).
//!
//! - `netloc`: `netloc` against `urllib.parse.urlsplit(uri).netloc`.
//! - `regex`: `PyRegex` against `re.compile` and `re.search`.

mod netloc;
mod regex;
