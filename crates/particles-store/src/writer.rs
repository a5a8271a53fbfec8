//! Writing particles: insert, update, change status, rename, delete, in a
//! transaction that commits or rolls back as a whole; and the rows beside them
//! that importers and generators write (subjects, corpus entries, snapshots,
//! relations: [`crate::tables`]).
//!
//! Rows are encoded as the reference's `ParticleRow.from_model` encodes them (the same
//! columns, JSON text byte for byte, the content hash), with the subject, tag and
//! provenance edge rows its `insert_particle` writes. The writer never touches the
//! change journal: the store's triggers record every write. No SQL text crosses
//! this API: every statement is the writer's own.

use std::path::{Path, PathBuf};

use garde::Valid;
use particles_model::{Particle, Status, StatusReason, Timestamp, EMBEDDING_MODEL_ID};
use rusqlite::{params, Connection, OpenFlags, Transaction};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::{
    error::{query_error, Error, Result},
    pyjson,
    tables::{CorpusEntryRow, OnConflict, RelationRow, SnapshotRow, SubjectRow},
};

/// A store opened for writing. Only commands that say they write open one.
pub struct Writer {
    connection: Connection,
    path: PathBuf,
}

impl Writer {
    /// Opens an existing store for writing.
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`], [`Error::Open`], or [`Error::MissingTable`] when the file
    /// is not a Particles store.
    pub fn open(path: &Path) -> Result<Writer> {
        if !path.is_file() {
            return Err(Error::NotFound {
                path: path.to_owned(),
            });
        }
        let open_error = |source| Error::Open {
            path: path.to_owned(),
            source,
        };
        let connection = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(open_error)?;
        connection
            .busy_timeout(std::time::Duration::from_secs(30))
            .map_err(open_error)?;
        Writer::from_connection(connection, path.to_owned())
    }

    /// Wraps an open read-write connection.
    ///
    /// # Errors
    ///
    /// [`Error::MissingTable`] without a `particles` table.
    pub fn from_connection(connection: Connection, path: PathBuf) -> Result<Writer> {
        let has_particles: bool = connection
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'particles')",
                [],
                |row| row.get(0),
            )
            .map_err(|source| Error::Open {
                path: path.clone(),
                source,
            })?;
        if !has_particles {
            return Err(Error::MissingTable {
                path,
                table: "particles",
            });
        }
        Ok(Writer { connection, path })
    }

    /// The store path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for the journal's installer.
    pub(crate) fn connection_mut(&mut self) -> &mut Connection {
        &mut self.connection
    }

    /// Turns off the rollback journal and the syncs to disk on this connection
    /// (`journal_mode=OFF`, `synchronous=OFF`), for building a throwaway store
    /// fast: a crash, or a rolled-back transaction, may leave the file corrupt.
    /// Only for a file nobody reads before it is complete (the benchmark
    /// generator builds into a temporary name and renames it when done).
    ///
    /// # Errors
    ///
    /// [`Error::Query`] when SQLite refuses the pragmas (inside a transaction).
    pub fn disable_durability(&mut self) -> Result<()> {
        self.connection
            .execute_batch("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")
            .map_err(query_error("disable durability"))
    }

    /// Starts a write transaction (`BEGIN IMMEDIATE`, so it holds the write lock
    /// from the start and never fails half-way on a lock upgrade).
    ///
    /// # Errors
    ///
    /// [`Error::Query`] when the lock cannot be had within the busy timeout.
    pub fn transaction(&mut self) -> Result<WriteTransaction<'_>> {
        let transaction = self
            .connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(query_error("begin write transaction"))?;
        // Which edge tables exist is looked up once, not per row.
        let mut tables = Vec::new();
        for table in [
            "particle_subjects",
            "particle_tag_edges",
            "particle_provenance_edges",
        ] {
            let present: bool = transaction
                .query_row(
                    "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
                    [table],
                    |row| row.get(0),
                )
                .map_err(query_error("table probe"))?;
            if present {
                tables.push(table);
            }
        }
        Ok(WriteTransaction {
            transaction,
            tables,
        })
    }
}

/// One write transaction. Dropping it without [`WriteTransaction::commit`] rolls
/// every write back.
pub struct WriteTransaction<'c> {
    transaction: Transaction<'c>,
    /// The edge tables this store has.
    tables: Vec<&'static str>,
}

/// The column values of one particle row.
struct RowValues {
    values: Vec<rusqlite::types::Value>,
}

/// The columns the writer sets, in `RowValues` order.
const WRITE_COLUMNS: [&str; 38] = [
    "id",
    "content",
    "content_norm_hash",
    "confidence_value",
    "confidence_variance",
    "confidence_calibration_source",
    "confidence_calibration_method",
    "confidence_calibration_ref",
    "uncertainty_nature",
    "asserted_by",
    "asserted_at",
    "status",
    "status_reason",
    "schema_version",
    "particle_type",
    "assertion_modality",
    "valid_until",
    "valid_from",
    "valid_kind",
    "supersedes",
    "provenance_json",
    "extractor_ref_json",
    "extraction_provider_model",
    "embedding_json",
    "embedding_model_id",
    "subject_ids_json",
    "properties_json",
    "context_fingerprint",
    "tags_json",
    "contributors_json",
    "structured_claim_json",
    "structurizer_id",
    "structurizer_version",
    "structured_claim_generated_at",
    "canonical_form",
    "born_retired",
    "retired_at",
    "domain_hint",
];

fn text(value: impl Into<String>) -> rusqlite::types::Value {
    rusqlite::types::Value::Text(value.into())
}

fn opt_text(value: Option<impl Into<String>>) -> rusqlite::types::Value {
    value.map_or(rusqlite::types::Value::Null, text)
}

fn opt_time(value: Option<Timestamp>) -> rusqlite::types::Value {
    opt_text(value.map(|t| t.to_store_text()))
}

fn opt_real(value: Option<f64>) -> rusqlite::types::Value {
    value.map_or(rusqlite::types::Value::Null, rusqlite::types::Value::Real)
}

impl RowValues {
    fn encode(particle: &Particle, embedding: Option<&[f32]>) -> RowValues {
        use rusqlite::types::Value as Sql;
        let provenance: Vec<Value> = particle
            .provenance
            .iter()
            .map(|r| {
                json!({
                    "type": r.ref_type.as_str(),
                    "corpus_entry_id": r.corpus_entry_id,
                    "snapshot_id": r.snapshot_id,
                    "location": r.location,
                    "chunk_hash": r.chunk_hash,
                })
            })
            .collect();
        // An empty embedding is stored as NULL, never `[]`.
        let embedding = embedding.filter(|e| !e.is_empty());
        let claim = particle.structured_claim.as_ref();
        let claim_payload = claim.map(|c| {
            let term = |t: &particles_model::ClaimTerm| {
                let mut map = serde_json::Map::new();
                map.insert("kind".into(), json!(t.kind.as_str()));
                map.insert("value".into(), json!(t.value));
                if let Some(datatype) = &t.datatype {
                    map.insert("datatype".into(), json!(datatype));
                }
                if let Some(language) = &t.language {
                    map.insert("language".into(), json!(language));
                }
                Value::Object(map)
            };
            let mut payload = serde_json::Map::new();
            payload.insert("subject".into(), term(&c.subject));
            payload.insert("predicate".into(), term(&c.predicate));
            payload.insert("object".into(), term(&c.object));
            if let Some(subject_id) = &c.subject_id {
                payload.insert("subject_id".into(), json!(subject_id));
            }
            pyjson::dumps(&Value::Object(payload))
        });
        let values = vec![
            text(particle.id.clone()),
            text(particle.content.clone()),
            text(content_hash(&particle.content)),
            Sql::Real(particle.confidence.value),
            opt_real(particle.confidence.variance),
            text(particle.confidence.calibration_source.as_str()),
            opt_text(particle.confidence.calibration_method.clone()),
            opt_text(particle.confidence.calibration_ref.clone()),
            text(particle.uncertainty_nature.as_str()),
            text(particle.asserted_by.clone()),
            text(particle.asserted_at.to_store_text()),
            text(particle.status.as_str()),
            opt_text(particle.status_reason.map(|r| r.as_str())),
            text(particle.schema_version.clone()),
            text(particle.particle_type.as_str()),
            text(particle.assertion_modality.as_str()),
            opt_time(particle.valid_until),
            opt_time(particle.valid_from),
            opt_text(particle.valid_kind.map(|k| k.as_str())),
            opt_text(particle.supersedes.clone()),
            text(pyjson::dumps(&Value::Array(provenance))),
            opt_text(
                particle
                    .extractor_ref
                    .as_ref()
                    .map(|r| pyjson::dumps(&json!({"name": r.name, "version": r.version}))),
            ),
            opt_text(particle.extraction_provider_model.clone()),
            opt_text(embedding.map(pyjson::dumps_vector)),
            opt_text(embedding.map(|_| EMBEDDING_MODEL_ID)),
            text(pyjson::dumps(&json!(particle.subject_ids))),
            opt_text(
                particle
                    .properties
                    .as_ref()
                    .map(|p| pyjson::dumps(&Value::Object(p.clone()))),
            ),
            opt_text(particle.context_fingerprint.clone()),
            opt_text(particle.tags.as_ref().map(|t| pyjson::dumps(&json!(t)))),
            opt_text(particle.contributors.as_ref().map(|c| {
                pyjson::dumps(&Value::Array(
                    c.iter()
                        .map(|c| json!({"id": c.id, "role": c.role, "at": c.at.to_string()}))
                        .collect(),
                ))
            })),
            opt_text(claim_payload),
            opt_text(claim.map(|c| c.structurizer_id.clone())),
            opt_text(claim.map(|c| c.structurizer_version.clone())),
            opt_time(claim.map(|c| c.generated_at)),
            text(particle.canonical_form.as_str()),
            // Born retired: the two non-ACTIVE births the reference records as never
            // believed.
            Sql::Integer(i64::from(matches!(
                particle.status,
                Status::Inconsistency | Status::ProvenanceStale
            ))),
            // retired_at: the reference's insert leaves it unset; status changes stamp it.
            Sql::Null,
            Sql::Null,
        ];
        RowValues { values }
    }
}

/// The reference's `content_hash`: SHA-256 of the content after NFC, typographic
/// folding (quotes dropped or folded, dashes, ellipsis, invisible marks), whitespace
/// collapsing and trimming of trailing punctuation.
pub fn content_hash(content: &str) -> String {
    let mut folded = String::with_capacity(content.len());
    for ch in particles_pytext::nfc(content).chars() {
        match ch {
            '"' | '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' | '\u{ab}' | '\u{bb}'
            | '\u{2039}' | '\u{203a}' | '\u{300c}' | '\u{300d}' | '\u{300e}' | '\u{300f}'
            | '\u{ff02}' | '\u{200b}' | '\u{2060}' | '\u{feff}' | '\u{ad}' => {}
            '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' => folded.push('\''),
            '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
            | '\u{2212}' => folded.push('-'),
            '\u{2026}' => folded.push_str("..."),
            other => folded.push(other),
        }
    }
    // Python's str.split(): `str.isspace()`, which also holds for the information
    // separators U+001C..U+001F.
    let is_space = particles_pytext::is_space;
    let collapsed = folded
        .split(is_space)
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let trimmed = collapsed
        .trim_end_matches(['.', ',', ';', ':', '!', '?', '"', '\''])
        .trim_end_matches(is_space);
    format!("{:x}", Sha256::digest(trimmed.as_bytes()))
}

impl WriteTransaction<'_> {
    /// Whether a particle with this id is in the store. Inside the transaction,
    /// which holds the write lock, the answer stays true until it commits.
    ///
    /// # Errors
    ///
    /// [`Error::Query`].
    pub fn contains(&self, id: &str) -> Result<bool> {
        self.transaction
            .prepare_cached("SELECT 1 FROM particles WHERE id = ?1")
            .and_then(|mut statement| statement.exists([id]))
            .map_err(query_error("particle by id"))
    }

    /// Inserts a particle with its embedding (stored under the current model id),
    /// and its subject, tag and provenance edge rows.
    ///
    /// # Errors
    ///
    /// [`Error::Query`], e.g. when the id exists already.
    pub fn insert(&self, particle: &Valid<Particle>, embedding: Option<&[f32]>) -> Result<()> {
        let row = RowValues::encode(particle, embedding);
        let sql = format!(
            "INSERT INTO particles ({}) VALUES ({})",
            WRITE_COLUMNS.join(", "),
            crate::chunked::placeholders(WRITE_COLUMNS.len())
        );
        self.transaction
            .prepare_cached(&sql)
            .and_then(|mut statement| {
                statement.execute(rusqlite::params_from_iter(row.values.iter()))
            })
            .map_err(query_error("insert particle"))?;
        self.write_edges(particle)
    }

    /// Replaces every column of the particle with this id (the embedding too: `None`
    /// stores NULL) and its subject and tag links. Returns whether a row matched.
    ///
    /// # Errors
    ///
    /// [`Error::Query`].
    pub fn update(&self, particle: &Valid<Particle>, embedding: Option<&[f32]>) -> Result<bool> {
        let row = RowValues::encode(particle, embedding);
        // Everything but `id` and the retirement markers, which are the writer's
        // history, not the particle's.
        let columns = &WRITE_COLUMNS[1..WRITE_COLUMNS.len() - 3];
        let assignments: Vec<String> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} = ?{}", i + 2))
            .collect();
        let sql = format!(
            "UPDATE particles SET {} WHERE id = ?1",
            assignments.join(", ")
        );
        let mut values = vec![row.values[0].clone()];
        values.extend(row.values[1..WRITE_COLUMNS.len() - 3].iter().cloned());
        let changed = self
            .transaction
            .execute(&sql, rusqlite::params_from_iter(values.iter()))
            .map_err(query_error("update particle"))?;
        if changed > 0 {
            self.clear_edges(&particle.id)?;
            self.write_edges(particle)?;
        }
        Ok(changed > 0)
    }

    /// Sets a particle's status and reason (retracting it, superseding it, ...);
    /// leaving ACTIVE stamps `retired_at`. Returns whether a row matched.
    ///
    /// # Errors
    ///
    /// [`Error::Query`].
    pub fn set_status(
        &self,
        id: &str,
        status: Status,
        reason: Option<StatusReason>,
        at: Timestamp,
    ) -> Result<bool> {
        let retired_at = (status != Status::Active).then(|| at.to_store_text());
        let changed = self
            .transaction
            .execute(
                "UPDATE particles SET status = ?2, status_reason = ?3, retired_at = ?4 WHERE id = ?1",
                params![id, status.as_str(), reason.map(|r| r.as_str()), retired_at],
            )
            .map_err(query_error("set particle status"))?;
        Ok(changed > 0)
    }

    /// Retracts a particle (`RETRACTED`, `EXPLICIT_RETRACTION`).
    ///
    /// # Errors
    ///
    /// [`Error::Query`].
    pub fn retract(&self, id: &str, at: Timestamp) -> Result<bool> {
        self.set_status(
            id,
            Status::Retracted,
            Some(StatusReason::ExplicitRetraction),
            at,
        )
    }

    /// Changes a particle's id, moving its links. Returns whether a row matched.
    ///
    /// # Errors
    ///
    /// [`Error::Query`], e.g. when the new id exists.
    pub fn rename(&self, old_id: &str, new_id: &str) -> Result<bool> {
        let changed = self
            .transaction
            .execute(
                "UPDATE particles SET id = ?2 WHERE id = ?1",
                params![old_id, new_id],
            )
            .map_err(query_error("rename particle"))?;
        for table in [
            "particle_subjects",
            "particle_tag_edges",
            "particle_provenance_edges",
        ] {
            if self.has_table(table)? {
                self.transaction
                    .execute(
                        &format!("UPDATE {table} SET particle_id = ?2 WHERE particle_id = ?1"),
                        params![old_id, new_id],
                    )
                    .map_err(query_error("move particle links"))?;
            }
        }
        Ok(changed > 0)
    }

    /// Deletes a particle and its links. Returns whether a row matched.
    ///
    /// # Errors
    ///
    /// [`Error::Query`].
    pub fn delete(&self, id: &str) -> Result<bool> {
        self.clear_edges(id)?;
        if self.has_table("particle_provenance_edges")? {
            self.transaction
                .execute(
                    "DELETE FROM particle_provenance_edges WHERE particle_id = ?1",
                    [id],
                )
                .map_err(query_error("delete provenance edges"))?;
        }
        let changed = self
            .transaction
            .execute("DELETE FROM particles WHERE id = ?1", [id])
            .map_err(query_error("delete particle"))?;
        Ok(changed > 0)
    }

    /// Stamps a particle's `retired_at` (when it left ACTIVE), leaving its status
    /// as it is: for writers that insert particles born non-ACTIVE and date their
    /// retirement themselves. Returns whether a row matched.
    ///
    /// # Errors
    ///
    /// [`Error::Query`].
    pub fn set_retired_at(&self, id: &str, at: Timestamp) -> Result<bool> {
        let changed = self
            .transaction
            .prepare_cached("UPDATE particles SET retired_at = ?2 WHERE id = ?1")
            .and_then(|mut statement| statement.execute(params![id, at.to_store_text()]))
            .map_err(query_error("set retired_at"))?;
        Ok(changed > 0)
    }

    /// Inserts a row of `subjects`. Returns whether a row was written (`false`
    /// only when [`OnConflict::Ignore`] met an existing id).
    ///
    /// # Errors
    ///
    /// [`Error::Query`], e.g. an existing id with [`OnConflict::Abort`].
    pub fn insert_subject(&self, row: &SubjectRow<'_>, on_conflict: OnConflict) -> Result<bool> {
        self.insert_row(
            on_conflict,
            "subjects (id, canonical_name, aliases_json, external_ids_json, created_at, asserted_by) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                row.id,
                row.canonical_name,
                row.aliases_json,
                row.external_ids_json,
                row.created_at.to_store_text(),
                row.asserted_by
            ],
            "insert subject",
        )
    }

    /// Inserts a row of `corpus_entries`. Returns whether a row was written.
    ///
    /// # Errors
    ///
    /// [`Error::Query`], e.g. an existing id with [`OnConflict::Abort`].
    pub fn insert_corpus_entry(
        &self,
        row: &CorpusEntryRow<'_>,
        on_conflict: OnConflict,
    ) -> Result<bool> {
        self.insert_row(
            on_conflict,
            "corpus_entries (entry_id, uri_r, source_type, mutability, fetch_policy, created_at, \
             deposited_by, tags_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                row.entry_id,
                row.uri_r,
                row.source_type,
                row.mutability,
                row.fetch_policy,
                row.created_at.to_store_text(),
                row.deposited_by,
                row.tags_json
            ],
            "insert corpus entry",
        )
    }

    /// Inserts a row of `snapshots`. Returns whether a row was written.
    ///
    /// # Errors
    ///
    /// [`Error::Query`], e.g. an existing id with [`OnConflict::Abort`].
    pub fn insert_snapshot(&self, row: &SnapshotRow<'_>, on_conflict: OnConflict) -> Result<bool> {
        self.insert_row(
            on_conflict,
            "snapshots (snapshot_id, entry_id, captured_at, content_hash, warc_record_type, \
             extraction_status, content_published_at, author_id, extraction_attempts, resume_whole) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                row.snapshot_id,
                row.entry_id,
                row.captured_at.to_store_text(),
                row.content_hash,
                row.warc_record_type,
                row.extraction_status,
                row.content_published_at.map(|t| t.to_store_text()),
                row.author_id,
                row.extraction_attempts,
                row.resume_whole
            ],
            "insert snapshot",
        )
    }

    /// Inserts a row of `particle_relations`. Returns whether a row was written.
    ///
    /// # Errors
    ///
    /// [`Error::Query`], e.g. an existing `(particle_a, particle_b,
    /// relation_type)` with [`OnConflict::Abort`].
    pub fn insert_relation(&self, row: &RelationRow<'_>, on_conflict: OnConflict) -> Result<bool> {
        self.insert_row(
            on_conflict,
            "particle_relations (particle_a, particle_b, relation_type, created_by, created_at, \
             confidence) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                row.particle_a,
                row.particle_b,
                row.relation_type,
                row.created_by,
                row.created_at.to_store_text(),
                row.confidence
            ],
            "insert relation",
        )
    }

