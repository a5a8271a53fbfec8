//! Turning a `particles` row into a [`Particle`], as the reference's
//! `ParticleRow.to_model` does: every column is read and validated, so a malformed
//! value anywhere in the row fails the row (the reference aborts the query on it).

use particles_model::{
    ClaimTerm, Confidence, ContributorRef, ExtractorRef, Particle, ProvenanceRef, StructuredClaim,
    Timestamp, EMBEDDING_MODEL_ID, LEGACY_EMBEDDING_MODEL_ID,
};
use rusqlite::{types::ValueRef, Row};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::rowjson::ClaimTerms;

/// The particle columns, `rowid` first, with `$embedding` in the embedding's
/// place: one list, so the two column sets below cannot drift apart.
macro_rules! particle_columns {
    ($embedding:literal) => {
        concat!(
            "particles.rowid, particles.id, particles.content, \
            particles.confidence_value, particles.confidence_variance, \
            particles.confidence_calibration_source, particles.confidence_calibration_method, \
            particles.confidence_calibration_ref, particles.uncertainty_nature, particles.asserted_by, \
            particles.asserted_at, particles.status, particles.status_reason, particles.schema_version, \
            particles.particle_type, particles.assertion_modality, particles.valid_until, \
            particles.valid_from, particles.valid_kind, particles.supersedes, particles.retired_at, \
            particles.born_retired, particles.content_norm_hash, \
            particles.provenance_json, particles.extractor_ref_json, \
            particles.extraction_provider_model, ",
            $embedding,
            ", particles.embedding_model_id, \
            particles.subject_ids_json, particles.properties_json, particles.domain_hint, \
            particles.context_fingerprint, \
            particles.tags_json, particles.contributors_json, particles.structured_claim_json, \
            particles.structurizer_id, particles.structurizer_version, \
            particles.structured_claim_generated_at, particles.canonical_form, \
            particles.modality_classifier, particles.modality_classifier_model, \
            particles.modality_classified_at"
        )
    };
}

/// The columns a candidate read selects (its embedding decoded beside the
/// particle), `rowid` first. Qualified, so the subject join can use the same
/// list.
pub(crate) const PARTICLE_COLUMNS: &str = particle_columns!("particles.embedding_json");

/// [`PARTICLE_COLUMNS`] with NULL for the embedding: what a read that only
/// hydrates selects. A [`Particle`] has no embedding, and the embedding is most
/// of a row's bytes (about 8-12 KB of JSON at 384 dimensions): SQLite copies a
/// selected column out of its overflow pages whether or not it is read. The
/// columns after it still walk those pages.
pub(crate) const MODEL_COLUMNS: &str = particle_columns!("NULL");

// Column positions in PARTICLE_COLUMNS.
const ROWID: usize = 0;
const ID: usize = 1;
const CONTENT: usize = 2;
const CONFIDENCE_VALUE: usize = 3;
const CONFIDENCE_VARIANCE: usize = 4;
const CALIBRATION_SOURCE: usize = 5;
const CALIBRATION_METHOD: usize = 6;
const CALIBRATION_REF: usize = 7;
const UNCERTAINTY_NATURE: usize = 8;
const ASSERTED_BY: usize = 9;
const ASSERTED_AT: usize = 10;
const STATUS: usize = 11;
const STATUS_REASON: usize = 12;
const SCHEMA_VERSION: usize = 13;
const PARTICLE_TYPE: usize = 14;
const ASSERTION_MODALITY: usize = 15;
const VALID_UNTIL: usize = 16;
const VALID_FROM: usize = 17;
const VALID_KIND: usize = 18;
const SUPERSEDES: usize = 19;
const RETIRED_AT: usize = 20;
const BORN_RETIRED: usize = 21;
const CONTENT_NORM_HASH: usize = 22;
const PROVENANCE_JSON: usize = 23;
const EXTRACTOR_REF_JSON: usize = 24;
const EXTRACTION_PROVIDER_MODEL: usize = 25;
const EMBEDDING_JSON: usize = 26;
const EMBEDDING_MODEL: usize = 27;
const SUBJECT_IDS_JSON: usize = 28;
const PROPERTIES_JSON: usize = 29;
const DOMAIN_HINT: usize = 30;
const CONTEXT_FINGERPRINT: usize = 31;
const TAGS_JSON: usize = 32;
const CONTRIBUTORS_JSON: usize = 33;
const STRUCTURED_CLAIM_JSON: usize = 34;
const STRUCTURIZER_ID: usize = 35;
const STRUCTURIZER_VERSION: usize = 36;
const STRUCTURED_CLAIM_GENERATED_AT: usize = 37;
const CANONICAL_FORM: usize = 38;
const MODALITY_CLASSIFIER: usize = 39;
const MODALITY_CLASSIFIER_MODEL: usize = 40;
const MODALITY_CLASSIFIED_AT: usize = 41;

