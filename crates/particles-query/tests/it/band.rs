//! The truncation band scored after the cut (`band.rs`) against the walk that
//! scores every candidate: the same hits, the same warning, and of the scores
//! the warning can count or compare, those the band lists equal to the walk's
//! and those it counts (at the warning's floor) as many as the walk's others,
//! with the same best, bit for bit (`same_band`). And the same after a scan of the
//! half-precision copy (a cache with `set_half_precision`), where the band
//! settles rows by their intervals: the same hits and warning, the same count
//! at the warning's floor and the same best score within the band. The half
//! scan runs twice: over a fresh build (its rows out of order, each block's
//! rows apart) and over the set a sidecar holds (rows in order, so a block is
//! consecutive rows the tile reads whole, the ones the filters leave out
//! included).

use std::{path::PathBuf, sync::OnceLock};

use particles_cache::{CandidateCache, SidecarConfig, SidecarWrite};
use particles_model::{QueryRequest, Timestamp};
use particles_query::{
    run_query, run_query_with, truncation_warning, BeyondCut, Hit, QueryInput, TruncationSettings,
};
use particles_rank::{NormKernel, RankSettings};
use particles_store::Store;
use proptest::prelude::*;

use crate::batch::{fixture, unit_vector};

/// The scores at or above `floor` (NaN too), sorted by their bits.
fn band_scores(scores: &[f64], floor: f64) -> Vec<u64> {
    let mut bits: Vec<u64> = scores
        .iter()
        .filter(|s| **s >= floor || s.is_nan())
        .map(|s| s.to_bits())
        .collect();
    bits.sort_unstable();
    bits
}

/// The best score at or above `floor` (NaN first, as the warning takes it),
/// by its bits: of the listed scores, and of the counted ones (all above the
/// count's floor, which is never below `floor` here).
fn best_within(beyond: &BeyondCut, floor: f64) -> Option<u64> {
    let listed = BeyondCut::from(
        beyond
            .scores
            .iter()
            .copied()
            .filter(|s| *s >= floor || s.is_nan())
            .collect::<Vec<f64>>(),
    );
    BeyondCut {
        counted: beyond.counted,
        ..listed
    }
    .best()
    .map(f64::to_bits)
}

