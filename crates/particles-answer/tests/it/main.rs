//! Integration tests of particles-answer: one module per topic.

/// The grounding parser against the reference's `parse_grounded`.
mod grounding_reference;
/// Helpers: the reference's Python and its scripts.
mod support;
