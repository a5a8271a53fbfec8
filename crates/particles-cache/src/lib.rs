//! The ACTIVE candidates of a Particles store, held in memory for the scan and kept
//! exact by the store's change journal.
//!
//! [`CandidateCache`] is a [`CandidateLoader`]: a query through it returns exactly
//! what the uncached loader would return at that moment (same rows, values, vectors
//! and order), but a warm query reads no particle row, decodes no JSON and allocates
//! nothing per candidate. The protocol is the reference's (linkedparticles 1.214.1,
//! `candidate_cache.py`), so a Python writer and this reader share one journal:
//!
//! - no journal triggers, or an empty journal: read uncached, keep the state;
//! - same head as the state's: reuse it;
//! - the state's entry still carries its token: re-read the ids changed since, if
//!   there are at most `max(1000, rows / 4)` of them (chunks of 500);
//! - otherwise rebuild, except on a subject-filtered call, which reads uncached.
//!
//! States are immutable and shared (`Arc`); a refresh builds a new one and swaps it
//! in, so the replaced one is freed as soon as no query holds it.
//!
//! With a [`SidecarConfig`], a cache with no state first tries the store's sidecar
//! (see [`sidecar`]): a state written to disk by an earlier process, memory-mapped,
//! then brought up to date by the same protocol. Rebuilds (and, if asked, deltas)
//! mark the state for [`CandidateCache::persist`], which writes it back.
//!
//! Platforms: the crate builds wherever `memmap2` maps files (Unix and Windows; a
//! `cargo check --target x86_64-pc-windows-gnu` passed, CI does not run it), and
//! what is Linux- or Unix-only is gated and degrades to plain behaviour elsewhere. Huge pages (`set_huge_pages`) and
//! the populate-on-open advice exist on Linux only; elsewhere the vectors go to
//! plain anonymous memory and pages fault in as read. A sidecar is written with
//! mode 0644 on Unix, with the directory's rules elsewhere. On Windows a sidecar
//! that another process has mapped may refuse to be replaced: the write then
//! fails with a note and the next process tries again. Only Linux is tested.
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]
// Each `unsafe` (the sidecar's views, `malloc_trim`) must say why it is sound.
#![warn(clippy::undocumented_unsafe_blocks)]

mod release;
mod shared;
pub mod sidecar;
mod writeback;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use particles_candidates::{
    column::Column, CandidateSet, HalfOrigin, Replaced, Selection, SubjectClaims,
};
use particles_store::{CandidateLoader, JournalHead, Result, Store};

pub use shared::{SharedCache, SharedLoader};
pub use sidecar::{
    sidecar_path, verify as verify_sidecar, SidecarError, VerifiedSection, VerifyReport,
};
pub use writeback::WriteBehind;

/// When the cache writes its sidecar (on [`CandidateCache::persist`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SidecarWrite {
    /// Read a sidecar, never write one (a read-only directory, or a reader that
    /// should not leave files behind).
    Never,
    /// After a rebuild: a long-lived process, whose deltas stay in memory.
    OnRebuild,
    /// After a rebuild or a delta: one-shot processes, so the next one reuses it.
    OnChange,
}

/// Where a cache keeps its sidecar, and when it writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SidecarConfig {
    /// The sidecar file ([`sidecar_path`] gives the default place).
    pub path: PathBuf,
    /// When to write it.
    pub write: SidecarWrite,
}

/// A build's progress: rows read and the ACTIVE row count.
pub type BuildProgress = Box<dyn FnMut(usize, usize) + Send>;

/// The fewest changed ids a delta may re-read, whatever the cache size.
pub const DELTA_FLOOR: usize = 1000;

/// A delta extends the set until its own and dead rows would pass
/// `1 / COMPACT_AT_FRACTION` of it; then it copies (compacts) the set
/// ([`CandidateCache`]'s `extends`).
const COMPACT_AT_FRACTION: usize = 8;

/// How the last call was served. Its JSON form is the snake-case name
/// ([`Route::as_str`]); a delta's changed-id count is [`Route::changed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// The store has no journal triggers: read uncached.
    NoJournal,
    /// The journal is empty: read uncached; the state is kept.
    EmptyJournal,
    /// The head is unchanged: served from the state, no row read.
    Reuse,
    /// Brought up to date by re-reading this many changed ids.
    Delta(usize),
    /// Built from scratch.
    Rebuild,
    /// A subject-filtered call that would have needed a rebuild: read uncached.
    SubjectUncached,
    /// Opened from the sidecar, which was at the store's head: no row read.
    Sidecar,
}

