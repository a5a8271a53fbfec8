//! Differential fuzzing of a decoder against its Python counterpart, in batches.
//!
//! A [`Target`] names a decoder, a proptest strategy of grammar-aware inputs, the
//! committed regression inputs and a `check` that compares our decoder's result
//! on one input with the reference's verdict on it. [`run`] keeps one Python
//! process (`tests/reference/fuzz_oracle.py DECODER`) for the whole run and sends
//! it inputs a batch at a time (one JSON line in, one JSON line of verdicts out),
//! so the oracle costs microseconds per input, not a process start.
//!
//! Every run checks the hand-picked corpus, every committed regression and
//! `PROPTEST_CASES` (default 256) generated inputs from a fixed seed: the short
//! mode of `cargo test`. With `PARTICLES_FUZZ_SECONDS` set (what `cargo xtask
//! fuzz --minutes N` sets) it then keeps generating batches of
//! `PARTICLES_FUZZ_BATCH` (default 1000) inputs from fresh seeds until the time
//! is up: the long mode. A disagreement is shrunk (proptest's value tree,
//! asking the oracle about each smaller candidate) and reported with its seed
//! and a line ready to commit as a regression. `PARTICLES_FUZZ_SEED` replaces the
//! fixed seed (so `PARTICLES_FUZZ_SEED=S PROPTEST_CASES=N` replays a reported
//! batch), and `PARTICLES_FUZZ_REPORT=DIR` writes `DIR/<decoder>.json` with the
//! figures.
//!
//! Regression files are JSON lines, `{"note": "why it is here", "input": ...}`.

use std::{
    fmt::Debug,
    io::{BufRead, BufReader, Write},
    panic::{catch_unwind, AssertUnwindSafe},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    time::{Duration, Instant, SystemTime},
};

use proptest::{
    strategy::{Strategy, ValueTree},
    test_runner::{Config, RngAlgorithm, TestRng, TestRunner},
};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::{json, Value};

/// How a `check` marks a difference that is documented in the decoder (and so
/// counted, reported, and not failed): its message starts with this.
pub const DOCUMENTED: &str = "documented: ";

/// Oracle calls spent shrinking one disagreement.
const SHRINK_BUDGET: usize = 400;
/// Disagreements shrunk and reported in full per run; the rest are counted.
const REPORTED: usize = 20;

/// One decoder under differential test.
pub struct Target<S: Strategy, F> {
    /// The oracle's entry point in `fuzz_oracle.py`, the report's label.
    pub decoder: &'static str,
    /// Grammar-aware inputs.
    pub strategy: S,
    /// Hand-picked inputs checked on every run.
    pub corpus: Vec<S::Value>,
    /// The committed regression file's text (JSON lines).
    pub regressions: &'static str,
    /// Our decoder on one input against the reference's verdict on it: `Err`
    /// says how they differ (starting with [`DOCUMENTED`] for a known, documented
    /// difference).
    pub check: F,
}

/// The reference's process for one decoder.
pub struct Oracle {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    decoder: &'static str,
}

