//! Loader equivalence, as a property: on a store changed by a random sequence of
//! writes, every loader returns the same candidates and every ranking built on them
//! is the same. The loaders: the uncached ACTIVE loader, the cache (fresh, kept warm
//! across the writes so it refreshes by delta, and rebuilt after a clear), and the
//! subject path against the full set filtered by the subject's links, and its count
//! of the subject's ACTIVE CLAIMs against the store's.
//!
//! `PROPTEST_CASES` sets the number of cases (32 by default here; `cargo xtask
//! equivalence` raises it). Failures shrink and are persisted under
//! `proptest-regressions/`, which is committed.

use std::collections::HashSet;

use particles_cache::{CandidateCache, Route, SidecarConfig, SidecarWrite};
use particles_candidates::Selection;
use particles_model::{QueryRequest, Timestamp};
use particles_query::{run_query_with, QueryInput};
use particles_rank::NormKernel;
use particles_store::{CandidateLoader, Store, UncachedLoader, WriteTransaction, Writer};
use proptest::prelude::*;

use crate::support::{particle, raw_sql, raw_strings, unit_vector, working_copy};

#[derive(Debug, Clone)]
enum Op {
    Insert {
        confidence: f64,
        vector: u64,
        subject: Option<usize>,
    },
    SetConfidence {
        target: usize,
        confidence: f64,
    },
    Retract {
        target: usize,
    },
    Delete {
        target: usize,
    },
    Rename {
        target: usize,
    },
    OtherModel {
        target: usize,
    },
    Link {
        target: usize,
        subject: usize,
    },
    Reactivate {
        target: usize,
    },
    Retype {
        target: usize,
        particle_type: &'static str,
    },
    DropVector {
        target: usize,
    },
}

/// Confidences from a small set, so ties (broken by rowid) are common.
fn confidence() -> impl Strategy<Value = f64> {
    prop::sample::select(vec![0.0, 0.3, 0.5, 0.5, 0.7, 0.9, 1.0])
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (confidence(), any::<u64>(), prop::option::of(0usize..3))
            .prop_map(|(confidence, vector, subject)| Op::Insert { confidence, vector, subject }),
        2 => (any::<usize>(), confidence()).prop_map(|(target, confidence)| Op::SetConfidence { target, confidence }),
        1 => any::<usize>().prop_map(|target| Op::Retract { target }),
        1 => any::<usize>().prop_map(|target| Op::Delete { target }),
        1 => any::<usize>().prop_map(|target| Op::Rename { target }),
        1 => any::<usize>().prop_map(|target| Op::OtherModel { target }),
        1 => (any::<usize>(), 0usize..3).prop_map(|(target, subject)| Op::Link { target, subject }),
        1 => any::<usize>().prop_map(|target| Op::Reactivate { target }),
        1 => (any::<usize>(), prop::sample::select(vec!["CLAIM", "NARRATIVE", "REVIEW", "ANNOTATION"]))
            .prop_map(|(target, particle_type)| Op::Retype { target, particle_type }),
        1 => any::<usize>().prop_map(|target| Op::DropVector { target }),
    ]
}

#[derive(Debug, Clone)]
struct Request {
    top_k: u32,
    min_confidence: f64,
    subject: Option<usize>,
    vector: Option<u64>,
}

fn request() -> impl Strategy<Value = Request> {
    (
        prop::sample::select(vec![1u32, 3, 10, 40, 200]),
        prop::sample::select(vec![0.0, 0.0, 0.3, 0.5]),
        prop::option::of(0usize..3),
        prop::option::weighted(0.8, any::<u64>()),
    )
        .prop_map(|(top_k, min_confidence, subject, vector)| Request {
            top_k,
            min_confidence,
            subject,
            vector,
        })
}

fn all_ids(store: &Store) -> Vec<String> {
    raw_strings(store.path(), "SELECT id FROM particles ORDER BY rowid")
}

