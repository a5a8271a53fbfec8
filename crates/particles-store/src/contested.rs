//! The contested backref map: which beliefs an open INCONSISTENCY record names.

use crate::{
    error::{query_error, Result},
    row::{ParticleRow, MODEL_COLUMNS},
    Store,
};

/// Every INCONSISTENCY-status particle's `PARTICLE` provenance refs, as
/// `(referenced particle id, record id)` pairs: the reference's
/// `get_inconsistency_backrefs`. Records come in the order SQLite returns the
/// reference's own statement (`WHERE status = 'INCONSISTENCY'`, no ORDER BY) and
/// a belief named by several records keeps the first, so the list has no
/// repeated belief id. Each record is hydrated whole, as the reference's ORM
/// does, so a malformed record fails the call as it fails the reference's.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails, [`crate::Error::InvalidRow`] on a
/// malformed record.
pub fn inconsistency_backrefs(store: &Store) -> Result<Vec<(String, String)>> {
    let sql = format!("SELECT {MODEL_COLUMNS} FROM particles WHERE particles.status = ?1");
    let mut statement = store
        .connection()
        .prepare_cached(&sql)
        .map_err(query_error("inconsistency records"))?;
    let mut rows = statement
        .query(["INCONSISTENCY"])
        .map_err(query_error("inconsistency records"))?;
    let mut seen = std::collections::HashSet::new();
    let mut backrefs = Vec::new();
    while let Some(row) = rows.next().map_err(query_error("inconsistency records"))? {
        let record = ParticleRow::new(row)?.to_particle()?;
        for reference in &record.provenance {
            if reference.ref_type == particles_model::ProvenanceRefType::Particle
                && seen.insert(reference.corpus_entry_id.clone())
            {
                backrefs.push((reference.corpus_entry_id.clone(), record.id.to_string()));
            }
        }
    }
    Ok(backrefs)
}