    /// Runs `{verb} INTO {into}` (cached: importers and generators insert many
    /// rows of one table in a row).
    fn insert_row(
        &self,
        on_conflict: OnConflict,
        into: &str,
        params: &[&dyn rusqlite::ToSql],
        name: &'static str,
    ) -> Result<bool> {
        let sql = format!("{} INTO {into}", on_conflict.verb());
        let written = self
            .transaction
            .prepare_cached(&sql)
            .and_then(|mut statement| statement.execute(params))
            .map_err(query_error(name))?;
        Ok(written > 0)
    }

    /// Commits every write.
    ///
    /// # Errors
    ///
    /// [`Error::Query`] when SQLite cannot commit (the writes are then rolled back).
    pub fn commit(self) -> Result<()> {
        self.transaction.commit().map_err(query_error("commit"))
    }

    /// Rolls every write back.
    ///
    /// # Errors
    ///
    /// [`Error::Query`] when SQLite fails.
    pub fn rollback(self) -> Result<()> {
        self.transaction.rollback().map_err(query_error("rollback"))
    }

    fn has_table(&self, table: &str) -> Result<bool> {
        Ok(self.tables.contains(&table))
    }

    fn clear_edges(&self, id: &str) -> Result<()> {
        for table in ["particle_subjects", "particle_tag_edges"] {
            if self.has_table(table)? {
                self.transaction
                    .execute(&format!("DELETE FROM {table} WHERE particle_id = ?1"), [id])
                    .map_err(query_error("clear particle links"))?;
            }
        }
        Ok(())
    }

