//! Reading the policy tables a query consults once: extractor weights, trust
//! statements, source-trust rules and adopted lenses.

use particles_model::policy::{
    ExtractorRecord, Lens, LensEntry, PolicyRows, SourceTrustRule, TrustStatement,
};
use rusqlite::Row;

use crate::{
    error::{query_error, Result},
    Store,
};

/// Reads every policy row a query needs. Tables a store lacks (older schemas) read
/// as empty.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn load_policy_rows(store: &Store) -> Result<PolicyRows> {
    let mut rows = PolicyRows::default();
    if store.has_table("extractor_records")? {
        rows.extractors = collect(
            store,
            "extractor records",
            "SELECT extractor_id, trust_weight, conformance_required_failure FROM extractor_records",
            |row| {
                Ok(ExtractorRecord {
                    extractor_id: row.get(0)?,
                    trust_weight: row.get(1)?,
                    conformance_required_failure: row.get(2)?,
                })
            },
        )?;
    }
    if store.has_table("trust_statements")? {
        // Ascending, so the latest statement for a key overwrites earlier ones.
        rows.statements = collect(
            store,
            "trust statements",
            "SELECT domain, source_ref_type, source_ref_value, trust_rank FROM trust_statements \
             ORDER BY asserted_at ASC",
            |row| {
                Ok(TrustStatement {
                    domain: row.get(0)?,
                    source_ref_type: row.get(1)?,
                    source_ref_value: row.get(2)?,
                    trust_rank: row.get(3)?,
                })
            },
        )?;
    }
    if store.has_table("source_trust")? {
        // No ORDER BY, as the reference: rules apply in the order SQLite returns them.
        rows.source_trust = collect(
            store,
            "source trust rules",
            "SELECT scope, pattern, score, modifier FROM source_trust",
            |row| {
                Ok(SourceTrustRule {
                    scope: row.get(0)?,
                    pattern: row.get(1)?,
                    score: row.get(2)?,
                    modifier: row.get(3)?,
                })
            },
        )?;
    }
    if store.has_table("trust_lens_adoptions")? {
        rows.lenses = adopted_lenses(store)?;
    }
    Ok(rows)
}

fn adopted_lenses(store: &Store) -> Result<Vec<Lens>> {
    let names: Vec<String> = collect(
        store,
        "lens adoptions",
        "SELECT lens_name FROM trust_lens_adoptions",
        |row| row.get(0),
    )?;
    let mut lenses = Vec::with_capacity(names.len());
    for name in names {
        let found: Vec<(String, i64)> = collect_with(
            store,
            "trust lens",
            "SELECT lens_id, version FROM trust_lenses WHERE name = ?1",
            [&name],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        // An adoption whose lens is gone is skipped (the reference warns).
        let Some((lens_id, version)) = found.into_iter().next() else {
            continue;
        };
        let entries = collect_with(
            store,
            "trust lens entries",
            "SELECT entry_kind, domain, source_type, trust_rank, pattern, score, modifier, \
             extractor_id, weight, half_life_days, floor, half_life_uses_days, rank_lift, \
             modality, modality_when FROM trust_lens_entries WHERE lens_id = ?1",
            [&lens_id],
            |row| {
                Ok(LensEntry {
                    entry_kind: row.get(0)?,
                    domain: row.get(1)?,
                    source_type: row.get(2)?,
                    trust_rank: row.get(3)?,
                    pattern: row.get(4)?,
                    score: row.get(5)?,
                    modifier: row.get(6)?,
                    extractor_id: row.get(7)?,
                    weight: row.get(8)?,
                    half_life_days: row.get(9)?,
                    floor: row.get(10)?,
                    half_life_uses_days: row.get(11)?,
                    rank_lift: row.get(12)?,
                    modality: row.get(13)?,
                    modality_when: row.get(14)?,
                })
            },
        )?;
        lenses.push(Lens {
            name,
            version,
            entries,
        });
    }
    Ok(lenses)
}

fn collect<T>(
    store: &Store,
    name: &'static str,
    sql: &str,
    map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    collect_with(store, name, sql, [], map)
}

pub(crate) fn collect_with<T, P: rusqlite::Params>(
    store: &Store,
    name: &'static str,
    sql: &str,
    params: P,
    map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    let mut statement = store
        .connection()
        .prepare_cached(sql)
        .map_err(query_error(name))?;
    let rows = statement
        .query_map(params, map)
        .map_err(query_error(name))?;
    rows.collect::<rusqlite::Result<Vec<T>>>()
        .map_err(query_error(name))
}
