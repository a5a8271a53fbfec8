//! Python 3.11's `re` for str patterns: the source-trust and decay rules'
//! URL patterns are compiled and searched as the reference's `re.compile(p)`
//! and `.search(url)` do.
//!
//! The reference compiles each rule with `re.compile` (a rule whose pattern
//! raises `re.error` is skipped) and applies it with `search`. No Rust regex
//! engine reads Python's syntax or matches with its semantics (`\w` is
//! `str.isalnum()`, `$` also matches before a final newline, `(?i)` folds
//! through `str.lower()` plus a table of extra cases, global flags only at the
//! start, a set's `[` is a literal, ...), so this is a port:
//!
//! - `parse`: `re/_parser.py` of CPython 3.11.7, every `re.error` it raises,
//!   and its set and branch rewrites (which `(?i)` can tell apart);
//! - `program`: `re/_compiler.py`'s choices (the fold each literal and set is
//!   matched with, the look-behind width check, the first-character filter of
//!   `search`, whose categories follow the global flags even inside a group
//!   that changes them) as a tree of nodes;
//! - `matcher`: a backtracking matcher with `_sre`'s semantics (zero-width
//!   repeat protection, possessive and atomic groups, captures that persist
//!   across iterations);
//! - `tables`: the Unicode data `_sre` uses, generated from the reference's
//!   interpreter (`tests/reference/unicode_tables.py pyre`), so its Unicode
//!   version is Python 3.11's, not a Rust crate's.
//!
//! Two limits are ours: a search that takes more than `STEP_LIMIT` (20 million)
//! steps or nests deeper than `DEPTH_LIMIT` (1 000) counts as no match (Python
//! would keep going: catastrophic patterns), and `\N{...}` is refused
//! ([`PatternError::Unsupported`]: the Unicode name table is not carried),
//! where Python compiles a known name. The differential fuzz
//! (`tests/it/fuzz/regex.rs`) holds the rest to `re`'s verdicts. No
//! dependencies.
//!
//! ```
//! use particles_pyre::{PatternError, PyRegex};
//! let rule = PyRegex::compile(r"(?i)^https?://EN\.numista\.com/")?;
//! assert!(rule.search("https://en.numista.com/catalogue/pieces1.html"));
//! assert!(!rule.search("https://example.com/?en.numista.com/"));
//! // `re.error`: the reference skips the rule.
//! assert!(matches!(PyRegex::compile("(unbalanced"), Err(PatternError::Invalid(_))));
//! # Ok::<(), PatternError>(())
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]
#![forbid(unsafe_code)]

mod matcher;
mod parse;
mod program;
mod tables;

use program::Node;

/// Steps (node visits) one search may take before it counts as no match.
pub(crate) const STEP_LIMIT: u64 = 20_000_000;
/// Nested matching calls one search may make before it counts as no match.
pub(crate) const DEPTH_LIMIT: u32 = 1_000;

/// Why a pattern does not compile: this crate's one error type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// `re.compile` raises `re.error`: the reference skips the rule.
    #[error("re.error: {0}")]
    Invalid(String),
    /// `re.compile` raises something else (`OverflowError` for a repeat count
    /// of 2^32 - 1 or more, `ValueError` for `(?a)(?u)`): the reference does not
    /// catch it, so its query fails.
    #[error("{0}")]
    Fatal(&'static str),
    /// A construct this port does not carry (`\N{...}`, nesting past
    /// `parse::MAX_NESTING`): treated as a skipped rule.
    #[error("not carried by this port of Python's re: {0}")]
    Unsupported(&'static str),
}

/// A compiled Python pattern.
#[derive(Debug, Clone)]
pub struct PyRegex {
    program: Vec<Node>,
    groups: usize,
    /// CPython's first-character filter of `search` (see `program::search_filter`).
    filter: Option<program::CharTest>,
}

impl PyRegex {
    /// Compiles a Python pattern as `re.compile` does.
    ///
    /// # Errors
    ///
    /// [`PatternError::Invalid`] where Python raises `re.error`,
    /// [`PatternError::Fatal`] where it raises another exception,
    /// [`PatternError::Unsupported`] for what this port does not carry.
    pub fn compile(pattern: &str) -> Result<PyRegex, PatternError> {
        let parsed = parse::parse(pattern)?;
        let groups = parsed.groups;
        let program = program::compile(&parsed)?;
        let filter = program::search_filter(&parsed);
        Ok(PyRegex {
            program,
            groups,
            filter,
        })
    }

    /// `re.search`: whether the pattern matches anywhere in `text`. A search past
    /// `STEP_LIMIT` or `DEPTH_LIMIT` counts as no match.
    pub fn search(&self, text: &str) -> bool {
        self.try_search(text).unwrap_or(false)
    }

    /// `re.search`, or `None` when the search ran past `STEP_LIMIT` or
    /// `DEPTH_LIMIT` (where [`search`](PyRegex::search) says no match). For the
    /// differential fuzz, which tells our limit apart from a disagreement.
    #[doc(hidden)]
    pub fn try_search(&self, text: &str) -> Option<bool> {
        let chars: Vec<u32> = text.chars().map(u32::from).collect();
        matcher::search(&self.program, self.groups, self.filter.as_ref(), &chars)
    }
}

#[cfg(test)]
mod tests;
