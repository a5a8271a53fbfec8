//! Bad input: every mistake gets a clear message and the right exit code, and the
//! store file is never written.

use crate::support::particles_rs;

#[test]
fn placeholder() {
    let output = particles_rs(&["query", "--store", "/nonexistent/store.db", "--no-embedding"]);
    assert_eq!(output.status.code(), Some(1));
}
