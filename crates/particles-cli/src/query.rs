//! The `query` verb.

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};
use clap::Args;
use particles_engine::Detail;
use particles_model::{
    Envelope, QueryRequest, TimeWindow, Timestamp, UncertaintyNature, ValidRequest, MAX_TOP_K,
};
use particles_query::QueryOutcome;

use crate::{output, query_flags, UsageError};

#[derive(Debug, Args)]
#[command(after_long_help = crate::query_flags::REFERENCE_FLAGS)]
pub(crate) struct QueryArgs {
    /// The store: a handle of the configuration's `storage.stores` (or
    /// `default`), or a store file. Repeat it to query several stores at once (a
    /// federated query, under the first store's policies, as the reference's
    /// `particles query --store A --store B`); a handle federates even alone.
    /// Without it: the configured default store (`storage.database_url`, or
    /// `DATABASE_URL`). Stores are opened read-only.
    #[arg(long = "store", value_name = "HANDLE|PATH")]
    stores: Vec<String>,

    /// The question (1..=8192 characters). It is encoded unless --vector-file gives
    /// its vector or --no-embedding ranks by confidence alone.
    #[arg(value_name = "QUESTION")]
    question: Option<String>,

    #[command(flatten)]
    model: crate::encode::ModelDirArg,

    /// A JSON array of floats, of the store's embedding dimension (384 for MiniLM): the query vector (skips any encoder).
    #[arg(long, value_name = "FILE", conflicts_with = "no_embedding")]
    vector_file: Option<PathBuf>,

    /// Rank by effective confidence, without a query vector (the reference's
    /// use_embeddings=False); the question is not encoded.
    #[arg(long)]
    no_embedding: bool,

    /// How many hits to rank before co-evidential collapse (1..=200).
    #[arg(long, value_name = "N", default_value_t = particles_model::DEFAULT_TOP_K,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_TOP_K)))]
    top_k: u32,

    /// Only beliefs about this subject: an id, a unique id prefix, a name or an
    /// alias, resolved as the reference resolves it, in the default store (in the
    /// store file, when every --store is a file). No match or several: exit 1.
    #[arg(long, value_name = "REF")]
    subject: Option<String>,

    /// Only beliefs about the subject with exactly this id, taken as the HTTP
    /// engine takes `subject_id`: not resolved, so an id no subject has is the
    /// response's subject coverage gap, not an error.
    #[arg(long, value_name = "ID", conflicts_with = "subject")]
    subject_id: Option<String>,

    /// Drop beliefs whose effective confidence is below this (0..=1).
    #[arg(long, value_name = "X", default_value_t = 0.0, value_parser = parse_unit)]
    min_confidence: f64,

    /// Only beliefs of this uncertainty nature (ALEATORY or EPISTEMIC).
    #[arg(long, value_name = "NATURE", value_parser = parse_enum::<UncertaintyNature>)]
    uncertainty_nature: Option<UncertaintyNature>,

    /// Only beliefs of this assertion modality (FALSIFIABLE, EVALUATIVE,
    /// EXPERIENTIAL, CONSTITUTIVE; trimmed and upper-cased first, as the reference
    /// takes it).
    #[arg(long, value_name = "MODALITY")]
    assertion_modality: Option<String>,

    /// The answer's reader: GENERAL, EXPERT or REGULATORY (case-sensitive, as the
    /// reference takes it); it shapes the answer's prompt.
    #[arg(long, value_name = "AUDIENCE", default_value = "GENERAL")]
    audience: String,

    /// A grounded answer: each sentence cites the particles it rests on, parsed
    /// into the response's attribution (default: `query.grounded_answers`).
    #[arg(long, overrides_with = "ungrounded")]
    grounded: bool,

    /// An answer without citations, whatever `query.grounded_answers` says.
    #[arg(long, overrides_with = "grounded")]
    ungrounded: bool,

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
    #[arg(long, value_name = "BOUND")]
    object_gt: Option<String>,

    /// Only structured claims whose object is less than this number or date.
    #[arg(long, value_name = "BOUND")]
    object_lt: Option<String>,

    /// Only structured claims whose object contains this text (case-insensitive).
    #[arg(long, value_name = "TEXT")]
    object_contains: Option<String>,

    /// World-time window START..END (either side may be empty; a bare end date
    /// runs to the end of that day): rank beliefs that began or held in it, of
    /// any status.
    #[arg(long, value_name = "START..END", value_parser = parse_during)]
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

