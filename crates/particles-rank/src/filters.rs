//! The candidate filters that run before scoring, in the reference's order.

use particles_model::{Particle, QueryRequest, Timestamp};
use serde_json::Value;

use crate::error::{Error, Result};

const SCOPE: &str = "extraction:scope";
const SCOPE_ACTION: &str = "extraction:scope_action";
const POLARITY: &str = "extraction:polarity";
const STANCE_HOLDER: &str = "stance:holder";

/// Whether a candidate survives the request's filters: document-meta, non-asserted
/// polarity, stance marker, uncertainty nature, assertion modality and the recency
/// window (measured back from `now`).
///
/// # Errors
///
/// [`Error::UnhashableProperty`] where the reference raises `TypeError`: a polarity
/// or scope-action value that is an array or object.
pub fn passes_filters(particle: &Particle, request: &QueryRequest, now: Timestamp) -> Result<bool> {
    let properties = particle.properties.as_ref().filter(|p| !p.is_empty());
    if !request.include_document_meta && is_excluded_document_meta(particle, properties)? {
        return Ok(false);
    }
    if !request.include_non_asserted && is_non_asserted(particle, properties)? {
        return Ok(false);
    }
    if has_stance_marker(properties) {
        return Ok(false);
    }
    if request
        .uncertainty_nature
        .is_some_and(|nature| nature != particle.uncertainty_nature)
    {
        return Ok(false);
    }
    if request
        .assertion_modality
        .is_some_and(|modality| modality != particle.assertion_modality)
    {
        return Ok(false);
    }
    if let Some(days) = request.recency_window_days.filter(|d| *d != 0) {
        let cutoff = now.utc_micros() - days.saturating_mul(86_400_000_000);
        if particle.asserted_at.utc_micros() < cutoff {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A set-membership test of a JSON value, which Python cannot do for a list or dict.
fn hashable<'a>(particle: &Particle, key: &str, value: &'a Value) -> Result<&'a Value> {
    match value {
        Value::Array(_) | Value::Object(_) => Err(Error::UnhashableProperty {
            id: particle.id.clone(),
            key: key.to_owned(),
        }),
        other => Ok(other),
    }
}

fn is_excluded_document_meta(
    particle: &Particle,
    properties: Option<&serde_json::Map<String, Value>>,
) -> Result<bool> {
    let Some(properties) = properties else {
        return Ok(false);
    };
    if properties.get(SCOPE).and_then(Value::as_str) != Some("DOCUMENT_META") {
        return Ok(false);
    }
    let action = match properties.get(SCOPE_ACTION) {
        None => return Ok(true),
        Some(value) => hashable(particle, SCOPE_ACTION, value)?,
    };
    Ok(!matches!(
        action.as_str(),
        Some("observe" | "source_exempt")
    ))
}

fn is_non_asserted(
    particle: &Particle,
    properties: Option<&serde_json::Map<String, Value>>,
) -> Result<bool> {
    let Some(value) = properties.and_then(|p| p.get(POLARITY)) else {
        return Ok(false);
    };
    let value = hashable(particle, POLARITY, value)?;
    Ok(matches!(value.as_str(), Some("DECLINED" | "HYPOTHETICAL")))
}

fn has_stance_marker(properties: Option<&serde_json::Map<String, Value>>) -> bool {
    properties
        .and_then(|p| p.get(STANCE_HOLDER))
        .and_then(Value::as_str)
        .is_some_and(|holder| !holder.is_empty())
}