impl Route {
    /// The route's name: `no_journal`, `empty_journal`, `reuse`, `delta`,
    /// `rebuild`, `subject_uncached` or `sidecar`.
    pub fn as_str(self) -> &'static str {
        match self {
            Route::NoJournal => "no_journal",
            Route::EmptyJournal => "empty_journal",
            Route::Reuse => "reuse",
            Route::Delta(_) => "delta",
            Route::Rebuild => "rebuild",
            Route::SubjectUncached => "subject_uncached",
            Route::Sidecar => "sidecar",
        }
    }

    /// For a delta, how many changed ids it re-read.
    pub fn changed(self) -> Option<usize> {
        match self {
            Route::Delta(n) => Some(n),
            _ => None,
        }
    }
}

impl serde::Serialize for Route {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Counters over the cache's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Full builds.
    pub rebuilds: u64,
    /// Delta refreshes.
    pub deltas: u64,
    /// Calls served by an unchanged state.
    pub reuses: u64,
    /// Calls read uncached.
    pub uncached: u64,
    /// States opened from a sidecar.
    pub sidecar_loads: u64,
    /// Sidecars written.
    pub sidecar_writes: u64,
}

struct CacheState {
    head: JournalHead,
    set: Arc<CandidateSet>,
    /// Rows sorted by particle id, for subject lookups.
    by_id: Column<u32>,
    /// The rows in `(confidence, rowid)` order when the set is not stored in that
    /// order (a fresh build, or a set extended by deltas; `None`: rows are in
    /// order). It names live rows only.
    order: Option<Vec<u32>>,
    /// Base rows of an extended set that a delta replaced or deleted: still in
    /// the set, never ranked (neither `order` nor `by_id` names them), dropped
    /// when the set is compacted.
    dead: Vec<u32>,
    /// Opened from the sidecar (the file holds exactly this state): a
    /// write-behind has nothing to give it.
    from_file: bool,
}

impl CacheState {
    fn new(head: JournalHead, set: CandidateSet) -> CacheState {
        let mut by_id: Vec<u32> = (0..set.len() as u32).collect();
        by_id.sort_unstable_by(|&a, &b| set.id(a as usize).cmp(set.id(b as usize)));
        CacheState {
            head,
            set: Arc::new(set),
            by_id: by_id.into(),
            order: None,
            dead: Vec::new(),
            from_file: false,
        }
    }

    /// The state a sidecar holds, its rows in order.
    fn opened(opened: sidecar::Opened) -> CacheState {
        CacheState {
            head: opened.head,
            set: Arc::new(opened.set),
            by_id: opened.by_id,
            order: None,
            dead: Vec::new(),
            from_file: true,
        }
    }

    /// Writes the state to a sidecar at `path`, its rows in loader order so
    /// the file's readers scan front to back.
    fn write_to(
        &self,
        path: &Path,
        store: &Path,
        pace: sidecar::Pace,
    ) -> Result<(), sidecar::SidecarError> {
        sidecar::write(
            path,
            store,
            &self.head,
            &self.set,
            &self.by_id,
            self.order.as_deref(),
            pace,
        )
    }

    /// The state after a delta: `replaced`'s set, its id index carried over from
    /// `old` (the kept rows renumbered, the added ones spliced in) rather than
    /// sorted again.
    fn after_delta(old: &CacheState, head: JournalHead, replaced: Replaced) -> CacheState {
        let Replaced {
            set,
            old_rows,
            added_rows,
        } = replaced;
        let by_id = id_index_after(&set, &old.by_id, |row| old_rows[row as usize], &added_rows);
        CacheState {
            head,
            set: Arc::new(set),
            by_id: by_id.into(),
            order: None,
            dead: Vec::new(),
            from_file: false,
        }
    }