impl Oracle {
    /// Starts `fuzz_oracle.py DECODER` under the reference's interpreter.
    ///
    /// # Panics
    ///
    /// When the interpreter cannot be started.
    pub fn start(python: &Path, decoder: &'static str) -> Oracle {
        let script = crate::workspace_root().join("tests/reference/fuzz_oracle.py");
        let mut child = Command::new(python)
            .arg(&script)
            .arg(decoder)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()));
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        Oracle {
            child,
            stdin,
            stdout,
            decoder,
        }
    }

    /// The reference's verdicts on `inputs`, in order.
    ///
    /// # Panics
    ///
    /// When the oracle dies or answers something else than one verdict per input.
    pub fn verdicts<T: Serialize>(&mut self, inputs: &[T]) -> Vec<Value> {
        let mut line = serde_json::to_string(inputs).expect("inputs serialise");
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .unwrap_or_else(|e| panic!("the {} oracle stopped reading: {e}", self.decoder));
        let mut answer = String::new();
        let read = self
            .stdout
            .read_line(&mut answer)
            .unwrap_or_else(|e| panic!("the {} oracle's answer: {e}", self.decoder));
        assert!(read > 0, "the {} oracle exited (see stderr)", self.decoder);
        let verdicts: Vec<Value> = serde_json::from_str(&answer)
            .unwrap_or_else(|e| panic!("the {} oracle's answer is not JSON: {e}", self.decoder));
        assert_eq!(verdicts.len(), inputs.len(), "one verdict per input");
        verdicts
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        // The oracle keeps no state worth a clean exit.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Knobs read from the environment, so a plain `cargo test` is the short mode.
struct Settings {
    seed: u64,
    cases: usize,
    long: Option<Duration>,
    batch: usize,
    report: Option<PathBuf>,
}

impl Settings {
    fn from_env(decoder: &str) -> Settings {
        let number = |name: &str| {
            std::env::var(name).ok().map(|text| {
                let text = text.trim();
                text.strip_prefix("0x")
                    .map_or_else(|| text.parse(), |hex| u64::from_str_radix(hex, 16))
                    .unwrap_or_else(|e| panic!("{name}={text:?}: {e}"))
            })
        };
        Settings {
            seed: number("PARTICLES_FUZZ_SEED").unwrap_or_else(|| fnv1a(decoder.as_bytes())),
            cases: Config::default().cases as usize,
            long: number("PARTICLES_FUZZ_SECONDS").map(Duration::from_secs),
            batch: number("PARTICLES_FUZZ_BATCH").map_or(1000, |n| n.max(1) as usize),
            report: std::env::var_os("PARTICLES_FUZZ_REPORT").map(PathBuf::from),
        }
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn runner(seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    for (at, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&splitmix(seed.wrapping_add(at as u64)).to_le_bytes());
    }
    TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// One disagreement as reported.
struct Found {
    seed: Option<u64>,
    why: String,
    input: Value,
    original: Option<Value>,
}

/// What a run has seen so far.
#[derive(Default)]
struct Tally {
    tried: usize,
    rounds: usize,
    disagreements: usize,
    /// The disagreements reported in full (at most [`REPORTED`] generated ones).
    found: Vec<Found>,
    documented: usize,
    documented_examples: Vec<Value>,
}

impl Tally {
    /// Counts a documented difference, keeping the first few as examples.
    fn note_documented<T: Serialize>(&mut self, input: &T, why: &str) {
        self.documented += 1;
        if self.documented_examples.len() < 5 {
            self.documented_examples.push(json!({
                "why": why,
                "input": serde_json::to_value(input).expect("inputs serialise"),
            }));
        }
    }
}

/// Runs `target` (the short mode, and the long mode when asked for) and fails
/// with every disagreement found. Skips, saying why, when the reference is not
/// installed (see [`crate::reference_python`]).
///
/// # Panics
///
/// When our decoder and the reference disagree on any input.
pub fn run<S, F>(target: Target<S, F>)
where
    S: Strategy,
    S::Value: Serialize + DeserializeOwned + Debug + Clone,
    F: Fn(&S::Value, &Value) -> Result<(), String>,
{
    let Some(python) = crate::reference_python() else {
        return;
    };
    let settings = Settings::from_env(target.decoder);
    let started = Instant::now();
    let mut oracle = Oracle::start(&python, target.decoder);
    let mut tally = Tally::default();

    // The fixed inputs: the corpus and the committed regressions.
    let fixed = fixed_inputs(&target);
    let verdicts = oracle.verdicts(&fixed);
    tally.tried += fixed.len();
    for (input, verdict) in fixed.iter().zip(&verdicts) {
        if let Err(why) = checked(&target.check, input, verdict) {
            if why.starts_with(DOCUMENTED) {
                tally.note_documented(input, &why);
                continue;
            }
            tally.disagreements += 1;
            tally.found.push(Found {
                seed: None,
                why,
                input: serde_json::to_value(input).expect("inputs serialise"),
                original: None,
            });
        }
    }

    // Generated batches: the fixed seed first, then fresh ones while time remains.
    let mut seed = settings.seed;
    let mut count = settings.cases;
    loop {
        generated_batch(&target, &mut oracle, &mut tally, seed, count);
        match settings.long {
            Some(budget) if started.elapsed() < budget => {
                seed = fresh_seed(tally.rounds);
                count = settings.batch;
            }
            _ => break,
        }
    }

    let Tally {
        tried,
        rounds,
        disagreements,
        documented,
        ..
    } = tally;
    let seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "fuzz {}: {tried} inputs in {rounds} rounds ({seconds:.0} s), {disagreements} disagreements, {documented} documented differences",
        target.decoder
    );
    if let Some(dir) = &settings.report {
        write_report(dir, target.decoder, settings.seed, &tally, seconds);
    }
    if disagreements > 0 {
        let listing: Vec<String> = tally.found.iter().map(Found::listing).collect();
        panic!(
            "{} disagreements with the reference on {} of {tried} inputs; the first {}:\n{}",
            target.decoder,
            disagreements,
            tally.found.len(),
            listing.join("\n")
        );
    }
}

/// The corpus, then the committed regressions' inputs.
fn fixed_inputs<S, F>(target: &Target<S, F>) -> Vec<S::Value>
where
    S: Strategy,
    S::Value: DeserializeOwned + Clone,
{
    let mut fixed = target.corpus.clone();
    for (number, line) in target.regressions.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{} regression line {}: {e}", target.decoder, number + 1));
        fixed.push(
            serde_json::from_value(entry["input"].clone()).unwrap_or_else(|e| {
                panic!(
                    "{} regression line {}: the input does not read: {e}",
                    target.decoder,
                    number + 1
                )
            }),
        );
    }
    fixed
}

/// One round: `count` inputs generated from `seed`, checked against the
/// oracle's verdicts; each disagreement shrunk, while fewer than [`REPORTED`]
/// are found.
fn generated_batch<S, F>(
    target: &Target<S, F>,
    oracle: &mut Oracle,
    tally: &mut Tally,
    seed: u64,
    count: usize,
) where
    S: Strategy,
    S::Value: Serialize + Debug + Clone,
    F: Fn(&S::Value, &Value) -> Result<(), String>,
{
    let mut runner = runner(seed);
    let trees: Vec<S::Tree> = (0..count)
        .filter_map(|_| target.strategy.new_tree(&mut runner).ok())
        .collect();
    let inputs: Vec<S::Value> = trees.iter().map(ValueTree::current).collect();
    let verdicts = oracle.verdicts(&inputs);
    tally.tried += inputs.len();
    tally.rounds += 1;
    for ((tree, input), verdict) in trees.into_iter().zip(&inputs).zip(&verdicts) {
        let Err(why) = checked(&target.check, input, verdict) else {
            continue;
        };
        if why.starts_with(DOCUMENTED) {
            tally.note_documented(input, &why);
            continue;
        }
        tally.disagreements += 1;
        if tally.found.len() >= REPORTED {
            continue;
        }
        let (shrunk, why) = shrink(tree, why, oracle, &target.check);
        let original = serde_json::to_value(input).expect("inputs serialise");
        let input = serde_json::to_value(&shrunk).expect("inputs serialise");
        tally.found.push(Found {
            seed: Some(seed),
            why,
            original: (original != input).then_some(original),
            input,
        });
    }
}

/// `DIR/<decoder>.json`: the run's figures and what it found.
fn write_report(dir: &Path, decoder: &str, first_seed: u64, tally: &Tally, seconds: f64) {
    let report = json!({
        "decoder": decoder,
        "tried": tally.tried,
        "rounds": tally.rounds,
        "seconds": seconds,
        "first_seed": format!("{:#x}", first_seed),
        "disagreements": tally.disagreements,
        "documented": tally.documented,
        "documented_examples": tally.documented_examples,
        "found": tally.found.iter().map(|f| json!({
            "seed": f.seed.map(|s| format!("{s:#x}")),
            "why": f.why,
            "input": f.input,
            "original": f.original,
        })).collect::<Vec<_>>(),
    });
    std::fs::create_dir_all(dir).expect("report directory");
    std::fs::write(
        dir.join(format!("{decoder}.json")),
        serde_json::to_string_pretty(&report).expect("report serialises"),
    )
    .expect("write the report");
}

impl Found {
    /// The disagreement as the failure lists it, with a line ready to commit.
    fn listing(&self) -> String {
        format!(
            "- {} (seed {})\n  {}\n  regression line: {}",
            self.why,
            self.seed
                .map_or("committed".to_owned(), |s| format!("{s:#x}")),
            self.original
                .as_ref()
                .map_or(String::new(), |o| format!("shrunk from {o}")),
            json!({"note": "", "input": self.input})
        )
    }
}

/// A seed nobody chose: the clock's nanoseconds mixed with the round number.
fn fresh_seed(round: usize) -> u64 {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos() as u64);
    splitmix(nanos ^ (round as u64).rotate_left(32))
}

