//! Seeded synthetic stores in the reference's schema and shape.
//!
//! Scoring cost does not depend on the text, so rows carry random unit vectors and
//! filler prose; what matches the reference generator is the *shape*: the counts
//! per size, subjects per row (Zipf 0.8 over the subject pool), corpus fan-out, the
//! non-ACTIVE share, property and claim shares, confidences, the embedding JSON
//! format (float32 widened and written as Python's `repr`), co-evidential pairs
//! within 5,000-row chunks, the change journal filled by the triggers. The rows are
//! written through the store writer, so column formats are the production ones.
//!
//! Rows are not the reference's (its NumPy streams cannot be replayed outside
//! Python); side-by-side runs use the reference generator's own store files.

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
    time::Instant,
};

use particles_model::{
    AssertionModality, CalibrationSource, CanonicalForm, ClaimTerm, Confidence, ExtractorRef,
    Particle, ParticleType, ProvenanceRef, ProvenanceRefType, Status, StatusReason,
    StructuredClaim, TermKind, Timestamp, UncertaintyNature, ValidKind, EMBEDDING_DIM,
};
use particles_store::{CorpusEntryRow, OnConflict, RelationRow, SnapshotRow, SubjectRow};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{io_error, write_json, Result};

/// Who the generator's rows say wrote them (the reference generator's name).
const GENERATOR_NAME: &str = "query-latency-generator";

/// This generator's version; a new shape gets a new file name.
pub(crate) const GENERATOR_VERSION: &str = "rs1";
const CHUNK: usize = 5000;
/// 2023-01-01T00:00:00Z, the start of the asserted-at span.
const EPOCH_MICROS: i64 = 1_672_531_200_000_000;
const SPAN_DAYS: f64 = 1095.0;

/// Filler vocabulary (54 words, as many as the reference's list).
const WORDS: [&str; 54] = [
    "archive", "belief", "cache", "claim", "client", "config", "corpus", "decision", "default",
    "deploy", "digest", "document", "engine", "export", "extract", "field", "filter", "graph",
    "index", "ingest", "journal", "lens", "ledger", "memory", "model", "network", "operator",
    "owner", "particle", "pipeline", "policy", "project", "query", "ranking", "record", "release",
    "review", "runtime", "schema", "session", "snapshot", "source", "store", "subject", "suite",
    "table", "token", "trust", "update", "vector", "version", "window", "worker", "world",
];

/// A small, fast, seedable generator (SplitMix64 seeding a xoshiro256**).
pub(crate) struct Rng {
    state: [u64; 4],
    spare_normal: Option<f64>,
}

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng {
            state: [next(), next(), next(), next()],
            spare_normal: None,
        }
    }

    fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn random(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in `[low, high)`.
    pub(crate) fn integers(&mut self, low: u64, high: u64) -> u64 {
        low + (self.random() * (high - low) as f64) as u64
    }

    fn uniform(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.random()
    }

    /// A standard normal draw (Box-Muller, pairs cached).
    pub(crate) fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare_normal.take() {
            return z;
        }
        let u1 = 1.0 - self.random();
        let u2 = self.random();
        let radius = (-2.0 * u1.ln()).sqrt();
        let angle = std::f64::consts::TAU * u2;
        self.spare_normal = Some(radius * angle.sin());
        radius * angle.cos()
    }

    fn uuid(&mut self) -> String {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&self.next_u64().to_le_bytes());
        bytes[8..].copy_from_slice(&self.next_u64().to_le_bytes());
        particles_model::uuid_text(bytes, 4)
    }

    /// A random unit vector in f32 (normalised in f32).
    pub(crate) fn unit_vector(&mut self) -> Vec<f32> {
        let mut values: Vec<f32> = (0..EMBEDDING_DIM).map(|_| self.normal() as f32).collect();
        let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
        values.iter_mut().for_each(|v| *v /= norm);
        values
    }
}

/// Python's `round` (half to even) of `x` to an integer.
fn round_half_even(x: f64) -> u64 {
    let floor = x.floor();
    let diff = x - floor;
    let rounded = if (diff - 0.5).abs() < f64::EPSILON {
        if (floor as u64).is_multiple_of(2) {
            floor
        } else {
            floor + 1.0
        }
    } else {
        x.round()
    };
    rounded.max(0.0) as u64
}

