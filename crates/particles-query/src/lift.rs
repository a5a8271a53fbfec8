//! The recall lifts over a store (the reference's `apply_utility` and
//! `apply_owner`): each belief's usefulness addend from its use events, and the
//! owner lens's addend from the configured subjects, resolved in the store.
//! The arithmetic is `particles_rank`'s; this module does the reads.

use std::collections::HashSet;

use particles_model::Timestamp;
use particles_rank::{
    owner_rank_bonus, reinforcement_score, utility_rank_bonus, OwnerLensSettings, UtilityPolicy,
};
use particles_store::{Store, SubjectMatch};

use crate::Result;

/// The owner lens resolved in one store: the viewer's subjects and the lift.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnerViewer {
    /// The subject ids the configured entries resolved to.
    pub subjects: HashSet<String>,
    /// ω.
    pub rank_lift: f64,
    /// The entries that named no subject (the reference logs them).
    pub unresolved: Vec<String>,
}

/// Resolves the owner lens in `store`, `None` when it is inert (off, no
/// subjects, no lift, or no entry resolves). Each entry, stripped, is looked up
/// by canonical name, then alias, then id or unique id prefix; an ambiguous
/// prefix resolves nothing.
///
/// # Errors
///
/// [`crate::Error::Store`] when the store cannot be read.
pub fn owner_viewer(store: &Store, lens: &OwnerLensSettings) -> Result<Option<OwnerViewer>> {
    if !lens.enabled || lens.subjects.is_empty() || lens.rank_lift <= 0.0 {
        return Ok(None);
    }
    let mut subjects = HashSet::new();
    let mut unresolved = Vec::new();
    for entry in &lens.subjects {
        let name = particles_pytext::strip(entry);
        if name.is_empty() {
            continue;
        }
        let found = match particles_store::subject_by_name(store, &particles_pytext::lower(name))? {
            Some(id) => Some(id),
            None => match particles_store::find_subject(store, name)? {
                SubjectMatch::Found(record) => Some(record.id),
                SubjectMatch::NotFound | SubjectMatch::Ambiguous { .. } => None,
            },
        };
        match found {
            Some(id) => {
                subjects.insert(id);
            }
            None => unresolved.push(name.to_owned()),
        }
    }
    Ok((!subjects.is_empty()).then(|| OwnerViewer {
        subjects,
        rank_lift: lens.rank_lift,
        unresolved,
    }))
}

/// One belief as the lifts read it.
#[derive(Debug, Clone, Copy)]
pub struct LiftItem<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its first source's `source_type` (`""` without one).
    pub source_type: &'a str,
    /// Its first source's URI.
    pub uri: Option<&'a str>,
    /// Its subject ids.
    pub subject_ids: &'a [String],
}

/// Each item's rank score from its score `base`: `(base + λ·ln(1 + R)) + ω·A`,
/// the utility addend only under a policy (`utility.enabled`), the owner addend
/// only under a resolved viewer. Use events are aged at `now`.
///
/// # Errors
///
/// [`crate::Error::Store`] when the use events cannot be read.
pub fn recall_lifts(
    store: &Store,
    items: &[LiftItem<'_>],
    base: &[f64],
    utility: Option<&UtilityPolicy>,
    owner: Option<&OwnerViewer>,
    now: Timestamp,
) -> Result<Vec<f64>> {
    let mut out = base.to_vec();
    if let Some(policy) = utility {
        let ids: HashSet<&str> = items.iter().map(|item| item.id).collect();
        let events = particles_store::use_events(store, &ids)?;
        for (item, score) in items.iter().zip(out.iter_mut()) {
            let (half_life, rank_lift) = policy.resolve(item.source_type, item.uri);
            let reinforcement = events.get(item.id).map_or(0.0, |events| {
                reinforcement_score(
                    events
                        .iter()
                        .map(|e| (e.observed_at, policy.event_weight(&e.source))),
                    half_life,
                    now,
                )
            });
            *score += utility_rank_bonus(reinforcement, rank_lift);
        }
    }
    if let Some(viewer) = owner {
        for (item, score) in items.iter().zip(out.iter_mut()) {
            let relevant = item.subject_ids.iter().any(|s| viewer.subjects.contains(s));
            *score += owner_rank_bonus(relevant, viewer.rank_lift);
        }
    }
    Ok(out)
}
