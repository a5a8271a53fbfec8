//! The sidecar: a fresh cache starts from the file the previous one wrote, stays
//! exact across writes made while no process ran, and never trusts a damaged file;
//! and what a long-lived cache does with small deltas between its writes.

use std::path::{Path, PathBuf};

use particles_cache::{CandidateCache, Route, SidecarConfig, SidecarWrite};
use particles_store::{Store, Writer};

use crate::support::{
    assert_cache_exact, cache_exact_or_error, particle, raw_strings, unit_vector, working_copy,
};

fn cache_at(path: &Path, write: SidecarWrite) -> CandidateCache {
    CandidateCache::with_sidecar(SidecarConfig {
        path: path.to_owned(),
        write,
    })
}

/// One "process": a new cache over the sidecar, one checked query, persist.
fn one_shot(store_path: &Path, sidecar: &Path, step: &str) -> (Route, Vec<String>) {
    let store = Store::open_read_only(store_path).unwrap();
    let mut cache = cache_at(sidecar, SidecarWrite::OnChange);
    let route = assert_cache_exact(&store, &mut cache, None, step);
    cache.persist(store_path);
    (route, cache.take_notes())
}

fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let store = working_copy(dir.path(), "coins-b.db");
    let sidecar = particles_cache::sidecar_path(&store, None);
    (dir, store, sidecar)
}

#[test]
fn a_fresh_process_starts_from_the_sidecar_and_follows_writes() {
    let (_dir, store, sidecar) = setup();
    assert_eq!(sidecar.parent(), store.parent());
    assert!(!sidecar.exists());

    let (route, notes) = one_shot(&store, &sidecar, "first build");
    assert_eq!((route, notes.len()), (Route::Rebuild, 0));
    assert!(sidecar.exists(), "the build was written");
    let report = particles_cache::verify_sidecar(&sidecar).unwrap();
    assert!(report.rows > 50, "{report:?}");

    assert_eq!(one_shot(&store, &sidecar, "warm start").0, Route::Sidecar);
    let written = std::fs::metadata(&sidecar).unwrap().modified().unwrap();

    // A write while no process runs: the next one opens the sidecar, re-reads the
    // changed row, answers exactly, and (one-shot policy) rewrites the file.
    let mut writer = Writer::open(&store).unwrap();
    let tx = writer.transaction().unwrap();
    tx.insert(&particle("sidecar-new", 0.9, &[]), Some(&unit_vector(3)))
        .unwrap();
    tx.commit().unwrap();
    assert_eq!(
        one_shot(&store, &sidecar, "after insert").0,
        Route::Delta(1)
    );
    assert_ne!(
        std::fs::metadata(&sidecar).unwrap().modified().unwrap(),
        written
    );
    assert_eq!(
        one_shot(&store, &sidecar, "after rewrite").0,
        Route::Sidecar
    );

    // A long-lived process keeps deltas in memory and leaves the file alone.
    let store_handle = Store::open_read_only(&store).unwrap();
    let mut serve = cache_at(&sidecar, SidecarWrite::OnRebuild);
    assert_eq!(
        assert_cache_exact(&store_handle, &mut serve, None, "serve start"),
        Route::Sidecar
    );
    let tx = writer.transaction().unwrap();
    tx.insert(&particle("sidecar-new-2", 0.2, &[]), Some(&unit_vector(4)))
        .unwrap();
    tx.commit().unwrap();
    assert_eq!(
        assert_cache_exact(&store_handle, &mut serve, None, "serve delta"),
        Route::Delta(1)
    );
    assert!(!serve.persist(&store), "deltas are not written by a server");
}

#[test]
fn a_subject_call_in_a_fresh_process_does_not_open_the_sidecar() {
    let (_dir, store, sidecar) = setup();
    one_shot(&store, &sidecar, "build");
    let handle = Store::open_read_only(&store).unwrap();
    let subject =
        crate::support::raw_strings(&store, "SELECT subject_id FROM particle_subjects LIMIT 1")
            .remove(0);
    let mut cache = cache_at(&sidecar, SidecarWrite::OnChange);
    // The helper's first request is unfiltered; ask with a subject only.
    let selection =
        particles_store::CandidateLoader::load(&mut cache, &handle, 0.0, Some(&subject)).unwrap();
    assert_eq!(cache.last_route(), Some(Route::SubjectUncached));
    assert_eq!(cache.stats().sidecar_loads, 0);
    assert!(!selection.selection.rows.is_empty());
}