/// The row counts of a store of `size` ACTIVE beliefs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counts {
    pub(crate) active: u64,
    pub(crate) inactive: u64,
    pub(crate) subjects: u64,
    pub(crate) entries: u64,
    pub(crate) snapshots: u64,
    pub(crate) relations: u64,
}

pub(crate) fn plan_counts(size: u64) -> Counts {
    let entries = round_half_even(size as f64 / 82.0).max(1);
    Counts {
        active: size,
        inactive: round_half_even(size as f64 * 0.204),
        subjects: round_half_even(size as f64 * 0.2584).max(1),
        entries,
        snapshots: round_half_even(size as f64 / 32.0).max(entries),
        relations: round_half_even(size as f64 * 0.0129),
    }
}

/// The manifest beside a store, in the reference's `StoreManifest` shape (plus the
/// generator's name).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct StoreManifest {
    pub(crate) seed: u64,
    pub(crate) size: u64,
    pub(crate) generator_version: String,
    pub(crate) active: u64,
    pub(crate) inactive: u64,
    pub(crate) subjects: u64,
    pub(crate) subject_links: u64,
    pub(crate) corpus_entries: u64,
    pub(crate) snapshots: u64,
    pub(crate) relations: u64,
    pub(crate) embedding_json_bytes: u64,
    pub(crate) db_bytes: u64,
    pub(crate) build_seconds: f64,
    pub(crate) embedding_model_id: String,
    pub(crate) fingerprint: String,
    pub(crate) query_subjects: Vec<(String, u64)>,
}

/// The file name of a generated store.
pub(crate) fn store_file_name(seed: u64, size: u64) -> String {
    format!("qlat-s{seed}-n{size}-{GENERATOR_VERSION}.db")
}

fn timestamp(micros: i64) -> Timestamp {
    Timestamp::from_utc_micros(micros).expect("generated instants lie within years 1..=9999")
}

fn sentence(rng: &mut Rng) -> String {
    let target = (103.0 + 30.0 * rng.normal()).clamp(30.0, 240.0) as usize;
    let mut words = Vec::new();
    let mut length = 0;
    while length < target {
        let word = WORDS[rng.integers(0, WORDS.len() as u64) as usize];
        length += word.len() + 1;
        words.push(word);
    }
    let mut text = words.join(" ");
    if let Some(first) = text.get(..1) {
        let upper = first.to_uppercase();
        text.replace_range(..1, &upper);
    }
    text.push('.');
    text
}

const SUBJECT_COUNT_WEIGHTS: [f64; 7] = [0.051, 0.683, 0.218, 0.036, 0.0076, 0.0027, 0.0022];

/// Builds the `(seed, size)` store at `path` (through a `.building` file renamed
/// into place) and writes its manifest beside it. `progress` gets `(rows done,
/// rows total)` after each chunk.
pub(crate) fn build_store(
    path: &Path,
    seed: u64,
    size: u64,
    mut progress: impl FnMut(u64, u64),
) -> Result<StoreManifest> {
    let started = Instant::now();
    let building = path.with_extension("building");
    let _ = std::fs::remove_file(&building);
    let counts = plan_counts(size);
    let mut rng = Rng::new(seed ^ size.rotate_left(32) ^ 0x5151);
    let mut writer = particles_store::create_store(&building)?;
    // A throwaway file until the rename below: durability would only cost time.
    writer.disable_durability()?;

    let pools = Pools::draw(&mut rng, counts);
    let tally = Tally::new(&mut rng, counts);
    let mut builder = Builder {
        rng,
        pools,
        tally,
        created: timestamp(EPOCH_MICROS),
    };
    builder.write_sources(&mut writer)?;

    let total = counts.active + counts.inactive;
    let mut done: u64 = 0;
    while done < total {
        let n = CHUNK.min((total - done) as usize);
        builder.write_chunk(&mut writer, done, n, total)?;
        done += n as u64;
        progress(done, total);
    }
    let linked = builder.write_subjects(&mut writer)?;
    drop(writer);
    let embedding_bytes = particles_store::active_embedding_json_length(
        &particles_store::Store::open_read_only(&building)?,
    )?;
    std::fs::rename(&building, path).map_err(io_error("move the built store to", path))?;
    let Builder { pools, tally, .. } = builder;
    let query_subjects = tally.query_subjects(&pools.subjects);
    let manifest = StoreManifest {
        seed,
        size,
        generator_version: GENERATOR_VERSION.to_owned(),
        active: counts.active,
        inactive: counts.inactive,
        subjects: linked.len() as u64,
        subject_links: tally.subject_links,
        corpus_entries: counts.entries,
        snapshots: counts.snapshots,
        relations: tally.relations_written,
        embedding_json_bytes: embedding_bytes,
        db_bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        build_seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        embedding_model_id: particles_model::EMBEDDING_MODEL_ID.to_owned(),
        fingerprint: format!("{:x}", tally.fingerprint.finalize()),
        query_subjects,
    };
    write_json(&manifest_path(path), &manifest)?;
    Ok(manifest)
}

