//! The `query` verb.

use std::{
    io::Write,
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

use anyhow::{bail, Context, Result};
use clap::Args;
use particles_cache::{CandidateCache, SidecarConfig, SidecarWrite};
use particles_model::{
    AssertionModality, QueryRequest, TimeWindow, Timestamp, UncertaintyNature, EMBEDDING_DIM,
    MAX_TOP_K,
};
use particles_query::{run_query_with, QueryInput};
use particles_store::{CandidateLoader, Store, UncachedLoader};

use crate::{output, UsageError};

#[derive(Debug, Args)]
pub(crate) struct QueryArgs {
    /// The store file (a Particles SQLite database). Opened read-only.
    #[arg(long, value_name = "PATH")]
    store: PathBuf,

    /// The question. Without an encoder it must come with --vector-file (its
    /// vector) or --no-embedding (rank by confidence alone).
    #[arg(value_name = "QUESTION")]
    question: Option<String>,

    /// The encoder's model directory (default: PARTICLES_MODEL_DIR, else the user
    /// cache; `particles-rs model fetch` fills it).
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,

    /// A JSON array of 384 floats: the query vector (skips any encoder).
    #[arg(long, value_name = "FILE", conflicts_with = "no_embedding")]
    vector_file: Option<PathBuf>,

    /// Rank by effective confidence, without a query vector (the reference's
    /// use_embeddings=False).
    #[arg(long)]
    no_embedding: bool,

    /// How many hits to rank before co-evidential collapse (1..=200).
    #[arg(long, value_name = "N", default_value_t = particles_model::DEFAULT_TOP_K,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_TOP_K)))]
    top_k: u32,

    /// Only beliefs about this subject id.
    #[arg(long, value_name = "ID")]
    subject: Option<String>,

    /// Drop beliefs whose effective confidence is below this (0..=1).
    #[arg(long, value_name = "X", default_value_t = 0.0, value_parser = parse_unit)]
    min_confidence: f64,

    /// Only beliefs of this uncertainty nature (ALEATORY or EPISTEMIC).
    #[arg(long, value_name = "NATURE", value_parser = parse_enum::<UncertaintyNature>)]
    uncertainty_nature: Option<UncertaintyNature>,

    /// Only beliefs of this assertion modality (FALSIFIABLE, EVALUATIVE,
    /// EXPERIENTIAL, CONSTITUTIVE).
    #[arg(long, value_name = "MODALITY", value_parser = parse_enum::<AssertionModality>)]
    assertion_modality: Option<AssertionModality>,

    /// Only beliefs asserted in the last N days before --now.
    #[arg(long, value_name = "DAYS")]
    recency_window_days: Option<i64>,

    /// Keep DOCUMENT_META beliefs (left out by default).
    #[arg(long)]
    include_document_meta: bool,

    /// Keep DECLINED and HYPOTHETICAL beliefs (left out by default).
    #[arg(long)]
    include_non_asserted: bool,

    /// Only beliefs tagged TAG or a tag below it in a taxonomy (repeatable: any of).
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,

    /// With --tag, also match beliefs tagged only with an ancestor of TAG.
    #[arg(long, requires = "tags")]
    include_ancestors: bool,

    /// Only structured claims with this predicate (case-insensitive, exact).
    #[arg(long, value_name = "PREDICATE")]
    predicate: Option<String>,

    /// Only structured claims whose object equals VALUE (as a number or date when
    /// both sides are one, else as text, case-insensitive).
    #[arg(long, value_name = "VALUE")]
    object_eq: Option<String>,

    /// Only structured claims whose object is greater than this number or date.
    #[arg(long, value_name = "BOUND", value_parser = parse_bound)]
    object_gt: Option<String>,

    /// Only structured claims whose object is less than this number or date.
    #[arg(long, value_name = "BOUND", value_parser = parse_bound)]
    object_lt: Option<String>,

    /// Only structured claims whose object contains this text (case-insensitive).
    #[arg(long, value_name = "TEXT")]
    object_contains: Option<String>,

    /// World-time window START..END (either side may be empty; a bare end date
    /// runs to the end of that day): rank beliefs that began or held in it, of
    /// any status.
    #[arg(long, value_name = "START..END", value_parser = parse_during, conflicts_with = "on")]
    during: Option<TimeWindow>,

    /// The world-time point window of one day (00:00 UTC of DATE).
    #[arg(long, value_name = "DATE", value_parser = parse_on)]
    on: Option<TimeWindow>,

    /// Believed at this instant: rank what the store believed then (retired
    /// beliefs that still held count, later ones do not); decay and the recency
    /// window are evaluated at it. RFC 3339 or ISO 8601, UTC when no offset; not
    /// in the future.
    #[arg(long, value_name = "INSTANT", value_parser = parse_instant)]
    as_of: Option<Timestamp>,

    /// The instant recency decay is evaluated at, RFC 3339 or ISO 8601 (a time
    /// without an offset is UTC). Default: now.
    #[arg(long, value_name = "RFC3339", value_parser = parse_instant)]
    now: Option<Timestamp>,

    /// Print one JSON object with a `hits` array instead of a table.
    #[arg(long)]
    json: bool,

    #[command(flatten)]
    sidecar: SidecarArgs,
}

/// Where the sidecar lives, shared by the verbs that use one.
#[derive(Debug, Args, Clone)]
pub(crate) struct SidecarArgs {
    /// The directory of the store's sidecar, a derived file of decoded vectors that
    /// makes the next process start warm (default: PARTICLES_SIDECAR_DIR, else the
    /// store's directory). The store itself is never written.
    #[arg(long, value_name = "DIR", env = "PARTICLES_SIDECAR_DIR")]
    pub(crate) sidecar_dir: Option<PathBuf>,

    /// Neither read nor write a sidecar: decode the store's rows on every query.
    #[arg(long, conflicts_with = "sidecar_dir")]
    pub(crate) no_sidecar: bool,
}

impl SidecarArgs {
    /// The cache this process queries through: with the store's sidecar, unless
    /// `--no-sidecar`.
    pub(crate) fn cache(&self, store: &std::path::Path, write: SidecarWrite) -> CandidateCache {
        if self.no_sidecar {
            return CandidateCache::new();
        }
        let mut cache = CandidateCache::with_sidecar(SidecarConfig {
            path: particles_cache::sidecar_path(store, self.sidecar_dir.as_deref()),
            write,
        });
        cache.set_build_progress(build_progress_bar());
        cache
    }
}

/// A progress bar for a cache build, drawn once the store is large enough for the
/// build to take a noticeable time (and only on a terminal).
fn build_progress_bar() -> particles_cache::BuildProgress {
    let mut bar: Option<indicatif::ProgressBar> = None;
    Box::new(move |seen, total| {
        if total < 20_000 {
            return;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{prefix} {wide_bar} {pos}/{len} rows ({per_sec}, {eta} left)",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.set_prefix("building the sidecar:");
            bar
        });
        bar.set_position(seen as u64);
        if seen >= total {
            bar.finish_and_clear();
        }
    })
}

