//! The ranking options only the recall callers pass (the reference's
//! `retrieve_ranked` keywords the memory projection's sections use): ours, in
//! the envelope beside the request, since the reference's `QueryRequest` and
//! `/query` body do not carry them. (`conflict_pairs`, the fifth keyword, is
//! passed by no caller of the reference 1.214.1 and is not taken.)

use serde_json::{Map, Value};

use super::{
    lax::{self, Failure},
    FieldError, Loc,
};

/// `retrieve_ranked`'s recall keywords. The default is the semantic query's
/// ranking: no lift, nothing excluded, no demotion.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallOptions {
    /// `apply_utility`: add the usefulness lift (`λ·ln(1 + R)`) to each
    /// candidate's effective confidence before the cut.
    pub apply_utility: bool,
    /// `apply_owner`: add the owner lens's lift (`ω`) to candidates about the
    /// owner's subjects.
    pub apply_owner: bool,
    /// `exclude_source_tags`: drop candidates every source stating them carries
    /// one of these corpus tags (a derived one when all its premises are).
    pub exclude_source_tags: Vec<String>,
    /// `code_symbol_rank_weight`: the rank multiplier of docstring-extracted
    /// candidates (1: none).
    pub code_symbol_rank_weight: f64,
}

impl Default for RecallOptions {
    fn default() -> Self {
        RecallOptions {
            apply_utility: false,
            apply_owner: false,
            exclude_source_tags: Vec::new(),
            code_symbol_rank_weight: 1.0,
        }
    }
}

impl RecallOptions {
    /// Whether any option changes the ranking.
    pub fn is_active(&self) -> bool {
        self.apply_utility
            || self.apply_owner
            || !self.exclude_source_tags.is_empty()
            || self.code_symbol_rank_weight != 1.0
    }

    /// Reads the options from a request object, errors collected into `errors`.
    pub(crate) fn read(object: &Map<String, Value>, errors: &mut Vec<FieldError>) -> RecallOptions {
        let mut options = RecallOptions::default();
        let mut field = |name: &str, read: &mut dyn FnMut(&Value) -> Result<(), Failure>| {
            if let Some(value) = object.get(name).filter(|v| !v.is_null()) {
                if let Err(failure) = read(value) {
                    errors.push(failure.at(vec![Loc::Field(name.to_owned())], value));
                }
            }
        };
        field("apply_utility", &mut |v| {
            options.apply_utility = lax::boolean(v)?;
            Ok(())
        });
        field("apply_owner", &mut |v| {
            options.apply_owner = lax::boolean(v)?;
            Ok(())
        });
        field("code_symbol_rank_weight", &mut |v| {
            let weight = lax::float(v)?;
            lax::float_within(weight, 0.0, 1.0)?;
            options.code_symbol_rank_weight = weight;
            Ok(())
        });
        field("exclude_source_tags", &mut |v| {
            options.exclude_source_tags = strings(v)?;
            Ok(())
        });
        options
    }
}

fn strings(value: &Value) -> Result<Vec<String>, Failure> {
    match value {
        Value::Array(items) => items.iter().map(lax::string).collect(),
        _ => Err(Failure::list_type()),
    }
}
