//! What the deterministic (structural) modes read: candidates selected by their
//! form, not by a vector, so no embedding is required and none is decoded.
//!
//! Three loaders, one per route of the reference's structural gather
//! (`operations/query/structural.py` and `window.py`): the ACTIVE rows carrying a
//! structured claim, the same across statuses for the as-of lens, and the dated
//! rows of every status for the window route. Their statements have no `ORDER BY`
//! in the reference; SQLite answers them through an index, and the orders written
//! here are the ones its plans give (checked with `EXPLAIN QUERY PLAN` on the
//! reference's SQLite): `(confidence_value, rowid)` everywhere, except that the
//! all-status loaders with a subject walk `ix_particle_subjects_subject_id` and
//! so return the subject's links in `particle_subjects.rowid` order. Those orders
//! are the final tie-breaks of every listing.

use particles_model::{Particle, Timestamp};

use crate::{
    error::Result,
    fault::read_judged,
    row::{ParticleRow, MODEL_COLUMNS},
    Store,
};

/// One candidate of a structural route: the hydrated particle, its rowid and its
/// stored `retired_at` (a storage column, not a particle field; the as-of and
/// window lenses date retirements with it).
#[derive(Debug, Clone, PartialEq)]
pub struct ScopeRow {
    /// The row's rowid.
    pub rowid: i64,
    /// The particle.
    pub particle: Particle,
    /// The `retired_at` column.
    pub retired_at: Option<Timestamp>,
}

/// The reference's `get_active_particles_with_claims`: ACTIVE rows with a
/// structured claim and `confidence_value >= min_confidence`, with or without an
/// embedding, optionally linked to `subject_id`; in `(confidence_value, rowid)`
/// order. With a subject the plan walks the subject's links first (`CROSS
/// JOIN`): driven from `ix_particles_status_confidence`, as SQLite picks without
/// statistics, it probed every ACTIVE row's links (460 ms at 100k against about
/// 1 ms); the `ORDER BY` fixes the order either way.
///
/// # Errors
///
/// [`crate::Error::Query`], [`crate::Error::InvalidRow`] on a row the reference
/// would also refuse.
pub fn load_active_claims(
    store: &Store,
    min_confidence: f64,
    subject_id: Option<&str>,
) -> Result<Vec<ScopeRow>> {
    read_scope(
        store,
        "claim loader",
        &active_claims_sql(subject_id.is_some()),
        min_confidence,
        subject_id,
        None,
    )
}

/// [`load_active_claims`]'s statement, with or without the subject (`?2`).
fn active_claims_sql(with_subject: bool) -> String {
    if !with_subject {
        format!(
            "SELECT {MODEL_COLUMNS} FROM particles \
             WHERE status = 'ACTIVE' AND confidence_value >= ?1 \
               AND structured_claim_json IS NOT NULL \
             ORDER BY confidence_value ASC, particles.rowid ASC"
        )
    } else {
        format!(
            "SELECT {MODEL_COLUMNS} FROM particle_subjects \
             CROSS JOIN particles ON particle_subjects.particle_id = particles.id \
             WHERE particles.status = 'ACTIVE' AND particles.confidence_value >= ?1 \
               AND particles.structured_claim_json IS NOT NULL \
               AND particle_subjects.subject_id = ?2 \
             ORDER BY particles.confidence_value ASC, particles.rowid ASC"
        )
    }
}

/// The reference's `get_particles_with_claims_as_of`: rows of **every** status
/// with a structured claim and `confidence_value >= min_confidence` (optionally
/// linked to `subject_id`), minus rows asserted after `as_of_micros` (naive read
/// as UTC; such rows are not even hydrated, as in the reference).
///
/// # Errors
///
/// As [`load_active_claims`].
pub fn load_claims_as_of(
    store: &Store,
    as_of_micros: i64,
    min_confidence: f64,
    subject_id: Option<&str>,
) -> Result<Vec<ScopeRow>> {
    let sql = match subject_id {
        None => format!(
            "SELECT {MODEL_COLUMNS} FROM particles \
             WHERE confidence_value >= ?1 AND structured_claim_json IS NOT NULL \
             ORDER BY confidence_value ASC, particles.rowid ASC"
        ),
        Some(_) => format!(
            "SELECT {MODEL_COLUMNS} FROM particles \
             JOIN particle_subjects ON particle_subjects.particle_id = particles.id \
             WHERE particles.confidence_value >= ?1 \
               AND particles.structured_claim_json IS NOT NULL \
               AND particle_subjects.subject_id = ?2 \
             ORDER BY particle_subjects.rowid ASC"
        ),
    };
    read_scope(
        store,
        "as-of claim loader",
        &sql,
        min_confidence,
        subject_id,
        Some(as_of_micros),
    )
}

/// The reference's `get_particles_in_window_scope` without an embedding
/// requirement: dated rows (`valid_from` set) of every status with
/// `confidence_value >= min_confidence`, with a structured claim when
/// `require_claim` (the structural modes) or any (the window listing), optionally
/// linked to `subject_id`.
///
/// # Errors
///
/// As [`load_active_claims`].
pub fn load_window_scope(
    store: &Store,
    min_confidence: f64,
    subject_id: Option<&str>,
    require_claim: bool,
) -> Result<Vec<ScopeRow>> {
    let claim = if require_claim {
        "AND particles.structured_claim_json IS NOT NULL"
    } else {
        ""
    };
    let sql = match subject_id {
        None => format!(
            "SELECT {MODEL_COLUMNS} FROM particles \
             WHERE particles.confidence_value >= ?1 AND particles.valid_from IS NOT NULL {claim} \
             ORDER BY particles.confidence_value ASC, particles.rowid ASC"
        ),
        Some(_) => format!(
            "SELECT {MODEL_COLUMNS} FROM particles \
             JOIN particle_subjects ON particle_subjects.particle_id = particles.id \
             WHERE particles.confidence_value >= ?1 AND particles.valid_from IS NOT NULL {claim} \
               AND particle_subjects.subject_id = ?2 \
             ORDER BY particle_subjects.rowid ASC"
        ),
    };
    read_scope(
        store,
        "window scope loader",
        &sql,
        min_confidence,
        subject_id,
        None,
    )
}

