//! One benchmark cell, run in its own process: the reference harness's cell
//! protocol (cold: one question in a fresh process; warm: an untimed warm-up, then
//! timed questions with a budget) over particles-rs, writing a result file in the
//! reference's `CellResult` schema so its `report` reads our cold and warm cells
//! too (the runner puts our other kinds in `cells-extra/`).

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
    time::Instant,
};

use particles_cache::SidecarWrite;
use particles_engine::{CacheOptions, Detail, Encode, Engine, StoreSelection, StoreTarget};
use particles_model::{Envelope, QueryRequest, Timestamp};
use particles_query::QueryOutcome;
use particles_store::Store;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::{
    environment::Environment,
    error::{read_json, write_json_atomically, Error, Result},
    probe::{self, Process},
    questions::Questions,
};

static PROCESS_START: OnceLock<Instant> = OnceLock::new();

/// Marks the process start, so a cell reports start-up apart from its queries.
/// The binary that runs cells calls it first thing in `main`.
pub fn mark_process_start() {
    PROCESS_START.get_or_init(Instant::now);
}

/// Seconds from process start to now (the cell's `import_seconds`: for a Rust
/// binary, loading and argument parsing).
fn process_start_seconds() -> f64 {
    PROCESS_START
        .get()
        .map_or(0.0, |t| t.elapsed().as_secs_f64())
}

/// What the orchestrator hands a cell (the reference's `CellSpec` fields).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CellSpec {
    pub(crate) cell_id: String,
    pub(crate) size: u64,
    pub(crate) seed: u64,
    pub(crate) mode: String,
    pub(crate) variant: String,
    pub(crate) store_path: PathBuf,
    pub(crate) result_path: PathBuf,
    pub(crate) encoder: bool,
    pub(crate) question_offset: usize,
    pub(crate) questions: usize,
    pub(crate) budget_seconds: f64,
    pub(crate) min_questions: usize,
    pub(crate) top_k: u32,
    /// The question vectors file (our addition).
    #[serde(default)]
    pub(crate) questions_path: Option<PathBuf>,
    /// A warm cell scans the half-precision copy, as `serve` does (our
    /// addition; `false` measures the `f32` scan alone).
    #[serde(default = "yes")]
    pub(crate) half_precision: bool,
}

fn yes() -> bool {
    true
}

/// The stages, in the reference's order.
pub(crate) const STAGES: [&str; 12] = [
    "setup",
    "embed",
    "sql_fetch",
    "decode",
    "hydrate",
    "filters",
    "source_rows",
    "support_discounts",
    "scoring",
    "sort",
    "collapse",
    "other",
];

fn sample_json(index: usize, subject: Option<&str>, total: f64, outcome: &QueryOutcome) -> Value {
    let t = outcome.timings;
    let staged = [
        t.setup,
        t.embed,
        t.sql_fetch,
        t.decode,
        t.hydrate,
        t.filters,
        t.source_rows,
        t.support_discounts,
        t.scoring,
        t.sort,
        t.collapse,
    ];
    let other = (total - staged.iter().sum::<f64>()).max(0.0);
    let mut stages = serde_json::Map::new();
    for (name, value) in STAGES.iter().zip(staged.iter().chain([other].iter())) {
        stages.insert((*name).to_owned(), json!(value));
    }
    let w = outcome.work;
    json!({
        "question_index": index,
        "subject_id": subject,
        "total_seconds": total,
        "stages": stages,
        "rows_read": w.rows_read,
        "embedding_json_bytes": w.embedding_json_bytes,
        "models_hydrated": w.models_hydrated,
        "candidates_scored": w.candidates_scored,
        "snapshot_ids_looked_up": w.snapshot_ids_looked_up,
        "entry_ids_looked_up": w.entry_ids_looked_up,
        "results": outcome.hits.len(),
    })
}

fn now_iso() -> String {
    Timestamp::now().to_string()
}

