//! The `import` verb: beliefs from a JSON Lines file into a store (created when
//! missing, in the reference's schema with the change journal), validated through
//! the model, embedded in batches, written one transaction per batch.

use std::{
    collections::HashMap,
    io::BufRead,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use particles_model::{
    CalibrationSource, CanonicalForm, Confidence, ExtractorRef, Particle, ParticleType,
    ProvenanceRef, ProvenanceRefType, Status, Timestamp, UncertaintyNature,
};
use particles_store::{CorpusEntryRow, OnConflict, RelationRow, SnapshotRow, SubjectRow};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// Who the importer's rows say wrote them.
const IMPORTER: &str = "particles-rs import";

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// The store to write (created when missing). This WRITES the store.
    #[arg(long, value_name = "PATH")]
    store: PathBuf,
    /// One belief per line (see the README for the fields).
    #[arg(value_name = "FILE.jsonl")]
    file: PathBuf,
    /// Write nothing when any line is bad (default: skip bad lines and count them).
    #[arg(long)]
    strict: bool,
    /// Beliefs embedded and written per transaction.
    #[arg(long, default_value_t = 64, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    batch_size: usize,
    /// The encoder's model directory.
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,
}

/// One line of the import file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    /// The claim text.
    content: String,
    /// Confidence in 0..=1.
    confidence: f64,
    /// Stable id; default: derived from the content, so re-importing a line finds it.
    id: Option<String>,
    /// Subject names; each becomes a subject (id derived from the name).
    #[serde(default)]
    subjects: Vec<String>,
    /// Where the belief comes from.
    source_url: Option<String>,
    /// The source's `source_type` (default `WEB_PAGE` with a URL).
    source_type: Option<String>,
    /// When the source was published (ISO date or datetime).
    published: Option<String>,
    /// The author at the source.
    author: Option<String>,
    /// When the belief was asserted (default: now).
    asserted_at: Option<String>,
    /// The extractor's name (default `import`).
    extractor: Option<String>,
    /// `CLAIM` (default), `NARRATIVE`, ...
    #[serde(rename = "type")]
    particle_type: Option<ParticleType>,
    /// `EPISTEMIC` (default) or `ALEATORY`.
    uncertainty_nature: Option<UncertaintyNature>,
    /// Free properties.
    properties: Option<serde_json::Map<String, serde_json::Value>>,
    /// Tags.
    tags: Option<Vec<String>>,
    /// Ids of beliefs this one corroborates (CO_EVIDENTIAL relations).
    #[serde(default)]
    co_evidential_with: Vec<String>,
}

/// A deterministic id from a namespace and a name: the first 16 bytes of a SHA-256
/// digest as a version 8 UUID (RFC 9562's version for custom derivations).
fn derived_id(namespace: &str, name: &str) -> String {
    let digest = Sha256::digest(format!("particles-rs:{namespace}:{name}").as_bytes());
    let bytes: [u8; 16] = digest[..16].try_into().expect("a sha256 has 32 bytes");
    particles_model::uuid_text(bytes, 8)
}

/// A belief's source: the corpus entry (one per URL) and the snapshot.
struct Source {
    entry: String,
    snapshot: String,
    url: String,
    source_type: String,
    published: Option<Timestamp>,
    author: Option<String>,
}

struct Prepared {
    particle: garde::Valid<Particle>,
    source: Option<Source>,
    subjects: Vec<(String, String)>,
    co_evidential_with: Vec<String>,
}