    fn write_edges(&self, particle: &Particle) -> Result<()> {
        if self.has_table("particle_subjects")? {
            let mut seen = std::collections::HashSet::new();
            for subject in particle
                .subject_ids
                .iter()
                .filter(|s| seen.insert(s.as_str()))
            {
                self.transaction
                    .prepare_cached("INSERT OR IGNORE INTO particle_subjects (particle_id, subject_id) VALUES (?1, ?2)")
                    .and_then(|mut statement| statement.execute(params![particle.id, subject]))
                    .map_err(query_error("link subject"))?;
            }
        }
        if let (Some(tags), true) = (&particle.tags, self.has_table("particle_tag_edges")?) {
            for tag in tags {
                self.transaction
                    .execute(
                        "INSERT OR IGNORE INTO particle_tag_edges (particle_id, tag) VALUES (?1, ?2)",
                        params![particle.id, tag],
                    )
                    .map_err(query_error("link tag"))?;
            }
        }
        if self.has_table("particle_provenance_edges")? {
            for r in &particle.provenance {
                self.transaction
                    .prepare_cached(
                        "INSERT OR IGNORE INTO particle_provenance_edges (particle_id, corpus_entry_id, snapshot_id, chunk_hash) \
                         VALUES (?1, ?2, ?3, ?4)",
                    )
                    .and_then(|mut statement| {
                        statement.execute(params![particle.id, r.corpus_entry_id, r.snapshot_id, r.chunk_hash])
                    })
                    .map_err(query_error("write provenance edge"))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
impl WriteTransaction<'_> {
    /// The SQLite transaction, for this crate's tests that compare typed writes
    /// with the raw statements they replaced.
    pub(crate) fn raw(&self) -> &Transaction<'_> {
        &self.transaction
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_hash_folds_typography_like_the_reference() {
        // Equal keys: quotes dropped, dashes folded, whitespace collapsed, final
        // punctuation trimmed.
        assert_eq!(
            content_hash("Options 1\u{2013}3 are \u{201c}fine\u{201d}."),
            content_hash("Options  1-3 are fine")
        );
        assert_ne!(
            content_hash("the dog's bowl"),
            content_hash("the dogs bowl")
        );
    }
}