/// Runs the cell described by the spec file (written by [`crate::run`]) and writes
/// its result atomically to the spec's `result_path`. This is what a cell process
/// does; the orchestrator records a failure when it exits without a result.
///
/// # Errors
///
/// Any failure of the cell: an unreadable spec or manifest, a store or query
/// error, a missing encoder.
pub fn run_cell(spec_path: &Path) -> Result<()> {
    let spec: CellSpec = read_json(spec_path)?;
    // What a one-shot `query` pays before its store open: process start and
    // argument parsing (the cell's own bookkeeping below is not counted).
    let startup_seconds = process_start_seconds();
    let started_at = now_iso();
    let wall = Instant::now();
    let mut environment = Environment::read();
    let mut notes: Vec<String> = Vec::new();
    // With the encoder, questions are encoded in the cell, its load reported apart.
    let (encoder, encoder_load_seconds) = load_encoder(spec.encoder)?;
    let questions = Questions::load(
        spec.questions_path.as_deref(),
        spec.seed,
        spec.question_offset + spec.questions + 1,
    )?;
    let manifest: Value = read_json(&crate::generator::manifest_path(&spec.store_path))?;
    let subjects: Vec<String> = manifest["query_subjects"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p[0].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    // Process start and engine start (its store open) are reported apart from
    // the queries. The cell asks the engine every front end asks, configured
    // with the defaults (an empty environment, no file), so its latencies are
    // those of the path users take: `query` for the one-shot kinds, `serve` for
    // the warm cell.
    let open_started = Instant::now();
    let engine = cell_engine(&spec, encoder)?;
    let open_seconds = open_started.elapsed().as_secs_f64();
    let cell = CellRun {
        spec: &spec,
        questions: &questions,
        subjects: &subjects,
        engine: &engine,
        now: Timestamp::parse("2026-06-01T00:00:00Z").expect("a fixed instant parses"),
    };
    let mut measured = if spec.mode != "warm" {
        cell.one_shot(startup_seconds + open_seconds, &mut notes)?
    } else {
        cell.warm(&mut notes)?
    };
    notes.extend(engine.persist());
    let report = engine.cache_report();
    environment.finish();
    // Read before the floor's own copy of the vectors can raise it: the peak
    // is the engine's.
    let peak_rss_bytes = probe::peak_rss(Process::Current);
    if spec.mode == "warm" && cell.subject(0).is_none() {
        if let Some(set) = engine.candidates() {
            let vector = questions.vector(spec.question_offset);
            measured.floors.insert(
                "f32_scan_single_thread_seconds".into(),
                json!(scan_floor(&set, vector)),
            );
        }
    }
    let result = json!({
        "spec": spec,
        "status": "ok",
        "started_at": started_at,
        "finished_at": now_iso(),
        "wall_seconds": wall.elapsed().as_secs_f64(),
        "import_seconds": process_start_seconds(),
        "encoder_load_seconds": encoder_load_seconds,
        "warmup_seconds": measured.warmup_seconds,
        "samples": measured.samples,
        "cosine_reference": Value::Null,
        "peak_rss_bytes": peak_rss_bytes,
        "sampled_peak_rss_bytes": Value::Null,
        "environment": environment,
        "error": Value::Null,
        "notes": notes,
        "engine": "particles-rs",
        "store_open_seconds": open_seconds,
        "cache_heap_bytes": report.map(|r| r.heap_bytes),
        "cache_route": cell.route(),
        "anon_huge_pages_bytes": probe::smaps_rollup_bytes(Process::Current, "AnonHugePages:"),
        "rss_anon_bytes": probe::smaps_rollup_bytes(Process::Current, "Anonymous:"),
        "floors": measured.floors,
        "sidecar": measured.extra,
    });
    write_json_atomically(&spec.result_path, &result)
}

/// A cell asking its questions of its engine.
struct CellRun<'c> {
    spec: &'c CellSpec,
    questions: &'c Questions,
    /// The manifest's query subjects (the subject variant asks about them in turn).
    subjects: &'c [String],
    engine: &'c Engine,
    now: Timestamp,
}

/// What a cell's questions measured, for its result.
#[derive(Default)]
struct Measured {
    samples: Vec<Value>,
    warmup_seconds: Option<f64>,
    floors: serde_json::Map<String, Value>,
    /// The sidecar write after a one-shot's question.
    extra: serde_json::Map<String, Value>,
}

