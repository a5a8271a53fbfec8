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

/// The per-row filters of one request ([`passes_filters`] and
/// [`within_recency_window`]) compiled to one mask test over a row's packed
/// traits: the scan's common case, a row every filter keeps, costs a load, an
/// and and a compare instead of unpacking the row's traits twice. A row the mask
/// does not pass goes through the two functions, so exclusions and errors are
/// theirs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowFilter {
    mask: u32,
    want: u32,
    cutoff: Option<i64>,
}

impl RowFilter {
    /// The filters of `request`, with the recency window ending at `now`.
    pub fn new(request: &QueryRequest, now: Timestamp) -> RowFilter {
        use particles_model::{AssertionModality, UncertaintyNature};
        // Bit layout: `PackedTraits::pack`.
        let mut mask = 1 << 2; // a stance marker always excludes
        let mut want = 0;
        if !request.include_document_meta {
            mask |= 3 << 4; // the verdict must be Keep (0)
        }
        if !request.include_non_asserted {
            mask |= 3 << 6;
        }
        if let Some(nature) = request.uncertainty_nature {
            let at = UncertaintyNature::ALL.iter().position(|&n| n == nature);
            mask |= 0xff << 8;
            want |= (at.unwrap_or(0) as u32) << 8;
        }
        if let Some(modality) = request.assertion_modality {
            let at = AssertionModality::ALL.iter().position(|&m| m == modality);
            mask |= 0xff << 16;
            want |= (at.unwrap_or(0) as u32) << 16;
        }
        let cutoff = request
            .recency_window_days
            .filter(|d| *d != 0)
            .map(|days| now.utc_micros() - days.saturating_mul(86_400_000_000));
        RowFilter { mask, want, cutoff }
    }

    /// `passes_filters(set, row, request)? && within_recency_window(set, row,
    /// request, now)`, for the `request` and `now` this filter was made from.
    ///
    /// # Errors
    ///
    /// [`passes_filters`]'s.
    #[inline]
    pub fn passes(
        &self,
        set: &CandidateSet,
        row: usize,
        request: &QueryRequest,
        now: Timestamp,
    ) -> Result<bool> {
        self.passes_in(&set.row_columns(), set, row, request, now)
    }

    /// [`RowFilter::passes`], reading the row's traits from `columns` (the
    /// set's, resolved once for a loop over its rows).
    ///
    /// # Errors
    ///
    /// [`passes_filters`]'s.
    #[inline]
    pub fn passes_in(
        &self,
        columns: &crate::RowColumns<'_>,
        set: &CandidateSet,
        row: usize,
        request: &QueryRequest,
        now: Timestamp,
    ) -> Result<bool> {
        let packed = columns.packed_traits(row);
        if packed.flags & self.mask == self.want
            && self
                .cutoff
                .is_none_or(|cutoff| packed.asserted_at_micros >= cutoff)
        {
            return Ok(true);
        }
        Ok(passes_filters(set, row, request)? && within_recency_window(set, row, request, now))
    }
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

#[cfg(test)]
mod tests {
    use particles_model::{parse_particle_json, AssertionModality, UncertaintyNature};
    use proptest::prelude::*;

    use super::*;

    /// A row for each mix of the properties the filters read.
    fn rows() -> CandidateSet {
        let mut set = CandidateSet::new();
        let properties = [
            "",
            r#", "properties": {"extraction:scope": "DOCUMENT_META"}"#,
            r#", "properties": {"extraction:scope": "DOCUMENT_META", "extraction:scope_action": "observe"}"#,
            r#", "properties": {"extraction:scope": "DOCUMENT_META", "extraction:scope_action": ["x"]}"#,
            r#", "properties": {"extraction:polarity": "DECLINED"}"#,
            r#", "properties": {"extraction:polarity": {"a": 1}}"#,
            r#", "properties": {"stance:holder": "someone"}"#,
        ];
        let mut row = 0;
        for props in properties {
            for nature in UncertaintyNature::ALL {
                for modality in AssertionModality::ALL {
                    for day in ["2025-01-01", "2026-05-20"] {
                        let json = format!(
                            r#"{{"id": "p{row}", "content": "c", "confidence": {{"value": 0.5}},
                                "uncertainty_nature": "{}", "assertion_modality": "{}",
                                "asserted_by": "t", "asserted_at": "{day}T00:00:00"{props}}}"#,
                            nature.as_str(),
                            modality.as_str(),
                        );
                        let particle = parse_particle_json(&json).unwrap().into_inner();
                        set.push(row + 1, &particle, &[1.0], None);
                        row += 1;
                    }
                }
            }
        }
        set
    }

    proptest! {
        /// The compiled mask keeps, excludes and fails exactly as the two
        /// functions do, row by row.
        #[test]
        fn the_compiled_filter_is_the_two_functions(
            meta in any::<bool>(),
            non_asserted in any::<bool>(),
            nature in prop::option::of(prop::sample::select(UncertaintyNature::ALL.to_vec())),
            modality in prop::option::of(prop::sample::select(AssertionModality::ALL.to_vec())),
            days in prop::option::of(0i64..400),
        ) {
            let set = rows();
            let request = QueryRequest {
                include_document_meta: meta,
                include_non_asserted: non_asserted,
                uncertainty_nature: nature,
                assertion_modality: modality,
                recency_window_days: days,
                ..QueryRequest::default()
            };
            let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
            let filter = RowFilter::new(&request, now);
            for row in 0..set.len() {
                let fast = filter.passes(&set, row, &request, now).map_err(|e| e.to_string());
                let slow = passes_filters(&set, row, &request)
                    .map(|kept| kept && within_recency_window(&set, row, &request, now))
                    .map_err(|e| e.to_string());
                prop_assert_eq!(fast, slow, "row {}", row);
            }
        }
    }
}