/// Each column's name, by position in [`PARTICLE_COLUMNS`] (a test holds
/// the two lists together).
const COLUMN_NAMES: [&str; COLUMN_COUNT] = [
    "rowid",
    "id",
    "content",
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
    "retired_at",
    "born_retired",
    "content_norm_hash",
    "provenance_json",
    "extractor_ref_json",
    "extraction_provider_model",
    "embedding_json",
    "embedding_model_id",
    "subject_ids_json",
    "properties_json",
    "domain_hint",
    "context_fingerprint",
    "tags_json",
    "contributors_json",
    "structured_claim_json",
    "structurizer_id",
    "structurizer_version",
    "structured_claim_generated_at",
    "canonical_form",
    "modality_classifier",
    "modality_classifier_model",
    "modality_classified_at",
];

/// The DATETIME columns, in [`PARTICLE_COLUMNS`]' order (the reference's
/// model declares them in the same order).
const DATETIME_COLUMNS: [usize; 6] = [
    ASSERTED_AT,
    VALID_UNTIL,
    VALID_FROM,
    RETIRED_AT,
    STRUCTURED_CLAIM_GENERATED_AT,
    MODALITY_CLASSIFIED_AT,
];

/// How many columns [`PARTICLE_COLUMNS`] selects.
pub(crate) const COLUMN_COUNT: usize = MODALITY_CLASSIFIED_AT + 1;

/// One value of a copied row ([`copy_row`]): numbers inline, text and blobs as
/// a span of the copy's byte arena.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cell {
    Null,
    Integer(i64),
    Real(f64),
    Text(usize, usize),
    Blob(usize, usize),
}

/// Copies the current row's [`COLUMN_COUNT`] values to the end of `cells`, their
/// bytes to `arena`: SQLite's row lasts until the next step, the copy as long
/// as the caller keeps it (a build hydrates it on another thread).
///
/// # Errors
///
/// [`Error::InvalidRow`] when the statement does not select the particle columns.
pub(crate) fn copy_row(row: &Row<'_>, cells: &mut Vec<Cell>, arena: &mut Vec<u8>) -> Result<()> {
    for index in 0..COLUMN_COUNT {
        let value = row.get_ref(index).map_err(|e| Error::InvalidRow {
            id: "?".into(),
            rowid: 0,
            field: "column".into(),
            reason: e.to_string(),
        })?;
        let mut span = |bytes: &[u8]| {
            let start = arena.len();
            arena.extend_from_slice(bytes);
            (start, arena.len())
        };
        cells.push(match value {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(value) => Cell::Integer(value),
            ValueRef::Real(value) => Cell::Real(value),
            ValueRef::Text(bytes) => {
                let (start, end) = span(bytes);
                Cell::Text(start, end)
            }
            ValueRef::Blob(bytes) => {
                let (start, end) = span(bytes);
                Cell::Blob(start, end)
            }
        });
    }
    Ok(())
}

/// Where a row's values are read: SQLite's current row, or a copy of one.
#[derive(Clone, Copy)]
enum Values<'stmt, 'row> {
    Live(&'row Row<'stmt>),
    Copied {
        cells: &'row [Cell],
        arena: &'row [u8],
    },
}