impl CellRun<'_> {
    /// The subject question `i` asks about, in the subject variant.
    fn subject(&self, i: usize) -> Option<String> {
        (self.spec.variant == "subject" && !self.subjects.is_empty())
            .then(|| self.subjects[i % self.subjects.len()].clone())
    }

    /// Asks question `index`: its seconds, and the outcome with the encoder's
    /// time counted in `embed`.
    fn ask(&self, index: usize) -> Result<(f64, QueryOutcome)> {
        let request = QueryRequest {
            question: Some(self.questions.text(index).to_owned()),
            top_k: self.spec.top_k,
            subject_id: self.subject(index),
            ..QueryRequest::default()
        };
        let request = request.validate(self.now)?;
        // Without an encoder the question's vector rides in the envelope.
        let envelope = Envelope {
            vector: (!self.spec.encoder).then(|| self.questions.vector(index).to_vec()),
            no_embedding: false,
            now: Some(self.now),
            ..Envelope::default()
        };
        let started = Instant::now();
        let answered = self
            .engine
            .ask(&request, &envelope, Detail::Ranking)
            .map_err(|error| Error::Engine(error.to_string()))?;
        let total = started.elapsed().as_secs_f64();
        let mut outcome = answered
            .outcome
            .ok_or_else(|| Error::Engine("a question was not ranked".to_owned()))?;
        outcome.timings.embed += answered.timings.encode.as_secs_f64();
        Ok((total, outcome))
    }

    /// The route the engine's cache took, if it has one.
    fn route(&self) -> Option<String> {
        self.engine
            .cache_report()
            .and_then(|report| report.route)
            .map(|r| format!("{r:?}"))
    }

    /// A fresh process: one question, start to answer (`process_seconds`, after
    /// `before_seconds` of process and engine start), then the sidecar written as
    /// `query` writes it after printing.
    fn one_shot(&self, before_seconds: f64, notes: &mut Vec<String>) -> Result<Measured> {
        let mut measured = Measured::default();
        let index = self.spec.question_offset;
        let (total, outcome) = self.ask(index)?;
        let mut sample = sample_json(index, self.subject(index).as_deref(), total, &outcome);
        sample["process_seconds"] = json!(before_seconds + total);
        sample["route"] = json!(self.route());
        measured.samples.push(sample);
        let started = Instant::now();
        let (written, persisted) = self.engine.persist_counted();
        measured
            .extra
            .insert("sidecar_written".into(), json!(written > 0));
        measured.extra.insert(
            "sidecar_write_seconds".into(),
            json!(started.elapsed().as_secs_f64()),
        );
        notes.extend(persisted);
        if self.spec.mode == "first" {
            let store = Store::open_read_only(&self.spec.store_path)?;
            measured.floors.insert(
                "json_parse_single_core_seconds".into(),
                json!(json_parse_floor(&store)?),
            );
        }
        Ok(measured)
    }

    /// A warm cell: the engine warmed as `serve` warms it at start (its cache
    /// opened or built, so a subject-filtered question is answered from it, as
    /// `serve` answers one), an untimed question, then the timed questions
    /// until the budget would be passed (after at least `min_questions`).
    fn warm(&self, notes: &mut Vec<String>) -> Result<Measured> {
        let spec = self.spec;
        let mut measured = Measured::default();
        let started = Instant::now();
        self.engine
            .warm()
            .map_err(|error| Error::Engine(error.to_string()))?;
        let warmup_index = spec.question_offset + spec.questions;
        self.ask(warmup_index)?;
        measured.warmup_seconds = Some(started.elapsed().as_secs_f64());
        let loop_started = Instant::now();
        for n in 0..spec.questions {
            let spent = loop_started.elapsed().as_secs_f64();
            let mean = if n == 0 { 0.0 } else { spent / n as f64 };
            let budget_stop = spec.budget_seconds > 0.0
                && n + 1 >= spec.min_questions
                && spent + mean > spec.budget_seconds;
            let index = spec.question_offset + n;
            let (total, outcome) = self.ask(index)?;
            measured.samples.push(sample_json(
                index,
                self.subject(index).as_deref(),
                total,
                &outcome,
            ));
            if budget_stop && n + 1 < spec.questions {
                notes.push(format!(
                    "stopped after {} of {} questions: the next would have passed the {} s budget",
                    n + 1,
                    spec.questions,
                    spec.budget_seconds
                ));
                break;
            }
        }
        Ok(measured)
    }
}