/// `check`, with a panic in our decoder reported as a disagreement.
fn checked<T, F>(check: &F, input: &T, verdict: &Value) -> Result<(), String>
where
    F: Fn(&T, &Value) -> Result<(), String>,
{
    catch_unwind(AssertUnwindSafe(|| check(input, verdict))).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        Err(format!("our decoder panicked: {message}"))
    })
}

/// proptest's shrinking loop with the oracle in it: simplify while the input
/// still disagrees, complicate back when it stops, within a budget of calls.
fn shrink<T, F>(
    mut tree: impl ValueTree<Value = T>,
    why: String,
    oracle: &mut Oracle,
    check: &F,
) -> (T, String)
where
    T: Serialize + Debug + Clone,
    F: Fn(&T, &Value) -> Result<(), String>,
{
    let mut best = (tree.current(), why);
    if !tree.simplify() {
        return best;
    }
    for _ in 0..SHRINK_BUDGET {
        let candidate = tree.current();
        let verdict = oracle.verdicts(std::slice::from_ref(&candidate));
        let next = match checked(check, &candidate, &verdict[0]) {
            Err(why) if !why.starts_with(DOCUMENTED) => {
                best = (candidate, why);
                tree.simplify()
            }
            _ => tree.complicate(),
        };
        if !next {
            break;
        }
    }
    best
}