#[test]
fn a_damaged_or_foreign_sidecar_is_rebuilt_not_trusted() {
    let (dir, store, sidecar) = setup();
    one_shot(&store, &sidecar, "build");
    let good = std::fs::read(&sidecar).unwrap();
    let ids = section(&sidecar, "ids.bytes");
    let traits = section(&sidecar, "traits");

    type Tamper = Box<dyn Fn(&mut Vec<u8>)>;
    let damage: Vec<(&str, Tamper)> = vec![
        (
            "truncated",
            Box::new(|b: &mut Vec<u8>| b.truncate(b.len() / 2)),
        ),
        ("header bit", Box::new(|b: &mut Vec<u8>| b[40] ^= 0x10)),
        ("magic", Box::new(|b: &mut Vec<u8>| b[0] = b'X')),
        (
            "ids section",
            Box::new(move |b: &mut Vec<u8>| b[ids.start + 3] ^= 0x01),
        ),
        (
            "traits section",
            Box::new(move |b: &mut Vec<u8>| b[traits.start + 9] ^= 0x80),
        ),
        ("empty", Box::new(|b: &mut Vec<u8>| b.clear())),
        // Written by a build of the first format, which began "PRSCAR01".
        (
            "older format",
            Box::new(|b: &mut Vec<u8>| b[6..8].copy_from_slice(b"01")),
        ),
        // Copied from a machine of the other byte order.
        ("byte order", Box::new(|b: &mut Vec<u8>| b[8..12].reverse())),
    ];
    for (what, tamper) in damage {
        let mut bytes = good.clone();
        tamper(&mut bytes);
        std::fs::write(&sidecar, &bytes).unwrap();
        let (route, notes) = one_shot(&store, &sidecar, what);
        assert_eq!(route, Route::Rebuild, "{what}");
        assert_eq!(notes.len(), 1, "{what}: {notes:?}");
        assert!(notes[0].contains("unusable"), "{what}: {}", notes[0]);
        assert_eq!(std::fs::read(&sidecar).unwrap().len(), good.len(), "{what}");
        assert_eq!(one_shot(&store, &sidecar, what).0, Route::Sidecar, "{what}");
    }

    // Another store's sidecar: its head token is not in this store's journal.
    let other = working_copy(dir.path(), "coins-a.db");
    std::fs::copy(&sidecar, particles_cache::sidecar_path(&other, None)).unwrap();
    let (route, _) = one_shot(
        &other,
        &particles_cache::sidecar_path(&other, None),
        "foreign",
    );
    assert_eq!(route, Route::Rebuild);
}

/// The byte range of a named section of a sound sidecar, as `verify` reports it.
fn section(sidecar: &Path, name: &str) -> std::ops::Range<usize> {
    particles_cache::verify_sidecar(sidecar)
        .unwrap()
        .sections
        .into_iter()
        .find(|s| s.name == name)
        .unwrap()
        .range
}

