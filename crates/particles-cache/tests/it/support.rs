//! Shared helpers: working copies of fixture stores, particles to write, and the
//! cached-equals-uncached check.

use std::path::{Path, PathBuf};

use particles_cache::{CandidateCache, Route};
use particles_model::{
    CalibrationSource, Confidence, ExtractorRef, Particle, ProvenanceRef, ProvenanceRefType,
    QueryRequest, Timestamp, UncertaintyNature,
};
use particles_query::{run_query_with, QueryInput, QueryOutcome};
use particles_rank::NormKernel;
use particles_store::{Store, UncachedLoader};

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_owned()
}

/// Runs raw SQL on a store through the test's own connection (the store crate
/// keeps its connections to itself): what another writer might do to the file.
pub fn raw_sql(path: &Path, sql: &str) {
    let connection = rusqlite::Connection::open(path).unwrap();
    connection
        .busy_timeout(std::time::Duration::from_secs(30))
        .unwrap();
    connection.execute_batch(sql).unwrap();
}

/// The first column of every row `sql` selects, read through the test's own
/// read-only connection.
pub fn raw_strings(path: &Path, sql: &str) -> Vec<String> {
    let connection =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut statement = connection.prepare(sql).unwrap();
    statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A private copy of a fixture store.
pub fn working_copy(dir: &Path, fixture: &str) -> PathBuf {
    let path = dir.join(fixture);
    std::fs::copy(
        workspace_root().join("tests/fixtures/stores").join(fixture),
        &path,
    )
    .unwrap();
    path
}

/// A private copy of a fixture store with the change journal installed, as a
/// store the cache follows by deltas.
pub fn journaled_copy(dir: &Path, fixture: &str) -> PathBuf {
    let path = working_copy(dir, fixture);
    let mut writer = particles_store::Writer::open(&path).unwrap();
    particles_store::install_journal(&mut writer).unwrap();
    path
}

/// A deterministic unit vector.
pub fn unit_vector(seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut values: Vec<f32> = (0..384)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        })
        .collect();
    let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
    values.iter_mut().for_each(|v| *v /= norm);
    values
}

/// A valid particle to write.
pub fn particle(id: &str, confidence: f64, subjects: &[&str]) -> garde::Valid<Particle> {
    let particle = Particle {
        id: id.to_owned(),
        content: format!("Belief {id} written by the test."),
        confidence: Confidence {
            value: confidence,
            variance: None,
            calibration_source: CalibrationSource::ExtractorDirect,
            calibration_method: None,
            calibration_ref: None,
        },
        uncertainty_nature: UncertaintyNature::Epistemic,
        provenance: vec![ProvenanceRef {
            ref_type: ProvenanceRefType::Agent,
            corpus_entry_id: "test".into(),
            snapshot_id: None,
            location: None,
            chunk_hash: None,
        }],
        asserted_by: "test".into(),
        asserted_at: Timestamp::parse("2025-06-01T00:00:00").unwrap(),
        status: particles_model::Status::Active,
        status_reason: None,
        schema_version: particles_model::SCHEMA_VERSION.into(),
        particle_type: particles_model::ParticleType::Claim,
        assertion_modality: particles_model::AssertionModality::Falsifiable,
        uncertainty_kind: None,
        valid_until: None,
        valid_from: None,
        valid_kind: None,
        supersedes: None,
        basis: None,
        extractor_ref: Some(ExtractorRef {
            name: "general-extractor".into(),
            version: "1".into(),
        }),
        extraction_provider_model: None,
        sequence_context: None,
        subject_ids: subjects.iter().map(|s| (*s).to_owned()).collect(),
        tags: None,
        context_fingerprint: None,
        properties: None,
        contributors: None,
        structured_claim: None,
        canonical_form: particles_model::CanonicalForm::Prose,
        contested: None,
    };
    garde::Unvalidated::new(particle).validate().unwrap()
}

fn run(
    store: &Store,
    loader: &mut dyn particles_store::CandidateLoader,
    request: &QueryRequest,
    vector: Option<&[f32]>,
) -> QueryOutcome {
    try_run(store, loader, request, vector).unwrap()
}

fn try_run(
    store: &Store,
    loader: &mut dyn particles_store::CandidateLoader,
    request: &QueryRequest,
    vector: Option<&[f32]>,
) -> Result<QueryOutcome, particles_query::Error> {
    let request = request
        .clone()
        .validate(particles_model::Timestamp::parse("2026-06-01T00:00:00Z").unwrap())
        .unwrap();
    let input = QueryInput {
        norm_kernel: NormKernel::SkylakeX,
        ..QueryInput::new(
            &request,
            vector,
            Timestamp::parse("2026-06-01T00:00:00Z").unwrap(),
        )
    };
    run_query_with(store, loader, &input)
}

/// Asserts that the cache answers a set of requests exactly as the uncached loader
/// does (hits, full particles, bits, stats), and returns the route of the first,
/// unfiltered request.
pub fn assert_cache_exact(
    store: &Store,
    cache: &mut CandidateCache,
    subject: Option<&str>,
    step: &str,
) -> Route {
    match cache_exact_or_error(store, cache, subject, step) {
        Ok(route) => route,
        Err(error) => panic!("{step}: the cached query failed: {error}"),
    }
}

/// [`assert_cache_exact`], except that a cached query's error is returned
/// instead of failing (a damaged cache state may refuse to answer; it may never
/// answer differently).
pub fn cache_exact_or_error(
    store: &Store,
    cache: &mut CandidateCache,
    subject: Option<&str>,
    step: &str,
) -> Result<Route, particles_query::Error> {
    let vector = unit_vector(7);
    let mut requests = vec![
        (
            QueryRequest {
                top_k: 200,
                ..QueryRequest::question("q")
            },
            Some(vector.as_slice()),
        ),
        (
            QueryRequest {
                top_k: 30,
                ..QueryRequest::question("q")
            },
            None,
        ),
        (
            QueryRequest {
                top_k: 50,
                min_confidence: 0.5,
                ..QueryRequest::question("q")
            },
            Some(vector.as_slice()),
        ),
    ];
    // A claim filter: the claims must survive every delta (the fixture's
    // claims use `weighs`).
    requests.push((
        QueryRequest {
            top_k: 50,
            predicate: Some("weighs".to_owned()),
            ..QueryRequest::question("q")
        },
        Some(vector.as_slice()),
    ));
    if let Some(subject) = subject {
        requests.push((
            QueryRequest {
                top_k: 200,
                subject_id: Some(subject.to_owned()),
                ..QueryRequest::question("q")
            },
            Some(vector.as_slice()),
        ));
    }
    let mut first_route = None;
    for (request, vector) in &requests {
        let cached = try_run(store, cache, request, *vector)?;
        first_route.get_or_insert(cache.last_route().unwrap());
        let uncached = run(store, &mut UncachedLoader, request, *vector);
        assert_eq!(
            cached.hits, uncached.hits,
            "{step}: cached hits differ for {request:?}"
        );
        assert_eq!(
            cached.stats, uncached.stats,
            "{step}: cached stats differ for {request:?}"
        );
    }
    Ok(first_route.unwrap())
}