impl<'row> Values<'_, 'row> {
    fn get(self, index: usize) -> rusqlite::Result<ValueRef<'row>> {
        match self {
            Values::Live(row) => row.get_ref(index),
            Values::Copied { cells, arena } => {
                let cell = cells
                    .get(index)
                    .ok_or(rusqlite::Error::InvalidColumnIndex(index))?;
                Ok(match *cell {
                    Cell::Null => ValueRef::Null,
                    Cell::Integer(value) => ValueRef::Integer(value),
                    Cell::Real(value) => ValueRef::Real(value),
                    Cell::Text(start, end) => ValueRef::Text(&arena[start..end]),
                    Cell::Blob(start, end) => ValueRef::Blob(&arena[start..end]),
                })
            }
        }
    }
}

/// A particle row as read, before hydration.
pub(crate) struct ParticleRow<'stmt, 'row> {
    values: Values<'stmt, 'row>,
    rowid: i64,
    id: String,
}

impl<'stmt, 'row> ParticleRow<'stmt, 'row> {
    pub(crate) fn new(row: &'row Row<'stmt>) -> Result<Self> {
        Self::from_values(Values::Live(row))
    }

    /// A row copied by [`copy_row`]: `cells` holds its [`COLUMN_COUNT`] values.
    pub(crate) fn copied(cells: &'row [Cell], arena: &'row [u8]) -> Result<Self> {
        Self::from_values(Values::Copied { cells, arena })
    }

    fn from_values(values: Values<'stmt, 'row>) -> Result<Self> {
        let rowid = match values.get(ROWID) {
            Ok(ValueRef::Integer(rowid)) => rowid,
            other => {
                return Err(Error::InvalidRow {
                    id: "?".into(),
                    rowid: 0,
                    field: "rowid".into(),
                    reason: match other {
                        Err(e) => e.to_string(),
                        Ok(value) => format!("not an integer: {:?}", value.data_type()),
                    },
                })
            }
        };
        let id = match values.get(ID) {
            Ok(ValueRef::Text(text)) => String::from_utf8_lossy(text).into_owned(),
            other => {
                return Err(Error::InvalidRow {
                    id: "?".into(),
                    rowid,
                    field: "id".into(),
                    reason: format!("not text: {other:?}"),
                })
            }
        };
        Ok(ParticleRow { values, rowid, id })
    }

    pub(crate) fn rowid(&self) -> i64 {
        self.rowid
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    fn invalid(&self, field: &str, reason: impl std::fmt::Display) -> Error {
        Error::InvalidRow {
            id: self.id.clone(),
            rowid: self.rowid,
            field: field.to_owned(),
            reason: reason.to_string(),
        }
    }

    fn value(&self, index: usize) -> Result<ValueRef<'row>> {
        self.values
            .get(index)
            .map_err(|e| self.invalid("column", e))
    }

