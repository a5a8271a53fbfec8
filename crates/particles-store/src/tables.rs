//! Rows of the tables beside `particles` that writers of imported or synthetic
//! stores fill: subjects, corpus entries, snapshots, particle relations.
//!
//! Each struct is one row, its fields named after the reference's columns
//! (linkedparticles 1.214.1: `SubjectRow`, `CorpusEntryRow`, `SnapshotRow`,
//! `ParticleRelationRow`). JSON columns are the JSON text itself, as the
//! reference's rows hold it; instants are [`Timestamp`]s, written in the store's
//! text form ([`Timestamp::to_store_text`]). Columns a struct does not name are
//! left to the schema (NULL, or the column's default). Written through
//! [`crate::WriteTransaction`]'s `insert_*` functions.

use particles_model::Timestamp;

/// What an insert does when the row's key exists already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnConflict {
    /// A plain `INSERT`: a duplicate key fails the statement
    /// ([`crate::Error::Query`]). For writers that know every key is new.
    Abort,
    /// `INSERT OR IGNORE`: the existing row stays as it is and nothing is written.
    /// For writers that meet the same subject or source again (an import).
    Ignore,
}

impl OnConflict {
    pub(crate) fn verb(self) -> &'static str {
        match self {
            OnConflict::Abort => "INSERT",
            OnConflict::Ignore => "INSERT OR IGNORE",
        }
    }
}

/// A row of `subjects`: a thing beliefs are about, named by particles'
/// `subject_ids`. `description`, `subject_class` and `contributors_json` are left
/// NULL.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubjectRow<'a> {
    /// `id`: the subject's id, as particles' `subject_ids` name it.
    pub id: &'a str,
    /// `canonical_name`: its display name.
    pub canonical_name: &'a str,
    /// `aliases_json`: a JSON list of other names (the reference writes `[]` for
    /// none).
    pub aliases_json: &'a str,
    /// `external_ids_json`: JSON of its identifiers in other systems (the reference
    /// writes a list of `{namespace, id, uri, confidence}`, `[]` for none).
    pub external_ids_json: &'a str,
    /// `created_at`: when the subject was recorded.
    pub created_at: Timestamp,
    /// `asserted_by`: who recorded it.
    pub asserted_by: &'a str,
}

/// A row of `corpus_entries`: one source document (a URL, a file, a
/// conversation), the unit a trust policy and the source type apply to.
/// `contributors_json` and `document_supersession_json` are left NULL.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CorpusEntryRow<'a> {
    /// `entry_id`: the entry's id, as provenance refs' `corpus_entry_id` name it.
    pub entry_id: &'a str,
    /// `uri_r`: the source's URI (what trust statements and domain rules match).
    pub uri_r: Option<&'a str>,
    /// `source_type`: `WEB_PAGE`, `LOCAL_MARKDOWN`, `CONVERSATION`, ... (decay
    /// rules key on it).
    pub source_type: &'a str,
    /// `mutability`: whether the source can change (`STABLE`, ...).
    pub mutability: &'a str,
    /// `fetch_policy`: when the corpus refetches it (`NEVER`, ...).
    pub fetch_policy: &'a str,
    /// `created_at`: when the entry was recorded.
    pub created_at: Timestamp,
    /// `deposited_by`: who recorded it.
    pub deposited_by: &'a str,
    /// `tags_json`: a JSON list of tags (`[]` for none).
    pub tags_json: &'a str,
}

/// A row of `snapshots`: one capture of a corpus entry, which dates what the
/// source said (`content_published_at`) and names its author. The columns not
/// named here (`etag`, `archive_path`, ...) are left NULL.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SnapshotRow<'a> {
    /// `snapshot_id`: the snapshot's id, as provenance refs' `snapshot_id` name it.
    pub snapshot_id: &'a str,
    /// `entry_id`: the corpus entry captured.
    pub entry_id: &'a str,
    /// `captured_at`: when it was captured.
    pub captured_at: Timestamp,
    /// `content_hash`: a hex digest of the captured content.
    pub content_hash: &'a str,
    /// `warc_record_type`: the WARC record kind (`RESPONSE`, ...).
    pub warc_record_type: &'a str,
    /// `extraction_status`: how far extraction got (`COMPLETE`, ...).
    pub extraction_status: &'a str,
    /// `content_published_at`: when the source published the content (decay
    /// starts here when set).
    pub content_published_at: Option<Timestamp>,
    /// `author_id`: the author at the source.
    pub author_id: Option<&'a str>,
    /// `extraction_attempts`: how many extraction runs there were.
    pub extraction_attempts: i64,
    /// `resume_whole`: the marker of a partial whole-document read.
    pub resume_whole: bool,
}

