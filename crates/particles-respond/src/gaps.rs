//! Subject coverage gaps (the reference's `operations/query/gaps.py`): what the
//! store knows about the subject a request named. The corpus-level gaps are one
//! store read (`particles_store::coverage_gap_entries`).

use particles_candidates::SubjectClaims;
use particles_model::response::{CoverageGapKind, SubjectCoverageGap};
use particles_store::{Store, SubjectMatch};

use crate::{Error, Result};

/// Below this many ACTIVE CLAIM particles a subject's coverage is low.
const LOW_COVERAGE_THRESHOLD: u64 = 3;

/// The subject gaps for `subject_id` given `retrieved` rendered hits: none without
/// a subject; otherwise one of no match, no particles, or low coverage (fewer than
/// three ACTIVE CLAIM particles, or no hit at all).
///
/// The subject resolves as the reference's `get_subject` does (exact id, else a
/// unique id prefix), unlike the candidate loader, which matches exactly.
///
/// `counted` is the loader's count of the ACTIVE CLAIMs linked to `subject_id`
/// taken exactly, when it made one, settled here in `store` (the ranking's
/// snapshot), unless a hit and three claims among the set's rows already rule
/// the gap out; a prefix resolves to another id, whose count the store gives.
///
/// # Errors
///
/// [`Error::AmbiguousSubject`] for a prefix several subject ids share (the
/// reference's `ValueError`, a 500 from its server); [`Error::Store`] when the
/// store cannot be read.
pub(crate) fn subject_coverage_gaps(
    store: &Store,
    subject_id: Option<&str>,
    counted: Option<&SubjectClaims>,
    retrieved: usize,
) -> Result<Vec<SubjectCoverageGap>> {
    let Some(reference) = subject_id else {
        return Ok(Vec::new());
    };
    let subject = match particles_store::find_subject(store, reference)? {
        SubjectMatch::Found(subject) => subject,
        SubjectMatch::NotFound => {
            return Ok(vec![SubjectCoverageGap {
                subject_id: None,
                subject_name: None,
                kind: CoverageGapKind::NoSubjectMatch,
                particle_count: 0,
                detail: format!(
                    "Subject ID {} not found in the registry",
                    particles_model::python_repr(reference)
                ),
            }])
        }
        SubjectMatch::Ambiguous { matches } => {
            return Err(Error::AmbiguousSubject {
                reference: reference.to_owned(),
                message: format!(
                    "Ambiguous subject prefix {} matches {matches} subjects; use more characters.",
                    particles_model::python_repr(reference)
                ),
            })
        }
    };
    let count = match counted {
        Some(counted) if subject.id == reference => {
            // The links outside the set can only add to the count: with a hit
            // and enough claims among the set's rows there is no gap, whatever
            // they add, so they are not looked up (for a large subject, mostly
            // retired rows: hundreds of lookups by id).
            if retrieved > 0 && counted.in_set >= LOW_COVERAGE_THRESHOLD {
                return Ok(Vec::new());
            }
            particles_store::settle_subject_claims(store, counted)?
        }
        _ => particles_store::active_claim_count(store, &subject.id)?,
    };
    let name = subject.canonical_name;
    let gap = |kind, detail| SubjectCoverageGap {
        subject_id: Some(subject.id.clone()),
        subject_name: Some(name.clone()),
        kind,
        particle_count: count,
        detail,
    };
    if count == 0 {
        return Ok(vec![gap(
            CoverageGapKind::SubjectHasNoParticles,
            format!("'{name}' exists in the registry but has no ACTIVE CLAIM particles"),
        )]);
    }
    if retrieved == 0 || count < LOW_COVERAGE_THRESHOLD {
        return Ok(vec![gap(
            CoverageGapKind::SubjectHasLowCoverage,
            format!("'{name}' has only {count} ACTIVE CLAIM particle(s); answer may be incomplete"),
        )]);
    }
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use particles_model::python_repr as py_repr;

    #[test]
    fn repr_picks_quotes_and_escapes_as_python() {
        assert_eq!(py_repr("abc"), "'abc'");
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("it's \"x\""), "'it\\'s \"x\"'");
        assert_eq!(py_repr("a\\b\n\t\u{7}"), "'a\\\\b\\n\\t\\x07'");
        assert_eq!(
            py_repr("caf\u{e9} \u{a0}\u{200b}"),
            "'caf\u{e9} \\xa0\\u200b'"
        );
        assert_eq!(py_repr("\u{10ffff}"), "'\\U0010ffff'");
    }
}