/// The band of an exact scan (`band`) against the walk's list of every score
/// beyond the cut (`every`), at and above `floor`: the scores the band lists
/// are the walk's, and the ones it counts at `count_floor` are as many as the
/// walk's other scores there, all at least `count_floor`, their best the
/// walk's.
fn same_band(band: &BeyondCut, every: &[f64], count_floor: f64, floor: f64) -> Result<(), String> {
    let listed = band_scores(&band.scores, floor);
    let mut rest = band_scores(every, floor);
    for bits in &listed {
        match rest.iter().position(|b| b == bits) {
            Some(at) => {
                rest.remove(at);
            }
            None => {
                return Err(format!(
                    "listed {} is not the walk's",
                    f64::from_bits(*bits)
                ))
            }
        }
    }
    let rest: Vec<f64> = rest.into_iter().map(f64::from_bits).collect();
    // NaN is never counted: it must be listed.
    let below = |s: &f64| s.is_nan() || *s < count_floor;
    if rest.len() != band.counted.count || rest.iter().any(below) {
        return Err(format!(
            "counted {:?}, the walk's rest {rest:?}",
            band.counted
        ));
    }
    let best = rest.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if best.to_bits() != band.counted.best.to_bits() {
        return Err(format!(
            "counted best {:?}, the walk's {best}",
            band.counted
        ));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn the_band_after_the_cut_equals_the_exhaustive_walk(
        store_name in prop_oneof![Just("coins-a.db"), Just("coins-b.db")],
        seed in prop::option::weighted(0.9, 0u64..40),
        top_k in 1u32..40,
        min_confidence in prop_oneof![Just(0.0), Just(0.3), Just(0.6)],
        near_margin in prop_oneof![Just(0.15), 0.0f64..0.4],
        min_gap in prop_oneof![Just(0.05), 0.0f64..0.2],
        near_count in prop_oneof![Just(5i64), 0i64..12],
    ) {
        let store = Store::open_read_only(&fixture(store_name)).unwrap();
        let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
        let request = QueryRequest {
            top_k,
            min_confidence,
            ..QueryRequest::question("q")
        }
        .validate(now)
        .unwrap();
        let vector = seed.map(unit_vector);
        let settings = TruncationSettings { min_gap, near_margin, near_count };
        let margin = settings.prune_margin();
        let input = |exhaustive: bool| {
            QueryInput {
                norm_kernel: NormKernel::SkylakeX,
                exhaustive,
                ..QueryInput::new(&request, vector.as_deref(), now)
            }
            .with_truncation(&settings)
        };
        let band = run_query(&store, &input(false)).unwrap();
        let every = run_query(&store, &input(true)).unwrap();
        let mut cache = CandidateCache::new();
        cache.set_half_precision(Some(0));
        let fresh = run_query_with(&store, &mut cache, &input(false)).unwrap();
        prop_assert!(cache.candidates().is_some_and(|set| set.half().is_some()));
        let mut cache = CandidateCache::with_sidecar(SidecarConfig {
            path: sidecar_of(store_name),
            write: SidecarWrite::Never,
        });
        cache.set_half_precision(Some(0));
        let in_order = run_query_with(&store, &mut cache, &input(false)).unwrap();
        prop_assert!(cache.candidates().is_some_and(|set| set.half().is_some()));
        prop_assert_eq!(&band.hits, &every.hits);
        let rank = RankSettings::default();
        let warning = truncation_warning(&every, top_k, &rank, &settings);
        prop_assert_eq!(&truncation_warning(&band, top_k, &rank, &settings), &warning);
        for half in [&fresh, &in_order] {
            prop_assert_eq!(&half.hits, &every.hits);
            prop_assert_eq!(&truncation_warning(half, top_k, &rank, &settings), &warning);
            if let Some(last) = last_score(&rank, &half.hits) {
                let floor = last - near_margin;
                // The best score within the band (`last - margin`): one below it
                // leaves a gap wider than `min_gap` whichever it is, and no count
                // at the floor, so neither path needs to know it.
                prop_assert_eq!(half.beyond_cut.near(floor), every.beyond_cut.near(floor));
                prop_assert_eq!(
                    best_within(&half.beyond_cut, last - margin),
                    best_within(&every.beyond_cut, last - margin)
                );
            }
        }
        if let Some(last) = last_score(&rank, &band.hits) {
            // The walk lists every score; the band counts those at the
            // warning's floor.
            prop_assert_eq!(every.beyond_cut.counted.count, 0);
            let checked = same_band(
                &band.beyond_cut,
                &every.beyond_cut.scores,
                last - near_margin,
                last - margin,
            );
            prop_assert!(checked.is_ok(), "{}", checked.unwrap_err());
        }
    }
}

/// The last hit's score, as the truncation warning computes it.
fn last_score(rank: &RankSettings, hits: &[Hit]) -> Option<f64> {
    hits.last().map(|last| {
        particles_rank::rank_score(
            rank,
            last.particle.particle_type == particles_model::ParticleType::Narrative,
            last.similarity,
            last.effective_confidence,
        )
    })
}

/// The sidecar of fixture `name`, with its half copy, written once for the
/// test binary: a set opened from it is in order, as `serve` opens one.
fn sidecar_of(name: &str) -> PathBuf {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
        let request = QueryRequest::question("q").validate(now).unwrap();
        for fixture_name in ["coins-a.db", "coins-b.db"] {
            let store_path = fixture(fixture_name);
            let store = Store::open_read_only(&store_path).unwrap();
            let mut cache = CandidateCache::with_sidecar(SidecarConfig {
                path: dir.path().join(fixture_name),
                write: SidecarWrite::OnRebuild,
            });
            cache.set_half_precision(Some(0));
            run_query_with(&store, &mut cache, &QueryInput::new(&request, None, now)).unwrap();
            assert!(
                cache.persist(&store_path),
                "the sidecar of {fixture_name} is written"
            );
        }
        dir
    });
    dir.path().join(name)
}

