//! Giving the allocator's free pages back to the system after a write-behind.
//!
//! glibc's allocator keeps what a thread freed in that thread's arena, and
//! returns it only from the top of each heap: a live allocation above free
//! pages pins them. A build decodes a million claims on every core, so its
//! arenas keep the decoder's temporaries long after the build is done.
//! Measured at 1M rows (stop 49): a state served from its sidecar's map,
//! swapped in after a build, left the process at 742-755 MiB of anonymous
//! memory, where one that opened the same file at start held 190 MiB; the
//! difference sat in 64 and 128 MiB anonymous mappings, glibc's arena heaps.
//! `malloc_trim(0)` walks every arena and gives back each whole free page:
//! with it, 253 MiB after the same build (stop 50, the encoder's weights
//! included, against 746 without).
//!
//! It runs on the write-behind's thread after a swap, the one moment a
//! long-lived process is known to have freed gigabytes, once no question
//! ranks on the swapped-in set or after at most 5 s (`writeback.rs`,
//! `wait_for_quiet`): the walk locks each arena in turn, so a question
//! allocating meanwhile waits for that arena's walk. The write-behind reports
//! how long it took.

/// Whether [`free_pages`] does anything here; elsewhere the write-behind has
/// no reason to wait for a quiet moment.
pub(crate) const GIVES_BACK: bool = cfg!(all(target_os = "linux", target_env = "gnu"));

/// Asks the allocator to return its free pages; whether it gave any back.
/// Elsewhere than glibc it does nothing: musl, macOS and Windows allocators
/// have no such call, and return large blocks themselves.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn free_pages() -> bool {
    // SAFETY: `malloc_trim` takes no pointer and touches only glibc's own
    // free lists, under each arena's lock; any thread may call it at any time.
    unsafe { libc::malloc_trim(0) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn free_pages() -> bool {
    false
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// The binding reaches glibc: with whole free pages pinned below live
    /// blocks in a thread's arena (pages glibc does not return by itself),
    /// the call reports that it gave some back.
    #[test]
    fn free_pages_reports_pinned_pages_given_back() {
        std::thread::spawn(|| {
            // 64 MiB in 32 KiB blocks (under glibc's mmap threshold, so in
            // the arena), every 16th kept: the freed ones sit below live ones.
            let blocks: Vec<Vec<u8>> = (0..2048).map(|i| vec![i as u8; 32 << 10]).collect();
            let kept: Vec<Vec<u8>> = blocks
                .into_iter()
                .enumerate()
                .filter_map(|(i, block)| (i % 16 == 0).then_some(block))
                .collect();
            assert!(super::free_pages(), "no free page was given back");
            assert!(kept.iter().enumerate().all(|(i, b)| b[0] == (i * 16) as u8));
        })
        .join()
        .unwrap();
    }
}