/// Applies a batch of writes. The writer's typed calls write particles; the
/// changes it has no call for (a foreign writer's raw updates) go through the
/// test's own connection. Each op commits on its own, so the two connections
/// never wait on each other's write lock; the loaders read only after the batch.
fn apply(writer: &mut Writer, store: &Store, ops: &[Op], subjects: &[String], serial: &mut usize) {
    let ids = all_ids(store);
    let pick = |target: usize| ids[target % ids.len()].clone();
    let now = Timestamp::parse("2026-01-01T00:00:00").unwrap();
    let mut typed = |write: &dyn Fn(&WriteTransaction<'_>)| {
        let tx = writer.transaction().unwrap();
        write(&tx);
        tx.commit().unwrap();
    };
    let raw = |sql: String| raw_sql(store.path(), &sql);
    for op in ops {
        *serial += 1;
        match op {
            Op::Insert { confidence, vector, subject } => {
                let subject: Vec<&str> = subject.iter().map(|s| subjects[*s].as_str()).collect();
                let id = format!("gen-{serial}");
                typed(&|tx| tx.insert(&particle(&id, *confidence, &subject), Some(&unit_vector(*vector))).unwrap());
            }
            Op::SetConfidence { target, confidence } => {
                raw(format!("UPDATE particles SET confidence_value = {confidence} WHERE id = '{}'", pick(*target)))
            }
            Op::Retract { target } => typed(&|tx| {
                tx.retract(&pick(*target), now).unwrap();
            }),
            Op::Delete { target } => typed(&|tx| {
                tx.delete(&pick(*target)).unwrap();
            }),
            Op::Rename { target } => {
                let new_id = format!("renamed-{serial}");
                typed(&|tx| {
                    tx.rename(&pick(*target), &new_id).unwrap();
                })
            }
            Op::OtherModel { target } => {
                raw(format!("UPDATE particles SET embedding_model_id = 'other-model' WHERE id = '{}'", pick(*target)))
            }
            Op::Link { target, subject } => raw(format!(
                "INSERT OR IGNORE INTO particle_subjects (particle_id, subject_id) VALUES ('{}', '{}')",
                pick(*target),
                subjects[*subject]
            )),
            Op::Reactivate { target } => raw(format!(
                "UPDATE particles SET status = 'ACTIVE', status_reason = NULL WHERE id = '{}' AND status != 'ACTIVE'",
                pick(*target)
            )),
            Op::Retype { target, particle_type } => raw(format!(
                "UPDATE particles SET particle_type = '{particle_type}' WHERE id = '{}'",
                pick(*target)
            )),
            // An ACTIVE row without a vector: no candidate, yet a subject's claim.
            Op::DropVector { target } => {
                raw(format!("UPDATE particles SET embedding_json = NULL WHERE id = '{}'", pick(*target)))
            }
        }
    }
}

fn selected_ids(selection: &Selection) -> Vec<String> {
    selection
        .rows
        .iter()
        .map(|&row| selection.set.id(row).to_owned())
        .collect()
}

fn rank(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    request: &Request,
    subjects: &[String],
) -> String {
    rank_at(store, loader, request, subjects, None, false)
}