fn parse_unit(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{value} is outside 0..=1"))
    }
}

fn parse_enum<T: std::str::FromStr<Err = particles_model::UnknownVariant>>(
    text: &str,
) -> Result<T, String> {
    text.parse()
        .map_err(|e: particles_model::UnknownVariant| e.to_string())
}

fn parse_bound(text: &str) -> Result<String, String> {
    if particles_rank::is_comparable_bound(text) {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "{text:?} is neither a number nor an ISO 8601 date or datetime"
        ))
    }
}

/// `--during START..END`, as the reference's CLI reads it.
pub(crate) fn parse_during(text: &str) -> Result<TimeWindow, String> {
    let Some((start, end)) = text.split_once("..") else {
        return Err(format!("{text:?} is not a window; write START..END, e.g. 2020-01-01..2020-12-31 (either side may be empty)"));
    };
    let side = |side: &str| -> Result<Option<Timestamp>, String> {
        if side.trim().is_empty() {
            Ok(None)
        } else {
            parse_instant(side.trim()).map(Some)
        }
    };
    let start = side(start)?;
    let end = side(end)?.map(|end| {
        let end = if end.is_aware() {
            end
        } else {
            end.with_utc_offset()
        };
        if end.is_midnight() {
            Timestamp::from_utc_micros(end.utc_micros() + 86_400_000_000 - 1)
                .map_or(end, Timestamp::with_utc_offset)
        } else {
            end
        }
    });
    let window = TimeWindow { start, end };
    particles_model::validate(window, |_| "window".to_owned())
        .map(garde::Valid::into_inner)
        .map_err(|e| e.to_string())
}

/// `--on DATE`: the point window at 00:00 of that day (UTC when naive).
pub(crate) fn parse_on(text: &str) -> Result<TimeWindow, String> {
    let day = parse_instant(text)?;
    let day = if day.is_aware() {
        day
    } else {
        day.with_utc_offset()
    };
    let midnight = day.start_of_day();
    Ok(TimeWindow {
        start: Some(midnight),
        end: Some(midnight),
    })
}

