//! Columns of plain data that live either in a `Vec` or in shared bytes (a memory
//! map of a sidecar file), behind one slice view.
//!
//! A query scans a million vectors; copying them out of a memory map first would cost
//! as much as the scan. So a [`Column`] can borrow its elements from bytes that an
//! `Arc` keeps alive, and a [`StrColumn`] does the same for a run of strings. This
//! module holds the crate's only `unsafe` besides the SIMD kernel: turning a checked
//! pointer back into a slice on every access, so that access costs nothing.

use std::{fmt, ops::Deref, ops::Range, sync::Arc};

use bytemuck::Pod;

/// Bytes at a fixed address for as long as the value lives.
///
/// # Safety
///
/// `bytes()` must return the same slice (address and length) on every call, and its
/// contents must not change while the value lives: columns keep raw pointers into it.
/// A read-only memory map and an immutable `Vec<u8>` qualify.
pub unsafe trait SharedBytes: Send + Sync + 'static {
    /// The bytes.
    fn bytes(&self) -> &[u8];
}

// SAFETY: a boxed slice never moves or changes while shared behind an `Arc`.
unsafe impl SharedBytes for Box<[u8]> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// Why shared bytes cannot be viewed as a column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ColumnError {
    /// The byte range lies outside the shared bytes.
    #[error("byte range {start}..{end} is outside the {len} bytes available")]
    OutOfBounds {
        /// Range start.
        start: usize,
        /// Range end.
        end: usize,
        /// Bytes available.
        len: usize,
    },
    /// The range is misaligned or not a whole number of elements.
    #[error("byte range {start}..{end} is not a whole, aligned run of {element}-byte elements")]
    Misaligned {
        /// Range start.
        start: usize,
        /// Range end.
        end: usize,
        /// Element size.
        element: usize,
    },
    /// A string column's offsets or bytes are inconsistent.
    #[error("string column: {0}")]
    Strings(&'static str),
}

enum Repr<T: Pod> {
    Owned(Vec<T>),
    Shared {
        keep: Arc<dyn SharedBytes>,
        ptr: *const T,
        len: usize,
    },
}

/// A column of plain-data elements, owned or borrowed from shared bytes.
pub struct Column<T: Pod> {
    repr: Repr<T>,
}

// SAFETY: a shared column is a read-only view of `Send + Sync` bytes kept alive by
// its `Arc`; `T: Pod` is plain data. An owned column is a `Vec<T>`.
unsafe impl<T: Pod + Send + Sync> Send for Column<T> {}
// SAFETY: as above; no interior mutability.
unsafe impl<T: Pod + Send + Sync> Sync for Column<T> {}

impl<T: Pod> Column<T> {
    /// A view of `range` of `keep`'s bytes as elements of `T`.
    ///
    /// # Errors
    ///
    /// [`ColumnError`] when the range is out of bounds, misaligned for `T` or not a
    /// whole number of elements.
    pub fn shared(keep: Arc<dyn SharedBytes>, range: Range<usize>) -> Result<Self, ColumnError> {
        let bytes = keep.bytes();
        let Some(slice) = bytes.get(range.clone()) else {
            return Err(ColumnError::OutOfBounds {
                start: range.start,
                end: range.end,
                len: bytes.len(),
            });
        };
        let elements: &[T] =
            bytemuck::try_cast_slice(slice).map_err(|_| ColumnError::Misaligned {
                start: range.start,
                end: range.end,
                element: std::mem::size_of::<T>(),
            })?;
        let (ptr, len) = (elements.as_ptr(), elements.len());
        Ok(Column {
            repr: Repr::Shared { keep, ptr, len },
        })
    }

    /// The elements, owned; a shared column is copied first.
    pub fn to_mut(&mut self) -> &mut Vec<T> {
        if let Repr::Shared { .. } = self.repr {
            self.repr = Repr::Owned(self.as_slice().to_vec());
        }
        match &mut self.repr {
            Repr::Owned(v) => v,
            Repr::Shared { .. } => unreachable!("made owned above"),
        }
    }

    /// Appends an element (copying a shared column first).
    pub fn push(&mut self, value: T) {
        self.to_mut().push(value);
    }

    /// The elements.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        match &self.repr {
            Repr::Owned(v) => v,
            // SAFETY: `ptr`/`len` came from a checked cast of `keep`'s bytes, which
            // `SharedBytes` promises stay put and unchanged while `keep` lives.
            Repr::Shared { ptr, len, .. } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }

    /// Whether the elements live in shared bytes.
    pub fn is_shared(&self) -> bool {
        matches!(self.repr, Repr::Shared { .. })
    }

    /// Heap bytes this column owns (0 for a shared one).
    pub fn heap_bytes(&self) -> usize {
        match &self.repr {
            Repr::Owned(v) => v.capacity() * std::mem::size_of::<T>(),
            Repr::Shared { .. } => 0,
        }
    }
}

impl<T: Pod> Default for Column<T> {
    fn default() -> Self {
        Column {
            repr: Repr::Owned(Vec::new()),
        }
    }
}

