//! Writing a long-lived cache's sidecar behind it, and serving the state from
//! the file once written.
//!
//! A server's state holds memory of its own when it was built, compacted, or
//! given a half copy its sidecar lacked: at 1M rows 1.5 GB of `f32` vectors in
//! huge pages and 768 MB of half copy, where a state opened from a sidecar
//! keeps both in the file's map (the page cache, shared, given back under
//! pressure). Left alone, such a state would live until the process stopped,
//! and be written only then. [`SharedCache::write_behind`] writes it while
//! queries go on ranking it, opens the file it wrote, and swaps that in at the
//! same journal head: the answers are the same rows, values and bits (the file
//! is the state, which the sidecar's round-trip tests hold), and the memory of
//! the old state goes once the queries that hold it end.
//!
//! The write takes a copy of the state's `Arc` under the refresher's lock and
//! runs outside it, so refreshes and queries never wait for it, and the
//! replaced state is freed on the writer's thread (`Job::retire`), so no
//! question pays for unmapping it. It is one
//! write per state: a state the cache moved past during the write (a delta or
//! a rebuild) is not swapped, and a state that was tried is not tried again.
//! A failed write (a read-only directory, a full disk) leaves a note and stops
//! the cache's write-behinds: retrying every poll would write gigabytes for
//! nothing.
//!
//! [`SharedCache::write_behind`]: crate::SharedCache::write_behind

use std::{
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use particles_candidates::{CandidateSet, HalfOrigin};

use crate::{sidecar, CacheState, CandidateCache, SidecarWrite};

/// What one write-behind did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WriteBehind {
    /// The sidecar was written, and the cache now serves the same head from it.
    Served {
        /// The state's rows.
        rows: usize,
        /// The write, fsyncs included.
        written: Duration,
        /// The open and the half copy's check.
        opened: Duration,
        /// Freeing the state the file replaced, once the questions still
        /// ranking on it were done.
        freed: Duration,
        /// Giving the allocator's free pages back to the system (see
        /// `release.rs`), after the freeing, once no question ranked on the
        /// swapped-in set or after at most 5 s.
        released: Duration,
    },
    /// The sidecar was written, but the cache's state moved on while it was
    /// (a delta or a rebuild), or the file read back was not the one written
    /// (another process replaced it): the cache keeps its state. The file is
    /// still a valid start for the next process.
    Outrun {
        /// The write, fsyncs included.
        written: Duration,
    },
    /// The write or the open failed; the cache's notes say why, and its
    /// write-behinds stop.
    Failed,
}

/// The longest a write-behind waits for the questions ranking on the state it
/// replaced before it lets the last of them free it.
const RETIRE_WAIT: Duration = Duration::from_secs(30);

/// The longest a write-behind waits for a moment when no question ranks
/// before it gives the allocator's free pages back anyway.
const QUIET_WAIT: Duration = Duration::from_secs(5);

