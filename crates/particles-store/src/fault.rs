//! Which fault a failing read names: the one the reference meets first.
//!
//! The reference fetches a statement's rows together (a loader's whole
//! result, a partition of its build, a chunk of its delta) before it reads
//! any of them, and fetching already fails on some faults. So the fault it
//! names may be a later row's than the one a row-by-row read stops on. The
//! fast paths read row by row; on the way to an error they read the rows
//! again through [`FirstFault`], which costs nothing on a store without one.

use rusqlite::params;

use crate::{
    error::{query_error, Result},
    row::ParticleRow,
    Error, Store,
};

/// The fault the reference meets first in rows it fetches together, given
/// them in order: a TEXT value that is not UTF-8 in any of them (its sqlite3
/// module decodes the rows as it fetches them), else a DATETIME that does not
/// parse in any of them (SQLAlchemy loads them), else the first row, in
/// order, that `check` fails: the route's own reading of a row (which rows it
/// skips, then decoding and validating the rest, in the route's order).
/// Columns this engine does not select are not seen.
pub(crate) struct FirstFault<C> {
    check: C,
    utf8: Option<Error>,
    datetime: Option<Error>,
    hydration: Option<Error>,
    scratch: Vec<f32>,
}

impl<C: FnMut(&ParticleRow<'_, '_>, &mut Vec<f32>) -> Result<()>> FirstFault<C> {
    pub(crate) fn new(check: C) -> FirstFault<C> {
        FirstFault {
            check,
            utf8: None,
            datetime: None,
            hydration: None,
            scratch: Vec::new(),
        }
    }

    /// Takes the next row (or its failure to name itself: an id that is not
    /// text, which the reference fetches and fails on only when it validates
    /// the row); `false` once no later row can change the answer.
    pub(crate) fn see(&mut self, row: Result<ParticleRow<'_, '_>>) -> bool {
        let row = match row {
            Ok(row) => row,
            Err(fault) => {
                if self.datetime.is_none() && self.hydration.is_none() {
                    self.hydration = Some(fault);
                }
                return true;
            }
        };
        if let Some(fault) = row.utf8_fault() {
            self.utf8 = Some(fault);
            return false;
        }
        if self.datetime.is_none() {
            self.datetime = row.datetime_fault();
            if self.datetime.is_none() && self.hydration.is_none() {
                self.hydration = (self.check)(&row, &mut self.scratch).err();
            }
        }
        true
    }

    pub(crate) fn first(self) -> Option<Error> {
        self.utf8.or(self.datetime).or(self.hydration)
    }
}

/// Whether a read that stopped on `found` should look for the reference's
/// fault: only a row's own fault can be named differently (SQLite's failures
/// are SQLite's).
pub(crate) fn is_row_fault(found: &Error) -> bool {
    matches!(found, Error::InvalidRow { .. } | Error::BadEmbedding { .. })
}

/// [`FirstFault`] over a statement's whole result, read again; `None` when
/// SQLite fails (the caller keeps the fault it had) or no row faults.
pub(crate) fn first_fault_again<P: rusqlite::Params>(
    statement: &mut rusqlite::CachedStatement<'_>,
    params: P,
    check: impl FnMut(&ParticleRow<'_, '_>, &mut Vec<f32>) -> Result<()>,
) -> Option<Error> {
    let mut rows = statement.query(params).ok()?;
    let mut fault = FirstFault::new(check);
    while let Some(row) = rows.next().ok()? {
        if !fault.see(ParticleRow::new(row)) {
            break;
        }
    }
    fault.first()
}

/// Runs a loader's statement (`?1` the confidence floor, `?2` the subject
/// when one is given) and keeps what `read` makes of each row, in order;
/// when a row fails, the reference's first fault in the whole result (the
/// loaders that fetch it all before reading it: as-of, window, claims).
pub(crate) fn read_judged<T>(
    store: &Store,
    name: &'static str,
    sql: &str,
    min_confidence: f64,
    subject_id: Option<&str>,
    read: impl FnMut(&ParticleRow<'_, '_>) -> Result<Option<T>>,
) -> Result<Vec<T>> {
    let mut statement = crate::profile::sql(|| store.connection().prepare_cached(sql))
        .map_err(query_error(name))?;
    match subject_id {
        None => judged_rows(name, &mut statement, params![min_confidence], read),
        Some(subject) => judged_rows(name, &mut statement, params![min_confidence, subject], read),
    }
}

fn judged_rows<P: rusqlite::Params + Copy, T>(
    name: &'static str,
    statement: &mut rusqlite::CachedStatement<'_>,
    params: P,
    mut read: impl FnMut(&ParticleRow<'_, '_>) -> Result<Option<T>>,
) -> Result<Vec<T>> {
    let mut rows = statement.query(params).map_err(query_error(name))?;
    let mut out = Vec::new();
    while let Some(row) = crate::profile::sql(|| rows.next()).map_err(query_error(name))? {
        match ParticleRow::new(row).and_then(|row| read(&row)) {
            Ok(Some(kept)) => out.push(kept),
            Ok(None) => {}
            Err(found) if is_row_fault(&found) => {
                // The reference fetches the whole result first: the fault it
                // meets first may be a later row's.
                drop(rows);
                let check = |row: &ParticleRow<'_, '_>, _: &mut Vec<f32>| read(row).map(drop);
                return Err(first_fault_again(statement, params, check).unwrap_or(found));
            }
            Err(other) => return Err(other),
        }
    }
    Ok(out)
}