fn prepare(line: &str, now: Timestamp) -> Result<Prepared, String> {
    let line: Line = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let timestamp = |field: &str, text: &Option<String>| -> Result<Option<Timestamp>, String> {
        text.as_deref()
            .map(|t| {
                Timestamp::parse(t)
                    .map_err(|_| format!("{field}: {t:?} is not an ISO 8601 date or datetime"))
            })
            .transpose()
    };
    let published = timestamp("published", &line.published)?;
    let asserted_at = timestamp("asserted_at", &line.asserted_at)?.unwrap_or(now);
    let id = line
        .id
        .clone()
        .unwrap_or_else(|| derived_id("particle", &line.content));
    let subjects: Vec<(String, String)> = line
        .subjects
        .iter()
        .map(|name| (derived_id("subject", name), name.clone()))
        .collect();
    let source = line.source_url.as_ref().map(|url| Source {
        entry: derived_id("entry", url),
        snapshot: derived_id(
            "snapshot",
            &format!("{url}|{}", line.published.clone().unwrap_or_default()),
        ),
        url: url.clone(),
        source_type: line
            .source_type
            .clone()
            .unwrap_or_else(|| "WEB_PAGE".into()),
        published,
        author: line.author.clone(),
    });
    let provenance = source
        .as_ref()
        .map(|s| ProvenanceRef {
            ref_type: ProvenanceRefType::Source,
            corpus_entry_id: s.entry.clone(),
            snapshot_id: Some(s.snapshot.clone()),
            location: None,
            chunk_hash: None,
        })
        .into_iter()
        .collect();
    let particle = Particle {
        id,
        content: line.content,
        confidence: Confidence {
            value: line.confidence,
            variance: None,
            calibration_source: CalibrationSource::Imported,
            calibration_method: None,
            calibration_ref: None,
        },
        uncertainty_nature: line
            .uncertainty_nature
            .unwrap_or(UncertaintyNature::Epistemic),
        provenance,
        asserted_by: IMPORTER.into(),
        asserted_at,
        status: Status::Active,
        status_reason: None,
        schema_version: particles_model::SCHEMA_VERSION.into(),
        particle_type: line.particle_type.unwrap_or(ParticleType::Claim),
        assertion_modality: particles_model::AssertionModality::Falsifiable,
        uncertainty_kind: None,
        valid_until: None,
        valid_from: None,
        valid_kind: None,
        supersedes: None,
        basis: None,
        extractor_ref: Some(ExtractorRef {
            name: line.extractor.unwrap_or_else(|| "import".into()),
            version: env!("CARGO_PKG_VERSION").into(),
        }),
        extraction_provider_model: None,
        sequence_context: None,
        subject_ids: subjects.iter().map(|(id, _)| id.clone()).collect(),
        tags: line.tags,
        context_fingerprint: None,
        properties: line.properties,
        contributors: None,
        structured_claim: None,
        canonical_form: CanonicalForm::Prose,
        contested: None,
    };
    let particle =
        particles_model::validate(particle, |_| "belief".into()).map_err(|e| match e {
            particles_model::Error::Invalid { report, .. } => {
                report.to_string().trim_end().replace('\n', "; ")
            }
            other => other.to_string(),
        })?;
    Ok(Prepared {
        particle,
        source,
        subjects,
        co_evidential_with: line.co_evidential_with,
    })
}

