//! Query candidates in a columnar layout made for the scan.
//!
//! A [`CandidateSet`] holds what ranking needs of each candidate and nothing it does
//! not: the id, rowid and confidence (the order key), the embedding-model check, the
//! vector (all vectors in one contiguous `f32` buffer) with its norm, and
//! [`RowTraits`], a small fixed-size record of what the filters and the score read
//! from the particle (the default filters' verdicts, enums, the first source ref,
//! the extractor). Strings that repeat across rows are interned. Loaders fill a set
//! from hydrated particles once; a query then touches no JSON and allocates nothing
//! per candidate.
//!
//! Columns are [`column::Column`]s: a `Vec`, or a view of shared bytes (a sidecar's
//! memory map) behind the same slice, so a scan never copies a map. That view, and
//! the SIMD dot kernels ([`einsum_dot`], NumPy's reduction order, used for the
//! stored norms; the scan's tiles, [`einsum_tile_checked`] and [`HalfTile`]), are
//! this crate's only `unsafe` code; each block states its invariant.
//!
//! ```
//! use particles_candidates::{CandidateSet, Selection};
//! let set = CandidateSet::new();
//! let selection = Selection::all(set, 0);
//! assert!(selection.rows.is_empty());
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]
// Column views and the SSE kernel are `unsafe`; each block must say why it is sound.
#![warn(clippy::undocumented_unsafe_blocks)]

mod claims;
pub mod column;
mod einsum;
mod filters;
mod half;
mod interner;
pub mod scratch;
mod selection;
mod set;
mod tiles;
mod traits;

pub use crate::{
    claims::{BytesCheck, BytesPredicate},
    einsum::{einsum_dot, einsum_dot_checked, einsum_dot_portable, fold_bits},
    filters::{
        document_meta_flag, has_stance_marker, keys, non_asserted_flag, passes_filters,
        within_recency_window, FilterFlag, RowFilter,
    },
    half::{
        half_dot_kernel, half_dot_portable, interval_ends, round_down_f32, round_up_f32, HalfDot,
        HalfOrigin, HalfView, StoredHalf,
    },
    selection::{Selection, SubjectClaims},
    set::{
        row_check, CandidateColumns, CandidateSet, ColumnSlices, ColumnsError, Extended, Replaced,
        RowColumns, SourceIndex,
    },
    tiles::{
        einsum_tile_checked, half_tile_kernel, half_tile_kernels, half_tile_portable, prefetch,
        HalfTile, PREFETCH_ROWS,
    },
    traits::{PackedTraits, RowTraits},
};

/// Errors from testing a candidate against the filters.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A property the filters test for membership holds a list or object, where the
    /// reference raises `TypeError`. Fix the particle's properties.
    #[error("particle {id}: property {key:?} is a list or object, not a value")]
    UnhashableProperty {
        /// The particle id.
        id: String,
        /// The property key.
        key: String,
    },
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
