//! Concurrent queries on one store share passes over the vectors.
//!
//! Each caller queues its request and either becomes the leader or waits. The
//! leader takes the requests queued so far (the oldest, at most `MAX_BATCH`),
//! answers them together with `particles_query::run_query_batch` (one read
//! transaction, one pass over the vectors for those that read the same
//! candidates), hands each caller its answer, and once its own request is
//! answered hands the lead to a waiting caller. A lone request is a batch of one:
//! no waiting is added when the engine is idle. Under load, the batches grow with
//! the queue, so the time per request falls as the arrival rate rises instead of
//! the queue growing without bound, and no caller waits longer than the batches
//! ahead of its own request.

use std::{
    collections::VecDeque,
    sync::{Arc, Condvar, Mutex, PoisonError},
};

use particles_model::response::QueryResponse;
use particles_model::{Timestamp, ValidRequest};
use particles_query::{QueryInput, QueryOutcome, TruncationSettings};
use particles_rank::RankSettings;

/// The most requests one pass answers; the scan's cost grows with the lanes, and
/// a bounded batch bounds the wait of the last of them.
const MAX_BATCH: usize = 32;

/// A ranked request: the outcome and the response built in its snapshot.
pub(crate) type Ranked = (QueryOutcome, QueryResponse);

/// Answers a batch of inputs in one transaction of the store: the outer error
/// when the transaction fails, else each input's own result.
pub(crate) type RunBatch<'a> =
    dyn Fn(&[QueryInput<'_>]) -> crate::Result<Vec<crate::Result<Ranked>>> + 'a;

/// One queued request and where its answer goes.
struct Pending {
    request: ValidRequest,
    vector: Option<Vec<f32>>,
    now: Timestamp,
    answer: Arc<Slot>,
}

/// Where a waiting caller's answer lands.
#[derive(Default)]
struct Slot {
    answer: Mutex<Option<crate::Result<Ranked>>>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Pending>,
    leading: bool,
}

/// The queue and the leader flag of one store.
#[derive(Default)]
pub(crate) struct Batcher {
    state: Mutex<State>,
    changed: Condvar,
}

impl Batcher {
    /// Answers `request`, together with whatever else is queued. `run` answers a
    /// batch of inputs (the store's transaction and loader are the caller's).
    pub(crate) fn query(
        &self,
        request: &ValidRequest,
        vector: Option<&[f32]>,
        now: Timestamp,
        settings: &RankSettings,
        truncation: &TruncationSettings,
        run: &RunBatch<'_>,
    ) -> crate::Result<Ranked> {
        let slot = Arc::new(Slot::default());
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.queue.push_back(Pending {
            request: request.clone(),
            vector: vector.map(<[f32]>::to_vec),
            now,
            answer: Arc::clone(&slot),
        });
        loop {
            if let Some(answer) = slot
                .answer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
            {
                return answer;
            }
            if state.leading {
                state = self
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            // Lead: answer the oldest queued requests, a batch at a time, until
            // this caller's own is answered; then hand the lead over. A leader
            // that kept leading while requests kept arriving would hold its own
            // answer until the queue ran dry: under sustained load, for as long
            // as the load lasted (measured: ~60 s tails in serve-load).
            state.leading = true;
            while !state.queue.is_empty() {
                let take = state.queue.len().min(MAX_BATCH);
                let batch: Vec<Pending> = state.queue.drain(..take).collect();
                drop(state);
                let answers = answer_batch(&batch, settings, truncation, run);
                // Answers are handed over under the queue's lock, so a caller
                // that checks its slot and then waits cannot miss the wake-up.
                state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                let mut own_answered = false;
                for (pending, answer) in batch.iter().zip(answers) {
                    own_answered |= Arc::ptr_eq(&pending.answer, &slot);
                    *pending
                        .answer
                        .answer
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(answer);
                }
                if own_answered {
                    // Every request still queued belongs to a caller waiting
                    // below: the first of them to wake takes the lead.
                    break;
                }
            }
            state.leading = false;
            self.changed.notify_all();
        }
    }
}

fn answer_batch(
    batch: &[Pending],
    settings: &RankSettings,
    truncation: &TruncationSettings,
    run: &RunBatch<'_>,
) -> Vec<crate::Result<Ranked>> {
    let inputs: Vec<QueryInput<'_>> = batch
        .iter()
        .map(|pending| {
            QueryInput {
                settings,
                ..QueryInput::new(&pending.request, pending.vector.as_deref(), pending.now)
            }
            .with_truncation(truncation)
        })
        .collect();
    match run(&inputs) {
        Ok(answers) => answers,
        Err(error) => {
            // The batch's transaction failed: every request reports it.
            let text = error.to_string();
            batch
                .iter()
                .map(|_| Err(crate::Error::Batch(text.clone())))
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{
        sync::atomic::{AtomicBool, Ordering},
        time::{Duration, Instant},
    };

    use particles_model::QueryRequest;

    use super::*;

    /// Under a load that never lets the queue run dry, the caller that leads
    /// first still gets its answer after its own batch, not when the load ends.
    #[test]
    fn a_leader_hands_over_once_its_own_request_is_answered() {
        let batcher = Batcher::default();
        let now = Timestamp::parse("2026-06-01T00:00:00Z").expect("a timestamp");
        let request = QueryRequest::question("q").validate(now).expect("valid");
        let settings = RankSettings::default();
        // Each batch takes 20 ms; its answers are errors (no store here), which is
        // all the queue's bookkeeping needs.
        let run = |inputs: &[QueryInput<'_>]| -> crate::Result<Vec<crate::Result<Ranked>>> {
            std::thread::sleep(Duration::from_millis(20));
            Ok(inputs
                .iter()
                .map(|_| Err(crate::Error::Batch("answered".into())))
                .collect())
        };
        let loading = AtomicBool::new(true);
        let slowest = Mutex::new(Duration::ZERO);
        std::thread::scope(|scope| {
            // Callers coming back 5 ms after each answer keep the queue from
            // running dry while the load lasts (1.5 s); whoever leads first is
            // one of them.
            for _ in 0..6 {
                scope.spawn(|| {
                    while loading.load(Ordering::SeqCst) {
                        let started = Instant::now();
                        let answer = batcher.query(
                            &request,
                            None,
                            now,
                            &settings,
                            &TruncationSettings {
                                min_gap: 0.0,
                                near_margin: 0.0,
                                near_count: 5,
                            },
                            &run,
                        );
                        assert!(answer.is_err(), "the fake run answers with an error");
                        let took = started.elapsed();
                        let mut slowest = slowest.lock().unwrap_or_else(PoisonError::into_inner);
                        *slowest = (*slowest).max(took);
                        drop(slowest);
                        std::thread::sleep(Duration::from_millis(5));
                    }
                });
            }
            std::thread::sleep(Duration::from_millis(1500));
            loading.store(false, Ordering::SeqCst);
        });
        // A batch takes 20 ms and at most a couple are ahead of any request. A
        // leader that kept leading while callers kept coming waited for the
        // whole 1.5 s of load.
        let slowest = *slowest.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(
            slowest < Duration::from_millis(500),
            "a caller waited {slowest:?} under load"
        );
    }
}
