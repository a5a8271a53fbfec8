//! Large per-query buffers kept for the next query.
//!
//! A query over a million candidates fills a few arrays of a million entries
//! (the selection's rows, each survivor's similarity and score bound): 8 MB
//! each. Allocated fresh, each comes from the operating system as untouched
//! pages, and the first write of every 4 KiB page costs a fault and a zeroed
//! page: measured on `serve --http` at 1M rows, 10% of the server's CPU went
//! to the kernel's page zeroing. A [`Recycled`] buffer goes back to a small
//! process-wide pool when dropped, and the next query takes it from there,
//! already mapped.
//!
//! The pool only keeps buffers of at least [`MIN_BYTES`], at most [`MAX_KEPT`]
//! of each element type and [`MAX_BYTES`] in all per type: what it holds was
//! in use at once at the peak, so it never raises the peak, only keeps it.

use std::{
    ops::{Deref, DerefMut},
    sync::{Mutex, PoisonError},
};

/// Smaller buffers are not worth keeping: their pages are few and often
/// already mapped.
pub const MIN_BYTES: usize = 256 << 10;

/// Buffers of one element type the pool keeps at most.
pub const MAX_KEPT: usize = 64;

/// Bytes of one element type the pool keeps at most.
pub const MAX_BYTES: usize = 256 << 20;

/// An element type with a pool of its own.
pub trait Scratch: Copy + Default + Send + 'static {
    /// The pool of this type's buffers.
    fn pool() -> &'static Mutex<Vec<Vec<Self>>>;
}

macro_rules! scratch {
    ($($t:ty),*) => {$(
        impl Scratch for $t {
            fn pool() -> &'static Mutex<Vec<Vec<Self>>> {
                static POOL: Mutex<Vec<Vec<$t>>> = Mutex::new(Vec::new());
                &POOL
            }
        }
    )*};
}
scratch!(usize, u32, f64, [f32; 2]);

/// A `Vec` that goes back to its type's pool when dropped.
#[derive(Default, Clone, PartialEq)]
pub struct Recycled<T: Scratch> {
    values: Vec<T>,
}

impl<T: Scratch> Recycled<T> {
    /// `len` values whose contents are unspecified (whatever the previous user
    /// left, or the default): for a caller that writes every entry it reads.
    pub fn stale(len: usize) -> Recycled<T> {
        let mut values = take::<T>(len).unwrap_or_default();
        if values.len() >= len {
            values.truncate(len);
        } else {
            values.resize(len, T::default());
        }
        Recycled { values }
    }

    /// An empty buffer with room for `capacity` values, from the pool when it
    /// holds one large enough.
    pub fn with_capacity(capacity: usize) -> Recycled<T> {
        let mut values = take::<T>(capacity).unwrap_or_else(|| Vec::with_capacity(capacity));
        values.clear();
        Recycled { values }
    }

    /// The values, out of the pool's reach.
    pub fn into_vec(mut self) -> Vec<T> {
        std::mem::take(&mut self.values)
    }
}

impl<T: Scratch> From<Vec<T>> for Recycled<T> {
    fn from(values: Vec<T>) -> Self {
        Recycled { values }
    }
}

impl<T: Scratch> Deref for Recycled<T> {
    type Target = Vec<T>;
    #[inline]
    fn deref(&self) -> &Vec<T> {
        &self.values
    }
}

impl<T: Scratch> DerefMut for Recycled<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.values
    }
}

impl<T: Scratch + std::fmt::Debug> std::fmt::Debug for Recycled<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.values.fmt(f)
    }
}

impl<T: Scratch> Drop for Recycled<T> {
    fn drop(&mut self) {
        give(std::mem::take(&mut self.values));
    }
}

/// The smallest pooled buffer with room for `len` values.
fn take<T: Scratch>(len: usize) -> Option<Vec<T>> {
    if len * std::mem::size_of::<T>() < MIN_BYTES {
        return None;
    }
    let mut pool = T::pool().lock().unwrap_or_else(PoisonError::into_inner);
    let at = pool
        .iter()
        .enumerate()
        .filter(|(_, v)| v.capacity() >= len)
        .min_by_key(|(_, v)| v.capacity())
        .map(|(at, _)| at)?;
    Some(pool.swap_remove(at))
}

/// Keeps `values` for a later [`take`], within the pool's bounds; when full,
/// the smallest buffers make room for a larger one.
fn give<T: Scratch>(values: Vec<T>) {
    let bytes = |v: &Vec<T>| v.capacity() * std::mem::size_of::<T>();
    if bytes(&values) < MIN_BYTES || bytes(&values) > MAX_BYTES {
        return;
    }
    let mut pool = T::pool().lock().unwrap_or_else(PoisonError::into_inner);
    pool.push(values);
    pool.sort_unstable_by_key(|v| std::cmp::Reverse(v.capacity()));
    let mut total = 0;
    let mut keep = 0;
    for v in pool.iter() {
        if keep == MAX_KEPT || total + bytes(v) > MAX_BYTES {
            break;
        }
        total += bytes(v);
        keep += 1;
    }
    pool.truncate(keep);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large buffer comes back from the pool with its pages (its address),
    /// a small one is never kept; the lengths asked for are given.
    #[test]
    fn a_dropped_buffer_is_taken_again() {
        let len = (MIN_BYTES / 8) * 4;
        let first = Recycled::<u32>::stale(len);
        let address = first.as_ptr() as usize;
        drop(first);
        let again = Recycled::<u32>::stale(len / 2);
        assert_eq!(again.len(), len / 2);
        assert_eq!(again.as_ptr() as usize, address, "the same buffer");
        let small = Recycled::<u32>::stale(4);
        assert_eq!(small.len(), 4);
        let empty = Recycled::<u32>::with_capacity(len);
        assert!(empty.is_empty() && empty.capacity() >= len);
        assert_eq!(Recycled::<u32>::from(vec![1, 2]).into_vec(), vec![1, 2]);
    }
}
