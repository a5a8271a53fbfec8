//! Questions that arrive together, encoded together.
//!
//! A server encodes each request's question on the request's own thread. Under
//! load those encodings collide with the scan: the scan streams the candidate
//! vectors through the caches and evicts the model's dense weights (about
//! 42 MB), so each lone encoding streams them back from memory. Measured on AMD
//! EPYC (2 cores, the 100k store, `benchmark serve-load`): 2.8 ms a question
//! unloaded, 6-7.5 ms mean at 200-280 requests a second.
//!
//! [`SharedEncoder`] lets one caller at a time run the model (the leader),
//! over every question waiting when it starts (at most [`MAX_TOGETHER`]): the
//! weights are read once for all of them. A caller who arrives while a forward
//! pass runs waits for it to end, then either finds its vector or leads the
//! next pass. A lone question is encoded at once, on its caller's thread, as
//! [`Encoder::encode`] does. Should a pass panic (the model does not panic on
//! any text; this is the guard), each of its callers encodes its own text
//! alone, so one text can fail only its own request.
//!
//! Each question's vector is bit for bit the one it gets alone: texts in a pass
//! attend only to themselves, and the dense layers' matrix products give each
//! text's column the same bits whatever the other columns (faer's kernels keep
//! one reduction order per output element; the integration test
//! `together::encoded_together_each_vector_is_the_one_it_gets_alone` checks it
//! on every machine the suite runs on). So an answer never depends on what
//! else was asked at the same time.

use std::{
    collections::{HashMap, HashSet},
    panic::AssertUnwindSafe,
    sync::{Condvar, Mutex, MutexGuard, PoisonError},
};

use crate::Encoder;

/// The most questions one forward pass takes: more wait for the next pass.
pub const MAX_TOGETHER: usize = 32;

/// An [`Encoder`] shared by concurrent callers, whose questions are encoded
/// together (module doc).
pub struct SharedEncoder {
    encoder: Encoder,
    queue: Together,
}

impl SharedEncoder {
    /// Shares `encoder`.
    pub fn new(encoder: Encoder) -> SharedEncoder {
        SharedEncoder {
            encoder,
            queue: Together::default(),
        }
    }

    /// The unit-length embedding of `text`, encoded with the questions of
    /// other callers waiting at the same time; bit for bit
    /// [`Encoder::encode`]'s.
    pub fn encode(&self, text: &str) -> Vec<f32> {
        self.queue.run(
            text,
            |texts| self.encoder.encode_together(texts),
            |text| self.encoder.encode(text),
        )
    }

    /// The passes run so far and the questions they encoded.
    pub fn stats(&self) -> TogetherStats {
        self.queue.stats()
    }
}

/// How many forward passes a [`SharedEncoder`] ran, and for how many questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TogetherStats {
    /// Forward passes run.
    pub passes: u64,
    /// Questions encoded in them.
    pub encoded: u64,
}

/// The queue of questions and the lead of the pass, apart from the model so
/// that its tests can run without the model's files.
#[derive(Default)]
struct Together {
    state: Mutex<Queue>,
    passed: Condvar,
}

#[derive(Default)]
struct Queue {
    next_ticket: u64,
    waiting: Vec<(u64, String)>,
    done: HashMap<u64, Vec<f32>>,
    /// Tickets whose pass panicked: each caller encodes its own text alone.
    failed: HashSet<u64>,
    leading: bool,
    passes: u64,
    encoded: u64,
}