#[test]
fn damaged_claims_are_caught_when_a_claim_filter_reads_them() {
    let (_dir, store_path, sidecar) = setup();
    one_shot(&store_path, &sidecar, "build");
    let claims = section(&sidecar, "claims");
    let mut bytes = std::fs::read(&sidecar).unwrap();
    assert!(claims.len() > 2, "the fixture has structured claims");
    bytes[claims.start + claims.len() / 2] ^= 0x04;
    std::fs::write(&sidecar, &bytes).unwrap();

    // Opening does not hash the claims; a query without claim filters is served.
    let store = Store::open_read_only(&store_path).unwrap();
    let mut cache = cache_at(&sidecar, SidecarWrite::OnChange);
    let request = |predicate: Option<&str>| {
        particles_model::QueryRequest {
            predicate: predicate.map(str::to_owned),
            ..particles_model::QueryRequest::question("q")
        }
        .validate(particles_model::Timestamp::parse("2026-06-01T00:00:00Z").unwrap())
        .unwrap()
    };
    let run = |cache: &mut CandidateCache, request: &particles_model::ValidRequest| {
        let input = particles_query::QueryInput {
            norm_kernel: particles_rank::NormKernel::SkylakeX,
            ..particles_query::QueryInput::new(
                request,
                None,
                particles_model::Timestamp::parse("2026-06-01T00:00:00Z").unwrap(),
            )
        };
        particles_query::run_query_with(&store, cache, &input)
    };
    assert!(run(&mut cache, &request(None)).is_ok());
    assert_eq!(cache.last_route(), Some(Route::Sidecar));
    let error = run(&mut cache, &request(Some("anything"))).unwrap_err();
    assert!(
        matches!(error, particles_query::Error::DamagedClaims),
        "{error:?}"
    );
    let verified = particles_cache::verify_sidecar(&sidecar).unwrap_err();
    assert!(
        verified.to_string().contains("section claims"),
        "{verified}"
    );
}

#[test]
fn an_unwritable_place_still_answers_with_a_note() {
    let (dir, store, _) = setup();
    // A path under a regular file cannot be created, even by root.
    let blocker = dir.path().join("not-a-directory");
    std::fs::write(&blocker, b"x").unwrap();
    let sidecar = blocker.join("store.sidecar");
    let (route, notes) = one_shot(&store, &sidecar, "unwritable");
    assert_eq!(route, Route::Rebuild);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("--no-sidecar"), "{}", notes[0]);
    let (route, _) = one_shot(&store, &sidecar, "unwritable again");
    assert_eq!(route, Route::Rebuild);
}

/// Every section of a sound sidecar, truncated where it starts and with bits
/// flipped inside it (seeded): the file is refused on open (a rebuild, with a
/// note naming it), or the query that reads a damaged row fails with a damage
/// error; an answer never differs from the uncached one (checked on every case
/// that answers).
#[test]
fn every_section_truncated_or_flipped_is_refused_or_caught() {
    let (_dir, store_path, sidecar) = setup();
    one_shot(&store_path, &sidecar, "build");
    let good = std::fs::read(&sidecar).unwrap();
    let sections = particles_cache::verify_sidecar(&sidecar).unwrap().sections;
    assert!(sections.len() > 10, "{} sections", sections.len());
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut outcomes: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut served = Vec::new();
    let store = Store::open_read_only(&store_path).unwrap();
    for section in &sections {
        let mut cases: Vec<(String, Vec<u8>)> = vec![(
            format!("{} truncated at its start", section.name),
            good[..section.range.start].to_vec(),
        )];
        for _ in 0..if section.range.is_empty() { 0 } else { 4 } {
            let at = section.range.start + (next() as usize) % section.range.len();
            let bit = 1u8 << (next() % 8);
            let mut bytes = good.clone();
            bytes[at] ^= bit;
            cases.push((format!("{} bit {bit:#04x} at {at}", section.name), bytes));
        }
        for (what, bytes) in cases {
            std::fs::write(&sidecar, &bytes).unwrap();
            let mut cache = cache_at(&sidecar, SidecarWrite::Never);
            let outcome = match cache_exact_or_error(&store, &mut cache, None, &what) {
                Ok(Route::Rebuild) => {
                    let notes = cache.take_notes();
                    assert!(
                        notes.iter().any(|n| n.contains("unusable")
                            && n.contains(&sidecar.display().to_string())),
                        "{what}: rebuilt without a note naming the file: {notes:?}"
                    );
                    "refused on open, rebuilt"
                }
                Ok(route) => {
                    assert_eq!(route, Route::Sidecar, "{what}");
                    served.push(what.clone());
                    "served, every answer exact"
                }
                Err(particles_query::Error::Rank(particles_rank::Error::DamagedVector {
                    ..
                })) => "caught by the scan",
                Err(particles_query::Error::DamagedClaims) => "caught by the claim filter",
                Err(other) => panic!("{what}: not a damage error: {other}"),
            };
            *outcomes.entry(outcome).or_default() += 1;
        }
    }
    std::fs::write(&sidecar, &good).unwrap();
    eprintln!(
        "sidecar damage: {} sections, {} cases: {outcomes:?}; served (the damage \
         never read): {served:?}",
        sections.len(),
        outcomes.values().sum::<usize>()
    );
    assert!(outcomes.contains_key("refused on open, rebuilt"));
    assert!(outcomes.contains_key("caught by the scan"));
}