/// The ids rows point at: corpus entries, their snapshots (and the entry each
/// belongs to: one snapshot per entry first, the rest at random), and the
/// subject pool with its Zipf 0.8 CDF.
struct Pools {
    entries: Vec<String>,
    snapshots: Vec<String>,
    snapshot_entry: Vec<usize>,
    subjects: Vec<String>,
    subject_cdf: Vec<f64>,
}

impl Pools {
    fn draw(rng: &mut Rng, counts: Counts) -> Pools {
        let entries: Vec<String> = (0..counts.entries).map(|_| rng.uuid()).collect();
        let snapshots: Vec<String> = (0..counts.snapshots).map(|_| rng.uuid()).collect();
        let snapshot_entry: Vec<usize> = (0..counts.snapshots as usize)
            .map(|j| {
                if j < entries.len() {
                    j
                } else {
                    rng.integers(0, counts.entries) as usize
                }
            })
            .collect();
        let subjects: Vec<String> = (0..counts.subjects).map(|_| rng.uuid()).collect();
        let subject_cdf = zipf_cdf(subjects.len());
        Pools {
            entries,
            snapshots,
            snapshot_entry,
            subjects,
            subject_cdf,
        }
    }
}

/// The cumulative Zipf 0.8 weights of `n` ranks (the last exactly 1).
fn zipf_cdf(n: usize) -> Vec<f64> {
    let weights: Vec<f64> = (1..=n).map(|r| 1.0 / (r as f64).powf(0.8)).collect();
    let total: f64 = weights.iter().sum();
    let mut running = 0.0;
    let mut cdf: Vec<f64> = weights
        .iter()
        .map(|w| {
            running += w / total;
            running
        })
        .collect();
    if let Some(last) = cdf.last_mut() {
        *last = 1.0;
    }
    cdf
}

/// What the row loop counts for the manifest and the relation budget.
struct Tally {
    remaining_active: u64,
    active_seen: u64,
    relation_budget: u64,
    relations_written: u64,
    fingerprint: Sha256,
    subject_links: u64,
    linked_active: HashSet<usize>,
    active_subject_rows: std::collections::HashMap<usize, u64>,
    /// The sampled ACTIVE positions whose first subject the subject variant asks
    /// about, to their order in the sample.
    sample_order: std::collections::HashMap<u64, usize>,
    /// The first subject of each sampled position, once written.
    sampled: Vec<Option<usize>>,
}

impl Tally {
    fn new(rng: &mut Rng, counts: Counts) -> Tally {
        let size = counts.active;
        let sample_count = size.min(256) as usize;
        let mut sample: Vec<u64> = Vec::with_capacity(sample_count);
        let mut seen_positions = HashSet::new();
        while sample.len() < sample_count {
            let position = rng.integers(0, size);
            if seen_positions.insert(position) {
                sample.push(position);
            }
        }
        let sample_order = sample
            .iter()
            .enumerate()
            .map(|(order, &pos)| (pos, order))
            .collect();
        Tally {
            remaining_active: counts.active,
            active_seen: 0,
            relation_budget: counts.relations,
            relations_written: 0,
            fingerprint: Sha256::new(),
            subject_links: 0,
            linked_active: HashSet::new(),
            active_subject_rows: std::collections::HashMap::new(),
            sample_order,
            sampled: vec![None; sample_count],
        }
    }