fn parse_instant(text: &str) -> Result<Timestamp, String> {
    Timestamp::parse(text)
        .map_err(|_| format!("{text:?} is not an instant; use RFC 3339, e.g. 2026-01-31T12:00:00Z"))
}

/// The wall clock as an aware UTC timestamp.
pub(crate) fn wall_clock() -> Result<Timestamp> {
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .context("the system clock is before 1970")?
        .as_micros();
    let micros = i64::try_from(micros).context("the system clock is out of range")?;
    Timestamp::from_utc_micros(micros)
        .map(Timestamp::with_utc_offset)
        .context("the system clock is out of range")
}

/// Reads a query vector: a JSON array of `EMBEDDING_DIM` finite numbers, each read
/// as f64 and rounded to f32 (as the reference decodes stored vectors).
pub(crate) fn read_vector_file(path: &Path) -> Result<Vec<f32>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the vector file {}", path.display()))?;
    let vector = particles_store::decode_embedding(text.trim()).map_err(|e| {
        anyhow::anyhow!(
            "vector file {}: not a JSON array of numbers: {}",
            path.display(),
            e.0
        )
    })?;
    check_vector(&vector).with_context(|| format!("vector file {}", path.display()))?;
    Ok(vector)
}

pub(crate) fn check_vector(vector: &[f32]) -> Result<()> {
    if vector.len() != EMBEDDING_DIM {
        bail!(
            "the query vector has {} numbers; the store's embeddings have {EMBEDDING_DIM}",
            vector.len()
        );
    }
    if let Some(position) = vector.iter().position(|v| !v.is_finite()) {
        bail!("element {position} of the query vector is not a finite number");
    }
    Ok(())
}

/// Where a query's vector comes from.
pub(crate) enum VectorSource {
    /// Rank by effective confidence.
    None,
    /// This vector (checked for length and finiteness before use).
    Given(Vec<f32>),
}

/// A query's options, from flags (`query`) or a request line (`serve`).
pub(crate) struct QueryParams {
    pub(crate) question: Option<String>,
    pub(crate) vector: VectorSource,
    pub(crate) top_k: u32,
    pub(crate) subject_id: Option<String>,
    pub(crate) min_confidence: f64,
    pub(crate) uncertainty_nature: Option<UncertaintyNature>,
    pub(crate) assertion_modality: Option<AssertionModality>,
    pub(crate) recency_window_days: Option<i64>,
    pub(crate) include_document_meta: bool,
    pub(crate) include_non_asserted: bool,
    pub(crate) tags: Vec<String>,
    pub(crate) include_ancestors: bool,
    pub(crate) claims: particles_rank::ClaimFilters,
    pub(crate) as_of: Option<Timestamp>,
    pub(crate) window: Option<TimeWindow>,
    /// `None`: the wall clock.
    pub(crate) now: Option<Timestamp>,
}

/// A query's answer, as data and as the JSON object `query --json` prints.
pub(crate) struct Answer {
    pub(crate) outcome: particles_query::QueryOutcome,
    pub(crate) now: Timestamp,
    pub(crate) json: serde_json::Value,
}

/// Validates the options and runs the query through `loader`.
pub(crate) fn execute(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    params: QueryParams,
) -> Result<Answer> {
    let vector = match params.vector {
        VectorSource::None => None,
        VectorSource::Given(vector) => {
            check_vector(&vector)?;
            Some(vector)
        }
    };
    let request = QueryRequest {
        question: params.question,
        min_confidence: params.min_confidence,
        uncertainty_nature: params.uncertainty_nature,
        assertion_modality: params.assertion_modality,
        recency_window_days: params.recency_window_days,
        top_k: params.top_k,
        subject_id: params.subject_id,
        include_document_meta: params.include_document_meta,
        include_non_asserted: params.include_non_asserted,
        tags: params.tags,
        include_ancestors: params.include_ancestors,
        predicate: params.claims.predicate,
        object_eq: params.claims.object_eq,
        object_gt: params.claims.object_gt,
        object_lt: params.claims.object_lt,
        object_contains: params.claims.object_contains,
        as_of: params.as_of,
        window: params.window,
    };
    if let Some(as_of) = request.as_of {
        let clock = wall_clock()?;
        if as_of.utc_micros() > clock.utc_micros() {
            return Err(UsageError(format!(
                "--as-of {as_of}: the instant is in the future (now is {clock}); the as-of lens answers what was believed, not what will be"
            ))
            .into());
        }
    }
    for (flag, bound) in [
        ("--object-gt", &request.object_gt),
        ("--object-lt", &request.object_lt),
    ] {
        if let Some(bound) = bound {
            parse_bound(bound).map_err(|e| UsageError(format!("{flag}: {e}")))?;
        }
    }
    for tag in &request.tags {
        if !particles_store::tag_is_known(store, tag)? {
            return Err(UsageError(format!(
                "--tag {tag:?}: no taxonomy in {} defines this tag and no belief carries it",
                store.path().display()
            ))
            .into());
        }
    }
    let request = particles_model::validate(request, |_| "query request".to_owned())
        .map_err(|e| UsageError(e.to_string()))?;
    let now = match params.now {
        Some(now) => now,
        None => wall_clock()?,
    };
    let outcome = run_query_with(
        store,
        loader,
        &QueryInput::new(&request, vector.as_deref(), now),
    )
    .with_context(|| format!("query on {} failed", store.path().display()))?;
    let coverage = match outcome.stats.claims {
        Some(_) => Some(particles_store::claim_coverage_counts(store)?),
        None => None,
    };
    let json = output::outcome_json(&outcome, &request, now, vector.is_some(), coverage);
    Ok(Answer { outcome, now, json })
}

