//! The schema-version guard: refuse a store whose ACTIVE particles carry a stamp of
//! another major, before anything is loaded.

use std::fmt;

use particles_model::{parse_schema_version, SCHEMA_VERSION};

use crate::{
    error::{query_error, Error, Result},
    Store,
};

/// ACTIVE particles whose schema stamp this engine cannot read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaMismatch {
    /// Every ACTIVE stamp with its particle count, sorted by parsed version with
    /// malformed stamps last.
    pub found: Vec<(String, u64)>,
}

impl fmt::Display for SchemaMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total: u64 = self.found.iter().map(|(_, n)| n).sum();
        let breakdown: Vec<String> = self
            .found
            .iter()
            .map(|(stamp, n)| format!("{n} at v{stamp}"))
            .collect();
        write!(
            f,
            "store holds {total} ACTIVE particle(s) with schema versions this engine (schema {SCHEMA_VERSION}) cannot read: {}; ",
            breakdown.join(", ")
        )?;
        let ahead = self.found.iter().any(|(stamp, _)| {
            parse_schema_version(stamp).is_some_and(|(major, _, _)| major > major_of_sdk())
        });
        if ahead {
            f.write_str("the store was written by a newer engine: upgrade particles-rs")
        } else {
            f.write_str("the store predates this schema: rebuild it by re-extraction")
        }
    }
}

fn major_of_sdk() -> u64 {
    parse_schema_version(SCHEMA_VERSION).map_or(1, |(major, _, _)| major)
}

/// Whether a stamp can be read: `MAJOR.MINOR.PATCH` with the SDK's major (never 0).
fn compatible(stamp: &str) -> bool {
    parse_schema_version(stamp).is_some_and(|(major, _, _)| major != 0 && major == major_of_sdk())
}

/// Checks the store as the reference's `assert_store_schema_current` does: a cheap
/// byte-order probe for stamps outside `1.`, then, only if it trips, a count per
/// stamp.
///
/// # Errors
///
/// [`Error::SchemaMismatch`] when any ACTIVE stamp is incompatible, [`Error::Query`]
/// when SQLite fails.
pub fn check_schema_version(store: &Store) -> Result<()> {
    let major = major_of_sdk();
    let low = format!("{major}.");
    let high = format!("{major}/");
    let connection = store.connection();
    let tripped: bool = connection
        .prepare_cached(
            "SELECT EXISTS(SELECT 1 FROM particles WHERE status = 'ACTIVE' AND schema_version < ?1) \
             OR EXISTS(SELECT 1 FROM particles WHERE status = 'ACTIVE' AND schema_version >= ?2)",
        )
        .and_then(|mut statement| statement.query_row([&low, &high], |row| row.get(0)))
        .map_err(query_error("schema version probe"))?;
    if !tripped {
        return Ok(());
    }
    let mut statement = connection
        .prepare(
            "SELECT schema_version, count(id) FROM particles WHERE status = 'ACTIVE' \
             GROUP BY schema_version",
        )
        .map_err(query_error("schema version count"))?;
    let mut found = statement
        .query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
        })
        .map_err(query_error("schema version count"))?
        .map(|row| row.map(|(stamp, n)| (stamp, n.max(0) as u64)))
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(query_error("schema version count"))?;
    if found.iter().all(|(stamp, _)| compatible(stamp)) {
        return Ok(());
    }
    found.sort_by(|(a, _), (b, _)| {
        let key = |s: &str| parse_schema_version(s).map_or((1, (0, 0, 0)), |v| (0, v));
        key(a).cmp(&key(b)).then_with(|| a.cmp(b))
    });
    Err(Error::SchemaMismatch(SchemaMismatch { found }))
}
