//! Python 3.11's reading of text where the reference's values pass through it:
//! `str.isspace()`, Unicode decimal digits, `float(str)` and `str.splitlines()`.
//! All of it lives in `particles_pytext`, over tables generated from the
//! reference's interpreter; this crate re-exports it under its older names.

pub(crate) use particles_pytext::{decimal_value as decimal_digit, is_space as is_python_space};
pub use particles_pytext::{python_float, splitlines as python_splitlines};