pub(crate) fn run(args: &ImportArgs) -> Result<()> {
    let file = std::fs::File::open(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let lines: Vec<(usize, String)> = std::io::BufReader::new(file)
        .lines()
        .enumerate()
        .map(|(i, line)| line.map(|l| (i + 1, l)))
        .collect::<Result<_, _>>()
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let now = particles_model::Timestamp::now();
    let mut prepared = Vec::new();
    let mut bad = Vec::new();
    for (number, line) in &lines {
        if line.trim().is_empty() {
            continue;
        }
        match prepare(line, now) {
            Ok(p) => prepared.push(p),
            Err(reason) => bad.push(format!("{}:{number}: {reason}", args.file.display())),
        }
    }
    for problem in bad.iter().take(20) {
        eprintln!("bad line {problem}");
    }
    if args.strict && !bad.is_empty() {
        anyhow::bail!(
            "{} bad line(s) in {}; nothing was written (--strict)",
            bad.len(),
            args.file.display()
        );
    }
    let encoder = load_encoder(args.model_dir.as_deref())?;
    let (mut writer, created) = if args.store.exists() {
        (particles_store::Writer::open(&args.store)?, false)
    } else {
        (particles_store::create_store(&args.store)?, true)
    };
    let bar = ProgressBar::new(prepared.len() as u64).with_style(
        ProgressStyle::with_template(
            "{prefix:>10} [{bar:30}] {pos}/{len} beliefs ({elapsed}, eta {eta})",
        )
        .expect("the template is valid")
        .progress_chars("=> "),
    );
    bar.set_prefix("importing");
    let mut written = 0;
    let mut known_subjects: HashMap<String, String> = HashMap::new();
    for batch in prepared.chunks(args.batch_size) {
        let texts: Vec<&str> = batch.iter().map(|p| p.particle.content.as_str()).collect();
        let vectors = encoder(&texts);
        let tx = writer.transaction()?;
        for (item, vector) in batch.iter().zip(&vectors) {
            for (id, name) in &item.subjects {
                if known_subjects.insert(id.clone(), name.clone()).is_none() {
                    // `{}` is what the importer has always written here; the
                    // reference iterates it as no identifiers, as it does `[]`.
                    tx.insert_subject(
                        &SubjectRow {
                            id,
                            canonical_name: name,
                            aliases_json: "[]",
                            external_ids_json: "{}",
                            created_at: now,
                            asserted_by: IMPORTER,
                        },
                        OnConflict::Ignore,
                    )?;
                }
            }
            if let Some(source) = &item.source {
                tx.insert_corpus_entry(
                    &CorpusEntryRow {
                        entry_id: &source.entry,
                        uri_r: Some(&source.url),
                        source_type: &source.source_type,
                        mutability: "STABLE",
                        fetch_policy: "NEVER",
                        created_at: now,
                        deposited_by: IMPORTER,
                        tags_json: "[]",
                    },
                    OnConflict::Ignore,
                )?;
                let content_hash = format!("{:x}", Sha256::digest(source.snapshot.as_bytes()));
                tx.insert_snapshot(
                    &SnapshotRow {
                        snapshot_id: &source.snapshot,
                        entry_id: &source.entry,
                        captured_at: now,
                        content_hash: &content_hash,
                        warc_record_type: "RESPONSE",
                        extraction_status: "COMPLETE",
                        content_published_at: source.published,
                        author_id: source.author.as_deref(),
                        extraction_attempts: 1,
                        resume_whole: false,
                    },
                    OnConflict::Ignore,
                )?;
            }
            tx.insert(&item.particle, Some(vector))?;
            for other in &item.co_evidential_with {
                let (a, b) = if item.particle.id <= *other {
                    (&item.particle.id, other)
                } else {
                    (other, &item.particle.id)
                };
                tx.insert_relation(
                    &RelationRow {
                        particle_a: a,
                        particle_b: b,
                        relation_type: "CO_EVIDENTIAL",
                        created_by: IMPORTER,
                        created_at: now,
                        confidence: 1.0,
                    },
                    OnConflict::Ignore,
                )?;
            }
            written += 1;
        }
        tx.commit()?;
        bar.inc(batch.len() as u64);
    }
    bar.finish_and_clear();
    println!(
        "{}: {} {written} belief(s) from {}{}",
        args.store.display(),
        if created {
            "created the store and imported"
        } else {
            "imported"
        },
        args.file.display(),
        if bad.is_empty() {
            String::new()
        } else {
            format!("; skipped {} bad line(s)", bad.len())
        }
    );
    Ok(())
}

/// Turns a batch of beliefs' texts into their vectors, in order.
type EncodeFn = dyn Fn(&[&str]) -> Vec<Vec<f32>>;

#[cfg(feature = "encoder")]
fn load_encoder(model_dir: Option<&Path>) -> Result<Box<EncodeFn>> {
    let encoder = particles_embed::Encoder::load(&particles_embed::model_dir(model_dir))?;
    // One batch on every core: the texts are packed and shared out by the encoder.
    Ok(Box::new(move |texts| encoder.encode_batch(texts)))
}

#[cfg(not(feature = "encoder"))]
fn load_encoder(_model_dir: Option<&Path>) -> Result<Box<EncodeFn>> {
    anyhow::bail!(
        "import embeds every belief and this build has no encoder (the `encoder` feature is off)"
    )
}