/// Whether `address` lies in a mapping of `file` (`/proc/self/maps`).
#[cfg(target_os = "linux")]
fn in_a_map_of(address: usize, file: &Path) -> bool {
    let file = std::fs::canonicalize(file).unwrap();
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|line| line.ends_with(file.to_str().unwrap()))
        .any(|line| {
            let (start, end) = line
                .split_whitespace()
                .next()
                .and_then(|range| range.split_once('-'))
                .unwrap();
            let start = usize::from_str_radix(start, 16).unwrap();
            let end = usize::from_str_radix(end, 16).unwrap();
            (start..end).contains(&address)
        })
}

/// A server's cache over `sidecar`: huge pages, and a half copy of vectors of
/// at least `half` bytes.
#[cfg(target_os = "linux")]
fn server_cache(sidecar: &Path, half: Option<usize>) -> CandidateCache {
    let mut cache = cache_at(sidecar, SidecarWrite::OnRebuild);
    cache.set_huge_pages(true);
    cache.set_half_precision(half);
    cache
}

/// A long-lived process whose scans read a half copy serves the `f32` rows
/// from the sidecar's map (no private copy of them); without a half copy it
/// copies them into its own memory, as before. Answers are exact either way,
/// and across a delta.
#[cfg(target_os = "linux")]
#[test]
fn with_a_half_copy_a_server_reads_the_sidecars_vectors_in_its_map() {
    let (_dir, store, sidecar) = setup();
    one_shot(&store, &sidecar, "first build");
    let handle = Store::open_read_only(&store).unwrap();
    for (half, mapped) in [(Some(0), true), (None, false)] {
        let mut serve = server_cache(&sidecar, half);
        let step = format!("serve start, half {half:?}");
        assert_eq!(
            assert_cache_exact(&handle, &mut serve, None, &step),
            Route::Sidecar
        );
        let set = serve.candidates().unwrap();
        assert_eq!(set.half().is_some(), half.is_some(), "{step}");
        let address = set.vector_data().as_ptr() as usize;
        assert_eq!(in_a_map_of(address, &sidecar), mapped, "{step}");
    }

    // A write: the delta's set answers exactly from its own copy.
    let mut serve = server_cache(&sidecar, Some(0));
    assert_cache_exact(&handle, &mut serve, None, "mapped start");
    let mut writer = Writer::open(&store).unwrap();
    let tx = writer.transaction().unwrap();
    tx.insert(&particle("mapped-new", 0.7, &[]), Some(&unit_vector(5)))
        .unwrap();
    tx.commit().unwrap();
    assert_eq!(
        assert_cache_exact(&handle, &mut serve, None, "mapped delta"),
        Route::Delta(1)
    );
}

/// Whether the half copy `cache` serves lies in a map of `sidecar`.
#[cfg(target_os = "linux")]
fn half_in_map(cache: &CandidateCache, sidecar: &Path) -> bool {
    let set = cache.candidates().unwrap();
    let values = set.half().unwrap().values().as_ptr() as usize;
    in_a_map_of(values, sidecar)
}

/// A new server over `good` with one bit of it flipped, after its checked
/// queries (served by `route`).
#[cfg(target_os = "linux")]
fn server_over_damage(
    handle: &Store,
    sidecar: &Path,
    good: &[u8],
    (at, bit): (usize, u8),
    step: &str,
    route: Route,
) -> CandidateCache {
    let mut bytes = good.to_vec();
    bytes[at] ^= bit;
    std::fs::write(sidecar, &bytes).unwrap();
    let mut serve = server_cache(sidecar, Some(0));
    assert_eq!(assert_cache_exact(handle, &mut serve, None, step), route);
    serve
}

