//! The fault a failing delta, as-of, window or claim read names: the one
//! the reference meets first. Each of those reads fetches rows together
//! before it reads them (the delta a chunk of ids, of every status; the
//! loaders their whole result): first a TEXT value that is not UTF-8 in any
//! of them, then a DATETIME that does not parse, then the first row, in
//! order, that fails the route's own reading. The reference 1.214.1 was
//! run on cases of each kind (`docs/benchmarks/results-2026-12-07/stop54/`:
//! `oracle3.txt` for faults across rows and delta chunks, `oracle4.txt` for
//! the columns no route reads, `oracle5.txt` for skipped rows). Which of two
//! rows in a chunk is first in id order but not in rowid order was not run
//! through it: its `_apply_changes` iterates each chunk in sorted id order.

use std::path::{Path, PathBuf};

use particles_cache::CandidateCache;
use particles_store::{
    load_active, load_active_claims, load_as_of, load_claims_as_of, load_window, load_window_scope,
    CandidateLoader, Error, Store,
};

use crate::build::{expect_field, other_model_row, set, BAD_ASSERTED_AT, BAD_EMBEDDING, BAD_TYPE};
use crate::support::{journaled_copy, raw_strings};

const NOT_UTF8: &str = "CAST(X'5B302E352C20FF5D' AS TEXT)";
const DATED: &str = "valid_from = '2024-01-01 00:00:00.000000'";

/// A journaled copy of a fixture, its cacheable ids and its retired ids
/// with an embedding, each in id order.
fn store(dir: &Path) -> (PathBuf, Vec<String>, Vec<String>) {
    std::fs::create_dir_all(dir).unwrap();
    let path = journaled_copy(dir, "coins-b.db");
    let cacheable = raw_strings(
        &path,
        "SELECT id FROM particles WHERE status = 'ACTIVE' AND embedding_json IS NOT NULL \
         ORDER BY id",
    );
    let retired = raw_strings(
        &path,
        "SELECT id FROM particles WHERE status != 'ACTIVE' AND embedding_json IS NOT NULL \
         ORDER BY id",
    );
    (path, cacheable, retired)
}

/// Builds a cache, runs `change`, and loads again: a delta's outcome (no
/// second build is allowed).
fn load_twice(path: &Path, change: impl FnOnce()) -> Result<(), Error> {
    let store = Store::open_read_only(path).unwrap();
    let mut cache = CandidateCache::new();
    store
        .read_snapshot(|s| cache.load(s, 0.0, None).map(|_| ()))
        .expect("the store builds before the change");
    change();
    let after = store.read_snapshot(|s| cache.load(s, 0.0, None).map(|_| ()));
    assert_eq!(cache.stats().rebuilds, 1, "no second build");
    after
}

/// A retired row is not cached, but the reference's delta fetches it with
/// the rest of its chunk: what fails while fetching fails the delta, what
/// fails only when validating does not. So is an ACTIVE row without an
/// embedding.
#[test]
fn a_delta_meets_the_faults_of_rows_it_does_not_cache() {
    let dir = tempfile::tempdir().unwrap();
    for (case, (assignment, field)) in [
        ("valid_from = 'garbage'", Some("valid_from")),
        (
            &*format!("embedding_json = {NOT_UTF8}"),
            Some("embedding_json"),
        ),
        (BAD_TYPE, None),
    ]
    .into_iter()
    .enumerate()
    {
        let (path, _, retired) = store(&dir.path().join(case.to_string()));
        let retired = &retired[0];
        let after = load_twice(&path, || set(&path, retired, assignment));
        match field {
            Some(field) => expect_field(after.expect_err(assignment), retired, field),
            None => after.expect("a retired row's columns are not validated"),
        }
    }
    let (path, _, _) = store(&dir.path().join("no embedding"));
    let bare = raw_strings(
        &path,
        "SELECT id FROM particles WHERE status = 'ACTIVE' AND embedding_json IS NULL LIMIT 1",
    );
    let bare = bare
        .first()
        .expect("the fixture has an ACTIVE row without a vector");
    let after = load_twice(&path, || set(&path, bare, "valid_from = 'garbage'"));
    expect_field(
        after.expect_err("a fetched row's DATETIME"),
        bare,
        "valid_from",
    );
    let (path, _, _) = store(&dir.path().join("no embedding, bad type"));
    let after = load_twice(&path, || set(&path, bare, BAD_TYPE));
    after.expect("an uncached row's columns are not validated");
}