    /// Counts an ACTIVE row's subjects, and its first one if its position was sampled.
    fn note_active(&mut self, subject_indices: &[usize]) {
        for &index in subject_indices {
            self.linked_active.insert(index);
            *self.active_subject_rows.entry(index).or_default() += 1;
        }
        if let Some(&order) = self.sample_order.get(&self.active_seen) {
            self.sampled[order] = subject_indices.first().copied();
        }
        self.active_seen += 1;
    }

    /// The manifest's query subjects: up to 64 sampled first subjects, each with
    /// its count of ACTIVE rows.
    fn query_subjects(&self, subjects: &[String]) -> Vec<(String, u64)> {
        self.sampled
            .iter()
            .flatten()
            .take(64)
            .map(|&index| {
                (
                    subjects[index].clone(),
                    self.active_subject_rows.get(&index).copied().unwrap_or(0),
                )
            })
            .collect()
    }
}

/// A store being written: the seeded draws, the pools and the tally.
struct Builder {
    rng: Rng,
    pools: Pools,
    tally: Tally,
    /// When the generator's own rows (entries, snapshots, subjects, relations)
    /// say they were made.
    created: Timestamp,
}

impl Builder {
    /// The corpus entries and their snapshots, in one transaction.
    fn write_sources(&mut self, writer: &mut particles_store::Writer) -> Result<()> {
        let created = self.created;
        let tx = writer.transaction()?;
        for (i, entry) in self.pools.entries.iter().enumerate() {
            let uri = format!("file:///synthetic/source-{i}.md");
            tx.insert_corpus_entry(
                &CorpusEntryRow {
                    entry_id: entry,
                    uri_r: Some(&uri),
                    source_type: if i % 4 == 0 {
                        "LOCAL_MARKDOWN"
                    } else {
                        "CONVERSATION"
                    },
                    mutability: "STABLE",
                    fetch_policy: "NEVER",
                    created_at: created,
                    deposited_by: GENERATOR_NAME,
                    tags_json: "[]",
                },
                OnConflict::Abort,
            )?;
        }
        for (j, snapshot) in self.pools.snapshots.iter().enumerate() {
            let rng = &mut self.rng;
            let published = (rng.random() < 0.79)
                .then(|| timestamp(EPOCH_MICROS + (rng.uniform(0.0, SPAN_DAYS) * 86_400e6) as i64));
            let hash = format!("{:x}", Sha256::digest(snapshot.as_bytes()));
            tx.insert_snapshot(
                &SnapshotRow {
                    snapshot_id: snapshot,
                    entry_id: &self.pools.entries[self.pools.snapshot_entry[j]],
                    captured_at: created,
                    content_hash: &hash,
                    warc_record_type: "RESPONSE",
                    extraction_status: "COMPLETE",
                    content_published_at: published,
                    author_id: None,
                    extraction_attempts: 1,
                    resume_whole: false,
                },
                OnConflict::Abort,
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Rows `done..done + n` of `total`, then the chunk's co-evidential pairs, in
    /// one transaction.
    fn write_chunk(
        &mut self,
        writer: &mut particles_store::Writer,
        done: u64,
        n: usize,
        total: u64,
    ) -> Result<()> {
        let tx = writer.transaction()?;
        let mut chunk_active_ids: Vec<String> = Vec::new();
        for i in 0..n {
            let left = total - (done + i as u64);
            if let Some(id) = self.write_row(&tx, left)? {
                chunk_active_ids.push(id);
            }
        }
        // Co-evidential pairs among this chunk's ACTIVE rows.
        self.write_relations(&tx, &chunk_active_ids)?;
        tx.commit()?;
        Ok(())
    }

    /// One row, ACTIVE with the chance that leaves the count exact after the
    /// `left` rows still to write; its id when it is ACTIVE.
    fn write_row(
        &mut self,
        tx: &particles_store::WriteTransaction<'_>,
        left: u64,
    ) -> Result<Option<String>> {
        let vector = self.rng.unit_vector();
        let active = self.rng.random() < self.tally.remaining_active as f64 / left as f64;
        if active {
            self.tally.remaining_active -= 1;
        }
        let (particle, subject_indices) = random_particle(&mut self.rng, &self.pools, active);
        let mut active_id = None;
        if active {
            self.tally.note_active(&subject_indices);
            active_id = Some(particle.id.clone());
        }
        self.tally.subject_links += particle.subject_ids.len() as u64;
        self.tally.fingerprint.update(particle.id.as_bytes());
        let retired = particle.status != Status::Active;
        let asserted = particle.asserted_at;
        let valid =
            particles_model::validate(particle, |p| format!("generated particle {}", p.id))?;
        tx.insert(&valid, Some(&vector))?;
        if retired {
            // Born retired: dated at its assertion, as the reference's generator does.
            tx.set_retired_at(&valid.id, asserted)?;
        }
        Ok(active_id)
    }

    /// Distinct random pairs of the chunk's ACTIVE rows, as many as the chunk's
    /// share of the relation budget.
    fn write_relations(
        &mut self,
        tx: &particles_store::WriteTransaction<'_>,
        chunk_active_ids: &[String],
    ) -> Result<()> {
        let rng = &mut self.rng;
        let want = self
            .tally
            .relation_budget
            .min(round_half_even(chunk_active_ids.len() as f64 * 0.0129));
        let mut pairs = HashSet::new();
        for _ in 0..want {
            if chunk_active_ids.len() < 2 {
                break;
            }
            let a = rng.integers(0, chunk_active_ids.len() as u64) as usize;
            let mut b = rng.integers(0, chunk_active_ids.len() as u64 - 1) as usize;
            if b >= a {
                b += 1;
            }
            let (first, second) = (a.min(b), a.max(b));
            if pairs.insert((first, second)) {
                tx.insert_relation(
                    &RelationRow {
                        particle_a: &chunk_active_ids[first],
                        particle_b: &chunk_active_ids[second],
                        relation_type: "CO_EVIDENTIAL",
                        created_by: GENERATOR_NAME,
                        created_at: self.created,
                        confidence: 1.0,
                    },
                    OnConflict::Abort,
                )?;
                self.tally.relations_written += 1;
            }
        }
        self.tally.relation_budget -= want;
        Ok(())
    }

    /// The subjects some ACTIVE row names, in pool order; returns their indices.
    fn write_subjects(&self, writer: &mut particles_store::Writer) -> Result<Vec<usize>> {
        let tx = writer.transaction()?;
        let mut linked: Vec<usize> = self.tally.linked_active.iter().copied().collect();
        linked.sort_unstable();
        for index in &linked {
            let name = format!("subject {index}");
            tx.insert_subject(
                &SubjectRow {
                    id: &self.pools.subjects[*index],
                    canonical_name: &name,
                    aliases_json: "[]",
                    external_ids_json: "[]",
                    created_at: self.created,
                    asserted_by: GENERATOR_NAME,
                },
                OnConflict::Abort,
            )?;
        }
        tx.commit()?;
        Ok(linked)
    }
}

/// The manifest beside a store file.
pub(crate) fn manifest_path(store: &Path) -> PathBuf {
    store.with_extension("manifest.json")
}

/// The SHA-256 of every particle id in rowid order: a store's identity.
pub(crate) fn fingerprint(store: &Path) -> Result<String> {
    let store = particles_store::Store::open_read_only(store)?;
    let mut hasher = Sha256::new();
    particles_store::particle_ids_in_rowid_order(&store, |id| hasher.update(id.as_bytes()))?;
    Ok(format!("{:x}", hasher.finalize()))
}

/// One row's particle, ACTIVE or retired as `active` says, and the indices of
/// its subjects in the pool.
fn random_particle(rng: &mut Rng, pools: &Pools, active: bool) -> (Particle, Vec<usize>) {
    let subject_indices = random_subjects(rng, pools);
    let subject_ids: Vec<String> = subject_indices
        .iter()
        .map(|&i| pools.subjects[i].clone())
        .collect();
    let snapshot = rng.integers(0, pools.snapshots.len() as u64) as usize;
    let asserted_at =
        timestamp(EPOCH_MICROS + (rng.uniform(0.0, SPAN_DAYS * 86_400.0) * 1e6) as i64);
    let extraction = random_extraction(rng);
    let (status, status_reason) = random_status(rng, active);
    let structured_claim = (!subject_ids.is_empty() && rng.random() < 0.367)
        .then(|| random_claim(rng, &subject_ids, asserted_at));
    let modality_roll = rng.random();
    let assertion_modality = if modality_roll < 0.029 {
        AssertionModality::Constitutive
    } else if modality_roll < 0.032 {
        AssertionModality::Evaluative
    } else {
        AssertionModality::Falsifiable
    };
    let id = rng.uuid();
    let content = sentence(rng);
    let confidence = (rng.uniform(0.55, 0.98) * 100.0).round() / 100.0;
    let uncertainty_nature = if rng.random() < 0.005 {
        UncertaintyNature::Aleatory
    } else {
        UncertaintyNature::Epistemic
    };
    let version = format!("0.{}.0", rng.integers(12, 19));
    let particle = Particle {
        id,
        content,
        confidence: Confidence {
            value: confidence,
            variance: None,
            calibration_source: CalibrationSource::ExtractorDirect,
            calibration_method: None,
            calibration_ref: None,
        },
        uncertainty_nature,
        provenance: vec![ProvenanceRef {
            ref_type: ProvenanceRefType::Source,
            corpus_entry_id: pools.entries[pools.snapshot_entry[snapshot]].clone(),
            snapshot_id: Some(pools.snapshots[snapshot].clone()),
            location: None,
            chunk_hash: None,
        }],
        asserted_by: "general-extractor".into(),
        asserted_at,
        status,
        status_reason,
        schema_version: particles_model::SCHEMA_VERSION.into(),
        particle_type: ParticleType::Claim,
        assertion_modality,
        uncertainty_kind: None,
        valid_until: None,
        valid_from: extraction.valid_from,
        valid_kind: extraction.valid_kind,
        supersedes: None,
        basis: None,
        extractor_ref: Some(ExtractorRef {
            name: "general-extractor".into(),
            version,
        }),
        extraction_provider_model: None,
        sequence_context: None,
        subject_ids,
        tags: None,
        context_fingerprint: None,
        properties: extraction.properties,
        contributors: None,
        structured_claim,
        canonical_form: CanonicalForm::Prose,
        contested: None,
    };
    (particle, subject_indices)
}

/// How many subjects a row names (weighted as the reference's rows are), then
/// that many Zipf draws from the pool, repeats dropped.
fn random_subjects(rng: &mut Rng, pools: &Pools) -> Vec<usize> {
    let roll = rng.random();
    let total: f64 = SUBJECT_COUNT_WEIGHTS.iter().sum();
    let mut acc = 0.0;
    let mut k = SUBJECT_COUNT_WEIGHTS.len() - 1;
    for (count, weight) in SUBJECT_COUNT_WEIGHTS.iter().enumerate() {
        acc += weight / total;
        if roll < acc {
            k = count;
            break;
        }
    }
    let mut subject_indices: Vec<usize> = Vec::new();
    for _ in 0..k {
        let u = rng.random();
        let index = pools
            .subject_cdf
            .partition_point(|&c| c <= u)
            .min(pools.subjects.len() - 1);
        if !subject_indices.contains(&index) {
            subject_indices.push(index);
        }
    }
    subject_indices
}

/// A word of the filler vocabulary.
fn random_word(rng: &mut Rng) -> String {
    WORDS[rng.integers(0, WORDS.len() as u64) as usize].to_owned()
}

/// What an extractor left on a row: its properties, and the validity a dated
/// cue gave it.
struct Extraction {
    properties: Option<serde_json::Map<String, serde_json::Value>>,
    valid_from: Option<Timestamp>,
    valid_kind: Option<ValidKind>,
}

/// A row's extraction properties, in the reference's shares: gated subjects, a
/// document-meta scope, a hypothetical polarity, a coarse valid-from year, or
/// none.
fn random_extraction(rng: &mut Rng) -> Extraction {
    let mut properties = None;
    let mut valid_from = None;
    let mut valid_kind = None;
    let roll = rng.random();
    if roll < 0.145 {
        let gated = serde_json::json!([random_word(rng), random_word(rng)]);
        properties = Some(serde_json::Map::from_iter([(
            "extraction:gated_subjects".to_owned(),
            gated,
        )]));
    } else if roll < 0.164 {
        properties = Some(serde_json::Map::from_iter([(
            "extraction:scope".to_owned(),
            serde_json::json!("DOCUMENT_META"),
        )]));
    } else if roll < 0.179 {
        properties = Some(serde_json::Map::from_iter([(
            "extraction:polarity".to_owned(),
            serde_json::json!("HYPOTHETICAL"),
        )]));
    } else if roll < 0.216 {
        let year = rng.integers(1990, 2026);
        properties = Some(serde_json::Map::from_iter([
            (
                "extraction:valid_from_basis".to_owned(),
                serde_json::json!("coarse"),
            ),
            (
                "extraction:valid_from_cue".to_owned(),
                serde_json::json!(format!("in {year}")),
            ),
            (
                "extraction:valid_from_granularity".to_owned(),
                serde_json::json!("year"),
            ),
        ]));
        valid_from = Timestamp::parse(&format!("{year}-01-01T00:00:00")).ok();
        valid_kind = Some(ValidKind::State);
    }
    Extraction {
        properties,
        valid_from,
        valid_kind,
    }
}

/// ACTIVE, or a retired status and its reason in the reference's shares.
fn random_status(rng: &mut Rng, active: bool) -> (Status, Option<StatusReason>) {
    if active {
        return (Status::Active, None);
    }
    let roll = rng.random();
    if roll < 0.79 {
        (
            Status::ProvenanceStale,
            Some(StatusReason::RetractedDependency),
        )
    } else if roll < 0.935 {
        (Status::Superseded, Some(StatusReason::DuplicateMerged))
    } else {
        (Status::Retracted, Some(StatusReason::SourceRetracted))
    }
}

/// A structured claim of filler words about the row's first subject.
fn random_claim(rng: &mut Rng, subject_ids: &[String], asserted_at: Timestamp) -> StructuredClaim {
    let words: Vec<String> = (0..6).map(|_| random_word(rng)).collect();
    StructuredClaim {
        subject: ClaimTerm {
            kind: TermKind::Token,
            value: words[0].clone(),
            datatype: None,
            language: None,
        },
        predicate: ClaimTerm {
            kind: TermKind::Token,
            value: words[1..4].join(" "),
            datatype: None,
            language: None,
        },
        object: ClaimTerm {
            kind: TermKind::Literal,
            value: words[4..6].join(" "),
            datatype: None,
            language: None,
        },
        subject_id: subject_ids.first().cloned(),
        structurizer_id: "content-structurizer".into(),
        structurizer_version: "1.0.0".into(),
        generated_at: asserted_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_the_reference_plan() {
        let c = plan_counts(10_000);
        assert_eq!(
            (c.inactive, c.subjects, c.entries, c.snapshots, c.relations),
            (2040, 2584, 122, 312, 129)
        );
        let c = plan_counts(2_000);
        assert_eq!(
            (c.inactive, c.subjects, c.entries, c.snapshots, c.relations),
            (408, 517, 24, 62, 26)
        );
    }

    #[test]
    fn a_small_store_has_the_shape_and_a_stable_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join(store_file_name(7, 600));
        let manifest = build_store(&a, 7, 600, |_, _| {}).unwrap();
        assert_eq!(manifest.fingerprint, fingerprint(&a).unwrap());
        let store = particles_store::Store::open_read_only(&a).unwrap();
        assert_eq!(particles_store::count_active(&store).unwrap(), 600);
        assert!(particles_store::journal_installed(&store).unwrap());
        let b = dir.path().join("again.db");
        assert_eq!(
            build_store(&b, 7, 600, |_, _| {}).unwrap().fingerprint,
            manifest.fingerprint
        );
        assert!(!manifest.query_subjects.is_empty());
    }
}
