//! The URL decoder the trust and decay policies run, against its Python
//! counterpart through `particles_testkit::fuzz` (one oracle process, batched
//! verdicts, shrunk disagreements; regressions in
//! `tests/fuzz-regressions/<decoder>.jsonl`). The URL patterns' `re` port is
//! fuzzed in `particles-pyre`.
//!
//! - `netloc`: `netloc` against `urllib.parse.urlsplit(uri).netloc`.

mod netloc;