    /// Rank as the memory projection does: add each belief's usefulness lift
    /// (λ·ln(1 + R) of its use events, `utility.*`) to its effective confidence
    /// before the cut (the reference's retrieve_ranked apply_utility)
    #[arg(long, help_heading = "Recall ranking (the projection's options)")]
    apply_utility: bool,

    /// Add the owner lens's lift (`owner_lens.rank_lift`) to beliefs about the
    /// owner's subjects (`owner_lens.subjects`) before the cut (apply_owner)
    #[arg(long, help_heading = "Recall ranking (the projection's options)")]
    apply_owner: bool,

    /// Drop beliefs that only sources carrying this corpus tag state (repeat
    /// it; the agent-memory region drops `rule-file`) (exclude_source_tags)
    #[arg(
        long,
        value_name = "TAG",
        help_heading = "Recall ranking (the projection's options)"
    )]
    exclude_source_tag: Vec<String>,

    /// Multiply the rank score of docstring-extracted beliefs by this weight,
    /// 0 to 1 (code_symbol_rank_weight)
    #[arg(long, value_name = "W", value_parser = parse_unit_weight, help_heading = "Recall ranking (the projection's options)")]
    code_symbol_rank_weight: Option<f64>,

    /// Print one JSON object with a `hits` array instead of a table.
    #[arg(long)]
    json: bool,

    /// Print the reference's whole query response as one JSON object: the
    /// ranking, every disclosure and the answer from the configured provider.
    #[arg(long, conflicts_with = "json")]
    response_json: bool,

    /// Print the answer as the reference's `particles query` does, with the hit
    /// table first (CONF, EFF, AGE, EXTRACTOR, CONTENT), then the answer, its
    /// footers and the ⚠ notes (on stderr).
    #[arg(long, conflicts_with_all = ["json", "response_json"])]
    show_particles: bool,

    /// Print the answer as the reference's `particles query` does, followed by the
    /// source passage behind each of the top hits (`source_passage.query_show_limit`,
    /// default 5). Not with a --store handle: passages are read from one store.
    #[arg(long, conflicts_with_all = ["json", "response_json"])]
    show_source: bool,

    /// Each hit's spread across the local policy and every adopted trust lens
    /// (include_contestedness): in --response-json, or as the reference's
    /// "Contestedness" block in its text layout (which this flag selects).
    #[arg(long)]
    contestedness: bool,

    /// With --response-json: each hit's stance positions (include_agreement).
    #[arg(long)]
    include_agreement: bool,

    /// Read through a project observer: only beliefs project P sees, once the
    /// store was rescoped.
    #[arg(long, value_name = "P")]
    observer_project: Option<String>,

    #[command(flatten)]
    sidecar: SidecarArgs,

    #[command(flatten)]
    structural: crate::structural_cmd::StructuralArgs,
}

/// Where the sidecar lives, shared by the verbs that use one.
#[derive(Debug, Args, Clone)]
pub(crate) struct SidecarArgs {
    /// The directory of the store's sidecar, a derived file of decoded vectors that
    /// makes the next process start warm (default: PARTICLES_SIDECAR_DIR, else the
    /// store's directory). The store itself is never written.
    #[arg(long, value_name = "DIR", env = "PARTICLES_SIDECAR_DIR")]
    pub(crate) sidecar_dir: Option<PathBuf>,

    /// Neither read nor write a sidecar: decode the store's rows on every query
    /// (wins over --sidecar-dir and PARTICLES_SIDECAR_DIR).
    #[arg(long)]
    pub(crate) no_sidecar: bool,
}

/// How a long-lived process (`serve`, `mcp`) scans its stores' vectors.
#[derive(Debug, Args)]
pub(crate) struct ScanArgs {
    /// Scan a half-precision copy of the vectors, kept beside them in memory
    /// (half their size again): half the bytes read per question, and the same
    /// answers, bit for bit (the exact vector is read wherever the copy's error
    /// bound cannot decide). `auto` makes the copy for stores whose vectors take
    /// at least 4 MiB (about 2.7k beliefs), where it pays.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        default_value_t = HalfPrecision::Auto,
        env = "PARTICLES_RS_HALF_PRECISION"
    )]
    pub(crate) half_precision: HalfPrecision,
}

/// `--half-precision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum HalfPrecision {
    /// For stores whose vectors take at least 4 MiB.
    Auto,
    /// For every store.
    On,
    /// Never: scan the `f32` vectors.
    Off,
}