pub(crate) fn run(args: QueryArgs) -> Result<()> {
    let vector = match (&args.vector_file, args.no_embedding) {
        (Some(path), _) => VectorSource::Given(read_vector_file(path)?),
        (None, true) => VectorSource::None,
        (None, false) => match &args.question {
            Some(question) => VectorSource::Given(crate::encode::encode_question(question, args.model_dir.as_deref())?),
            None => {
                return Err(UsageError(
                    "no question and no query vector: give a QUESTION to encode, --vector-file FILE \
                     (a JSON array of 384 floats), or --no-embedding to rank by effective confidence alone."
                        .into(),
                )
                .into())
            }
        },
    };
    let params = QueryParams {
        question: args.question.clone(),
        vector,
        top_k: args.top_k,
        subject_id: args.subject.clone(),
        min_confidence: args.min_confidence,
        uncertainty_nature: args.uncertainty_nature,
        assertion_modality: args.assertion_modality,
        recency_window_days: args.recency_window_days,
        include_document_meta: args.include_document_meta,
        include_non_asserted: args.include_non_asserted,
        tags: args.tags.clone(),
        include_ancestors: args.include_ancestors,
        claims: particles_rank::ClaimFilters {
            predicate: args.predicate.clone(),
            object_eq: args.object_eq.clone(),
            object_gt: args.object_gt.clone(),
            object_lt: args.object_lt.clone(),
            object_contains: args.object_contains.clone(),
        },
        as_of: args.as_of,
        window: args.during.or(args.on),
        now: args.now,
    };
    let store = Store::open_read_only(&args.store)?;
    // A one-shot process queries through a cache that starts from the sidecar: a
    // warm start when the sidecar is current, a delta or a build (written back after
    // the answer is printed) otherwise. Subject calls never build; as-of and window
    // queries use their own loaders.
    let mut cache =
        (!args.sidecar.no_sidecar).then(|| args.sidecar.cache(&args.store, SidecarWrite::OnChange));
    let answer = match cache.as_mut() {
        Some(cache) => execute(&store, cache, params)?,
        None => execute(&store, &mut UncachedLoader, params)?,
    };

    if answer.outcome.stats.skipped_other_model > 0 {
        eprintln!(
            "warning: skipped {} ACTIVE belief(s) embedded by another model than {}; re-embed them to make them searchable",
            answer.outcome.stats.skipped_other_model,
            particles_model::EMBEDDING_MODEL_ID
        );
    }
    if let Some(subject) = &args.subject {
        if !particles_store::subject_is_known(&store, subject)? {
            eprintln!(
                "warning: no belief in {} is linked to subject {subject:?}",
                args.store.display()
            );
        }
    }

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let mut json = answer.json;
        json["cache"] = serde_json::json!({
            "route": cache.as_ref().and_then(CandidateCache::last_route).map(|r| format!("{r:?}")),
            "rows": cache.as_ref().and_then(CandidateCache::cached_rows),
        });
        serde_json::to_writer(&mut out, &json)?;
        writeln!(out)?;
    } else {
        output::write_table(&mut out, &answer.outcome, answer.now)?;
    }
    out.flush()?;
    drop(out);
    // After the answer: the next process starts from this state.
    if let Some(cache) = cache.as_mut() {
        cache.persist(&args.store);
        for note in cache.take_notes() {
            eprintln!("note: {note}");
        }
    }
    Ok(())
}