impl<T: Pod> From<Vec<T>> for Column<T> {
    fn from(v: Vec<T>) -> Self {
        Column {
            repr: Repr::Owned(v),
        }
    }
}

impl<T: Pod> Clone for Column<T> {
    fn clone(&self) -> Self {
        let repr = match &self.repr {
            Repr::Owned(v) => Repr::Owned(v.clone()),
            Repr::Shared { keep, ptr, len } => Repr::Shared {
                keep: Arc::clone(keep),
                ptr: *ptr,
                len: *len,
            },
        };
        Column { repr }
    }
}

impl<T: Pod> Deref for Column<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Pod> fmt::Debug for Column<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Column")
            .field("len", &self.len())
            .field("shared", &self.is_shared())
            .finish()
    }
}

/// A run of strings: their bytes back to back and each one's end offset.
#[derive(Clone, Debug, Default)]
pub struct StrColumn {
    bytes: Column<u8>,
    ends: Column<u64>,
}

impl StrColumn {
    /// A view over shared bytes, checked: the ends rise, stay within the bytes and
    /// fall on character boundaries of valid UTF-8.
    ///
    /// # Errors
    ///
    /// [`ColumnError`] when the parts are out of bounds, misaligned or inconsistent.
    pub fn shared(bytes: Column<u8>, ends: Column<u64>) -> Result<Self, ColumnError> {
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| ColumnError::Strings("the bytes are not UTF-8"))?;
        let mut previous = 0usize;
        for &end in ends.iter() {
            let end = usize::try_from(end).map_err(|_| ColumnError::Strings("an end overflows"))?;
            if end < previous || end > text.len() || !text.is_char_boundary(end) {
                return Err(ColumnError::Strings(
                    "an end falls back, outside the bytes or inside a character",
                ));
            }
            previous = end;
        }
        if previous != text.len() {
            return Err(ColumnError::Strings("the last end is not the byte count"));
        }
        Ok(StrColumn { bytes, ends })
    }

    /// The parts: the bytes and the end offsets (for writing a sidecar).
    pub fn parts(&self) -> (&[u8], &[u64]) {
        (&self.bytes, &self.ends)
    }

    /// Appends a string.
    pub fn push(&mut self, text: &str) {
        self.bytes.to_mut().extend_from_slice(text.as_bytes());
        let end = self.bytes.len() as u64;
        self.ends.push(end);
    }

    /// The number of strings.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there is no string.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn range(&self, at: usize) -> Range<usize> {
        let start = if at == 0 {
            0
        } else {
            self.ends[at - 1] as usize
        };
        start..self.ends[at] as usize
    }

    /// String `at`'s bytes.
    pub fn get_bytes(&self, at: usize) -> &[u8] {
        &self.bytes[self.range(at)]
    }

    /// String `at`.
    pub fn get(&self, at: usize) -> &str {
        let bytes = self.get_bytes(at);
        // SAFETY: the bytes were pushed as `&str`s or checked by `shared` (valid
        // UTF-8, every end on a character boundary), so each string's range is valid
        // UTF-8.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    /// Heap bytes owned.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.heap_bytes() + self.ends.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(bytes: Vec<u8>) -> Arc<dyn SharedBytes> {
        Arc::new(bytes.into_boxed_slice())
    }

    #[test]
    fn shared_column_reads_and_copies_on_write() {
        let raw: Vec<u8> = [1.5f32, -2.0, 3.25]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        // Copy into a u32-aligned allocation so the cast is aligned.
        let words: Vec<u32> = raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let keep = shared(bytemuck::cast_slice(&words).to_vec());
        let column = Column::<u8>::shared(Arc::clone(&keep), 0..12).expect("in bounds");
        assert_eq!(column.len(), 12);
        let mut c = column.clone();
        c.push(7);
        assert_eq!(c.len(), 13);
        assert!(!c.is_shared());
        assert!(column.is_shared());
        assert!(matches!(
            Column::<u8>::shared(keep, 4..40),
            Err(ColumnError::OutOfBounds { .. })
        ));
    }

    #[test]
    fn misaligned_ranges_are_refused() {
        let keep = shared(vec![0u8; 64]);
        assert!(Column::<u64>::shared(Arc::clone(&keep), 0..12).is_err());
    }

    #[test]
    fn string_columns_check_their_offsets() {
        let mut owned = StrColumn::default();
        owned.push("ab");
        owned.push("");
        owned.push("é!");
        assert_eq!(
            (0..3).map(|i| owned.get(i)).collect::<Vec<_>>(),
            ["ab", "", "é!"]
        );
        let (bytes, ends) = owned.parts();
        let ok = StrColumn::shared(bytes.to_vec().into(), ends.to_vec().into()).expect("valid");
        assert_eq!(ok.get(2), "é!");
        // An end inside the two-byte "é".
        assert!(StrColumn::shared(bytes.to_vec().into(), vec![2, 2, 3, 5].into()).is_err());
        assert!(StrColumn::shared(b"ab\xff".to_vec().into(), vec![3].into()).is_err());
        assert!(StrColumn::shared(b"abc".to_vec().into(), vec![2].into()).is_err());
    }
}