impl ScanArgs {
    /// The cache's setting: the least vector bytes a state needs for a copy.
    pub(crate) fn half_precision_from(&self) -> Option<usize> {
        match self.half_precision {
            HalfPrecision::Auto => Some(particles_cache::HALF_PRECISION_MIN_BYTES),
            HalfPrecision::On => Some(0),
            HalfPrecision::Off => None,
        }
    }
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
    window.checked()
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

fn parse_unit_weight(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(weight) if (0.0..=1.0).contains(&weight) => Ok(weight),
        _ => Err(format!("{text:?} is not a weight from 0 to 1, e.g. 0.3")),
    }
}

fn parse_instant(text: &str) -> Result<Timestamp, String> {
    Timestamp::parse(text)
        .map_err(|_| format!("{text:?} is not an instant; use RFC 3339, e.g. 2026-01-31T12:00:00Z"))
}

/// Reads a query vector: a JSON array of finite numbers, each read
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
    particles_engine::check_vector(&vector)
        .with_context(|| format!("vector file {}", path.display()))?;
    Ok(vector)
}

/// Validates a request with the reference's rules (a vector or no_embedding in
/// `envelope` standing in for the question), as a usage error naming every
/// failed field.
pub(crate) fn validate(request: QueryRequest, envelope: &Envelope) -> Result<ValidRequest> {
    request
        .validate_with(Timestamp::now(), envelope)
        .map_err(|errors| UsageError(format!("Invalid query request: {errors}")).into())
}

impl QueryArgs {
    /// The flags as the reference's request, with the subject as resolved.
    fn request(&self, subject_id: Option<String>) -> Result<QueryRequest> {
        Ok(QueryRequest {
            question: self.question.clone(),
            min_confidence: self.min_confidence,
            uncertainty_nature: self.uncertainty_nature,
            assertion_modality: query_flags::assertion_modality(
                self.assertion_modality.as_deref(),
            )?,
            audience: query_flags::audience(&self.audience)?,
            grounded: match (self.grounded, self.ungrounded) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            recency_window_days: self.recency_window_days,
            top_k: self.top_k,
            subject_id,
            tags: self.tags.clone(),
            include_ancestors: self.include_ancestors,
            include_document_meta: self.include_document_meta,
            include_non_asserted: self.include_non_asserted,
            as_of: self.as_of,
            window: self.during.or(self.on),
            predicate: self.predicate.clone(),
            object_eq: self.object_eq.clone(),
            object_gt: self.object_gt.clone(),
            object_lt: self.object_lt.clone(),
            object_contains: self.object_contains.clone(),
            include_agreement: self.include_agreement,
            include_contestedness: self.contestedness,
            observer_project: self.observer_project.clone(),
            ..QueryRequest::default()
        })
    }

    /// The envelope: a vector from a file, or none (the engine encodes the
    /// question, unless `--no-embedding`).
    fn envelope(&self) -> Result<Envelope> {
        Ok(Envelope {
            vector: match &self.vector_file {
                Some(path) => Some(read_vector_file(path)?),
                None => None,
            },
            no_embedding: self.no_embedding,
            now: self.now,
            recall: particles_model::RecallOptions {
                apply_utility: self.apply_utility,
                apply_owner: self.apply_owner,
                exclude_source_tags: self.exclude_source_tag.clone(),
                code_symbol_rank_weight: self.code_symbol_rank_weight.unwrap_or(1.0),
            },
        })
    }
}

