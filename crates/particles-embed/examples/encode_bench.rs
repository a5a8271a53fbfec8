//! Measures the encoder: `Encoder::load`, one short question (p50/p90 over 200
//! runs), one 256-word-piece text (p50), and texts per second over ~2000 demo
//! sentences (the `content` of `examples/coins.jsonl`, cycled).
//!
//! ```sh
//! nice -n 10 cargo run --release -p particles-embed --example encode_bench [-- MODEL_DIR]
//! ```
//!
//! On a shared machine wall-clock figures move with the load, so each phase also
//! reports the CPU time it used (`/proc/thread-self/schedstat`, nanoseconds on a
//! CPU, and the process's ticks in `/proc/self/stat` for the batch), which the
//! load does not inflate.
//!
//! Timings live here, never in tests. The corpus is fixed (no randomness): the demo
//! file's sentences in file order, cycled until there are 2000.

use std::time::{Duration, Instant};

const QUESTION: &str = "how are old coins graded?";
const QUESTION_RUNS: usize = 200;
const LONG_RUNS: usize = 30;
const BATCH_TEXTS: usize = 2000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = particles_embed::model_dir(
        std::env::args_os()
            .nth(1)
            .as_deref()
            .map(std::path::Path::new),
    );
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/coins.jsonl");
    let sentences: Vec<String> = std::fs::read_to_string(&demo)?
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| -> Result<String, Box<dyn std::error::Error>> {
            let row: serde_json::Value = serde_json::from_str(line)?;
            Ok(row["content"]
                .as_str()
                .ok_or("a line without content")?
                .to_owned())
        })
        .collect::<Result<_, _>>()?;

    // The first load reads the files from the page cache like a fresh process
    // would after the first run; the median of five is the figure reported.
    let mut loads = Vec::new();
    let mut encoder = None;
    let cpu_start = process_cpu();
    for _ in 0..5 {
        let start = Instant::now();
        encoder = Some(particles_embed::Encoder::load(&dir)?);
        loads.push(start.elapsed());
    }
    let load_cpu = (process_cpu() - cpu_start) / 5.0;
    let encoder = encoder.ok_or("no load ran")?;

    let mut question = Vec::with_capacity(QUESTION_RUNS);
    for _ in 0..5 {
        std::hint::black_box(encoder.encode(QUESTION));
    }
    let cpu_start = thread_cpu();
    for _ in 0..QUESTION_RUNS {
        let start = Instant::now();
        std::hint::black_box(encoder.encode(QUESTION));
        question.push(start.elapsed());
    }
    let question_cpu = (thread_cpu() - cpu_start) / QUESTION_RUNS as f64;

    // A text long enough to be cut at 256 word pieces.
    let mut long_text = String::new();
    for sentence in sentences.iter().cycle() {
        if encoder.token_ids(&long_text).len() >= particles_embed::MAX_WORD_PIECES {
            break;
        }
        long_text.push_str(sentence);
        long_text.push(' ');
    }
    let pieces = encoder.token_ids(&long_text).len();
    let mut long = Vec::with_capacity(LONG_RUNS);
    std::hint::black_box(encoder.encode(&long_text));
    let cpu_start = thread_cpu();
    for _ in 0..LONG_RUNS {
        let start = Instant::now();
        std::hint::black_box(encoder.encode(&long_text));
        long.push(start.elapsed());
    }
    let long_cpu = (thread_cpu() - cpu_start) / LONG_RUNS as f64;

    let texts: Vec<&str> = sentences
        .iter()
        .cycle()
        .take(BATCH_TEXTS)
        .map(String::as_str)
        .collect();
    let cpu_start = process_cpu();
    let start = Instant::now();
    let vectors = encode_all(&encoder, &texts);
    let batch = start.elapsed();
    let batch_cpu = process_cpu() - cpu_start;
    assert_eq!(vectors.len(), texts.len());

    println!("cpu: {}", cpu_name());
    println!(
        "loadavg: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    println!(
        "load: median {:.1} ms of 5 (first {:.1} ms); cpu {:.1} ms per load",
        ms(median(&mut loads)),
        ms(loads_first(&loads)),
        load_cpu * 1e3
    );
    println!(
        "short question ({QUESTION:?}, {} pieces): p50 {:.2} ms, p90 {:.2} ms over {QUESTION_RUNS} runs; cpu {:.2} ms per question",
        encoder.token_ids(QUESTION).len(),
        ms(percentile(&mut question, 0.5)),
        ms(percentile(&mut question, 0.9)),
        question_cpu * 1e3,
    );
    println!(
        "long text ({pieces} pieces): p50 {:.2} ms over {LONG_RUNS} runs; cpu {:.2} ms per text",
        ms(percentile(&mut long, 0.5)),
        long_cpu * 1e3,
    );
    println!(
        "batch: {} texts in {:.2} s, {:.0} texts/s; cpu {:.2} s in all threads",
        texts.len(),
        batch.as_secs_f64(),
        texts.len() as f64 / batch.as_secs_f64(),
        batch_cpu,
    );
    Ok(())
}

/// Every text's vector, the way the library offers for many texts.
fn encode_all(encoder: &particles_embed::Encoder, texts: &[&str]) -> Vec<Vec<f32>> {
    encoder.encode_batch(texts)
}

fn loads_first(loads: &[Duration]) -> Duration {
    loads.first().copied().unwrap_or_default()
}

fn median(samples: &mut [Duration]) -> Duration {
    percentile(samples, 0.5)
}

fn percentile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort();
    let index = ((samples.len() - 1) as f64 * q).round() as usize;
    samples[index]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// Seconds this thread has run on a CPU (the first field of schedstat, in ns).
fn thread_cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|stat| stat.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns * 1e-9)
}

/// Seconds of user and system time of the whole process (utime + stime, in the
/// kernel's USER_HZ = 100 ticks per second).
fn process_cpu() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| {
            // Fields after the command name, which is in parentheses.
            let rest = stat.rsplit_once(')')?.1;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let utime: f64 = fields.get(11)?.parse().ok()?;
            let stime: f64 = fields.get(12)?.parse().ok()?;
            Some((utime + stime) / 100.0)
        })
        .unwrap_or(f64::NAN)
}

fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split(':').nth(1))
                .map(|name| name.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}