/// Waits (at most [`QUIET_WAIT`]) until no question ranks on `set`: its only
/// holders are then its state and this caller. A cache that moved past the
/// swapped-in state meanwhile (a delta, a rebuild) no longer holds it, and
/// the count then ends the wait at once, whatever ranks on the new state: a
/// trim at a busier moment, not a wrong one. `malloc_trim` locks each
/// arena while it walks it, so a question allocating meanwhile waits. At 1M
/// rows, measured: the walk took 72-89 ms idle and 0.48-0.67 s in a 10/s
/// load, and in one of those two runs the questions answered around it had a
/// median of 949 ms against 284 ms without the call. With this wait it took
/// 0.33-0.39 s, and those medians were 393 and 288 ms in two runs.
fn wait_for_quiet(set: &Arc<CandidateSet>) {
    let deadline = Instant::now() + QUIET_WAIT;
    while Arc::strong_count(set) > 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A state to write, taken under the refresher's lock, written outside it.
pub(crate) struct Job {
    state: Arc<CacheState>,
    path: PathBuf,
    vectors_in: sidecar::VectorsIn,
}

/// What a job read back: the state to swap in (`None`: the file read back is
/// not the one written).
pub(crate) type Fresh = Result<Option<CacheState>, sidecar::SidecarError>;

/// How long a job's two steps took.
pub(crate) struct Took {
    written: Duration,
    opened: Duration,
}

/// What the cache made of a job's result, under its lock.
pub(crate) enum Taken {
    /// The file's state replaced the one written; this is its set.
    Swapped(Arc<CandidateSet>),
    /// The cache keeps its state ([`WriteBehind::Outrun`]).
    Kept,
    /// The write or the open failed ([`WriteBehind::Failed`]).
    Failed,
}

impl Job {
    /// Writes the state to the sidecar and opens it again.
    pub(crate) fn run(&self, store: &std::path::Path) -> (Fresh, Took) {
        let started = Instant::now();
        let write = self.state.write_to(&self.path, store, sidecar::Pace::Paced);
        let written = started.elapsed();
        let fresh = write.and_then(|()| self.read_back());
        let opened = started.elapsed().saturating_sub(written);
        (fresh, Took { written, opened })
    }

    /// The outcome of a job the cache took: a swapped-out state is freed
    /// here, once the cache's lock is released and off the questions'
    /// threads, and the allocator then gives its free pages back at a
    /// moment when no question ranks on the set swapped in.
    pub(crate) fn outcome(self, took: Took, taken: Taken) -> WriteBehind {
        match taken {
            Taken::Swapped(fresh) => {
                let freed = self.retire();
                if crate::release::GIVES_BACK {
                    wait_for_quiet(&fresh);
                }
                let started = Instant::now();
                crate::release::free_pages();
                WriteBehind::Served {
                    rows: fresh.len(),
                    written: took.written,
                    opened: took.opened,
                    freed,
                    released: started.elapsed(),
                }
            }
            Taken::Kept => WriteBehind::Outrun {
                written: took.written,
            },
            Taken::Failed => WriteBehind::Failed,
        }
    }

    /// Frees the state written, on this thread, after the cache swapped it
    /// out: it waits (at most [`RETIRE_WAIT`]) for the questions still
    /// ranking on it, so none of them pays for the freeing. That is not free:
    /// a state opened from a sidecar maps a file the write just unlinked, and
    /// its last unmap gives the file's blocks back; measured at 1M rows (a
    /// 1.8 GB file, ext4 with online discard), about a second, which the
    /// question that dropped the state waited out, and the questions queued
    /// behind its pass with it. Returns how long the freeing took.
    fn retire(self) -> Duration {
        let set = Arc::clone(&self.state.set);
        drop(self);
        let deadline = Instant::now() + RETIRE_WAIT;
        while Arc::strong_count(&set) > 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let started = Instant::now();
        drop(set);
        started.elapsed()
    }

    /// The file opened as the cache opens it, when it holds the state written.
    fn read_back(&self) -> Fresh {
        let state = &self.state;
        let Some(opened) = sidecar::open(&self.path, self.vectors_in)? else {
            return Ok(None);
        };
        let live_rows = state.order.as_ref().map_or(state.set.len(), Vec::len);
        if opened.head != state.head || opened.set.len() != live_rows {
            return Ok(None);
        }
        let fresh = CacheState::opened(opened);
        // The copy the old state scans must come from the file (checked here,
        // off the lock), or the swap would give back no memory.
        if state.set.half().is_some() && fresh.set.prepare_half() != HalfOrigin::Stored {
            return Ok(None);
        }
        Ok(Some(fresh))
    }
}

impl CandidateCache {
    /// The state a write-behind should write: one its sidecar would serve
    /// from the file where it now holds memory of its own (built, compacted,
    /// or given a half copy the file lacks). Not an extended set (its deltas
    /// are few, and compacting it first would be a copy under the lock), not
    /// one whose particles this cache keeps (small, and kept by row), and not
    /// one whose half copy is still to be made (the file should carry it).
    pub(crate) fn writeback(&self) -> Option<Job> {
        let config = self.sidecar.as_ref()?;
        let state = self.state.as_ref()?;
        let wanted = config.write != SidecarWrite::Never
            && !self.writeback_stopped
            && !self.writeback_tried.ptr_eq(&Arc::downgrade(state))
            && (!state.from_file || self.dirty)
            && state.set.base_rows() == 0
            && self.keep_particles.is_none_or(|max| state.set.len() > max)
            && (!self.wants_half(&state.set) || state.set.half().is_some());
        wanted.then(|| Job {
            state: Arc::clone(state),
            path: config.path.clone(),
            vectors_in: self.vectors_in(),
        })
    }

    /// Takes a write-behind's result: the fresh state swapped in when the
    /// cache still holds the state written.
    pub(crate) fn written(&mut self, job: &Job, fresh: Fresh) -> Taken {
        self.writeback_tried = Arc::downgrade(&job.state);
        let fresh = match fresh {
            Ok(fresh) => fresh,
            Err(e) => {
                self.writeback_stopped = true;
                self.notes.push(format!(
                    "{e}; the sidecar is not written behind the server again until it restarts \
                     (use --sidecar-dir for a writable place, or --no-sidecar)"
                ));
                return Taken::Failed;
            }
        };
        self.stats.sidecar_writes += 1;
        let current = self
            .state
            .as_ref()
            .is_some_and(|state| Arc::ptr_eq(state, &job.state));
        match fresh {
            Some(fresh) if current => {
                let set = Arc::clone(&fresh.set);
                self.state = Some(Arc::new(fresh));
                self.dirty = false;
                Taken::Swapped(set)
            }
            _ => Taken::Kept,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{
        sync::Arc,
        time::{Duration, Instant},
    };

    use particles_candidates::CandidateSet;

    /// The trim waits for the question still ranking on the set: it returns
    /// only once that holder let go, which it does after 50 ms.
    #[test]
    fn the_quiet_wait_outlasts_a_question_on_the_set() {
        let state = Arc::new(CandidateSet::new());
        let mine = Arc::clone(&state);
        let question = Arc::clone(&state);
        let started = Instant::now();
        let ranking = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(question);
        });
        super::wait_for_quiet(&mine);
        assert!(
            started.elapsed() >= Duration::from_millis(50),
            "returned while the question ranked"
        );
        assert!(
            started.elapsed() < super::QUIET_WAIT,
            "waited out the deadline"
        );
        assert_eq!(Arc::strong_count(&state), 2);
        ranking.join().unwrap();
    }
}
