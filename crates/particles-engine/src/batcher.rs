//! Concurrent queries on one store share passes over the vectors.
//!
//! Each caller queues its request and either becomes the leader or waits. The
//! leader takes the requests queued so far (the oldest, at most `MAX_BATCH`)
//! and answers them together with `particles_query::run_semantic_batch_streaming`
//! (one read transaction, one pass over the vectors for those that read the same
//! candidates; each response built by `particles_respond::semantic_response` in
//! that transaction). The lead is handed over as soon as the batch's passes are done:
//! the rest of the batch (each member's band, cut and response) runs on the old
//! leader's thread while the next leader's pass runs, and each answer goes to its
//! caller the moment it is built. A lone request is a batch of one: no waiting
//! is added when the engine is idle. Under load, the batches grow with the
//! queue, so the time per request falls as the arrival rate rises; a request
//! waits for the pass under way, not for the whole batch ahead of it.
//!
//! Passes never overlap (one leader at a time), so the memory read is not split
//! between two scans; per-request work of several batches may.

use std::{
    collections::VecDeque,
    sync::{Arc, Condvar, Mutex, PoisonError},
    time::{Duration, Instant},
};

use particles_model::{response::QueryResponse, Timestamp, ValidRequest};
use particles_query::{QueryInput, QueryOutcome, TruncationSettings};
use particles_rank::RankSettings;

/// The most requests one pass answers; the scan's cost grows with the lanes, and
/// a bounded batch bounds the wait of the last of them.
const MAX_BATCH: usize = 32;

/// A ranked request: the outcome and the response built in its snapshot.
pub(crate) type Ranked = (QueryOutcome, QueryResponse);

/// Where a batch reports to the batcher: `passes_done` once its shared passes
/// are over, `answered(index, answer)` once per input as each is built.
pub(crate) struct BatchEvents<'a> {
    pub(crate) passes_done: &'a mut dyn FnMut(),
    pub(crate) answered: &'a mut dyn FnMut(usize, crate::Result<Ranked>),
}

/// Answers a batch of inputs in one transaction of the store, through
/// `events`; the error when the transaction fails (the inputs not answered by
/// then report it).
pub(crate) type RunBatch<'a> = dyn Fn(&[QueryInput<'_>], BatchEvents<'_>) -> crate::Result<()> + 'a;

/// Where a request's time went in the batcher.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchTiming {
    /// From queueing to the start of the batch that answered it: the passes
    /// ahead of it.
    pub queued: Duration,
    /// From its batch's start to the end of the batch's shared passes.
    pub pass: Duration,
    /// From its batch's start to its own answer: the pass, then the
    /// per-request work of the members answered before it and its own.
    pub batch: Duration,
    /// How many requests that batch answered.
    pub batch_size: usize,
}

/// One queued request and where its answer goes.
struct Pending {
    request: ValidRequest,
    vector: Option<Vec<f32>>,
    now: Timestamp,
    recall: particles_model::RecallOptions,
    queued_at: Instant,
    answer: Arc<Slot>,
}