/// The half copy's values and radii, bit for bit.
fn half_bits(set: &particles_candidates::CandidateSet) -> (Vec<u16>, Vec<u32>) {
    let half = set.half().expect("a half copy");
    (
        half.values().iter().map(|h| h.to_bits()).collect(),
        half.radii().iter().map(|r| r.to_bits()).collect(),
    )
}

/// A server that made its half copy in memory writes it into the sidecar; the
/// next one serves it from the file, bit for bit the copy it would have made,
/// its answers exact: this small copy read into huge pages (a long-lived
/// process), or viewed in the file's map (without huge pages, as a copy too
/// large for them is). A copy whose bytes are damaged is made anew with a note
/// and the file replaced; damaged radii refuse the file on open.
#[cfg(target_os = "linux")]
#[test]
fn a_server_keeps_its_half_copy_in_the_sidecar_and_the_next_serves_it_from_the_file() {
    use particles_candidates::HalfOrigin;

    let (_dir, store, sidecar) = setup();
    let handle = Store::open_read_only(&store).unwrap();
    // A warm cache without huge pages ranks through a permutation and writes
    // its rows (half copy included) in loader order.
    let mut warm = cache_at(&sidecar, SidecarWrite::OnRebuild);
    warm.set_half_precision(Some(0));
    assert_eq!(
        assert_cache_exact(&handle, &mut warm, None, "build with a half copy"),
        Route::Rebuild
    );
    assert!(warm.persist(&store), "the rebuild is written");
    let half_section = section(&sidecar, "half.vectors");
    let radius_section = section(&sidecar, "half.radius");
    assert!(!half_section.is_empty() && !radius_section.is_empty());
    assert_eq!(half_section.start % 4096, 0, "page aligned");

    let mut serve = server_cache(&sidecar, Some(0));
    assert_eq!(
        assert_cache_exact(&handle, &mut serve, None, "served from the map"),
        Route::Sidecar
    );
    assert!(serve.take_notes().is_empty());
    let set = serve.candidates().unwrap();
    assert_eq!(set.prepare_half(), HalfOrigin::Present);
    assert!(
        !in_a_map_of(set.half().unwrap().values().as_ptr() as usize, &sidecar),
        "a small copy is read into huge pages"
    );
    assert!(in_a_map_of(
        set.half().unwrap().radii().as_ptr() as usize,
        &sidecar
    ));
    let mut mapped = cache_at(&sidecar, SidecarWrite::Never);
    mapped.set_half_precision(Some(0));
    assert_eq!(
        assert_cache_exact(&handle, &mut mapped, None, "the copy in the map"),
        Route::Sidecar
    );
    assert!(half_in_map(&mapped, &sidecar));
    assert_eq!(
        half_bits(&mapped.candidates().unwrap()),
        half_bits(&set),
        "the same copy, wherever it is read"
    );
    let all: Vec<usize> = (0..set.len()).collect();
    let made = set.select(&all);
    assert_eq!(made.prepare_half(), HalfOrigin::Made);
    assert_eq!(
        half_bits(&set),
        half_bits(&made),
        "the stored copy is the made one"
    );
    assert!(!serve.persist(&store), "nothing new to write");

    // A one-shot process never reads (or checks) the copy; its rewrite after a
    // delta carries none, and the next server makes one and writes it back.
    one_shot(&store, &sidecar, "one-shot over a file with a half copy");
    let mut writer = Writer::open(&store).unwrap();
    let tx = writer.transaction().unwrap();
    tx.insert(&particle("half-new", 0.6, &[]), Some(&unit_vector(9)))
        .unwrap();
    tx.commit().unwrap();
    one_shot(&store, &sidecar, "one-shot delta");
    assert!(section(&sidecar, "half.vectors").is_empty());
    let mut serve = server_cache(&sidecar, Some(0));
    assert_eq!(
        assert_cache_exact(&handle, &mut serve, None, "server after the one-shot"),
        Route::Sidecar
    );
    assert!(!half_in_map(&serve, &sidecar));
    assert!(serve.persist(&store), "the made copy is written");
    let half_section = section(&sidecar, "half.vectors");
    assert!(!half_section.is_empty());
    let good = std::fs::read(&sidecar).unwrap();

    // Damaged values: answered exactly from a copy made anew, with a note, and
    // the file replaced by a sound one.
    let mut serve = server_over_damage(
        &handle,
        &sidecar,
        &good,
        (half_section.start + half_section.len() / 3, 0x10),
        "damaged half values",
        Route::Sidecar,
    );
    let notes = serve.take_notes();
    assert!(
        notes.len() == 1
            && notes[0].contains("half-precision copy failed its checksum")
            && notes[0].contains(&sidecar.display().to_string()),
        "{notes:?}"
    );
    assert!(!half_in_map(&serve, &sidecar));
    assert!(serve.persist(&store));
    particles_cache::verify_sidecar(&sidecar).expect("replaced by a sound file");

    // Damaged radii: refused on open, rebuilt, exact.
    let radius_section = section(&sidecar, "half.radius");
    let mut serve = server_over_damage(
        &handle,
        &sidecar,
        &good,
        (radius_section.start + 1, 0x01),
        "damaged radii",
        Route::Rebuild,
    );
    let notes = serve.take_notes();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("section half.radius fails its checksum")),
        "{notes:?}"
    );
}

