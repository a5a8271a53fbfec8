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
    #[command(flatten)]
    model: crate::encode::ModelDirArg,
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
    let lines = read_lines(&args.file)?;
    let now = particles_model::Timestamp::now();
    let (prepared, bad) = prepare_lines(&args.file, &lines, now);
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
    let encoder = load_encoder(args.model.model_dir.as_deref())?;
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
    let mut import = Import {
        encoder: &*encoder,
        now,
        written: 0,
        present: 0,
        known_subjects: HashMap::new(),
    };
    let reader = particles_store::Store::open_read_only(&args.store)?;
    for batch in prepared.chunks(args.batch_size) {
        import.batch(&mut writer, &reader, batch)?;
        bar.inc(batch.len() as u64);
    }
    bar.finish_and_clear();
    println!(
        "{}: {} {} belief(s) from {}{}{}",
        args.store.display(),
        if created {
            "created the store and imported"
        } else {
            "imported"
        },
        import.written,
        args.file.display(),
        if import.present == 0 {
            String::new()
        } else {
            format!("; skipped {} already in the store", import.present)
        },
        if bad.is_empty() {
            String::new()
        } else {
            format!("; skipped {} bad line(s)", bad.len())
        }
    );
    Ok(())
}

/// The file's lines, numbered from 1.
fn read_lines(path: &Path) -> Result<Vec<(usize, String)>> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    std::io::BufReader::new(file)
        .lines()
        .enumerate()
        .map(|(i, line)| line.map(|l| (i + 1, l)))
        .collect::<Result<_, _>>()
        .with_context(|| format!("cannot read {}", path.display()))
}

/// The beliefs of the non-blank lines, and a message for each bad line.
fn prepare_lines(
    path: &Path,
    lines: &[(usize, String)],
    now: Timestamp,
) -> (Vec<Prepared>, Vec<String>) {
    let mut prepared = Vec::new();
    let mut bad = Vec::new();
    // The first line with an id wins; a later one is a bad line naming it, so
    // one repeat cannot abort the batch around it.
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for (number, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        match prepare(line, now) {
            Ok(p) => match first_line.get(&p.particle.id) {
                Some(first) => bad.push(format!(
                    "{}:{number}: id {} is line {first}'s too (without \"id\" a line's id \
                     derives from its content, so repeated content repeats it)",
                    path.display(),
                    p.particle.id
                )),
                None => {
                    first_line.insert(p.particle.id.clone(), *number);
                    prepared.push(p);
                }
            },
            Err(reason) => bad.push(format!("{}:{number}: {reason}", path.display())),
        }
    }
    (prepared, bad)
}

/// An import under way: the encoder, the counts so far, and the subjects
/// already written.
struct Import<'e> {
    encoder: &'e EncodeFn,
    now: Timestamp,
    written: usize,
    /// Beliefs skipped because the store has them.
    present: usize,
    known_subjects: HashMap<String, String>,
}

impl Import<'_> {
    /// One batch: its new beliefs embedded and written in one transaction.
    fn batch(
        &mut self,
        writer: &mut particles_store::Writer,
        reader: &particles_store::Store,
        batch: &[Prepared],
    ) -> Result<()> {
        // Beliefs already in the store (a re-run of an import, or a belief
        // another writer added) are skipped and counted: looked up before
        // encoding, so a re-run costs no encoder time, and again under the write
        // lock, so a concurrent insert cannot surface as a UNIQUE failure.
        let ids: Vec<&str> = batch.iter().map(|p| p.particle.id.as_str()).collect();
        let found = particles_store::existing_particle_ids(reader, &ids)?;
        let absent: Vec<&Prepared> = batch
            .iter()
            .filter(|p| !found.contains(&p.particle.id))
            .collect();
        self.present += batch.len() - absent.len();
        let texts: Vec<&str> = absent.iter().map(|p| p.particle.content.as_str()).collect();
        let vectors = if texts.is_empty() {
            Vec::new()
        } else {
            (self.encoder)(&texts)
        };
        let tx = writer.transaction()?;
        for (item, vector) in absent.into_iter().zip(&vectors) {
            if tx.contains(&item.particle.id)? {
                self.present += 1;
                continue;
            }
            self.write(&tx, item, vector)?;
            self.written += 1;
        }
        tx.commit()?;
        Ok(())
    }

    /// One belief: its new subjects, its source's entry and snapshot, the
    /// belief, and its co-evidential relations.
    fn write(
        &mut self,
        tx: &particles_store::WriteTransaction<'_>,
        item: &Prepared,
        vector: &[f32],
    ) -> Result<()> {
        let now = self.now;
        for (id, name) in &item.subjects {
            if self
                .known_subjects
                .insert(id.clone(), name.clone())
                .is_none()
            {
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
        Ok(())
    }
}

/// Turns a batch of beliefs' texts into their vectors, in order.
type EncodeFn = dyn Fn(&[&str]) -> Vec<Vec<f32>>;

#[cfg(feature = "encoder")]
fn load_encoder(model_dir: Option<&Path>) -> Result<Box<EncodeFn>> {
    let encoder =
        particles_embed::Encoder::load_located(&particles_embed::locate_model(model_dir))?;
    // One batch on every core: the texts are packed and shared out by the encoder.
    Ok(Box::new(move |texts| encoder.encode_batch(texts)))
}

#[cfg(not(feature = "encoder"))]
fn load_encoder(_model_dir: Option<&Path>) -> Result<Box<EncodeFn>> {
    anyhow::bail!(
        "import embeds every belief and this build has no encoder (the `encoder` feature is off)"
    )
}
