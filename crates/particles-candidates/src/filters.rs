//! The default filters' verdicts, computed once per row when a set is filled, and
//! the per-row filter test that reads them, in the reference's order.

use particles_model::{Particle, QueryRequest, Timestamp};

use crate::{CandidateSet, Error, Result};

/// The outcome of a filter test that the reference does as a set-membership test:
/// it can hold, not hold, or raise (`TypeError`) on a list or object value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterFlag {
    /// The filter does not exclude the particle.
    Keep,
    /// The filter excludes the particle.
    Exclude,
    /// The reference raises on this particle's property value (named by the key).
    Unhashable(&'static str),
}

/// The property keys the default filters read.
pub mod keys {
    /// `extraction:scope`.
    pub const SCOPE: &str = "extraction:scope";
    /// `extraction:scope_action`.
    pub const SCOPE_ACTION: &str = "extraction:scope_action";
    /// `extraction:polarity`.
    pub const POLARITY: &str = "extraction:polarity";
    /// `stance:holder`.
    pub const STANCE_HOLDER: &str = "stance:holder";
}

/// Whether the document-meta filter excludes this particle: non-empty properties
/// with scope `DOCUMENT_META` and an action other than `observe` or
/// `source_exempt`.
pub fn document_meta_flag(particle: &Particle) -> FilterFlag {
    use serde_json::Value;
    let Some(properties) = particle.properties.as_ref().filter(|p| !p.is_empty()) else {
        return FilterFlag::Keep;
    };
    if properties.get(keys::SCOPE).and_then(Value::as_str) != Some("DOCUMENT_META") {
        return FilterFlag::Keep;
    }
    match properties.get(keys::SCOPE_ACTION) {
        Some(Value::Array(_) | Value::Object(_)) => FilterFlag::Unhashable(keys::SCOPE_ACTION),
        Some(Value::String(action)) if action == "observe" || action == "source_exempt" => {
            FilterFlag::Keep
        }
        _ => FilterFlag::Exclude,
    }
}

/// Whether the polarity filter excludes this particle: a `DECLINED` or
/// `HYPOTHETICAL` polarity.
pub fn non_asserted_flag(particle: &Particle) -> FilterFlag {
    use serde_json::Value;
    let Some(properties) = particle.properties.as_ref().filter(|p| !p.is_empty()) else {
        return FilterFlag::Keep;
    };
    match properties.get(keys::POLARITY) {
        Some(Value::Array(_) | Value::Object(_)) => FilterFlag::Unhashable(keys::POLARITY),
        Some(Value::String(polarity)) if polarity == "DECLINED" || polarity == "HYPOTHETICAL" => {
            FilterFlag::Exclude
        }
        _ => FilterFlag::Keep,
    }
}

/// Whether the particle carries a stance marker (a non-empty `stance:holder`
/// string); stances never rank.
pub fn has_stance_marker(particle: &Particle) -> bool {
    particle
        .properties
        .as_ref()
        .and_then(|p| p.get(keys::STANCE_HOLDER))
        .and_then(serde_json::Value::as_str)
        .is_some_and(|holder| !holder.is_empty())
}

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