    /// Text or NULL; any other storage class is invalid.
    fn opt_text(&self, index: usize, field: &str) -> Result<Option<&'row str>> {
        match self.value(index)? {
            ValueRef::Null => Ok(None),
            ValueRef::Text(bytes) => std::str::from_utf8(bytes)
                .map(Some)
                .map_err(|e| self.invalid(field, e)),
            other => Err(self.invalid(
                field,
                format!("expected text, found {:?}", other.data_type()),
            )),
        }
    }

    fn text(&self, index: usize, field: &str) -> Result<&'row str> {
        self.opt_text(index, field)?
            .ok_or_else(|| self.invalid(field, "is NULL"))
    }

    fn opt_real(&self, index: usize, field: &str) -> Result<Option<f64>> {
        match self.value(index)? {
            ValueRef::Null => Ok(None),
            ValueRef::Real(value) => Ok(Some(value)),
            ValueRef::Integer(value) => Ok(Some(value as f64)),
            other => Err(self.invalid(
                field,
                format!("expected a number, found {:?}", other.data_type()),
            )),
        }
    }

    /// The stored `confidence_value` (the loader's order key and prefilter).
    pub(crate) fn confidence_value(&self) -> Result<f64> {
        self.opt_real(CONFIDENCE_VALUE, "confidence_value")?
            .ok_or_else(|| self.invalid("confidence_value", "is NULL"))
    }

    /// The effective embedding model id: the stored one, or the legacy id when NULL or
    /// empty (the reference tests truthiness).
    pub(crate) fn embedding_model_id(&self) -> Result<&'row str> {
        Ok(
            match self.opt_text(EMBEDDING_MODEL, "embedding_model_id")? {
                Some(id) if !id.is_empty() => id,
                _ => LEGACY_EMBEDDING_MODEL_ID,
            },
        )
    }

    /// Whether a cache keeps the row, as the reference's cache decides it:
    /// ACTIVE (the stored text, no other storage class) with an embedding.
    pub(crate) fn is_cacheable(&self) -> Result<bool> {
        Ok(matches!(self.value(STATUS)?, ValueRef::Text(b"ACTIVE"))
            && !matches!(self.value(EMBEDDING_JSON)?, ValueRef::Null))
    }

    /// Whether the row's vector lives in the current embedding space.
    pub(crate) fn has_current_model(&self) -> Result<bool> {
        Ok(self.embedding_model_id()? == EMBEDDING_MODEL_ID)
    }

    /// The `asserted_at` instant in UTC microseconds, read without hydrating the row.
    pub(crate) fn asserted_at_micros(&self) -> Result<i64> {
        self.opt_timestamp(ASSERTED_AT, "asserted_at")?
            .map(|t| t.utc_micros())
            .ok_or_else(|| self.invalid("asserted_at", "is NULL"))
    }

    /// The `retired_at` storage column (when the row first left ACTIVE).
    pub(crate) fn retired_at(&self) -> Result<Option<Timestamp>> {
        self.opt_timestamp(RETIRED_AT, "retired_at")
    }

    pub(crate) fn embedding_json(&self) -> Result<Option<&'row str>> {
        self.opt_text(EMBEDDING_JSON, "embedding_json")
    }

    /// The embedding's text as stored, its UTF-8 not yet checked (NULL is
    /// `None`): for [`ParticleRow::decode_embedding`].
    pub(crate) fn embedding_bytes(&self) -> Result<Option<&'row [u8]>> {
        match self.value(EMBEDDING_JSON)? {
            ValueRef::Null => Ok(None),
            ValueRef::Text(bytes) => Ok(Some(bytes)),
            other => Err(self.invalid(
                "embedding_json",
                format!("expected text, found {:?}", other.data_type()),
            )),
        }
    }

    /// The first TEXT value of the row that is not UTF-8, in column order:
    /// the reference's sqlite3 module fails on it as it fetches the row, so
    /// before it parses a DATETIME or decodes an embedding (the loaders'
    /// `FirstFault`).
    pub(crate) fn utf8_fault(&self) -> Option<Error> {
        (ID..COLUMN_COUNT).find_map(|index| self.utf8_only(index).err())
    }

    /// A TEXT value that is not UTF-8 is a fault (the reference fails as it
    /// fetches it); any other storage class is left to whatever reads it.
    fn utf8_only(&self, index: usize) -> Result<()> {
        match self.value(index)? {
            ValueRef::Text(bytes) => std::str::from_utf8(bytes)
                .map(drop)
                .map_err(|e| self.invalid(COLUMN_NAMES[index], e)),
            _ => Ok(()),
        }
    }

    /// What the reference meets first as it fetches and loads the row, which
    /// fails it even where the route then skips the row: [`Self::utf8_fault`],
    /// else [`Self::datetime_fault`].
    pub(crate) fn fetch_fault(&self) -> Option<Error> {
        self.utf8_fault().or_else(|| self.datetime_fault())
    }

    /// The first DATETIME column that does not parse, in column order: the
    /// reference's SQLAlchemy fails on it as it loads the row, after fetching
    /// it and before it decodes an embedding.
    pub(crate) fn datetime_fault(&self) -> Option<Error> {
        DATETIME_COLUMNS
            .into_iter()
            .find_map(|index| self.opt_timestamp(index, COLUMN_NAMES[index]).err())
    }

    /// Decodes [`ParticleRow::embedding_bytes`] into `out`, with the error a
    /// read of [`ParticleRow::embedding_json`] and then
    /// [`crate::embedding::decode_embedding`] gives: UTF-8 is checked only
    /// when the decoding fails (`decode_embedding_bytes` says why that is
    /// enough).
    pub(crate) fn decode_embedding(&self, bytes: &[u8], out: &mut Vec<f32>) -> Result<()> {
        let Err(bad) = crate::embedding::decode_embedding_bytes(bytes, out) else {
            return Ok(());
        };
        Err(match std::str::from_utf8(bytes) {
            Err(e) => self.invalid("embedding_json", e),
            Ok(_) => Error::BadEmbedding {
                id: self.id.clone(),
                reason: bad.0,
            },
        })
    }

    fn enum_value<T: std::str::FromStr<Err = particles_model::UnknownVariant>>(
        &self,
        index: usize,
        field: &str,
    ) -> Result<T> {
        self.text(index, field)?
            .parse()
            .map_err(|e: particles_model::UnknownVariant| self.invalid(field, e))
    }

    /// A nullable enum: NULL and the empty string read as `None`.
    fn opt_enum<T: std::str::FromStr<Err = particles_model::UnknownVariant>>(
        &self,
        index: usize,
        field: &str,
    ) -> Result<Option<T>> {
        match self.opt_text(index, field)? {
            None | Some("") => Ok(None),
            Some(text) => text.parse().map(Some).map_err(|e| self.invalid(field, e)),
        }
    }

    fn opt_timestamp(&self, index: usize, field: &str) -> Result<Option<Timestamp>> {
        match self.opt_text(index, field)? {
            None => Ok(None),
            Some(text) => Timestamp::parse(text)
                .map(Some)
                .map_err(|e| self.invalid(field, e)),
        }
    }

    fn json(&self, field: &str, text: &str) -> Result<Value> {
        serde_json::from_str(text).map_err(|e| self.invalid(field, e))
    }

    /// Hydrates the whole row into a validated particle.
    pub(crate) fn to_particle(&self) -> Result<Particle> {
        // Parsed for validation only: the reference loads every DATETIME column, so a
        // malformed one fails the row even where the query path never looks.
        self.opt_timestamp(RETIRED_AT, "retired_at")?;
        self.opt_timestamp(MODALITY_CLASSIFIED_AT, "modality_classified_at")?;
        // The reference fetches every row's text as UTF-8 and parses every
        // DATETIME; these are read below only with a structured claim, the
        // id lossily (to name the row in any error), the embedding's model
        // only by the routes that filter on it (not the claim loaders), and
        // the rest of these not at all (selected for this check alone).
        self.utf8_only(ID)?;
        for unread in [
            BORN_RETIRED,
            CONTENT_NORM_HASH,
            EMBEDDING_MODEL,
            DOMAIN_HINT,
            MODALITY_CLASSIFIER,
            MODALITY_CLASSIFIER_MODEL,
        ] {
            self.utf8_only(unread)?;
        }
        if matches!(self.value(STRUCTURED_CLAIM_JSON)?, ValueRef::Null) {
            self.opt_timestamp(
                STRUCTURED_CLAIM_GENERATED_AT,
                "structured_claim_generated_at",
            )?;
            self.utf8_only(STRUCTURIZER_ID)?;
            self.utf8_only(STRUCTURIZER_VERSION)?;
        }

        let provenance = self.provenance()?;
        let properties = match self.opt_text(PROPERTIES_JSON, "properties_json")? {
            None | Some("") => None,
            Some(text) => match self.json("properties_json", text)? {
                Value::Null => None,
                Value::Object(map) => Some(map),
                other => {
                    return Err(self.invalid(
                        "properties_json",
                        format!("expected an object, found {}", json_kind(&other)),
                    ))
                }
            },
        };
        let subject_ids = self.string_list(
            "subject_ids_json",
            self.text(SUBJECT_IDS_JSON, "subject_ids_json")?,
        )?;
        let tags = match self.opt_text(TAGS_JSON, "tags_json")? {
            None | Some("") => None,
            Some(text) => match self.json("tags_json", text)? {
                Value::Null => None,
                _ => Some(self.string_list("tags_json", text)?),
            },
        };
        let contributors = match self.opt_text(CONTRIBUTORS_JSON, "contributors_json")? {
            None | Some("") => None,
            Some(text) => match self.json("contributors_json", text)? {
                Value::Null => None,
                value => Some(
                    serde_json::from_value::<Vec<ContributorRef>>(value)
                        .map_err(|e| self.invalid("contributors_json", e))?,
                ),
            },
        };

        let particle = Particle {
            id: self.id.clone(),
            content: self.text(CONTENT, "content")?.to_owned(),
            confidence: Confidence {
                value: self.confidence_value()?,
                variance: self.opt_real(CONFIDENCE_VARIANCE, "confidence_variance")?,
                calibration_source: self
                    .enum_value(CALIBRATION_SOURCE, "confidence_calibration_source")?,
                calibration_method: self
                    .opt_text(CALIBRATION_METHOD, "confidence_calibration_method")?
                    .map(str::to_owned),
                calibration_ref: self
                    .opt_text(CALIBRATION_REF, "confidence_calibration_ref")?
                    .map(str::to_owned),
            },
            uncertainty_nature: self.enum_value(UNCERTAINTY_NATURE, "uncertainty_nature")?,
            provenance,
            asserted_by: self.text(ASSERTED_BY, "asserted_by")?.to_owned(),
            asserted_at: self
                .opt_timestamp(ASSERTED_AT, "asserted_at")?
                .ok_or_else(|| self.invalid("asserted_at", "is NULL"))?,
            status: self.enum_value(STATUS, "status")?,
            status_reason: self.opt_enum(STATUS_REASON, "status_reason")?,
            schema_version: self.text(SCHEMA_VERSION, "schema_version")?.to_owned(),
            particle_type: self.enum_value(PARTICLE_TYPE, "particle_type")?,
            assertion_modality: self.enum_value(ASSERTION_MODALITY, "assertion_modality")?,
            uncertainty_kind: None,
            valid_until: self.opt_timestamp(VALID_UNTIL, "valid_until")?,
            valid_from: self.opt_timestamp(VALID_FROM, "valid_from")?,
            valid_kind: self.opt_enum(VALID_KIND, "valid_kind")?,
            supersedes: self.opt_text(SUPERSEDES, "supersedes")?.map(str::to_owned),
            basis: None,
            extractor_ref: self.extractor_ref()?,
            extraction_provider_model: self
                .opt_text(EXTRACTION_PROVIDER_MODEL, "extraction_provider_model")?
                .map(str::to_owned),
            sequence_context: None,
            subject_ids,
            tags,
            context_fingerprint: self
                .opt_text(CONTEXT_FINGERPRINT, "context_fingerprint")?
                .map(str::to_owned),
            properties,
            contributors,
            structured_claim: self.structured_claim()?,
            canonical_form: self.enum_value(CANONICAL_FORM, "canonical_form")?,
            contested: None,
        };
        particles_model::validate(particle, |_| String::new())
            .map(garde::Valid::into_inner)
            .map_err(|error| match error {
                particles_model::Error::Invalid { report, .. } => self.invalid("model", report),
                other => self.invalid("model", other),
            })
    }

    fn string_list(&self, field: &str, text: &str) -> Result<Vec<String>> {
        serde_json::from_str(text).map_err(|e| self.invalid(field, e))
    }

    fn provenance(&self) -> Result<Vec<ProvenanceRef>> {
        let text = self.text(PROVENANCE_JSON, "provenance_json")?;
        if let Some(refs) = crate::rowjson::provenance(text) {
            return Ok(refs);
        }
        provenance_from_value(text).map_err(|(field, reason)| self.invalid(field, reason))
    }

    /// A malformed ref reads as `None` (the reference coerces rather than fails, and
    /// the particle is then weighted as `general-extractor`).
    fn extractor_ref(&self) -> Result<Option<ExtractorRef>> {
        let Some(text) = self.opt_text(EXTRACTOR_REF_JSON, "extractor_ref_json")? else {
            return Ok(None);
        };
        if text.is_empty() {
            return Ok(None);
        }
        Ok(crate::rowjson::extractor_ref(text).unwrap_or_else(|| extractor_ref_from_value(text)))
    }

    fn structured_claim(&self) -> Result<Option<StructuredClaim>> {
        let Some(text) = self.opt_text(STRUCTURED_CLAIM_JSON, "structured_claim_json")? else {
            return Ok(None);
        };
        let structurizer_id = self.opt_text(STRUCTURIZER_ID, "structurizer_id")?;
        let structurizer_version = self.opt_text(STRUCTURIZER_VERSION, "structurizer_version")?;
        let generated_at = self.opt_timestamp(
            STRUCTURED_CLAIM_GENERATED_AT,
            "structured_claim_generated_at",
        )?;
        let (Some(structurizer_id), Some(structurizer_version), Some(generated_at)) =
            (structurizer_id, structurizer_version, generated_at)
        else {
            return Err(self.invalid(
                "structured_claim_json",
                "payload without a complete structurizer stamp",
            ));
        };
        let terms = match crate::rowjson::claim_terms(text) {
            Some(terms) => terms,
            None => claim_terms_from_value(text)
                .map_err(|reason| self.invalid("structured_claim_json", reason))?,
        };
        let ClaimTerms {
            subject,
            predicate,
            object,
            subject_id,
        } = terms;
        Ok(Some(StructuredClaim {
            subject,
            predicate,
            object,
            subject_id,
            structurizer_id: structurizer_id.to_owned(),
            structurizer_version: structurizer_version.to_owned(),
            generated_at,
        }))
    }
}