/// The proptest above is not vacuous: on a fixture, the half-precision band
/// settles most of its rows by their intervals and reads only a few exactly.
#[test]
fn the_half_precision_band_settles_rows_without_reading_them() {
    let store = Store::open_read_only(&fixture("coins-b.db")).unwrap();
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let request = QueryRequest {
        top_k: 3,
        ..QueryRequest::question("q")
    }
    .validate(now)
    .unwrap();
    let vector = unit_vector(7);
    let settings = TruncationSettings {
        near_margin: 0.4,
        ..TruncationSettings::default()
    };
    let input = QueryInput {
        norm_kernel: NormKernel::SkylakeX,
        ..QueryInput::new(&request, Some(&vector), now)
    }
    .with_truncation(&settings);
    let mut cache = CandidateCache::new();
    cache.set_half_precision(Some(0));
    let half = run_query_with(&store, &mut cache, &input).unwrap();
    let exact = run_query(&store, &input).unwrap();
    assert_eq!(half.hits, exact.hits);
    let band = half.work.candidates_scored - half.hits.len();
    assert!(band > 20, "a band of {band} rows");
    assert!(
        half.work.band_rows_read_exactly * 4 < band,
        "{} of {band} rows read exactly",
        half.work.band_rows_read_exactly
    );
}

/// A band row whose half copy rounds its similarity down across the
/// warning's floor is still counted: its interval, not its half dot, settles
/// it. Copies of one belief (the same factors) against a question along the
/// first axis, every other row across it: T at (0.9, 0.43589) is the hit; 70
/// copies at (0.6, 0.8) fill the walk's first batch of 64, so the rest reach
/// the band; C's first value 0.5002 rounds down to 0.5 in binary16, so its
/// half cosine (0.529940) is below its exact one (0.530152). The warning's
/// margin is set so that its floor sits just under C's exact score: C counts,
/// and a scan that settled C by its half dot alone would leave it out (a
/// radius of 0 everywhere fails this test).
#[test]
fn a_band_row_rounded_down_in_half_precision_is_still_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rounded.db");
    std::fs::copy(fixture("coins-b.db"), &path).unwrap();
    let embedding = |first: f32, second: f32| {
        let mut values = vec![0.0f32; 384];
        values[0] = first;
        values[1] = second;
        serde_json::to_string(&values).unwrap()
    };
    {
        let connection = rusqlite::Connection::open(&path).unwrap();
        let columns = columns_but(&connection, "particles", "'id'");
        // T: a belief a plain question ranks (it passes the default filters).
        let t = {
            let store = Store::open_read_only(&path).unwrap();
            let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
            let request = QueryRequest::question("q").validate(now).unwrap();
            let vector = unit_vector(1);
            let outcome = run_query(&store, &QueryInput::new(&request, Some(&vector), now));
            outcome.unwrap().hits[0].particle.id.clone()
        };
        // A copy of T, its id suffixed: the same belief, so the same factors.
        let copy = |suffix: String| {
            connection
                .execute(
                    &format!(
                        "INSERT INTO particles (id, {columns}) SELECT id || ?2, {columns} \
                         FROM particles WHERE id = ?1"
                    ),
                    [&t, &suffix],
                )
                .unwrap();
        };
        copy("-c".to_owned());
        (0..70).for_each(|at| copy(format!("-f{at}")));
        for (vector, id) in [
            (embedding(0.0, 1.0), "%".to_owned()),
            (embedding(0.9, 0.43589), t.clone()),
            (embedding(0.6, 0.8), format!("{t}-f%")),
            (embedding(0.5002, 0.8), format!("{t}-c")),
        ] {
            connection
                .execute(
                    "UPDATE particles SET embedding_json = ?1 WHERE status = 'ACTIVE' AND id LIKE ?2",
                    [vector, id],
                )
                .unwrap();
        }
    }
    let store = Store::open_read_only(&path).unwrap();
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let request = QueryRequest {
        top_k: 1,
        ..QueryRequest::question("q")
    }
    .validate(now)
    .unwrap();
    let mut question = vec![0.0f32; 384];
    question[0] = 1.0;
    let input = |settings: &TruncationSettings, exhaustive: bool| {
        QueryInput {
            norm_kernel: NormKernel::SkylakeX,
            exhaustive,
            ..QueryInput::new(&request, Some(&question), now)
        }
        .with_truncation(settings)
    };
    // T's and C's exact scores, from the walk that scores every candidate:
    // beyond the cut, the copies' score is the highest, C's the next.
    let every = run_query(&store, &input(&TruncationSettings::default(), true)).unwrap();
    let rank = RankSettings::default();
    let last = last_score(&rank, &every.hits).unwrap();
    let below = |ceiling: f64| {
        every
            .beyond_cut
            .scores
            .iter()
            .copied()
            .filter(|s| *s < ceiling)
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let copies = below(last);
    let c = below(copies);
    let count = |score: f64| {
        every
            .beyond_cut
            .scores
            .iter()
            .filter(|s| **s == score)
            .count()
    };
    assert_eq!((count(copies), count(c)), (70, 1), "70 copies, then C");
    let settings = TruncationSettings {
        near_margin: last - c + 1e-9,
        ..TruncationSettings::default()
    };
    let floor = last - settings.near_margin;
    let every = run_query(&store, &input(&settings, true)).unwrap();
    assert_eq!(every.beyond_cut.near(floor), 71, "the copies and C count");
    let mut cache = CandidateCache::new();
    cache.set_half_precision(Some(0));
    let half = run_query_with(&store, &mut cache, &input(&settings, false)).unwrap();
    assert!(cache.candidates().is_some_and(|set| set.half().is_some()));
    assert_eq!(half.hits, every.hits);
    assert_eq!(
        half.beyond_cut.near(floor),
        71,
        "C counts after the half scan"
    );
    assert_eq!(
        truncation_warning(&half, 1, &rank, &settings),
        truncation_warning(&every, 1, &rank, &settings)
    );
}

