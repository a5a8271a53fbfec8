//! Questions encoded together get, bit for bit, the vectors they get alone:
//! in one pass of any mix (the reference fixture's texts, short and 256-piece
//! long, empty and non-ASCII), and through a [`SharedEncoder`] that several
//! threads call at once. Needs the model files, as `parity` does.

use std::sync::{Arc, Barrier};

use particles_embed::SharedEncoder;

fn bits(vector: &[f32]) -> Vec<u32> {
    vector.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn encoded_together_each_vector_is_the_one_it_gets_alone() {
    let Some(encoder) = crate::parity::encoder() else {
        return;
    };
    let cases = crate::parity::cases();
    let texts: Vec<&str> = cases.iter().map(|case| case.text.as_str()).collect();
    let alone: Vec<Vec<u32>> = texts
        .iter()
        .map(|text| bits(&encoder.encode(text)))
        .collect();
    // Every window of the fixture, from one text to all of them, starting at
    // each of a few offsets: other neighbours, other pass shapes.
    let mut checked = 0;
    for len in 1..=texts.len() {
        for start in [0, 1, 5] {
            let Some(window) = texts.get(start..start + len) else {
                continue;
            };
            let together = encoder.encode_together(window);
            assert_eq!(together.len(), len);
            for (at, vector) in together.iter().enumerate() {
                assert_eq!(
                    bits(vector),
                    alone[start + at],
                    "text {} encoded with {len} from {start} differs from alone",
                    start + at
                );
                checked += 1;
            }
        }
    }
    eprintln!("{checked} vectors encoded together, each the one it gets alone");
}

#[test]
fn a_shared_encoder_called_at_once_gives_each_caller_its_own_vector() {
    let Some(encoder) = crate::parity::encoder() else {
        return;
    };
    let cases = crate::parity::cases();
    let texts: Arc<Vec<String>> = Arc::new(cases.into_iter().map(|case| case.text).collect());
    let alone: Arc<Vec<Vec<u32>>> = Arc::new(
        texts
            .iter()
            .map(|text| bits(&encoder.encode(text)))
            .collect(),
    );
    let shared = Arc::new(SharedEncoder::new(encoder));
    let threads = 8;
    let rounds = 6;
    let start = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|thread| {
            let (texts, alone, shared, start) = (
                Arc::clone(&texts),
                Arc::clone(&alone),
                Arc::clone(&shared),
                Arc::clone(&start),
            );
            std::thread::spawn(move || {
                start.wait();
                for round in 0..rounds {
                    let at = (thread * 7 + round * 3) % texts.len();
                    assert_eq!(
                        bits(&shared.encode(&texts[at])),
                        alone[at],
                        "thread {thread} round {round}: text {at} is not the one it gets alone"
                    );
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("a caller failed");
    }
    let stats = shared.stats();
    assert_eq!(
        stats.encoded,
        (threads * rounds) as u64,
        "every question once"
    );
    assert!(stats.passes >= 1 && stats.passes <= stats.encoded);
    eprintln!(
        "{} questions in {} passes ({:.1} a pass)",
        stats.encoded,
        stats.passes,
        stats.encoded as f64 / stats.passes as f64
    );
}