    /// The state after a delta that extended the set
    /// ([`CandidateSet::extended`]): base rows keep their numbers, the old own
    /// rows move as `extended.moved` says, and the order and id index are the
    /// old ones renumbered, less `removed`, with the added rows merged in. Two
    /// passes over `u32` indexes: 8 bytes a row, where a copy of the set is
    /// about 2.3 KB a row at 384 dimensions.
    fn after_extension(
        old: &CacheState,
        head: JournalHead,
        extended: particles_candidates::Extended,
        removed: &[usize],
    ) -> CacheState {
        let particles_candidates::Extended {
            set,
            moved,
            added_rows,
        } = extended;
        let base_rows = set.base_rows();
        // Few (a delta is at most an eighth of the set): a sorted list beats a
        // hash for the million lookups below.
        let mut removed_base: Vec<u32> = removed
            .iter()
            .filter(|&&row| row < base_rows)
            .map(|&row| row as u32)
            .collect();
        removed_base.sort_unstable();
        let renumber = |row: u32| -> u32 {
            match (row as usize).checked_sub(base_rows) {
                None if removed_base.binary_search(&row).is_ok() => u32::MAX,
                None => row,
                Some(own) => moved.get(own).copied().unwrap_or(u32::MAX),
            }
        };
        let kept: Vec<u32> = match &old.order {
            Some(order) => order
                .iter()
                .map(|&row| renumber(row))
                .filter(|&row| row != u32::MAX)
                .collect(),
            None => (0..old.set.len() as u32)
                .map(renumber)
                .filter(|&row| row != u32::MAX)
                .collect(),
        };
        let mut fresh = added_rows.clone();
        fresh.sort_unstable_by(|&a, &b| set.cmp_order_key(a as usize, b as usize));
        // The added rows merged in by binary search: runs of kept rows are
        // copied whole, and keys are unique, so this is the one order.
        let mut order = Vec::with_capacity(kept.len() + fresh.len());
        let mut start = 0;
        for &row in &fresh {
            let at = start
                + kept[start..]
                    .partition_point(|&k| set.cmp_order_key(k as usize, row as usize).is_le());
            order.extend_from_slice(&kept[start..at]);
            order.push(row);
            start = at;
        }
        order.extend_from_slice(&kept[start..]);
        let by_id = id_index_after(&set, &old.by_id, renumber, &added_rows);
        let mut dead = old.dead.clone();
        dead.extend_from_slice(&removed_base);
        CacheState {
            head,
            set: Arc::new(set),
            by_id: by_id.into(),
            order: Some(order),
            dead,
            from_file: false,
        }
    }

    /// The state with its rows physically in order (a copy when they are not).
    fn in_order(self) -> CacheState {
        match &self.order {
            None => self,
            Some(order) => {
                let rows: Vec<usize> = order.iter().map(|&r| r as usize).collect();
                CacheState::new(self.head, self.set.select(&rows))
            }
        }
    }

    fn row_of(&self, id: &str) -> Option<usize> {
        self.by_id
            .binary_search_by(|&row| self.set.id(row as usize).cmp(id))
            .ok()
            .map(|at| self.by_id[at] as usize)
    }
}

/// Below this many bytes of `f32` vectors the half-precision scan does not pay:
/// a scan of a few thousand rows costs less than its fixed overheads. With the
/// scan's tiles and block arithmetic (`particles-query`'s `scan`) the copy pays
/// from small sets on: measured on the warm 10k cell (15 MB of vectors, Intel
/// Xeon, 2 cores, alternating), the scan stage 0.51-0.56 ms with the copy
/// against 0.58-0.63 ms without. (Before those kernels the threshold was
/// 64 MiB: at 10k the copy cost 2.5-3.3 ms against 2.2-2.8 ms without.)
pub const HALF_PRECISION_MIN_BYTES: usize = 4 << 20;

/// The most rows of a state whose particles a long-lived process keeps
/// hydrated ([`CandidateCache::set_keep_particles`]): a few KB each, so tens of
/// MB at most; past it the hits are read from the store.
pub const KEEP_PARTICLES_MAX_ROWS: usize = 20_000;

/// The candidate cache of one store. Use one per store file; it is a
/// [`CandidateLoader`] for `particles_query::run_query_with`.
#[derive(Default)]
pub struct CandidateCache {
    state: Option<Arc<CacheState>>,
    last_route: Option<Route>,
    stats: CacheStats,
    sidecar: Option<SidecarConfig>,
    /// The sidecar was looked for already (found or not).
    sidecar_tried: bool,
    /// The state differs from the sidecar and the write policy wants it written.
    dirty: bool,
    notes: Vec<String>,
    progress: Option<BuildProgress>,
    huge_pages: bool,
    /// With the half-precision scan: the least `f32` vector bytes a state
    /// needs for its copy to be made.
    half_precision: Option<usize>,
    /// The most rows a state may have for its particles to be kept hydrated.
    keep_particles: Option<usize>,
    /// The last state a write-behind took (`writeback.rs`): it is not taken
    /// again.
    writeback_tried: std::sync::Weak<CacheState>,
    /// A write-behind failed: no more are taken.
    writeback_stopped: bool,
}