/// `table`'s column names but those `except` lists (quoted, comma-separated),
/// joined for a column list.
fn columns_but(connection: &rusqlite::Connection, table: &str, except: &str) -> String {
    let names: Vec<String> = connection
        .prepare(&format!(
            "SELECT name FROM pragma_table_info('{table}') WHERE name NOT IN ({except})"
        ))
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    names.join(", ")
}

/// `coins-b.db` grown to about 6k active rows: 60 copies of its active rows,
/// each copy's confidence spread over 0..1 (the fixture's 98 are too few for
/// a band after the cut). Made once per test binary.
fn grown() -> &'static std::path::Path {
    static GROWN: std::sync::LazyLock<(tempfile::TempDir, std::path::PathBuf)> =
        std::sync::LazyLock::new(|| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("grown.db");
            std::fs::copy(fixture("coins-b.db"), &path).unwrap();
            let connection = rusqlite::Connection::open(&path).unwrap();
            let columns = columns_but(
                &connection,
                "particles",
                "'id', 'confidence_value', 'provenance_json'",
            );
            let snapshot_columns = columns_but(
                &connection,
                "snapshots",
                "'snapshot_id', 'content_published_at'",
            );
            // Each copy's snapshots are published 20 days apart, across the
            // questions' instants, so decay moves between them.
            for copy in 0..60 {
                connection
                    .execute_batch(&format!(
                        "INSERT INTO snapshots (snapshot_id, content_published_at, {snapshot_columns}) \
                         SELECT snapshot_id || '-copy{copy}', \
                         datetime('2024-01-01', '+{days} days', '+' || (rowid * 37 % 20) || ' days'), {snapshot_columns} \
                         FROM snapshots WHERE snapshot_id NOT LIKE '%-copy%'; \
                         INSERT INTO particles (id, confidence_value, provenance_json, {columns}) \
                         SELECT id || '-copy{copy}', ((rowid * 7919 + {copy} * 104729) % 1000) / 1000.0, \
                         CASE WHEN json_extract(provenance_json, '$[0].snapshot_id') IS NULL THEN provenance_json \
                         ELSE json_set(provenance_json, '$[0].snapshot_id', json_extract(provenance_json, '$[0].snapshot_id') || '-copy{copy}') END, \
                         {columns} \
                         FROM particles WHERE status = 'ACTIVE' AND id NOT LIKE '%-copy%'",
                        days = copy * 20
                    ))
                    .unwrap();
            }
            (dir, path)
        });
    &GROWN.1
}

/// A store by name: a fixture, or `grown`.
fn store_path(name: &str) -> std::path::PathBuf {
    if name == "grown" {
        grown().to_owned()
    } else {
        fixture(name)
    }
}

/// The same store without the connection's memo: a connection that may
/// write remembers nothing, so its band has no ceilings.
fn without_memo(name: &str) -> Store {
    let path = store_path(name);
    let connection =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    Store::from_connection(connection, path).unwrap()
}