fn read_scope(
    store: &Store,
    name: &'static str,
    sql: &str,
    min_confidence: f64,
    subject_id: Option<&str>,
    asserted_by: Option<i64>,
) -> Result<Vec<ScopeRow>> {
    read_judged(store, name, sql, min_confidence, subject_id, |row| {
        scope_row(row, asserted_by)
    })
}

/// One row as the reference's claim loaders read it: `None` for a row
/// asserted after `asserted_by`, which is not even hydrated (but fails as it
/// is fetched).
fn scope_row(row: &ParticleRow<'_, '_>, asserted_by: Option<i64>) -> Result<Option<ScopeRow>> {
    if let Some(limit) = asserted_by {
        if row.asserted_at_micros()? > limit {
            return row.fetch_fault().map_or(Ok(None), Err);
        }
    }
    Ok(Some(ScopeRow {
        rowid: row.rowid(),
        retired_at: row.retired_at()?,
        particle: crate::profile::hydrate(|| row.to_particle())?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use particles_model::{ClaimTerm, Confidence, Status, StructuredClaim, TermKind};

    fn claim(predicate: &str) -> StructuredClaim {
        let term = |kind, value: &str| ClaimTerm {
            kind,
            value: value.to_owned(),
            datatype: None,
            language: None,
        };
        StructuredClaim {
            subject: term(TermKind::Token, "coin"),
            predicate: term(TermKind::Token, predicate),
            object: term(TermKind::Literal, "5"),
            subject_id: None,
            structurizer_id: "test".to_owned(),
            structurizer_version: "1".to_owned(),
            generated_at: Timestamp::parse("2024-01-01T00:00:00").expect("a valid instant"),
        }
    }

    fn particle(id: &str, confidence: f64, status: Status, with_claim: bool) -> Particle {
        let mut particle: Particle = serde_json::from_value(serde_json::json!({
            "id": id,
            "content": format!("belief {id}"),
            "confidence": {"value": confidence},
            "uncertainty_nature": "EPISTEMIC",
            "provenance": [],
            "asserted_by": "test",
            "asserted_at": "2024-01-01T00:00:00",
            "status": "ACTIVE",
            "particle_type": "CLAIM",
            "assertion_modality": "FALSIFIABLE",
            "subject_ids": [],
        }))
        .expect("a valid particle");
        particle.confidence = Confidence {
            value: confidence,
            ..particle.confidence
        };
        particle.status = status;
        if with_claim {
            particle.structured_claim = Some(claim("weighs"));
        }
        particle
    }

    fn store_with(particles: &[(Particle, bool)]) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("store.db");
        let mut writer = crate::create_store(&path).expect("a new store");
        let tx = writer.transaction().expect("a write transaction");
        for (particle, embedded) in particles {
            let vector = vec![0.5f32; 384];
            let valid = particles_model::validate(particle.clone(), |p| p.id.clone())
                .expect("a valid particle");
            tx.insert(&valid, embedded.then_some(vector.as_slice()))
                .expect("inserted");
        }
        tx.commit().expect("committed");
        drop(writer);
        let store = Store::open_read_only(&path).expect("the store opens");
        (dir, store)
    }

    #[test]
    fn a_subjects_claims_are_read_from_its_links() {
        let (_dir, store) = store_with(&[]);
        let plan = crate::response::tests::plan(&store, &active_claims_sql(true));
        assert!(
            plan[0].starts_with(
                "SEARCH particle_subjects USING INDEX ix_particle_subjects_subject_id"
            ),
            "{plan:?}"
        );
    }

    #[test]
    fn the_claim_loader_needs_a_claim_not_an_embedding() {
        let (_dir, store) = store_with(&[
            (particle("a", 0.9, Status::Active, true), false),
            (particle("b", 0.4, Status::Active, true), true),
            (particle("c", 0.5, Status::Active, false), true),
            (particle("d", 0.6, Status::Superseded, true), true),
        ]);
        let rows = load_active_claims(&store, 0.0, None).expect("loaded");
        let ids: Vec<&str> = rows.iter().map(|r| r.particle.id.as_str()).collect();
        // ACTIVE with a claim, in (confidence, rowid) order; no embedding needed.
        assert_eq!(ids, ["b", "a"]);
        let rows = load_active_claims(&store, 0.5, None).expect("loaded");
        assert_eq!(rows.len(), 1);
    }

    #[test]
    fn the_as_of_claim_loader_spans_statuses_and_cuts_at_t() {
        let (_dir, store) = store_with(&[
            (particle("a", 0.9, Status::Active, true), false),
            (particle("d", 0.6, Status::Superseded, true), true),
        ]);
        let before = Timestamp::parse("2023-01-01T00:00:00Z")
            .expect("an instant")
            .utc_micros();
        assert!(load_claims_as_of(&store, before, 0.0, None)
            .expect("loaded")
            .is_empty());
        let after = Timestamp::parse("2025-01-01T00:00:00Z")
            .expect("an instant")
            .utc_micros();
        let ids: Vec<String> = load_claims_as_of(&store, after, 0.0, None)
            .expect("loaded")
            .into_iter()
            .map(|r| r.particle.id)
            .collect();
        assert_eq!(ids, ["d", "a"]);
    }
}
