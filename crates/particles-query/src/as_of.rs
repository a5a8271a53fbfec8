//! The as-of route: what the store believed at an instant T.
//!
//! A particle is visible at T when it had been asserted (`asserted_at <= T`), was
//! ever believed (not born retired, not an INCONSISTENCY record, not a pending
//! conflict loser), was still valid (`valid_until` not before T), and was not yet
//! retired: it is ACTIVE now, or its retirement instant R, found on the ladder
//! (stored `retired_at`, the earliest successor's assertion, the latest retiring
//! operator event, `valid_until` for an expiry), is after T. A retired particle
//! whose R cannot be found is excluded and counted: the lens never invents an
//! instant. This follows the reference's `operations/query/as_of.py`.

use std::collections::{HashMap, HashSet};

use particles_candidates::{CandidateSet, Selection};
use particles_model::{
    response::{AsOfNote, RetirementBasis, Successor},
    Particle, Status, StatusReason, Timestamp,
};
use particles_store::{CandidateLoader, Store};

/// The store's retirement-dating facts, read once per query: what
/// [`as_of_visibility`](crate::as_of_visibility) dates a retired particle with.
pub struct RetirementIndex {
    pub(crate) successors: HashMap<String, Successor>,
    /// The latest retiring event's instant per particle (`ensure_utc`'d).
    events: HashMap<String, Timestamp>,
    never_believed: HashSet<String>,
}

/// The reference's `ensure_utc`: a naive value is read as UTC; an aware one keeps
/// its own offset (so a note shows `+02:00` where the store wrote it).
pub(crate) fn ensure_utc(timestamp: Timestamp) -> Timestamp {
    if timestamp.is_aware() {
        timestamp
    } else {
        timestamp.with_utc_offset()
    }
}

impl RetirementIndex {
    /// Reads the index from `store` (successor pointers, retiring operator
    /// events, born-retired ids), in the caller's read transaction.
    ///
    /// # Errors
    ///
    /// Whatever the store's reads fail with.
    pub fn load(store: &Store) -> particles_store::Result<RetirementIndex> {
        let mut successors: HashMap<String, Successor> = HashMap::new();
        for row in particles_store::successor_rows(store)? {
            let earlier = successors.get(&row.supersedes).is_none_or(|current| {
                row.asserted_at.utc_micros() < current.asserted_at.utc_micros()
            });
            if earlier {
                successors.insert(
                    row.supersedes,
                    Successor {
                        id: row.id,
                        content: row.content,
                        asserted_at: row.asserted_at,
                    },
                );
            }
        }
        let mut events: HashMap<String, Timestamp> = HashMap::new();
        for (id, occurred_at) in particles_store::retirement_events(store)? {
            let at = ensure_utc(occurred_at);
            let later = events
                .get(&id)
                .is_none_or(|current| at.utc_micros() > current.utc_micros());
            if later {
                events.insert(id, at);
            }
        }
        Ok(RetirementIndex {
            successors,
            events,
            never_believed: particles_store::born_retired_ids(store)?,
        })
    }

    /// The note of a particle retired at `retired_at`, with its successor when one
    /// supersedes it.
    pub(crate) fn note(
        &self,
        particle: &Particle,
        retired_at: Timestamp,
        basis: RetirementBasis,
    ) -> AsOfNote {
        AsOfNote {
            status: particle.status,
            status_reason: particle.status_reason,
            retired_at,
            basis,
            successor: self.successors.get(&particle.id).map(|s| Successor {
                asserted_at: ensure_utc(s.asserted_at),
                ..s.clone()
            }),
        }
    }

    /// Never believed: born retired, an INCONSISTENCY record or a pending conflict
    /// loser.
    pub(crate) fn never_believed(&self, particle: &Particle) -> bool {
        self.never_believed.contains(&particle.id)
            || particle.status == Status::Inconsistency
            || particle.status_reason == Some(StatusReason::ConflictPending)
    }