impl CandidateCache {
    /// An empty cache; the first unfiltered query builds it.
    pub fn new() -> CandidateCache {
        CandidateCache::default()
    }

    /// An empty cache that starts from (and keeps) a sidecar.
    pub fn with_sidecar(config: SidecarConfig) -> CandidateCache {
        CandidateCache {
            sidecar: Some(config),
            ..CandidateCache::default()
        }
    }

    /// Keeps the vectors of opened and rebuilt states in huge-page backed memory
    /// (where the OS allows): a one-off copy (about 0.2 s per 100k rows) that makes
    /// every later scan faster. For long-lived processes; a one-shot process reads
    /// the sidecar's map in place. With [`CandidateCache::set_half_precision`],
    /// vectors large enough for a half copy stay in the map, and an opened
    /// sidecar's half copy is read into huge pages when it is at most 256 MiB.
    pub fn set_huge_pages(&mut self, on: bool) {
        self.huge_pages = on;
    }

    /// Gives each state whose `f32` vectors hold at least `from_bytes` a
    /// half-precision copy of them (`CandidateSet::prepare_half`), which the scan
    /// then reads instead: half the bytes per question, the answer unchanged
    /// (`None`: never). It costs one pass on the first query of a new state
    /// (about 0.25 s at 1M rows on 2 cores), a copy on a delta, and half the
    /// vectors' size again in memory (768 MB at 1M). For long-lived processes
    /// that ask many questions of one state; [`HALF_PRECISION_MIN_BYTES`] is where
    /// it starts to pay.
    pub fn set_half_precision(&mut self, from_bytes: Option<usize>) {
        self.half_precision = from_bytes;
    }

    /// Keeps the hydrated particles of every row of a state of at most
    /// `max_rows` rows (`None`: never), read on the state's first query (at 10k
    /// rows, about 0.1 s and 30 MB), carried over a delta, where only the
    /// changed rows are read: a query's hits then come from memory instead of
    /// a row lookup, its overflow pages and the hydration of every column each
    /// (0.4-0.7 ms for 40 hits at 10k). For long-lived processes;
    /// [`KEEP_PARTICLES_MAX_ROWS`] is what `serve` keeps.
    pub fn set_keep_particles(&mut self, max_rows: Option<usize>) {
        self.keep_particles = max_rows;
    }

    /// Reports a full build's progress to `progress(rows read, ACTIVE rows)`.
    pub fn set_build_progress(&mut self, progress: BuildProgress) {
        self.progress = Some(progress);
    }

    /// Notes about the sidecar since the last call (unusable file, failed write),
    /// for the user; none of them stops a query.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Writes the sidecar if the state changed since it was read or written and the
    /// policy asks for it. Returns whether a file was written. A failure (read-only
    /// directory, full disk) leaves a note and the old file, never an error: the
    /// answer did not depend on it.
    pub fn persist(&mut self, store: &Path) -> bool {
        let (Some(config), Some(state)) = (&self.sidecar, &self.state) else {
            return false;
        };
        if !self.dirty || config.write == SidecarWrite::Never {
            return false;
        }
        // The file stores one flat set: an extended one is compacted first, and
        // the state keeps the compacted set (its rows the same, in order).
        if state.set.base_rows() > 0 {
            let (compact, _) = compacted(
                state,
                state.head.clone(),
                &[],
                &CandidateSet::new(),
                self.huge_pages,
            );
            self.state = Some(Arc::new(compact));
        }
        let Some(state) = &self.state else {
            return false;
        };
        match state.write_to(&config.path, store, sidecar::Pace::Eager) {
            Ok(()) => {
                self.dirty = false;
                self.stats.sidecar_writes += 1;
                // The file holds this state now: a write-behind (a server's
                // thread, waiting on the lock while this wrote) must not write
                // it again as the process ends, and leave its half-written
                // copy behind.
                self.writeback_tried = Arc::downgrade(state);
                true
            }
            Err(e) => {
                self.dirty = false;
                self.notes.push(format!(
                    "{e}; answering from the store instead (use --sidecar-dir for a writable place, or --no-sidecar)"
                ));
                false
            }
        }
    }