/// The single-thread f32 scan floor: the best of 20 plain passes computing one
/// dot product per row over a contiguous copy of the set's vectors (the
/// einsum-order SSE kernel the query uses; memory-bound at this size), nothing
/// else. The copy is in memory advised for huge pages, as a server's vectors
/// were when the floor was defined: a server that scans a half copy now reads
/// its `f32` rows in the sidecar's map (4 KiB pages), and the floor must not
/// move with where the engine keeps them.
fn scan_floor(set: &particles_candidates::CandidateSet, query: &[f32]) -> f64 {
    let data = set.vector_data();
    let mut copy = match memmap2::MmapMut::map_anon(std::mem::size_of_val(data).max(1)) {
        Ok(map) => map,
        Err(_) => return f64::NAN,
    };
    // Advice only: without transparent huge pages this is plain memory.
    #[cfg(target_os = "linux")]
    let _ = copy.advise(memmap2::Advice::HugePage);
    copy[..std::mem::size_of_val(data)].copy_from_slice(bytemuck::cast_slice(data));
    let vectors: &[f32] = bytemuck::cast_slice(&copy[..std::mem::size_of_val(data)]);
    // Each row's place in the copy, from its place in the set's column.
    let rows: Vec<std::ops::Range<usize>> = (0..set.len())
        .map(|row| {
            let vector = set.vector(row);
            let start = (vector.as_ptr() as usize - data.as_ptr() as usize) / 4;
            start..start + vector.len()
        })
        .collect();
    let mut best = f64::INFINITY;
    let mut sink = 0.0f32;
    for _ in 0..20 {
        let started = Instant::now();
        let mut acc = 0.0f32;
        for range in &rows {
            let v = &vectors[range.clone()];
            if v.len() == query.len() {
                acc += particles_candidates::einsum_dot(v, query);
            }
        }
        best = best.min(started.elapsed().as_secs_f64());
        sink += acc;
    }
    std::hint::black_box(sink);
    best
}

/// The JSON-parse floor: the time to decode every ACTIVE embedding's JSON on one
/// core, reading excluded (each row's text is read, then only the decode timed).
fn json_parse_floor(store: &Store) -> Result<f64> {
    let mut spent = 0.0;
    let mut sink = 0usize;
    let mut failure = None;
    particles_store::embedding_texts(store, |text| {
        if failure.is_some() {
            return;
        }
        let started = Instant::now();
        match particles_store::decode_embedding(text) {
            Ok(vector) => {
                spent += started.elapsed().as_secs_f64();
                sink += vector.len();
            }
            Err(error) => failure = Some(error),
        }
    })?;
    if let Some(error) = failure {
        return Err(Error::BadEmbedding { reason: error.0 });
    }
    std::hint::black_box(sink);
    Ok(spent)
}

/// The engine of a cell: the cell's store alone, its cache kept as `query`
/// keeps it (one-shot kinds: the sidecar written after the answer when the
/// state moved) or as `serve` does (the warm cell: huge pages, the
/// half-precision copy unless the spec says not, a small store's particles
/// kept, the sidecar written after a rebuild).
fn cell_engine(spec: &CellSpec, encoder: Option<Encode>) -> Result<Engine> {
    let dir = spec
        .store_path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let loaded =
        particles_config::load_defaults(&particles_config::Environment::new(Vec::new(), &dir))
            .map_err(|error| Error::Engine(error.to_string()))?;
    let warm = spec.mode == "warm";
    let options = CacheOptions {
        write: Some(if warm {
            SidecarWrite::OnRebuild
        } else {
            SidecarWrite::OnChange
        }),
        huge_pages: warm,
        half_precision: (warm && spec.half_precision)
            .then_some(particles_cache::HALF_PRECISION_MIN_BYTES),
        keep_particles: warm.then_some(particles_cache::KEEP_PARTICLES_MAX_ROWS),
        ..CacheOptions::default()
    };
    let selection = StoreSelection {
        targets: vec![StoreTarget {
            handle: None,
            path: spec.store_path.clone(),
        }],
        federated: false,
    };
    let engine = Engine::new(
        particles_engine::Settings::from_config(loaded.config()),
        particles_engine::answer_settings(loaded.config(), &std::collections::HashMap::new()),
        &selection,
        &options,
        encoder,
    )
    .map_err(|error| Error::Engine(error.to_string()))?;
    Ok(engine.with_strict_encoder())
}

/// The encoder and its load time, when the cell encodes its questions.
#[cfg(feature = "encoder")]
pub(crate) fn load_encoder(wanted: bool) -> Result<(Option<Encode>, Option<f64>)> {
    if !wanted {
        return Ok((None, None));
    }
    let started = Instant::now();
    let encoder = particles_embed::Encoder::load(&particles_embed::model_dir(None))?;
    let seconds = started.elapsed().as_secs_f64();
    let encode: Encode = std::sync::Arc::new(move |text: &str| Ok(encoder.encode(text)));
    Ok((Some(encode), Some(seconds)))
}

#[cfg(not(feature = "encoder"))]
pub(crate) fn load_encoder(wanted: bool) -> Result<(Option<Encode>, Option<f64>)> {
    if wanted {
        return Err(Error::Options {
            reason: "this build has no encoder: run the benchmark with --no-encoder".into(),
        });
    }
    Ok((None, None))
}