/// A row of `particle_relations`: a typed edge between two particles, e.g.
/// `CO_EVIDENTIAL` (the pair is merged in a ranking; readers look the edge up in
/// either direction). The ends are stored as given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelationRow<'a> {
    /// `particle_a`: one end.
    pub particle_a: &'a str,
    /// `particle_b`: the other end.
    pub particle_b: &'a str,
    /// `relation_type`: `CO_EVIDENTIAL`, ...
    pub relation_type: &'a str,
    /// `created_by`: who recorded the edge.
    pub created_by: &'a str,
    /// `created_at`: when it was recorded.
    pub created_at: Timestamp,
    /// `confidence`: the edge's confidence (1.0 for a plain co-evidence).
    pub confidence: f64,
}

#[cfg(test)]
mod tests {
    //! The typed inserts write the very rows the raw statements they replaced
    //! (in the importer and the benchmark generator) wrote: same columns, same
    //! storage classes, same text.

    use rusqlite::types::Value;

    use super::*;
    use crate::{create_store, WriteTransaction, Writer};

    fn instant(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    /// Every column of the row whose `key` column is `id`, key column left out.
    fn row_values(writer: &mut Writer, table: &str, key: &str, id: &str) -> Vec<Value> {
        let connection = writer.connection_mut();
        let mut statement = connection
            .prepare(&format!("SELECT * FROM {table} WHERE {key} = ?1"))
            .unwrap();
        let key_index = statement.column_index(key).unwrap();
        let count = statement.column_count();
        statement
            .query_row([id], |row| {
                (0..count)
                    .filter(|&i| i != key_index)
                    .map(|i| row.get::<_, Value>(i))
                    .collect::<rusqlite::Result<Vec<Value>>>()
            })
            .unwrap()
    }

    /// The instants the rows carry: the importer's `now`, the generator's epoch,
    /// a source's publication date.
    struct Instants {
        now: Timestamp,
        epoch: Timestamp,
        published: Timestamp,
    }

    /// The importer's statements, then the generator's, as they were.
    fn insert_raw(tx: &WriteTransaction<'_>, at: &Instants) {
        let Instants {
            now,
            epoch,
            published,
        } = at;
        tx.raw().execute(
            "INSERT OR IGNORE INTO subjects (id, canonical_name, aliases_json, external_ids_json, created_at, asserted_by) \
             VALUES (?1, ?2, '[]', '{}', ?3, 'particles-rs import')",
            rusqlite::params!["raw-s1", "Coins", now.to_store_text()],
        ).unwrap();
        tx.raw().execute(
            "INSERT INTO subjects (id, canonical_name, aliases_json, external_ids_json, created_at, asserted_by) \
             VALUES (?1, ?2, '[]', '[]', ?3, 'query-latency-generator')",
            rusqlite::params!["raw-s2", "subject 7", epoch.to_store_text()],
        ).unwrap();
        tx.raw().execute(
            "INSERT OR IGNORE INTO corpus_entries (entry_id, uri_r, source_type, mutability, fetch_policy, created_at, deposited_by, tags_json) \
             VALUES (?1, ?2, ?3, 'STABLE', 'NEVER', ?4, 'particles-rs import', '[]')",
            rusqlite::params!["raw-e1", "https://example.org/a", "WEB_PAGE", now.to_store_text()],
        ).unwrap();
        tx.raw().execute(
            "INSERT INTO corpus_entries (entry_id, uri_r, source_type, mutability, fetch_policy, created_at, deposited_by, tags_json) \
             VALUES (?1, ?2, ?3, 'STABLE', 'NEVER', ?4, 'query-latency-generator', '[]')",
            rusqlite::params!["raw-e2", "file:///synthetic/source-0.md", "LOCAL_MARKDOWN", epoch.to_store_text()],
        ).unwrap();
        tx.raw().execute(
            "INSERT OR IGNORE INTO snapshots (snapshot_id, entry_id, captured_at, content_hash, warc_record_type, extraction_status, \
             content_published_at, author_id, extraction_attempts, resume_whole) VALUES (?1, ?2, ?3, ?4, 'RESPONSE', 'COMPLETE', ?5, ?6, 1, 0)",
            rusqlite::params!["raw-n1", "raw-e1", now.to_store_text(), "ab12", Some(published.to_store_text()), Some("someone")],
        ).unwrap();
        tx.raw().execute(
            "INSERT INTO snapshots (snapshot_id, entry_id, captured_at, content_hash, warc_record_type, extraction_status, \
             content_published_at, extraction_attempts, resume_whole) VALUES (?1, ?2, ?3, ?4, 'RESPONSE', 'COMPLETE', ?5, 1, 0)",
            rusqlite::params!["raw-n2", "raw-e2", epoch.to_store_text(), "cd34", None::<String>],
        ).unwrap();
        tx.raw().execute(
            "INSERT OR IGNORE INTO particle_relations (particle_a, particle_b, relation_type, created_by, created_at, confidence) \
             VALUES (?1, ?2, 'CO_EVIDENTIAL', 'particles-rs import', ?3, 1.0)",
            rusqlite::params!["raw-a", "raw-b1", now.to_store_text()],
        ).unwrap();
        tx.raw().execute(
            "INSERT INTO particle_relations (particle_a, particle_b, relation_type, created_by, created_at, confidence) \
             VALUES (?1, ?2, 'CO_EVIDENTIAL', 'query-latency-generator', ?3, 1.0)",
            rusqlite::params!["raw-a", "raw-b2", epoch.to_store_text()],
        ).unwrap();
    }

    fn subject<'a>(
        id: &'a str,
        canonical_name: &'a str,
        external_ids_json: &'a str,
        created_at: Timestamp,
        asserted_by: &'a str,
    ) -> SubjectRow<'a> {
        SubjectRow {
            id,
            canonical_name,
            aliases_json: "[]",
            external_ids_json,
            created_at,
            asserted_by,
        }
    }

    fn entry<'a>(
        entry_id: &'a str,
        uri: &'a str,
        source_type: &'a str,
        created_at: Timestamp,
        deposited_by: &'a str,
    ) -> CorpusEntryRow<'a> {
        CorpusEntryRow {
            entry_id,
            uri_r: Some(uri),
            source_type,
            mutability: "STABLE",
            fetch_policy: "NEVER",
            created_at,
            deposited_by,
            tags_json: "[]",
        }
    }

    fn snapshot<'a>(
        snapshot_id: &'a str,
        entry_id: &'a str,
        captured_at: Timestamp,
        content_hash: &'a str,
        content_published_at: Option<Timestamp>,
        author_id: Option<&'a str>,
    ) -> SnapshotRow<'a> {
        SnapshotRow {
            snapshot_id,
            entry_id,
            captured_at,
            content_hash,
            warc_record_type: "RESPONSE",
            extraction_status: "COMPLETE",
            content_published_at,
            author_id,
            extraction_attempts: 1,
            resume_whole: false,
        }
    }

    fn relation<'a>(
        particle_b: &'a str,
        created_by: &'a str,
        created_at: Timestamp,
    ) -> RelationRow<'a> {
        RelationRow {
            particle_a: "typed-a",
            particle_b,
            relation_type: "CO_EVIDENTIAL",
            created_by,
            created_at,
            confidence: 1.0,
        }
    }

    /// The same rows, typed.
    fn insert_typed(tx: &WriteTransaction<'_>, at: &Instants) {
        let Instants {
            now,
            epoch,
            published,
        } = *at;
        assert!(tx
            .insert_subject(
                &subject("typed-s1", "Coins", "{}", now, "particles-rs import"),
                OnConflict::Ignore
            )
            .unwrap());
        assert!(tx
            .insert_subject(
                &subject(
                    "typed-s2",
                    "subject 7",
                    "[]",
                    epoch,
                    "query-latency-generator"
                ),
                OnConflict::Abort
            )
            .unwrap());
        assert!(tx
            .insert_corpus_entry(
                &entry(
                    "typed-e1",
                    "https://example.org/a",
                    "WEB_PAGE",
                    now,
                    "particles-rs import"
                ),
                OnConflict::Ignore
            )
            .unwrap());
        assert!(tx
            .insert_corpus_entry(
                &entry(
                    "typed-e2",
                    "file:///synthetic/source-0.md",
                    "LOCAL_MARKDOWN",
                    epoch,
                    "query-latency-generator"
                ),
                OnConflict::Abort
            )
            .unwrap());
        assert!(tx
            .insert_snapshot(
                &snapshot(
                    "typed-n1",
                    "raw-e1",
                    now,
                    "ab12",
                    Some(published),
                    Some("someone")
                ),
                OnConflict::Ignore
            )
            .unwrap());
        assert!(tx
            .insert_snapshot(
                &snapshot("typed-n2", "raw-e2", epoch, "cd34", None, None),
                OnConflict::Abort
            )
            .unwrap());
        assert!(tx
            .insert_relation(
                &relation("raw-b1", "particles-rs import", now),
                OnConflict::Ignore
            )
            .unwrap());
        assert!(tx
            .insert_relation(
                &relation("raw-b2", "query-latency-generator", epoch),
                OnConflict::Abort
            )
            .unwrap());
    }

    /// Conflicts: ignored, or an error.
    fn insert_conflicting(tx: &WriteTransaction<'_>, epoch: Timestamp) {
        assert!(!tx
            .insert_subject(
                &subject("typed-s1", "Other", "[]", epoch, "x"),
                OnConflict::Ignore
            )
            .unwrap());
        assert!(tx
            .insert_subject(
                &subject("typed-s1", "Other", "[]", epoch, "x"),
                OnConflict::Abort
            )
            .is_err());
    }

    /// Each raw row against its typed twin.
    fn assert_rows_match(writer: &mut Writer) {
        for (table, key, pairs) in [
            (
                "subjects",
                "id",
                [("raw-s1", "typed-s1"), ("raw-s2", "typed-s2")],
            ),
            (
                "corpus_entries",
                "entry_id",
                [("raw-e1", "typed-e1"), ("raw-e2", "typed-e2")],
            ),
            (
                "snapshots",
                "snapshot_id",
                [("raw-n1", "typed-n1"), ("raw-n2", "typed-n2")],
            ),
        ] {
            for (raw, typed) in pairs {
                assert_eq!(
                    row_values(writer, table, key, raw),
                    row_values(writer, table, key, typed),
                    "{table}: {raw} vs {typed}"
                );
            }
        }
        for b in ["raw-b1", "raw-b2"] {
            let both: Vec<Vec<Value>> = ["raw-a", "typed-a"]
                .iter()
                .map(|a| {
                    writer
                        .connection_mut()
                        .query_row(
                            "SELECT particle_b, relation_type, created_by, created_at, confidence \
                         FROM particle_relations WHERE particle_a = ?1 AND particle_b = ?2",
                            [*a, b],
                            |row| (0..5).map(|i| row.get::<_, Value>(i)).collect(),
                        )
                        .unwrap()
                })
                .collect();
            assert_eq!(both[0], both[1], "relation to {b}");
        }
    }

    #[test]
    fn typed_rows_match_the_statements_they_replace() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = create_store(&dir.path().join("rows.db")).unwrap();
        let at = Instants {
            now: instant("2026-03-04T05:06:07.891011+00:00"),
            epoch: instant("2023-01-01T00:00:00Z"),
            published: instant("2024-02-03T00:00:00Z"),
        };
        {
            let tx = writer.transaction().unwrap();
            insert_raw(&tx, &at);
            insert_typed(&tx, &at);
            insert_conflicting(&tx, at.epoch);
            tx.commit().unwrap();
        }
        assert_rows_match(&mut writer);
    }

    #[test]
    fn set_retired_at_stamps_what_the_generator_stamped() {
        use particles_model::*;
        let dir = tempfile::tempdir().unwrap();
        let mut writer = create_store(&dir.path().join("retired.db")).unwrap();
        let at = instant("2024-05-06T07:08:09.123456Z");
        let particle = |id: &str| {
            let particle = Particle {
                id: id.to_owned(),
                content: "A retired belief.".to_owned(),
                confidence: Confidence {
                    value: 0.7,
                    variance: None,
                    calibration_source: CalibrationSource::ExtractorDirect,
                    calibration_method: None,
                    calibration_ref: None,
                },
                uncertainty_nature: UncertaintyNature::Epistemic,
                provenance: vec![],
                asserted_by: "test".into(),
                asserted_at: at,
                status: Status::Superseded,
                status_reason: Some(StatusReason::DuplicateMerged),
                schema_version: SCHEMA_VERSION.into(),
                particle_type: ParticleType::Claim,
                assertion_modality: AssertionModality::Falsifiable,
                uncertainty_kind: None,
                valid_until: None,
                valid_from: None,
                valid_kind: None,
                supersedes: None,
                basis: None,
                extractor_ref: None,
                extraction_provider_model: None,
                sequence_context: None,
                subject_ids: vec![],
                tags: None,
                context_fingerprint: None,
                properties: None,
                contributors: None,
                structured_claim: None,
                canonical_form: CanonicalForm::Prose,
                contested: None,
            };
            garde::Unvalidated::new(particle).validate().unwrap()
        };
        let tx = writer.transaction().unwrap();
        tx.insert(&particle("raw"), None).unwrap();
        tx.insert(&particle("typed"), None).unwrap();
        // The generator's statement, as it was, and the typed call.
        tx.raw()
            .execute(
                "UPDATE particles SET retired_at = ?2 WHERE id = ?1",
                rusqlite::params!["raw", at.to_store_text()],
            )
            .unwrap();
        assert!(tx.set_retired_at("typed", at).unwrap());
        assert!(!tx.set_retired_at("nobody", at).unwrap());
        tx.commit().unwrap();
        assert_eq!(
            row_values(&mut writer, "particles", "id", "raw"),
            row_values(&mut writer, "particles", "id", "typed")
        );
    }
}
