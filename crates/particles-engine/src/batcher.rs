//! Concurrent queries on one store share passes over the vectors.
//!
//! Each caller queues its request and either becomes the leader or waits. The
//! leader takes every request queued so far, answers them together with
//! `particles_query::run_query_batch` (one read transaction, one pass over the
//! vectors for those that read the same candidates), hands each caller its
//! answer, and goes on while requests keep arriving. A lone request is a batch of
//! one: no waiting is added when the engine is idle. Under load, the batches grow
//! with the queue, so the time per request falls as the arrival rate rises
//! instead of the queue growing without bound.

use std::{
    collections::VecDeque,
    sync::{Arc, Condvar, Mutex, PoisonError},
};

use particles_model::response::QueryResponse;
use particles_model::{Timestamp, ValidRequest};
use particles_query::{QueryInput, QueryOutcome};
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
        prune_margin: f64,
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
            // Lead: answer batches until the queue is empty (this caller's own
            // request is in the first one).
            state.leading = true;
            while !state.queue.is_empty() {
                let take = state.queue.len().min(MAX_BATCH);
                let batch: Vec<Pending> = state.queue.drain(..take).collect();
                drop(state);
                let answers = answer_batch(&batch, settings, prune_margin, run);
                // Answers are handed over under the queue's lock, so a caller
                // that checks its slot and then waits cannot miss the wake-up.
                state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                for (pending, answer) in batch.iter().zip(answers) {
                    *pending
                        .answer
                        .answer
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(answer);
                }
                self.changed.notify_all();
            }
            state.leading = false;
            self.changed.notify_all();
        }
    }
}

fn answer_batch(
    batch: &[Pending],
    settings: &RankSettings,
    prune_margin: f64,
    run: &RunBatch<'_>,
) -> Vec<crate::Result<Ranked>> {
    let inputs: Vec<QueryInput<'_>> = batch
        .iter()
        .map(|pending| QueryInput {
            settings,
            prune_margin,
            ..QueryInput::new(&pending.request, pending.vector.as_deref(), pending.now)
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
