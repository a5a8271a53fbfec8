//! `sidecar verify`: everything opening checks, plus what it leaves out (the
//! vectors', norms', claims' and half copy's checksums), the id index's order,
//! and that a stored half copy is the one its vectors give.

use std::{ops::Range, path::Path};

use super::{
    open::{ids_sorted, Mapped, VectorsIn},
    SidecarError,
};

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Rows in the sidecar.
    pub rows: usize,
    /// The journal position it is exact at.
    pub head_seq: i64,
    /// Sections checked, in file order.
    pub sections: Vec<VerifiedSection>,
}

/// One section that passed its checksum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedSection {
    /// The section's name (`vectors`, `norms`, `ids.bytes`, ...).
    pub name: &'static str,
    /// Where it lies in the file.
    pub range: Range<usize>,
}

/// Checks a sidecar completely: its header, every section's checksum (vectors
/// included), the consistency of its columns, the order of its id index, and
/// that a stored half copy is, bit for bit, the one its vectors give.
///
/// # Errors
///
/// [`SidecarError`] naming the first problem; `Invalid` with "no sidecar" when the
/// file does not exist.
pub fn verify(path: &Path) -> Result<VerifyReport, SidecarError> {
    let Some(mapped) = Mapped::new(path)? else {
        return Err(SidecarError::Invalid {
            path: path.to_owned(),
            reason: "no sidecar at this path".into(),
        });
    };
    mapped.check_sections(|_| true)?;
    let sections = mapped
        .table
        .iter()
        .map(|(kind, range)| VerifiedSection {
            name: kind.name(),
            range,
        })
        .collect();
    let opened = mapped.into_opened(VectorsIn::Map, false)?;
    if !ids_sorted(&opened.set, &opened.by_id) {
        return Err(SidecarError::Invalid {
            path: path.to_owned(),
            reason: "the id index is not sorted".into(),
        });
    }
    // The checksums say the bytes are the writer's; this says the writer's half
    // copy is the one the vectors give (the scan trusts its intervals).
    if opened.set.stored_half_matches() == Some(false) {
        return Err(SidecarError::Invalid {
            path: path.to_owned(),
            reason: "the half-precision copy is not the one its vectors give".into(),
        });
    }
    Ok(VerifyReport {
        rows: opened.set.len(),
        head_seq: opened.head.seq,
        sections,
    })
}