/// Grammar helpers shared by the targets' strategies.
pub mod grammar {
    use proptest::{
        collection::vec,
        prelude::*,
        sample::{select, Index},
    };

    /// One of `options`, as an owned string.
    pub fn pick(options: &'static [&'static str]) -> BoxedStrategy<String> {
        select(options).prop_map(str::to_owned).boxed()
    }

    /// `base` with one to three random edits (insert, delete, replace a character,
    /// or cut the text short), the inserted pieces drawn from `alphabet`: the
    /// near-misses around valid inputs.
    pub fn mutated(
        base: impl Strategy<Value = String> + 'static,
        alphabet: &'static [&'static str],
    ) -> BoxedStrategy<String> {
        (base, vec((any::<Index>(), 0u8..4, select(alphabet)), 1..4))
            .prop_map(|(text, edits)| {
                let mut text = text;
                for (at, kind, piece) in edits {
                    let boundaries: Vec<usize> = text
                        .char_indices()
                        .map(|(i, _)| i)
                        .chain([text.len()])
                        .collect();
                    let at = boundaries[at.index(boundaries.len())];
                    let next = boundaries
                        .iter()
                        .copied()
                        .find(|&b| b > at)
                        .unwrap_or(text.len());
                    match kind {
                        0 => text.insert_str(at, piece),
                        1 => text.replace_range(at..next, ""),
                        2 => text.replace_range(at..next, piece),
                        _ => text.truncate(at),
                    }
                }
                text
            })
            .boxed()
    }

    /// Concatenation of the parts' strings.
    pub fn concat(parts: Vec<BoxedStrategy<String>>) -> BoxedStrategy<String> {
        parts.prop_map(|pieces| pieces.concat()).boxed()
    }
}