    /// Whether a delta of `changed` rows (removed and added) should extend the
    /// state's set ([`CandidateSet::extended`]: its cost is the changed and
    /// own rows) rather than copy it. Not for a set whose particles this
    /// cache keeps (small: a copy is cheap, and kept particles are by row),
    /// and not once the rows a compaction would drop or move (the set's own
    /// rows and its dead ones) would pass an eighth of the set: a copy then
    /// costs about eight deltas' worth of rows, and scans stop paying for
    /// dead rows. So a delta's cost, over time, is proportional to what it
    /// changes.
    fn extends(&self, state: &CacheState, changed: usize) -> bool {
        let len = state.set.len();
        if self.keep_particles.is_some_and(|max| len <= max) {
            return false;
        }
        let own = if state.set.base_rows() == 0 {
            0
        } else {
            len - state.set.base_rows()
        };
        own + state.dead.len() + changed <= len / COMPACT_AT_FRACTION
    }

    /// Whether this cache gives `set` a half-precision copy.
    fn wants_half(&self, set: &CandidateSet) -> bool {
        self.half_precision
            .is_some_and(|min| set.vector_floats() * std::mem::size_of::<f32>() >= min)
    }

    /// Whether this cache writes its sidecar at all.
    fn writes_sidecar(&self) -> bool {
        self.sidecar
            .as_ref()
            .is_some_and(|c| c.write != SidecarWrite::Never)
    }

    /// Copies a built set's vectors into huge-page backed memory (the `Vec` is
    /// freed); on failure the set keeps its `Vec` and a note says why.
    fn move_vectors_to_huge_pages(&mut self, set: &mut CandidateSet) {
        let copied = sidecar::huge_page_column(set.vector_data().len(), |into| {
            into.copy_from_slice(bytemuck::cast_slice(set.vector_data()));
            Ok(())
        });
        match copied.map(|vectors| set.replace_vectors(vectors)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => self.notes.push(format!("huge pages: {e}")),
            Err(e) => self.notes.push(format!("huge pages: {e}")),
        }
    }

    /// Where an opened sidecar's vectors go in this cache.
    fn vectors_in(&self) -> sidecar::VectorsIn {
        match (self.huge_pages, self.half_precision) {
            (false, _) => sidecar::VectorsIn::Map,
            (true, None) => sidecar::VectorsIn::HugePages,
            // Vectors large enough for a half copy stay in the map: the scans
            // read the copy.
            (true, Some(least)) => sidecar::VectorsIn::HugePagesBelow(least),
        }
    }

    /// Opens the sidecar into an empty cache, once.
    fn open_sidecar(&mut self) {
        if self.state.is_some() || self.sidecar_tried {
            return;
        }
        self.sidecar_tried = true;
        let Some(config) = &self.sidecar else {
            return;
        };
        match sidecar::open(&config.path, self.vectors_in()) {
            Ok(Some(opened)) => {
                self.state = Some(Arc::new(CacheState::opened(opened)));
                self.stats.sidecar_loads += 1;
            }
            Ok(None) => {}
            Err(e) => self.notes.push(format!("{e}; rebuilding it")),
        }
    }

    /// How the last call was served.
    pub fn last_route(&self) -> Option<Route> {
        self.last_route
    }

    /// Counters over the cache's life.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// The number of cached rows, or `None` before the first build.
    pub fn cached_rows(&self) -> Option<usize> {
        // Live rows: an extended set also holds rows a delta replaced.
        self.state
            .as_ref()
            .map(|s| s.order.as_ref().map_or(s.set.len(), Vec::len))
    }

    /// Heap bytes the cached state holds (vectors, columns, ids, the id index).
    pub fn heap_bytes(&self) -> usize {
        self.state
            .as_ref()
            .map_or(0, |s| s.set.heap_bytes() + s.by_id.heap_bytes())
    }

    /// The cached candidates, if built or opened.
    pub fn candidates(&self) -> Option<Arc<CandidateSet>> {
        self.state.as_ref().map(|s| Arc::clone(&s.set))
    }

    /// The journal head the state is valid at.
    pub fn head(&self) -> Option<&JournalHead> {
        self.state.as_ref().map(|s| &s.head)
    }

    /// Drops the cached state.
    pub fn clear(&mut self) {
        self.state = None;
    }

