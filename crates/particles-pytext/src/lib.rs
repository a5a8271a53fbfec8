//! Python 3.11's string operations, where the reference's behaviour hangs on them.
//!
//! The reference runs on CPython 3.11, whose Unicode database is version 14.0.0.
//! Rust's `char` methods and the Unicode crates follow newer versions (U+A7CC
//! and U+A7CD, for instance, gained a case pair only in Unicode 16, so a newer
//! case fold changes them where Python's leaves them alone). Every string
//! operation the engine mirrors therefore lives here, over tables generated from
//! the reference's own interpreter (`tests/reference/unicode_tables.py pytext`):
//!
//! - predicates: [`is_space`], [`is_printable`], [`is_alnum`], [`is_decimal`]
//!   and [`decimal_value`], one character at a time, as `str.isspace()` etc.,
//!   and [`is_word`] (`re`'s `\w`);
//! - [`lower`] and [`upper`] (`str.lower()`, with its final sigma, and
//!   `str.upper()`), [`casefold`] (`str.casefold()`), [`nfc`] and [`nfkc`]
//!   (`unicodedata.normalize`), [`splitlines`] (`str.splitlines()`), [`strip`],
//!   [`lstrip`] and [`rstrip`];
//! - [`ignorecase_eq`] and [`match_ignorecase`]: an ASCII literal matched as
//!   `re.IGNORECASE` matches it in a str pattern;
//! - [`python_repr`] (`repr(str)`), [`python_float`] (`float(str)`) and
//!   [`float_repr`] (`repr(float)`).
//!
//! The integration test runs Python over every code point and compares.
//!
//! ```
//! use particles_pytext::{casefold, lower, nfkc, strip};
//! assert_eq!(casefold("Straße"), "strasse");
//! assert_eq!(lower("ΟΔΟΣ İ"), "οδος i\u{307}");
//! assert_eq!(strip("\u{1c} a "), "a");
//! assert_eq!(nfkc("ﬁle"), "file");
//! // Unicode 16 letters: unassigned in Python 3.11, so unchanged.
//! assert_eq!(casefold("\u{A7CC}"), "\u{A7CC}");
//! assert_eq!(lower("\u{A7CC}"), "\u{A7CC}");
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

mod case;
mod casefold;
mod chars;
mod float;
mod lines;
mod normalize;
mod repr;
mod strip;
mod tables;

pub use crate::{
    case::{ignorecase_eq, lower, match_ignorecase, upper},
    casefold::casefold,
    chars::{
        decimal_value, is_alnum, is_decimal, is_line_boundary, is_printable, is_space, is_word,
    },
    float::{float_repr, python_float},
    lines::splitlines,
    normalize::{nfc, nfkc},
    repr::python_repr,
    strip::{lstrip, rstrip, strip},
};

/// The Unicode version of the tables: the reference interpreter's, `unicodedata.unidata_version`.
pub const UNICODE_VERSION: &str = tables::UNICODE_VERSION;