/// Within a delta's chunk: text that is not UTF-8, then a DATETIME, in any
/// row, cached or not; then the first cached row, in id order, that fails.
#[test]
fn a_delta_names_the_fault_met_first_in_its_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let not_utf8 = format!("content = {NOT_UTF8}");
    // a's fault, b's fault, whether b is retired, and the field named.
    let cases = [
        (BAD_EMBEDDING, not_utf8.as_str(), false, "content"),
        (BAD_TYPE, BAD_ASSERTED_AT, false, "asserted_at"),
        (BAD_TYPE, BAD_EMBEDDING, false, "particle_type"),
        (BAD_TYPE, BAD_ASSERTED_AT, true, "asserted_at"),
    ];
    for (case, (first, second, retired_second, field)) in cases.iter().enumerate() {
        let (path, _, retired) = store(&dir.path().join(case.to_string()));
        // a before b in id order, after it in rowid order: the chunk is
        // judged in id order, as the reference iterates it.
        let (a, later_by_id) = pair_against_rowid_order(&path);
        let (a, b) = (
            a.as_str(),
            if *retired_second {
                retired[0].as_str()
            } else {
                later_by_id.as_str()
            },
        );
        let after = load_twice(&path, || {
            set(&path, a, first);
            set(&path, b, second);
        });
        let named = if *field == "particle_type" { a } else { b };
        expect_field(after.expect_err(field), named, field);
    }
}

/// Two cacheable ids, the first before the second in id order and after it
/// in rowid order.
fn pair_against_rowid_order(path: &Path) -> (String, String) {
    let rows = raw_strings(
        path,
        "SELECT id || ' ' || rowid FROM particles WHERE status = 'ACTIVE' \
         AND embedding_json IS NOT NULL ORDER BY id",
    );
    let rows: Vec<(String, i64)> = rows
        .iter()
        .map(|row| {
            let (id, rowid) = row.split_once(' ').unwrap();
            (id.to_owned(), rowid.parse().unwrap())
        })
        .collect();
    for (i, (a, a_rowid)) in rows.iter().enumerate() {
        if let Some((b, _)) = rows[i + 1..].iter().find(|(_, b_rowid)| b_rowid < a_rowid) {
            return (a.clone(), b.clone());
        }
    }
    panic!("the fixture's ids are in rowid order")
}

fn far_future() -> i64 {
    4_102_444_800_000_000 // 2100-01-01T00:00:00Z in microseconds
}

/// The as-of, window and claim loaders fetch their whole result first: a
/// later row's fetch fault comes before an earlier row's validation fault.
#[test]
fn the_history_and_claim_loaders_name_the_fault_met_first() {
    let dir = tempfile::tempdir().unwrap();
    let (path, cacheable, _) = store(&dir.path().join("embedded"));
    let (early, late) = (&cacheable[5], &cacheable[20]);
    let read = |path: &Path, what: &str| -> Error {
        let store = Store::open_read_only(path).unwrap();
        store
            .read_snapshot(|s| match what {
                "as-of" => load_as_of(s, far_future(), 0.0, None).map(drop),
                "window" => load_window(s, 0.0, None).map(drop),
                "claims" => load_active_claims(s, 0.0, None).map(drop),
                "claims as-of" => load_claims_as_of(s, far_future(), 0.0, None).map(drop),
                _ => load_window_scope(s, 0.0, None, true).map(drop),
            })
            .expect_err(what)
    };
    set(&path, early, &format!("confidence_value = 0.3, {BAD_TYPE}"));
    set(
        &path,
        late,
        "confidence_value = 0.6, valid_from = 'garbage'",
    );
    expect_field(read(&path, "as-of"), late, "valid_from");
    set(&path, late, &format!("{DATED}, {BAD_EMBEDDING}"));
    expect_field(read(&path, "as-of"), early, "particle_type");
    set(
        &path,
        early,
        &format!("{DATED}, particle_type = 'CLAIM', {BAD_EMBEDDING}"),
    );
    set(&path, late, "retired_at = 'garbage'");
    expect_field(read(&path, "window"), late, "retired_at");

    let (path, _, _) = store(&dir.path().join("claims"));
    let claims = raw_strings(
        &path,
        "SELECT id FROM particles WHERE status = 'ACTIVE' AND structured_claim_json IS NOT NULL \
         ORDER BY id",
    );
    let (early, late) = (&claims[1], &claims[5]);
    set(&path, early, &format!("confidence_value = 0.3, {BAD_TYPE}"));
    set(
        &path,
        late,
        "confidence_value = 0.6, retired_at = 'garbage'",
    );
    expect_field(read(&path, "claims as-of"), late, "retired_at");
    set(
        &path,
        late,
        &format!("retired_at = NULL, content = {NOT_UTF8}"),
    );
    expect_field(read(&path, "claims"), late, "content");
    set(&path, early, DATED);
    set(
        &path,
        late,
        &format!("{DATED}, content = 'fine', modality_classified_at = 'garbage'"),
    );
    expect_field(read(&path, "window scope"), late, "modality_classified_at");
}