/// `provenance_json` through a `Value` tree: the slow path, which decides
/// wherever [`crate::rowjson::provenance`] does not, and words every error.
/// `Err` holds the field and the reason.
pub(crate) fn provenance_from_value(
    text: &str,
) -> std::result::Result<Vec<ProvenanceRef>, (&'static str, String)> {
    let invalid = |reason: String| ("provenance_json", reason);
    let value: Value = serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
    let Value::Array(items) = value else {
        return Err(invalid("expected an array".into()));
    };
    items
        .into_iter()
        .map(|item| {
            let Value::Object(map) = item else {
                return Err(invalid("a ref is not an object".into()));
            };
            let ref_type = match map.get("type") {
                Some(Value::String(t)) => {
                    t.parse().map_err(|e: particles_model::UnknownVariant| {
                        ("provenance_json.type", e.to_string())
                    })?
                }
                _ => return Err(invalid("a ref has no string `type`".into())),
            };
            let corpus_entry_id = match map.get("corpus_entry_id") {
                Some(Value::String(id)) => id.clone(),
                _ => return Err(invalid("a ref has no string `corpus_entry_id`".into())),
            };
            let optional = |key: &str| match map.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(invalid(format!("`{key}` is not a string"))),
            };
            Ok(ProvenanceRef {
                ref_type,
                corpus_entry_id,
                snapshot_id: optional("snapshot_id")?,
                location: optional("location")?,
                chunk_hash: optional("chunk_hash")?,
            })
        })
        .collect()
}