/// A long-lived cache's small deltas share the rows they do not change: the
/// set after each is its first set's rows (the same memory) plus the changed
/// rows, every answer exact, the rows it replaced never ranked. Once the
/// changed and replaced rows pass an eighth of the set it is copied whole
/// (compacted), and a sidecar is always written from one flat set that
/// verifies and serves the next process.
#[test]
fn small_deltas_share_the_rows_they_do_not_change_until_a_compaction() {
    let (_dir, path, sidecar) = setup();
    let store = Store::open_read_only(&path).unwrap();
    let mut cache = cache_at(&sidecar, SidecarWrite::OnChange);
    // A half copy at any size: the scans read the base's copy and the own
    // rows' through one view, and must stay exact.
    cache.set_half_precision(Some(0));
    assert_eq!(
        assert_cache_exact(&store, &mut cache, None, "first build"),
        Route::Rebuild
    );
    let rows = cache.cached_rows().unwrap();
    let first = cache.candidates().unwrap();
    let base_ids: Vec<String> = (0..first.len())
        .rev()
        .take(12)
        .map(|row| first.id(row).to_owned())
        .collect();
    let subject = raw_strings(
        &path,
        "SELECT subject_id FROM particle_subjects GROUP BY subject_id ORDER BY count(*) DESC LIMIT 1",
    )
    .remove(0);
    let mut writer = Writer::open(&path).unwrap();
    let now = particles_model::Timestamp::parse("2026-01-01T00:00:00").unwrap();
    let (mut shared, mut compacted, mut live) = (0, 0, rows);
    for step in 0..24 {
        let tx = writer.transaction().unwrap();
        let what = match step % 4 {
            0 => {
                tx.insert(
                    &particle(&format!("shared-{step}"), 0.6, &[]),
                    Some(&unit_vector(500 + step)),
                )
                .unwrap();
                live += 1;
                "insert"
            }
            // The row the last insert added, changed: an own row moves.
            1 => {
                tx.update(
                    &particle(&format!("shared-{}", step - 1), 0.2, &[]),
                    Some(&unit_vector(600 + step)),
                )
                .unwrap();
                "update"
            }
            2 => {
                assert!(tx.delete(&base_ids[step as usize / 4]).unwrap());
                live -= 1;
                "delete"
            }
            _ => {
                assert!(tx.retract(&base_ids[6 + step as usize / 4], now).unwrap());
                live -= 1;
                "retract"
            }
        };
        tx.commit().unwrap();
        let route = assert_cache_exact(&store, &mut cache, None, &format!("{step}: {what}"));
        assert!(route.changed().is_some(), "{step}: {route:?}");
        assert_eq!(cache.cached_rows(), Some(live), "{step}: live rows");
        let set = cache.candidates().unwrap();
        assert!(set.half().is_some(), "{step}: the half copy");
        if set.base_rows() > 0 {
            shared += 1;
            if compacted == 0 {
                // Still the first set's rows, in the first set's memory.
                assert_eq!(set.base_rows(), rows, "{step}");
                assert_eq!(set.vector(0).as_ptr(), first.vector(0).as_ptr(), "{step}");
            }
        } else {
            compacted += 1;
            assert_eq!(
                set.len(),
                live,
                "{step}: a compacted set holds live rows only"
            );
        }
        // A subject query reads through the id index, which names live rows only.
        assert_cache_exact(
            &store,
            &mut cache,
            Some(&subject),
            &format!("{step}: subject"),
        );
    }
    assert!(
        shared >= 8 && compacted >= 1,
        "{shared} shared, {compacted} compacted"
    );

    // One more small delta, then the sidecar: written from a compacted set.
    let tx = writer.transaction().unwrap();
    tx.insert(&particle("shared-last", 0.7, &[]), Some(&unit_vector(999)))
        .unwrap();
    tx.commit().unwrap();
    assert_cache_exact(&store, &mut cache, None, "last delta");
    assert!(cache.candidates().unwrap().base_rows() > 0, "extended");
    assert!(cache.persist(&path));
    assert_eq!(
        cache.candidates().unwrap().base_rows(),
        0,
        "compacted to write"
    );
    assert_eq!(cache.cached_rows(), Some(live + 1));
    let report = particles_cache::verify_sidecar(&sidecar).unwrap();
    assert_eq!(report.rows, live + 1);
    assert_cache_exact(&store, &mut cache, None, "after the write");
    assert_eq!(one_shot(&path, &sidecar, "next process").0, Route::Sidecar);
}