/// A row the as-of, window or claim loader skips (asserted after the
/// instant, or of another model) is fetched first: a fault met then (a
/// DATETIME that does not parse, text that is not UTF-8) fails the read,
/// even when no other row is bad.
#[test]
fn a_skipped_rows_fetch_fault_fails_the_history_and_claim_loaders() {
    let dir = tempfile::tempdir().unwrap();
    let (path, cacheable, _) = store(dir.path());
    // 2050-01-01T00:00:00Z: before the row asserted in 2099 below.
    let as_of = 2_524_608_000_000_000;
    let later = &cacheable[7];
    set(
        &path,
        later,
        "asserted_at = '2099-01-01 00:00:00.000000', valid_from = 'garbage'",
    );
    let store = Store::open_read_only(&path).unwrap();
    let error = store
        .read_snapshot(|s| load_as_of(s, as_of, 0.0, None).map(drop))
        .expect_err("the skipped row's DATETIME");
    expect_field(error, later, "valid_from");
    set(
        &path,
        later,
        &format!("valid_from = NULL, content = {NOT_UTF8}"),
    );
    let error = store
        .read_snapshot(|s| load_as_of(s, as_of, 0.0, None).map(drop))
        .expect_err("the skipped row's text");
    expect_field(error, later, "content");
    set(&path, later, "content = 'fine'");
    // The row has no claim, so the claim loader does not fetch it.
    store
        .read_snapshot(|s| load_claims_as_of(s, as_of, 0.0, None).map(drop))
        .expect("a row the claim loader does not fetch");
    set(
        &path,
        later,
        "asserted_at = '2024-01-01 00:00:00.000000', valid_from = NULL",
    );
    let other = &other_model_row(&path);
    set(&path, other, &format!("{DATED}, retired_at = 'garbage'"));
    let error = store
        .read_snapshot(|s| load_window(s, 0.0, None).map(drop))
        .expect_err("the skipped row's DATETIME");
    expect_field(error, other, "retired_at");
    set(&path, other, "valid_from = NULL, retired_at = NULL");
    let claim = raw_strings(
        &path,
        "SELECT id FROM particles WHERE structured_claim_json IS NOT NULL ORDER BY id LIMIT 1",
    );
    set(
        &path,
        &claim[0],
        "asserted_at = '2099-01-01 00:00:00.000000', retired_at = 'garbage'",
    );
    let error = store
        .read_snapshot(|s| load_claims_as_of(s, as_of, 0.0, None).map(drop))
        .expect_err("the skipped claim's DATETIME");
    expect_field(error, &claim[0], "retired_at");
}

/// Columns no route reads (`born_retired`, `content_norm_hash`,
/// `domain_hint`, `modality_classifier`, `modality_classifier_model`) are
/// fetched by the reference all the same: text in them that is not UTF-8
/// fails its build and its uncached loader, so it fails ours (both, and
/// with the same error: `build_error`); a value its boolean column converts
/// (text, an integer, a real, a blob: any value) does not.
#[test]
fn text_in_columns_no_route_reads_is_fetched_as_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let (path, cacheable, _) = store(dir.path());
    let row = &cacheable[4];
    for column in [
        "born_retired",
        "content_norm_hash",
        "domain_hint",
        "modality_classifier",
        "modality_classifier_model",
    ] {
        let original = raw_strings(
            &path,
            &format!("SELECT quote({column}) FROM particles WHERE id = '{row}'"),
        );
        set(&path, row, &format!("{column} = {NOT_UTF8}"));
        expect_field(crate::build::build_error(&path), row, column);
        set(&path, row, &format!("{column} = {}", original[0]));
    }
    for value in ["'x'", "2", "0.5", "X'00'"] {
        set(&path, row, &format!("born_retired = {value}"));
        let store = Store::open_read_only(&path).unwrap();
        let mut cache = CandidateCache::new();
        store
            .read_snapshot(|s| cache.load(s, 0.0, None).map(|_| ()))
            .expect("any born_retired value builds");
        store
            .read_snapshot(|s| load_active(s, 0.0, None).map(|_| ()))
            .expect("any born_retired value loads uncached");
    }
}
