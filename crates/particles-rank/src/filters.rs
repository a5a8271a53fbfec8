//! The candidate filters that run before scoring, in the reference's order.

use particles_model::{CandidateSet, FilterFlag, QueryRequest, Timestamp};

use crate::error::{Error, Result};

/// Whether candidate `row` survives the request's property filters, in the
/// reference's order: document-meta, non-asserted polarity, stance marker,
/// uncertainty nature, assertion modality. (Tags and claim filters come next, then
/// [`within_recency_window`].)
///
/// # Errors
///
/// [`Error::UnhashableProperty`] where the reference raises `TypeError`: a polarity
/// or scope-action value that is a list or object, when its filter is on.
pub fn passes_filters(set: &CandidateSet, row: usize, request: &QueryRequest) -> Result<bool> {
    let traits = set.traits(row);
    let verdict = |flag: FilterFlag| match flag {
        FilterFlag::Keep => Ok(true),
        FilterFlag::Exclude => Ok(false),
        FilterFlag::Unhashable(key) => Err(Error::UnhashableProperty {
            id: set.id(row).to_owned(),
            key: key.to_owned(),
        }),
    };
    if !request.include_document_meta && !verdict(traits.document_meta)? {
        return Ok(false);
    }
    if !request.include_non_asserted && !verdict(traits.non_asserted)? {
        return Ok(false);
    }
    if traits.stance {
        return Ok(false);
    }
    if request
        .uncertainty_nature
        .is_some_and(|nature| nature != traits.uncertainty_nature)
    {
        return Ok(false);
    }
    if request
        .assertion_modality
        .is_some_and(|modality| modality != traits.assertion_modality)
    {
        return Ok(false);
    }
    Ok(true)
}

/// Whether candidate `row` was asserted within the request's recency window,
/// measured back from `now` (always true without a window).
pub fn within_recency_window(
    set: &CandidateSet,
    row: usize,
    request: &QueryRequest,
    now: Timestamp,
) -> bool {
    match request.recency_window_days.filter(|d| *d != 0) {
        None => true,
        Some(days) => {
            let cutoff = now.utc_micros() - days.saturating_mul(86_400_000_000);
            set.traits(row).asserted_at_micros >= cutoff
        }
    }
}