/// `extractor_ref_json` through a `Value` tree: the slow path. A malformed
/// ref reads as `None`.
pub(crate) fn extractor_ref_from_value(text: &str) -> Option<ExtractorRef> {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) else {
        return None;
    };
    match (map.get("name"), map.get("version")) {
        (Some(Value::String(name)), Some(Value::String(version)))
            if !name.is_empty() && !version.is_empty() =>
        {
            Some(ExtractorRef {
                name: name.clone(),
                version: version.clone(),
            })
        }
        _ => None,
    }
}

/// A structured claim's payload through a `Value` tree: the slow path.
/// `Err` holds the reason (the field is `structured_claim_json`).
pub(crate) fn claim_terms_from_value(text: &str) -> std::result::Result<ClaimTerms, String> {
    let payload: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let term = |key: &str| -> std::result::Result<ClaimTerm, String> {
        let value = payload
            .get(key)
            .cloned()
            .ok_or_else(|| format!("no `{key}`"))?;
        serde_json::from_value(value).map_err(|e| e.to_string())
    };
    let subject_id = match payload.get("subject_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("subject_id is not a string".into()),
    };
    Ok(ClaimTerms {
        subject: term("subject")?,
        predicate: term("predicate")?,
        object: term("object")?,
        subject_id,
    })
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::{COLUMN_NAMES, DATETIME_COLUMNS, PARTICLE_COLUMNS};

    #[test]
    fn column_names_follow_the_selected_columns() {
        let selected: Vec<&str> = PARTICLE_COLUMNS
            .split(", ")
            .map(|column| column.trim().trim_start_matches("particles."))
            .collect();
        assert_eq!(selected, COLUMN_NAMES);
        for index in DATETIME_COLUMNS {
            let name = COLUMN_NAMES[index];
            assert!(
                name.ends_with("_at") || name.starts_with("valid_"),
                "{name}"
            );
        }
    }
}