    /// Drops the cached state and deletes its sidecar, after a query found the
    /// state's bytes damaged (a vector or norm failing its row check): the next call
    /// rebuilds from the store, and `persist` writes a whole sidecar again. Always
    /// leaves a note naming the file: a damaged sidecar is never passed over
    /// silently, even when another process already removed it.
    pub fn discard(&mut self) {
        self.state = None;
        self.dirty = false;
        if let Some(config) = &self.sidecar {
            let path = config.path.display().to_string();
            let removed = match std::fs::remove_file(&config.path) {
                Ok(()) => String::new(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => format!(" (it could not be deleted: {e})"),
            };
            self.notes.push(format!(
                "the sidecar {path} failed its integrity check while a query read it{removed}; \
                 the candidates were rebuilt from the store and the query answered again"
            ));
            // The next call rebuilds; it must not reopen a file that is still there.
            self.sidecar_tried = true;
        }
    }

    fn uncached(
        &mut self,
        route: Route,
        store: &Store,
        min_confidence: f64,
        subject_id: Option<&str>,
    ) -> Result<Selection> {
        self.last_route = Some(route);
        self.stats.uncached += 1;
        particles_store::load_active(store, min_confidence, subject_id)
    }

    /// Brings the state to `head`, or says why it cannot.
    fn refresh(
        &mut self,
        store: &Store,
        head: JournalHead,
        subject_call: bool,
    ) -> Result<Option<Route>> {
        let fresh_from_sidecar = if self.state.is_none() && !subject_call {
            self.open_sidecar();
            self.state.is_some()
        } else {
            false
        };
        if let Some(state) = &self.state {
            if state.head == head {
                self.stats.reuses += 1;
                return Ok(Some(if fresh_from_sidecar {
                    Route::Sidecar
                } else {
                    Route::Reuse
                }));
            }
            let token = particles_store::token_at(store, state.head.seq)?;
            if token.as_deref() == Some(state.head.token.as_slice()) {
                let limit = DELTA_FLOOR.max(state.set.len() / 4);
                if let Some(changed) = particles_store::changed_since(store, state.head.seq, limit)?
                {
                    let added = particles_store::load_cacheable_by_ids(
                        store,
                        changed.iter().map(String::as_str),
                    )?;
                    let removed: Vec<usize> =
                        changed.iter().filter_map(|id| state.row_of(id)).collect();
                    let new = if self.extends(state, removed.len() + added.len()) {
                        let extended = state.set.extended(&removed, &added);
                        CacheState::after_extension(state, head, extended, &removed)
                    } else {
                        let (new, carried) =
                            compacted(state, head, &removed, &added, self.huge_pages);
                        if let Some(carried) = carried {
                            keep_particles(&new.set, store, carried);
                        }
                        new
                    };
                    self.state = Some(Arc::new(new));
                    self.stats.deltas += 1;
                    self.dirty |= self
                        .sidecar
                        .as_ref()
                        .is_some_and(|c| c.write == SidecarWrite::OnChange);
                    return Ok(Some(Route::Delta(changed.len())));
                }
            }
        }
        if subject_call {
            return Ok(None);
        }
        // Replace, so the old state is freed before the new one is built.
        self.state = None;
        let (set, order) = self.build(store)?;
        let mut state = CacheState::new(head, set);
        state.order = Some(order);
        if self.huge_pages {
            // A long-lived process scans this set many times: put it in order (one
            // copy) and its vectors in huge pages. A one-shot process ranks
            // through the permutation instead, and orders the copy it writes.
            let mut ordered = state.in_order();
            if let Some(set) = Arc::get_mut(&mut ordered.set) {
                self.move_vectors_to_huge_pages(set);
            }
            state = ordered;
        }
        self.state = Some(Arc::new(state));
        self.stats.rebuilds += 1;
        self.dirty = self
            .sidecar
            .as_ref()
            .is_some_and(|c| c.write != SidecarWrite::Never);
        Ok(Some(Route::Rebuild))
    }
}

impl CandidateCache {
    /// Every cacheable row, on two cores, with the permutation into loader order.
    fn build(&mut self, store: &Store) -> Result<(CandidateSet, Vec<u32>)> {
        let total = particles_store::count_active(store)?;
        let mut report = |seen: usize| {
            if let Some(progress) = self.progress.as_mut() {
                progress(seen, total);
            }
        };
        particles_store::load_cacheable(store, &mut report)
    }
}

impl CandidateLoader for CandidateCache {
    fn select(
        &mut self,
        store: &Store,
        min_confidence: f64,
        subject_id: Option<&str>,
    ) -> Result<Selection> {
        if !particles_store::journal_installed(store)? {
            return self.uncached(Route::NoJournal, store, min_confidence, subject_id);
        }
        let Some(head) = particles_store::read_head(store)? else {
            return self.uncached(Route::EmptyJournal, store, min_confidence, subject_id);
        };
        let Some(route) = self.refresh(store, head, subject_id.is_some())? else {
            return self.uncached(Route::SubjectUncached, store, min_confidence, subject_id);
        };
        self.last_route = Some(route);
        let state = self
            .state
            .as_ref()
            .expect("refresh leaves a state when it returns a route");
        if self.wants_half(&state.set) {
            match state.set.prepare_half() {
                HalfOrigin::Present | HalfOrigin::Stored => {}
                // A copy made in memory: the sidecar should carry it, so the next
                // process serves it from the file's pages instead of making its own.
                HalfOrigin::Made => self.dirty |= self.writes_sidecar(),
                HalfOrigin::StoredDamaged => {
                    let replace = self.writes_sidecar();
                    self.dirty |= replace;
                    if let Some(config) = &self.sidecar {
                        self.notes.push(format!(
                            "the sidecar {}'s half-precision copy failed its checksum; \
                             it was made again from the vectors{}",
                            config.path.display(),
                            if replace {
                                ", and the file will be replaced"
                            } else {
                                ""
                            }
                        ));
                    }
                }
            }
        }
        if self
            .keep_particles
            .is_some_and(|max| state.set.len() <= max)
            && !state.set.keeps_particles()
        {
            keep_particles(&state.set, store, vec![None; state.set.len()]);
        }
        select_from(state, store, min_confidence, subject_id)
    }
}

/// The state after a delta that copies the set ([`CandidateSet::replaced_in`]):
/// one flat set of the live rows and `added`'s, in order, the rows `removed`
/// and the state's dead rows left out; with the particles it can keep of the
/// old set's.
fn compacted(
    state: &CacheState,
    head: JournalHead,
    removed: &[usize],
    added: &CandidateSet,
    huge_pages: bool,
) -> (
    CacheState,
    Option<Vec<Option<Arc<particles_model::Particle>>>>,
) {
    let mut gone = removed.to_vec();
    gone.extend(state.dead.iter().map(|&row| row as usize));
    let replaced = state.set.replaced_in(&gone, added, |len, fill| {
        delta_vectors(huge_pages, len, fill)
    });
    let carried = carry_particles(&state.set, &replaced);
    (CacheState::after_delta(state, head, replaced), carried)
}

/// The id index of `set` after a delta: `old`'s rows renumbered by `renumber`
/// (`u32::MAX`: gone), still in id order, with the `added` rows sorted by id
/// and spliced in: runs of kept rows are copied whole between the places a
/// binary search finds. `O(rows + added · log rows)` comparisons of ids, where
/// sorting the whole index again compared `O(rows · log rows)` (at 1M, a delta
/// of a few thousand rows spent about a second there). Ids are unique among
/// a set's live rows, so this is the one order.
fn id_index_after(
    set: &CandidateSet,
    old: &[u32],
    renumber: impl Fn(u32) -> u32,
    added: &[u32],
) -> Vec<u32> {
    let kept: Vec<u32> = old
        .iter()
        .map(|&row| renumber(row))
        .filter(|&row| row != u32::MAX)
        .collect();
    let mut fresh = added.to_vec();
    fresh.sort_unstable_by(|&a, &b| set.id(a as usize).cmp(set.id(b as usize)));
    let mut by_id = Vec::with_capacity(kept.len() + fresh.len());
    let mut start = 0;
    for &row in &fresh {
        let id = set.id(row as usize);
        let at = start + kept[start..].partition_point(|&other| set.id(other as usize) < id);
        by_id.extend_from_slice(&kept[start..at]);
        by_id.push(row);
        start = at;
    }
    by_id.extend_from_slice(&kept[start..]);
    debug_assert!(
        by_id
            .windows(2)
            .all(|pair| set.id(pair[0] as usize) < set.id(pair[1] as usize)),
        "the id index is in strict id order"
    );
    by_id
}

/// The vector column of a delta's new set, filled by `fill`: in huge pages
/// when the cache keeps its vectors there (a long-lived process), so the scans
/// after a delta read huge pages as they did before it, and the delta faults
/// in 2 MiB pages rather than 4 KiB ones; else (or when the map fails) in the
/// heap.
fn delta_vectors(
    huge_pages: bool,
    len: usize,
    fill: &mut dyn FnMut(&mut [f32]),
) -> particles_candidates::column::Column<f32> {
    if huge_pages {
        let mapped = sidecar::huge_page_column(len, |bytes| {
            fill(bytemuck::cast_slice_mut(bytes));
            Ok(())
        });
        if let Ok(column) = mapped {
            return column;
        }
    }
    let mut vectors = vec![0.0; len];
    fill(&mut vectors);
    particles_candidates::column::Column::from(vectors)
}

/// The particles a delta's new set can take from the old one (`None` when the
/// old set keeps none): the kept rows' by their new row, `None` for the rows
/// the delta read.
fn carry_particles(
    old: &CandidateSet,
    replaced: &Replaced,
) -> Option<Vec<Option<Arc<particles_model::Particle>>>> {
    if !old.keeps_particles() {
        return None;
    }
    let mut carried = vec![None; replaced.set.len()];
    for (old_row, &new_row) in replaced.old_rows.iter().enumerate() {
        if let (Some(slot), Some(particle)) =
            (carried.get_mut(new_row as usize), old.particle(old_row))
        {
            *slot = Some(Arc::clone(particle));
        }
    }
    Some(carried)
}

/// Keeps `set`'s rows' particles: `have` where given, the others read by id in
/// the caller's read transaction (so at the state's journal head). A failed read
/// keeps nothing: the hits are then read from the store, which reports the
/// error where a hit has one.
fn keep_particles(
    set: &CandidateSet,
    store: &Store,
    mut have: Vec<Option<Arc<particles_model::Particle>>>,
) {
    let missing: Vec<&str> = (0..set.len())
        .filter(|&row| have[row].is_none())
        .map(|row| set.id(row))
        .collect();
    let Ok(read) = particles_store::particles_by_ids(store, &missing) else {
        return;
    };
    let mut read: std::collections::HashMap<String, Arc<particles_model::Particle>> = read
        .into_iter()
        .map(|particle| (particle.id.clone(), Arc::new(particle)))
        .collect();
    for (row, slot) in have.iter_mut().enumerate() {
        if slot.is_none() {
            *slot = read.remove(set.id(row));
        }
    }
    if let Some(all) = have.into_iter().collect::<Option<Vec<_>>>() {
        set.keep_particles(all);
    }
}

/// The selection a state serves for one call: every row in loader order (or the
/// subject's linked rows, read live: links are not journaled), less those below
/// `min_confidence`, less (and counting) those of another embedding model.
fn select_from(
    state: &CacheState,
    store: &Store,
    min_confidence: f64,
    subject_id: Option<&str>,
) -> Result<Selection> {
    let set = &state.set;
    let mut skipped_other_model = 0;
    let mut subject_claims = None;
    // A reused buffer: at 1M rows a fresh one is 8 MB of new pages per query.
    let mut rows = particles_candidates::scratch::Recycled::with_capacity(set.len());
    let mut keep = |row: usize| {
        if set.confidence(row) < min_confidence {
            return;
        }
        if !set.model_current(row) {
            skipped_other_model += 1;
            return;
        }
        rows.push(row);
    };
    match subject_id {
        None => match &state.order {
            None => (0..set.len()).for_each(keep),
            Some(order) => order.iter().for_each(|&row| keep(row as usize)),
        },
        Some(subject) => {
            let ids = particles_store::subject_particle_ids(store, subject)?;
            let mut linked: Vec<usize> = Vec::with_capacity(ids.len());
            let mut outside: Vec<String> = Vec::new();
            for id in ids {
                match state.row_of(&id) {
                    Some(row) => linked.push(row),
                    None => outside.push(id),
                }
            }
            // The coverage gap's count of the subject's ACTIVE CLAIMs, from the
            // links in hand: every row of the set is ACTIVE in the snapshot this
            // read sees (the ranking rests on that too), so its claim flag settles
            // it. The links outside the set go with the selection, for the store
            // to settle only if the gap is built (`SubjectClaims`). Asking the
            // store for every link cost two B-tree descents each: a third of a
            // question about a large subject.
            subject_claims = Some(Arc::new(SubjectClaims {
                in_set: linked.iter().filter(|&&row| set.claim(row)).count() as u64,
                outside,
            }));
            linked.sort_unstable_by(|&a, &b| set.cmp_order_key(a, b));
            linked.dedup();
            linked.into_iter().for_each(keep);
        }
    }
    Ok(Selection {
        set: Arc::clone(set),
        rows,
        skipped_other_model,
        subject_claims,
    })
}