/// Where a waiting caller's answer lands.
#[derive(Default)]
struct Slot {
    answer: Mutex<Option<(crate::Result<Ranked>, BatchTiming)>>,
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
    // What one question brings (request, vector, instant, recall options) and
    // what the batch shares (settings, the run) travel apart on purpose.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn query(
        &self,
        request: &ValidRequest,
        vector: Option<&[f32]>,
        now: Timestamp,
        recall: &particles_model::RecallOptions,
        settings: &RankSettings,
        truncation: &TruncationSettings,
        run: &RunBatch<'_>,
    ) -> (crate::Result<Ranked>, BatchTiming) {
        let slot = Arc::new(Slot::default());
        let mut state = self.lock();
        state.queue.push_back(Pending {
            request: request.clone(),
            vector: vector.map(<[f32]>::to_vec),
            now,
            recall: recall.clone(),
            queued_at: Instant::now(),
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
            let queued = state
                .queue
                .iter()
                .any(|pending| Arc::ptr_eq(&pending.answer, &slot));
            if state.leading || !queued {
                // Another caller's pass is under way, or this caller's request
                // is in a batch another thread is finishing: its answer wakes
                // us. Only a caller whose request is still queued leads, so
                // every queued request has a caller that will.
                state = self
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            // Lead one batch: the oldest queued requests. The lead goes back as
            // soon as the batch's passes are done, so the next batch's pass can
            // start while this thread finishes this one's members; a leader that
            // kept leading while requests kept arriving would hold its own answer
            // until the queue ran dry (measured: ~60 s tails in serve-load).
            state.leading = true;
            let take = state.queue.len().min(MAX_BATCH);
            let mut batch: Vec<Pending> = state.queue.drain(..take).collect();
            drop(state);
            // The leader's thread builds every member's answer, so its own
            // comes last: it returns when its batch is done whatever its place,
            // and the others need not wait behind it.
            if let Some(own) = batch
                .iter()
                .position(|pending| Arc::ptr_eq(&pending.answer, &slot))
            {
                let mine = batch.remove(own);
                batch.push(mine);
            }
            self.lead(&batch, settings, truncation, run);
            state = self.lock();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers `batch`: hands the lead back after its passes (or at the end,
    /// when it never reports them) and each answer to its slot as it comes.
    fn lead(
        &self,
        batch: &[Pending],
        settings: &RankSettings,
        truncation: &TruncationSettings,
        run: &RunBatch<'_>,
    ) {
        let inputs: Vec<QueryInput<'_>> = batch
            .iter()
            .map(|pending| {
                QueryInput {
                    settings,
                    ..QueryInput::new(&pending.request, pending.vector.as_deref(), pending.now)
                }
                .with_truncation(truncation)
                .with_recall(&pending.recall)
            })
            .collect();
        let lead = std::cell::RefCell::new(Lead {
            batcher: self,
            batch,
            started: Instant::now(),
            pass: None,
            answered: vec![false; batch.len()],
            failure: None,
        });
        let result = run(
            &inputs,
            BatchEvents {
                passes_done: &mut || lead.borrow_mut().release(),
                answered: &mut |at, answer| lead.borrow_mut().deliver(at, answer),
            },
        );
        // Whatever the batch did not answer reports why (the transaction's
        // error); `Lead`'s drop hands those answers out and the lead back.
        let mut lead = lead.into_inner();
        if let Err(error) = result {
            lead.failure = Some(error.to_string());
        }
    }
}

/// One batch being answered: which answers went out, and whether the lead
/// went back. Dropped at the batch's end, or by a panic in it, it answers
/// every request not yet answered and hands the lead back, so no caller waits
/// for a batch that will never answer.
struct Lead<'a> {
    batcher: &'a Batcher,
    batch: &'a [Pending],
    started: Instant,
    pass: Option<Duration>,
    answered: Vec<bool>,
    /// The batch's transaction error, which every request it did not answer
    /// reports; without one, those requests report `Unanswered` (a defect).
    failure: Option<String>,
}

impl Lead<'_> {
    /// The batch's passes are over: the next leader may start its own.
    fn release(&mut self) {
        if self.pass.is_none() {
            self.pass = Some(self.started.elapsed());
            self.batcher.lock().leading = false;
            self.batcher.changed.notify_all();
        }
    }

    /// Hands one answer to its caller (once). Under the queue's lock, so a
    /// caller that checks its slot and then waits cannot miss the wake-up.
    fn deliver(&mut self, at: usize, answer: crate::Result<Ranked>) {
        let (Some(pending), Some(seen)) = (self.batch.get(at), self.answered.get_mut(at)) else {
            return;
        };
        if std::mem::replace(seen, true) {
            return;
        }
        let timing = BatchTiming {
            queued: self.started.saturating_duration_since(pending.queued_at),
            pass: self.pass.unwrap_or_else(|| self.started.elapsed()),
            batch: self.started.elapsed(),
            batch_size: self.batch.len(),
        };
        let _state = self.batcher.lock();
        *pending
            .answer
            .answer
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((answer, timing));
        self.batcher.changed.notify_all();
    }
}

impl Drop for Lead<'_> {
    fn drop(&mut self) {
        for at in 0..self.batch.len() {
            if !self.answered[at] {
                let error = match &self.failure {
                    Some(text) => crate::Error::Batch(text.clone()),
                    None => crate::Error::Query(particles_query::Error::Unanswered),
                };
                self.deliver(at, Err(error));
            }
        }
        self.release();
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
        let run = |inputs: &[QueryInput<'_>], events: BatchEvents<'_>| -> crate::Result<()> {
            std::thread::sleep(Duration::from_millis(10));
            (events.passes_done)();
            std::thread::sleep(Duration::from_millis(10));
            for at in 0..inputs.len() {
                (events.answered)(at, Err(crate::Error::Batch("answered".into())));
            }
            Ok(())
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
                        let (answer, timing) = batcher.query(
                            &request,
                            None,
                            now,
                            &particles_model::RecallOptions::default(),
                            &settings,
                            &TruncationSettings {
                                min_gap: 0.0,
                                near_margin: 0.0,
                                near_count: 5,
                            },
                            &run,
                        );
                        assert!(answer.is_err(), "the fake run answers with an error");
                        assert!(
                            (1..=6).contains(&timing.batch_size),
                            "a batch holds the queued callers: {timing:?}"
                        );
                        assert!(timing.batch >= Duration::from_millis(20), "{timing:?}");
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

    fn truncation() -> TruncationSettings {
        TruncationSettings {
            min_gap: 0.0,
            near_margin: 0.0,
            near_count: 5,
        }
    }

    /// The lead passes on when a batch's passes end: a request that arrives
    /// during a pass has its own pass while the first batch is still being
    /// finished, and the leader's own request is its batch's last answer.
    #[test]
    fn the_next_pass_overlaps_the_previous_batchs_finish() {
        let batcher = Batcher::default();
        let now = Timestamp::parse("2026-06-01T00:00:00Z").expect("a timestamp");
        let request = QueryRequest::question("q").validate(now).expect("valid");
        let settings = RankSettings::default();
        let passes: Mutex<Vec<(Instant, Instant)>> = Mutex::new(Vec::new());
        // A 30 ms pass, then 300 ms of per-request work.
        let run = |inputs: &[QueryInput<'_>], events: BatchEvents<'_>| -> crate::Result<()> {
            let started = Instant::now();
            std::thread::sleep(Duration::from_millis(30));
            passes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((started, Instant::now()));
            (events.passes_done)();
            std::thread::sleep(Duration::from_millis(300));
            for at in 0..inputs.len() {
                (events.answered)(at, Err(crate::Error::Batch(format!("{at}"))));
            }
            Ok(())
        };
        let took: Mutex<Vec<Duration>> = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for delay in [0, 10] {
                let (batcher, request, settings, run, took) =
                    (&batcher, &request, &settings, &run, &took);
                scope.spawn(move || {
                    std::thread::sleep(Duration::from_millis(delay));
                    let started = Instant::now();
                    let (answer, timing) = batcher.query(
                        request,
                        None,
                        now,
                        &particles_model::RecallOptions::default(),
                        settings,
                        &truncation(),
                        run,
                    );
                    assert!(answer.is_err());
                    assert_eq!(timing.batch_size, 1, "{timing:?}");
                    assert!(timing.pass <= timing.batch, "{timing:?}");
                    took.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(started.elapsed());
                });
            }
        });
        let passes = passes.into_inner().unwrap_or_else(PoisonError::into_inner);
        assert_eq!(passes.len(), 2);
        // The second pass began after the first ended (passes never overlap)
        // and long before the first batch's 300 ms of finishing were over.
        assert!(passes[1].0 >= passes[0].1);
        assert!(
            passes[1].0.duration_since(passes[0].0) < Duration::from_millis(200),
            "the second pass waited for the first batch's finish"
        );
        // So the second caller waited about one pass, not a whole batch: ~360
        // ms in all, against ~660 ms behind the first batch.
        let took = took.into_inner().unwrap_or_else(PoisonError::into_inner);
        let slowest = took.iter().max().copied().unwrap_or_default();
        assert!(slowest < Duration::from_millis(550), "{took:?}");
    }

    /// In a batch, the leader's own request is answered last (its thread
    /// builds every answer), the others in their queue order.
    #[test]
    fn the_leaders_own_request_is_answered_last() {
        let batcher = Batcher::default();
        let now = Timestamp::parse("2026-06-01T00:00:00Z").expect("a timestamp");
        let settings = RankSettings::default();
        let order: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let first = AtomicBool::new(true);
        // The first batch (one request) holds its pass for 100 ms, so the
        // three callers behind it queue and form the second batch.
        let run = |inputs: &[QueryInput<'_>], events: BatchEvents<'_>| -> crate::Result<()> {
            if first.swap(false, Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(100));
            }
            (events.passes_done)();
            for (at, input) in inputs.iter().enumerate() {
                if inputs.len() > 1 {
                    order
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(input.request.question.clone().unwrap_or_default());
                }
                (events.answered)(at, Err(crate::Error::Batch("answered".into())));
            }
            Ok(())
        };
        std::thread::scope(|scope| {
            for (delay, question) in [(0, "a"), (20, "b"), (40, "c"), (60, "d")] {
                let (batcher, settings, run) = (&batcher, &settings, &run);
                scope.spawn(move || {
                    std::thread::sleep(Duration::from_millis(delay));
                    let request = QueryRequest::question(question)
                        .validate(now)
                        .expect("valid");
                    let (answer, _) = batcher.query(
                        &request,
                        None,
                        now,
                        &particles_model::RecallOptions::default(),
                        settings,
                        &truncation(),
                        run,
                    );
                    assert!(answer.is_err());
                });
            }
        });
        let order = order.into_inner().unwrap_or_else(PoisonError::into_inner);
        assert_eq!(
            order.len(),
            3,
            "one batch of the three late callers: {order:?}"
        );
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, ["b", "c", "d"]);
        // Whoever led answered itself last; the others kept their queue order.
        let leader = order.last().cloned().unwrap_or_default();
        let rest: Vec<&String> = order.iter().take(2).collect();
        let mut expected: Vec<&str> = ["b", "c", "d"]
            .into_iter()
            .filter(|q| **q != leader)
            .collect();
        expected.sort();
        assert_eq!(rest, expected);
    }

    /// A batch that panics (a defect) still answers its other callers, with
    /// an error, and hands the lead back: the batcher keeps serving.
    #[test]
    fn a_panicking_batch_answers_its_callers_and_frees_the_lead() {
        let batcher = Batcher::default();
        let now = Timestamp::parse("2026-06-01T00:00:00Z").expect("a timestamp");
        let request = QueryRequest::question("q").validate(now).expect("valid");
        let settings = RankSettings::default();
        let batches = std::sync::atomic::AtomicUsize::new(0);
        // The first batch holds its pass for 100 ms while two more callers
        // queue; their batch panics after its pass.
        let run = |inputs: &[QueryInput<'_>], events: BatchEvents<'_>| -> crate::Result<()> {
            match batches.fetch_add(1, Ordering::SeqCst) {
                0 => std::thread::sleep(Duration::from_millis(100)),
                1 => {
                    (events.passes_done)();
                    panic!("a defect in the batch");
                }
                _ => {}
            }
            (events.passes_done)();
            for at in 0..inputs.len() {
                (events.answered)(at, Err(crate::Error::Batch("answered".into())));
            }
            Ok(())
        };
        let texts: Mutex<Vec<String>> = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for delay in [0, 20, 40] {
                let (batcher, request, settings, run, texts) =
                    (&batcher, &request, &settings, &run, &texts);
                scope.spawn(move || {
                    std::thread::sleep(Duration::from_millis(delay));
                    let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        batcher.query(
                            request,
                            None,
                            now,
                            &particles_model::RecallOptions::default(),
                            settings,
                            &truncation(),
                            run,
                        )
                    }));
                    let text = match answered {
                        Ok((answer, _)) => answer.err().map(|e| e.to_string()).unwrap_or_default(),
                        Err(_) => "panicked".to_owned(),
                    };
                    texts
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(text);
                });
            }
        });
        let mut texts = texts.into_inner().unwrap_or_else(PoisonError::into_inner);
        texts.sort();
        assert_eq!(texts.len(), 3);
        assert!(texts.contains(&"panicked".to_owned()), "{texts:?}");
        assert!(
            texts.iter().any(|t| t.contains("particles-rs defect")),
            "the panicking batch's other caller was answered: {texts:?}"
        );
        // The lead came back: a later query is answered.
        let (answer, timing) = batcher.query(
            &request,
            None,
            now,
            &particles_model::RecallOptions::default(),
            &settings,
            &truncation(),
            &run,
        );
        assert!(answer.is_err_and(|e| e.to_string().contains("answered")));
        assert_eq!(timing.batch_size, 1);
    }
}