/// The ranking, optionally through the as-of route at `as_of`.
fn rank_at(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    request: &Request,
    subjects: &[String],
    as_of: Option<Timestamp>,
    exhaustive: bool,
) -> String {
    let vector = request.vector.map(unit_vector);
    let query = QueryRequest {
        top_k: request.top_k,
        min_confidence: request.min_confidence,
        subject_id: request.subject.map(|s| subjects[s].clone()),
        as_of,
        ..QueryRequest::question("q")
    };
    let query = query
        .validate(particles_model::Timestamp::parse("2026-06-01T00:00:00Z").unwrap())
        .unwrap();
    let input = QueryInput {
        norm_kernel: NormKernel::SkylakeX,
        exhaustive,
        ..QueryInput::new(
            &query,
            vector.as_deref(),
            Timestamp::parse("2026-06-01T00:00:00Z").unwrap(),
        )
    };
    let outcome = run_query_with(store, loader, &input).unwrap();
    format!(
        "{:?}",
        outcome
            .hits
            .iter()
            .map(|h| (
                &h.particle.id,
                h.similarity.to_bits(),
                h.effective_confidence.to_bits()
            ))
            .collect::<Vec<_>>()
    )
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(32);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_loader_ranks_alike(
        batches in prop::collection::vec(prop::collection::vec(op(), 1..8), 1..4),
        requests in prop::collection::vec(request(), 1..5),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = working_copy(dir.path(), "coins-a.db");
        let store = Store::open_read_only(&path).unwrap();
        let subjects: Vec<String> = raw_strings(&path, "SELECT DISTINCT subject_id FROM particle_subjects ORDER BY subject_id")
            .into_iter()
            .chain(["unknown-subject".to_owned()])
            .take(3)
            .collect();
        prop_assume!(subjects.len() == 3);
        let mut writer = Writer::open(&path).unwrap();
        let mut warm = CandidateCache::new();
        rank(&store, &mut warm, &requests[0], &subjects);
        let mut serial = 0;
        for batch in &batches {
            apply(&mut writer, &store, batch, &subjects, &mut serial);
            for request in &requests {
                let uncached = rank(&store, &mut UncachedLoader, request, &subjects);
                let mut fresh = CandidateCache::new();
                // A fresh cache is built by an unfiltered call, then serves this one.
                rank(&store, &mut fresh, &Request { subject: None, ..request.clone() }, &subjects);
                prop_assert_eq!(&rank(&store, &mut fresh, request, &subjects), &uncached, "fresh cache");
                prop_assert_eq!(&rank(&store, &mut warm, request, &subjects), &uncached, "warm cache after deltas");
                let mut rebuilt = CandidateCache::new();
                rebuilt.clear();
                prop_assert_eq!(&rank(&store, &mut rebuilt, request, &subjects), &uncached, "rebuilt cache");
                // A one-shot process over the sidecar the previous one wrote: opened
                // (and delta-updated across the writes), or rebuilt, then persisted.
                let mut one_shot = CandidateCache::with_sidecar(SidecarConfig {
                    path: dir.path().join("coins-a.sidecar"),
                    write: SidecarWrite::OnChange,
                });
                rank(&store, &mut one_shot, &Request { subject: None, ..request.clone() }, &subjects);
                prop_assert_eq!(&rank(&store, &mut one_shot, request, &subjects), &uncached, "sidecar");
                one_shot.persist(&path);
                prop_assert!(one_shot.take_notes().is_empty());
                // Pruning by score bound changes nothing: every candidate scored.
                prop_assert_eq!(
                    &rank_at(&store, &mut UncachedLoader, request, &subjects, None, true),
                    &uncached,
                    "pruned vs exhaustive"
                );
                // Believed at an instant after every write: the ACTIVE set. (With a
                // subject the as-of loader keeps link order, so only ties may differ;
                // compare unfiltered rankings exactly.)
                if request.subject.is_none() {
                    let after_every_write = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
                    prop_assert_eq!(
                        &rank_at(&store, &mut UncachedLoader, request, &subjects, Some(after_every_write), false),
                        &uncached,
                        "as-of after every write"
                    );
                }
            }
            // A set opened from the sidecar the last one-shot left: its claim flags
            // come from the file.
            let mut from_file = CandidateCache::with_sidecar(SidecarConfig {
                path: dir.path().join("coins-a.sidecar"),
                write: SidecarWrite::Never,
            });
            from_file.load(&store, 0.0, None).unwrap();
            prop_assert_eq!(from_file.last_route(), Some(Route::Sidecar));
            // The subject path equals the full set filtered by the subject's links.
            for subject in &subjects {
                let linked: HashSet<String> = particles_store::subject_particle_ids(&store, subject).unwrap().into_iter().collect();
                for loader in [&mut UncachedLoader as &mut dyn CandidateLoader, &mut warm] {
                    let by_subject = selected_ids(&loader.load(&store, 0.0, Some(subject)).unwrap().selection);
                    let filtered: Vec<String> = selected_ids(&loader.load(&store, 0.0, None).unwrap().selection)
                        .into_iter()
                        .filter(|id| linked.contains(id))
                        .collect();
                    prop_assert_eq!(by_subject, filtered, "subject path for {}", subject);
                }
                // The cache counts the subject's ACTIVE CLAIMs from the links it read
                // (the set's claim flags) and hands on the links outside the set
                // (each once, links, none that it ranks) for the store to settle:
                // together, the store's count.
                let expected = Some(particles_store::active_claim_count(&store, subject).unwrap());
                for (what, cache) in [("warm", &mut warm), ("from the sidecar", &mut from_file)] {
                    let ranked: HashSet<String> =
                        selected_ids(&cache.load(&store, 0.0, Some(subject)).unwrap().selection).into_iter().collect();
                    let counted = cache.load(&store, 0.5, Some(subject)).unwrap().selection.subject_claims;
                    if let Some(counted) = &counted {
                        let outside: HashSet<String> = counted.outside.iter().cloned().collect();
                        prop_assert_eq!(outside.len(), counted.outside.len(), "outside ids repeat ({})", what);
                        prop_assert!(outside.is_subset(&linked), "an id outside that is not a link ({})", what);
                        prop_assert!(outside.is_disjoint(&ranked), "a ranked row left outside ({})", what);
                    }
                    let settled = counted.map(|counted| particles_store::settle_subject_claims(&store, &counted).unwrap());
                    prop_assert_eq!(settled, expected, "ACTIVE CLAIMs linked to {} ({})", subject, what);
                }
            }
        }
    }
}