pub(crate) fn run(args: QueryArgs, config: &crate::config_cmd::Configured) -> Result<()> {
    query_flags::note_remote_mode(config);
    // The reference's order: the subject, the modality, then the request.
    let subject = match &args.subject_id {
        Some(id) => Some(id.clone()),
        None => query_flags::subject(args.subject.as_deref(), &args.stores, config)?,
    };
    let mut raw = args.request(subject)?;
    let during_and_on = args.during.is_some() && args.on.is_some();
    crate::structural_cmd::prepare(&args.structural, during_and_on, &mut raw)?;
    let envelope = args.envelope()?;
    let request = validate(raw, &envelope)?;
    let selection = config.stores(&args.stores)?;
    let structural = request.mode() != particles_model::Mode::Semantic;
    if structural && selection.federated {
        return Err(UsageError(
            "the structural modes (listings, aggregates, vocabulary) run on one store; \
             pass one --store PATH (federating them is not supported yet)"
                .into(),
        )
        .into());
    }
    let layout = args.show_particles || args.show_source || (args.contestedness && !args.json);
    if layout
        && args.show_source
        && !args.stores.is_empty()
        && selection.targets.iter().any(|t| t.handle.is_some())
    {
        // The reference's refusal: passages are read from the one store that
        // holds a hit, and a handle federates.
        return Err(UsageError(
            "--show-source is not available with --store federation; run `particles particle \
             source <id>` against the store holding the hit."
                .into(),
        )
        .into());
    }
    // A one-shot process queries through caches that start from the sidecars: a
    // warm start when a sidecar is current, a delta or a build (written back after
    // the answer is printed) otherwise. Subject calls never build; as-of and window
    // queries use their own loaders.
    let engine = crate::engine::build(
        config,
        &selection,
        &args.sidecar,
        args.model.model_dir.as_deref(),
        crate::engine::Lifetime::OneShot,
    )?;
    let detail = if args.response_json || (layout && !structural) {
        Detail::Response
    } else {
        Detail::Ranking
    };
    let answered = engine
        .ask(&request, &envelope, detail)
        .map_err(|error| engine_error(error, &selection))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match &answered.outcome {
        // A deterministic mode: its response is the whole answer.
        None if args.response_json => {
            serde_json::to_writer(&mut out, &answered.response)?;
            writeln!(out)?;
        }
        None => {
            crate::structural_cmd::print(&mut out, &answered.response, args.json, &args.structural)?
        }
        Some(_) if args.response_json => {
            serde_json::to_writer(&mut out, &answered.response)?;
            writeln!(out)?;
        }
        Some(_) if layout => {
            let layout = crate::reference_text::Layout {
                show_particles: args.show_particles,
                contestedness: args.contestedness,
                as_of: request.as_of.is_some(),
                now: answered.now,
            };
            crate::response::print_text(
                &mut out,
                &engine,
                &answered.response,
                &layout,
                args.show_source.then_some(&selection.targets[0].path),
                config,
            )?;
        }
        Some(outcome) => {
            warn_about(outcome, &request, &store_label(&selection));
            if args.json {
                output::write_json(&mut out, &answered, &request, engine.cache_report())?;
            } else {
                output::write_table(&mut out, outcome, answered.now)?;
            }
        }
    }
    out.flush()?;
    drop(out);
    // After the answer: the next process starts from this state.
    for note in engine.persist() {
        eprintln!("note: {note}");
    }
    Ok(())
}

/// Where the answer's warnings point: the stores' names.
pub(crate) fn store_label(selection: &particles_engine::StoreSelection) -> String {
    selection
        .targets
        .iter()
        .map(particles_engine::StoreTarget::name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The engine's error as the CLI reports it: a mode it cannot run, or a
/// vector of the wrong shape, is a usage error (exit 2); the rest name the
/// stores the query failed on.
pub(crate) fn engine_error(
    error: particles_engine::Error,
    selection: &particles_engine::StoreSelection,
) -> anyhow::Error {
    match error {
        particles_engine::Error::Query(particles_query::Error::UnsupportedMode { .. }) => {
            anyhow::Error::new(UsageError(error.to_string()))
        }
        particles_engine::Error::Encode(message) => anyhow::anyhow!(message),
        error => {
            anyhow::Error::new(error).context(format!("query on {} failed", store_label(selection)))
        }
    }
}

/// The warnings a person should see beside the answer (stderr).
pub(crate) fn warn_about(outcome: &QueryOutcome, request: &ValidRequest, store: &str) {
    if outcome.stats.skipped_other_model > 0 {
        eprintln!(
            "warning: skipped {} ACTIVE belief(s) embedded by another model than {}; re-embed them to make them searchable",
            outcome.stats.skipped_other_model,
            particles_model::EMBEDDING_MODEL_ID
        );
    }
    for tag in &outcome.unknown_tags {
        eprintln!(
            "warning: --tag {tag:?}: no taxonomy in {store} defines this tag and no belief carries it, so it matches nothing"
        );
    }
    if let (Some(false), Some(subject)) = (outcome.subject_linked, &request.subject_id) {
        eprintln!("warning: no belief in {store} is linked to subject {subject:?}");
    }
    if !outcome.not_applied.is_empty() {
        eprintln!(
            "note: accepted but not applied by this engine yet: {}",
            outcome.not_applied.join(", ")
        );
    }
}