impl Together {
    /// `text`'s vector: from the pass of `together` that took it (this
    /// caller's, or another's), or from `alone` when that pass panicked.
    fn run(
        &self,
        text: &str,
        together: impl Fn(&[&str]) -> Vec<Vec<f32>>,
        alone: impl Fn(&str) -> Vec<f32>,
    ) -> Vec<f32> {
        let mut queue = self.lock();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.waiting.push((ticket, text.to_owned()));
        loop {
            if let Some(vector) = queue.done.remove(&ticket) {
                return vector;
            }
            if queue.failed.remove(&ticket) {
                // Its pass panicked: alone, a text that panics the model
                // fails only its own caller, never the questions beside it.
                drop(queue);
                return alone(text);
            }
            if queue.leading {
                queue = self
                    .passed
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            queue.leading = true;
            let take = queue.waiting.len().min(MAX_TOGETHER);
            let batch: Vec<(u64, String)> = queue.waiting.drain(..take).collect();
            drop(queue);
            let texts: Vec<&str> = batch.iter().map(|(_, text)| text.as_str()).collect();
            // A pass that panics is caught here, so its other questions are
            // not lost with it: each is marked failed and encoded alone by its
            // own caller (this one included), where only the text that panics
            // fails, and only its own request.
            let passed = std::panic::catch_unwind(AssertUnwindSafe(|| together(&texts)));
            queue = self.lock();
            match passed {
                Ok(vectors) if vectors.len() == batch.len() => {
                    queue.passes += 1;
                    queue.encoded += batch.len() as u64;
                    for ((ticket, _), vector) in batch.into_iter().zip(vectors) {
                        queue.done.insert(ticket, vector);
                    }
                }
                _ => queue
                    .failed
                    .extend(batch.into_iter().map(|(ticket, _)| ticket)),
            }
            // The vectors are in before the lead is given back, under one
            // lock: a caller who sees no pass running finds its ticket
            // waiting, done or failed.
            queue.leading = false;
            self.passed.notify_all();
        }
    }

    fn stats(&self) -> TogetherStats {
        let queue = self.lock();
        TogetherStats {
            passes: queue.passes,
            encoded: queue.encoded,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Barrier,
    };

    use super::*;

    /// A fake model: a text's "vector" is its length and first byte; a pass
    /// holding `boom` panics, as does `boom` alone.
    fn vector(text: &str) -> Vec<f32> {
        assert!(text != "boom", "the fake model panics on boom");
        vec![
            text.len() as f32,
            f32::from(text.bytes().next().unwrap_or(0)),
        ]
    }

    fn together(texts: &[&str]) -> Vec<Vec<f32>> {
        texts.iter().map(|text| vector(text)).collect()
    }

    /// Callers at once: each gets its own vector, every question is in
    /// exactly one pass, and passes hold several questions.
    #[test]
    fn callers_at_once_share_passes_and_get_their_own_vectors() {
        let queue = Arc::new(Together::default());
        let threads = 16;
        let start = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let (queue, start) = (Arc::clone(&queue), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    for round in 0..50 {
                        let text = "x".repeat(1 + (thread * 50 + round) % 97);
                        // A slow pass, so that callers pile up behind it.
                        let slow = |texts: &[&str]| {
                            std::thread::sleep(std::time::Duration::from_micros(200));
                            together(texts)
                        };
                        assert_eq!(queue.run(&text, slow, vector), vector(&text));
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let stats = queue.stats();
        assert_eq!(stats.encoded, 16 * 50);
        assert!(stats.passes < stats.encoded, "{stats:?}");
        let queue = queue.lock();
        assert!(queue.waiting.is_empty() && queue.done.is_empty() && !queue.leading);
    }

    /// A pass that panics fails only the text that panics: the other
    /// questions in it, its leader's included, are encoded alone, and the
    /// queue goes on.
    #[test]
    fn a_panicking_pass_fails_only_the_text_that_panics() {
        let queue = Arc::new(Together::default());
        let entered = Arc::new(Barrier::new(2));
        let passes = Arc::new(AtomicUsize::new(0));
        // The leader's pass waits until the others are queued behind it, so
        // the second pass holds both `boom` and `fine`.
        let first = {
            let (queue, entered, passes) = (
                Arc::clone(&queue),
                Arc::clone(&entered),
                Arc::clone(&passes),
            );
            std::thread::spawn(move || {
                queue.run(
                    "first",
                    |texts| {
                        if passes.fetch_add(1, Ordering::SeqCst) == 0 {
                            entered.wait();
                            std::thread::sleep(std::time::Duration::from_millis(100));
                        }
                        together(texts)
                    },
                    vector,
                )
            })
        };
        entered.wait();
        let boom = {
            let queue = Arc::clone(&queue);
            std::thread::spawn(move || queue.run("boom", together, vector))
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        let fine = {
            let queue = Arc::clone(&queue);
            std::thread::spawn(move || queue.run("fine", together, vector))
        };
        assert_eq!(first.join().unwrap(), vector("first"));
        assert_eq!(fine.join().unwrap(), vector("fine"));
        assert!(
            boom.join().is_err(),
            "the text that panics fails its caller"
        );
        // The queue still works, and nothing is left behind.
        assert_eq!(queue.run("after", together, vector), vector("after"));
        let state = queue.lock();
        assert!(state.waiting.is_empty() && state.done.is_empty() && !state.leading);
        assert!(state.failed.is_empty());
    }
}