/// A delta of many rows in one commit splices them into the id index (a
/// subject query finds each new row by binary search over it), whether the
/// set is extended (a delta within an eighth of it) or copied.
#[test]
fn many_rows_in_one_commit_are_spliced_into_the_id_index() {
    let (_dir, path, sidecar) = setup();
    let subject = raw_strings(
        &path,
        "SELECT subject_id FROM particle_subjects GROUP BY subject_id ORDER BY count(*) DESC LIMIT 1",
    )
    .remove(0);
    let mut writer = Writer::open(&path).unwrap();
    // Ids spread over the whole id order, the subject on every other one.
    let mut serial = 0u64;
    let mut insert_many = |writer: &mut Writer, count: usize| {
        let tx = writer.transaction().unwrap();
        for _ in 0..count {
            serial += 1;
            let spread = serial.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
            let id = format!("{spread:016x}-{serial}");
            let subjects: &[&str] = if serial.is_multiple_of(2) {
                &[subject.as_str()]
            } else {
                &[]
            };
            tx.insert(
                &particle(&id, [0.4, 0.6, 0.8][serial as usize % 3], subjects),
                Some(&unit_vector(2_000 + serial)),
            )
            .unwrap();
        }
        tx.commit().unwrap();
    };
    insert_many(&mut writer, 1_000);
    let store = Store::open_read_only(&path).unwrap();
    let mut cache = cache_at(&sidecar, SidecarWrite::Never);
    assert_cache_exact(&store, &mut cache, None, "first build");
    let rows = cache.cached_rows().unwrap();
    // Within an eighth of the set: extended.
    insert_many(&mut writer, rows / 10);
    let route = assert_cache_exact(&store, &mut cache, None, "extended");
    assert!(route.changed().is_some(), "{route:?}");
    assert!(cache.candidates().unwrap().base_rows() > 0, "extended");
    assert_cache_exact(&store, &mut cache, Some(&subject), "extended: subject");
    // Past it: copied.
    insert_many(&mut writer, rows / 4);
    let route = assert_cache_exact(&store, &mut cache, None, "copied");
    assert!(route.changed().is_some(), "{route:?}");
    assert_eq!(cache.candidates().unwrap().base_rows(), 0, "copied");
    assert_cache_exact(&store, &mut cache, Some(&subject), "copied: subject");
}