/// The warning's count at its floor and the best score within the band, as
/// the half-precision check above compares them.
fn near_and_best(
    outcome: &particles_query::QueryOutcome,
    near_margin: f64,
    margin: f64,
) -> Option<(usize, Option<u64>)> {
    let last = last_score(&RankSettings::default(), &outcome.hits)?;
    let near = outcome.beyond_cut.near(last - near_margin);
    let best = best_within(&outcome.beyond_cut, last - margin);
    Some((near, best))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    /// The rows' ceilings (an upper bound on effective confidence) and steady
    /// effective confidences (where `now` cannot change it), computed once
    /// and remembered by a read-only connection, change no answer: the
    /// ceilings leave out of the band only rows that cannot matter, and a
    /// steady row scores what its source's factors give. Against a
    /// connection that has neither, the same hits, warning, count at the
    /// floor and best score (bit for bit),
    /// for questions asked in any order of `now` on one connection (a
    /// question before the ceilings' instant cannot use them).
    #[test]
    fn the_rows_ceilings_change_no_answer(
        store_name in prop_oneof![Just("coins-a.db"), Just("coins-b.db"), Just("grown"), Just("grown")],
        seed in prop::option::weighted(0.9, 0u64..40),
        top_k in 1u32..40,
        min_confidence in prop_oneof![Just(0.0), Just(0.3)],
        near_margin in prop_oneof![Just(0.15), 0.0f64..0.4],
        min_gap in prop_oneof![Just(0.05), 0.0f64..0.2],
        near_count in prop_oneof![Just(5i64), 0i64..12],
        days in prop::collection::vec(-800i64..800, 1..4),
        half in any::<bool>(),
    ) {
        let remembering = Store::open_read_only(&store_path(store_name)).unwrap();
        let plain = without_memo(store_name);
        let mut cache = CandidateCache::new();
        cache.set_half_precision(half.then_some(0));
        let settings = TruncationSettings { min_gap, near_margin, near_count };
        let margin = settings.prune_margin();
        let base = Timestamp::parse("2026-06-01T00:00:00Z").unwrap().utc_micros();
        let vector = seed.map(unit_vector);
        for day in days {
            let now = Timestamp::from_utc_micros(base + day * 86_400_000_000).unwrap();
            let request = QueryRequest {
                top_k,
                min_confidence,
                ..QueryRequest::question("q")
            }
            .validate(now)
            .unwrap();
            let input = QueryInput {
                norm_kernel: NormKernel::SkylakeX,
                ..QueryInput::new(&request, vector.as_deref(), now)
            }
            .with_truncation(&settings);
            let with = run_query_with(&remembering, &mut cache, &input).unwrap();
            let without = run_query(&plain, &input).unwrap();
            prop_assert_eq!(&with.hits, &without.hits);
            let rank = RankSettings::default();
            prop_assert_eq!(
                truncation_warning(&with, top_k, &rank, &settings),
                truncation_warning(&without, top_k, &rank, &settings)
            );
            prop_assert_eq!(
                near_and_best(&with, near_margin, margin),
                near_and_best(&without, near_margin, margin)
            );
        }
    }
}

/// The test above is not vacuous: on the grown store the ceilings leave
/// most of the band out (there 681 of 2,123 rows stay), with the same hits
/// and warning.
#[test]
fn the_rows_ceilings_narrow_the_band() {
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let request = QueryRequest {
        top_k: 3,
        ..QueryRequest::question("q")
    }
    .validate(now)
    .unwrap();
    let vector = unit_vector(7);
    let settings = TruncationSettings::default();
    let input = QueryInput {
        norm_kernel: NormKernel::SkylakeX,
        ..QueryInput::new(&request, Some(&vector), now)
    }
    .with_truncation(&settings);
    let with = run_query(&Store::open_read_only(grown()).unwrap(), &input).unwrap();
    let without = run_query(&without_memo("grown"), &input).unwrap();
    assert_eq!(with.hits, without.hits);
    let rank = RankSettings::default();
    assert_eq!(
        truncation_warning(&with, 3, &rank, &settings),
        truncation_warning(&without, 3, &rank, &settings)
    );
    let band = |o: &particles_query::QueryOutcome| o.work.candidates_scored - o.hits.len();
    assert!(
        band(&with) * 2 < band(&without),
        "{} against {}",
        band(&with),
        band(&without)
    );
}