    /// The retirement ladder: `(instant, rung)`, the instant as the rung holds it
    /// (naive read as UTC, an offset kept), or `None` when no rung dates it.
    pub(crate) fn resolve(
        &self,
        particle: &Particle,
        stored: Option<Timestamp>,
    ) -> Option<(Timestamp, RetirementBasis)> {
        if let Some(stored) = stored {
            return Some((ensure_utc(stored), RetirementBasis::Stored));
        }
        if let Some(successor) = self.successors.get(&particle.id) {
            return Some((
                ensure_utc(successor.asserted_at),
                RetirementBasis::Successor,
            ));
        }
        if let Some(&at) = self.events.get(&particle.id) {
            return Some((at, RetirementBasis::Event));
        }
        match (particle.status_reason, particle.valid_until) {
            (Some(StatusReason::ValidityExpired), Some(until)) => {
                Some((ensure_utc(until), RetirementBasis::ValidUntil))
            }
            _ => None,
        }
    }
}

/// The verdict on one candidate.
pub enum Visibility {
    /// Not believed at T: not yet asserted, never believed, expired, or retired
    /// by T.
    Hidden,
    /// Retired now, but no rung of the ladder dates its retirement: excluded
    /// and counted.
    Undatable,
    /// Believed at T, with a note when it is retired now.
    Visible(Option<AsOfNote>),
}

/// Whether `particle` (with its stored `retired_at`) was believed at `as_of`
/// (UTC microseconds), as the reference's as-of view decides it.
pub fn evaluate(
    index: &RetirementIndex,
    particle: &Particle,
    stored: Option<Timestamp>,
    as_of: i64,
) -> Visibility {
    if particle.asserted_at.utc_micros() > as_of {
        return Visibility::Hidden;
    }
    if index.never_believed(particle) {
        return Visibility::Hidden;
    }
    if particle
        .valid_until
        .is_some_and(|until| until.utc_micros() < as_of)
    {
        return Visibility::Hidden;
    }
    if particle.status == Status::Active {
        return Visibility::Visible(None);
    }
    let Some((retired_at, basis)) = index.resolve(particle, stored) else {
        return Visibility::Undatable;
    };
    if retired_at.utc_micros() <= as_of {
        return Visibility::Hidden;
    }
    Visibility::Visible(Some(index.note(particle, retired_at, basis)))
}

/// The as-of loader: candidates of every status believed at `as_of`, with a note
/// for each that is retired now, and the count of undatable retirements excluded.
pub(crate) struct AsOfLoader {
    as_of: Timestamp,
    notes: HashMap<String, AsOfNote>,
    excluded_undatable: usize,
}

impl AsOfLoader {
    /// A loader for the instant `as_of` (naive read as UTC).
    pub fn new(as_of: Timestamp) -> AsOfLoader {
        AsOfLoader {
            as_of,
            notes: HashMap::new(),
            excluded_undatable: 0,
        }
    }

    /// The notes of the last load, by particle id, taken out of the loader.
    pub fn into_notes(self) -> HashMap<String, AsOfNote> {
        self.notes
    }

    /// Retired candidates of the last load left out because no rung dated them.
    pub fn excluded_undatable(&self) -> usize {
        self.excluded_undatable
    }
}

impl CandidateLoader for AsOfLoader {
    fn select(
        &mut self,
        store: &Store,
        min_confidence: f64,
        subject_id: Option<&str>,
    ) -> particles_store::Result<Selection> {
        let as_of = self.as_of.utc_micros();
        let index = RetirementIndex::load(store)?;
        let (rows, skipped) =
            particles_store::load_as_of(store, as_of, min_confidence, subject_id)?;
        self.notes.clear();
        self.excluded_undatable = 0;
        let mut set = CandidateSet::new();
        for row in rows {
            match evaluate(&index, &row.particle, row.retired_at, as_of) {
                Visibility::Hidden => {}
                Visibility::Undatable => self.excluded_undatable += 1,
                Visibility::Visible(note) => {
                    if let Some(note) = note {
                        self.notes.insert(row.particle.id.clone(), note);
                    }
                    set.push(row.rowid, &row.particle, &row.vector, None);
                }
            }
        }
        Ok(Selection::all(set, skipped))
    }
}
