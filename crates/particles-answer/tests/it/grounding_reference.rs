//! The grounding parser against the reference's own `parse_grounded`: a seeded,
//! grammar-aware generator of composer replies, one Python process per batch, every
//! field compared. Disagreements found along the way stay here as regression cases.

use particles_answer::{ground_answer, Handles};
use serde_json::{json, Value};

use crate::support::{reference_python, run_reference};

/// The fixed handle table: two ids sharing their first eight hex characters (so
/// both get the long form), upper-case hex, a non-UUID id.
const IDS: &[&str] = &[
    "1a2b3c4d-0000-4000-8000-000000000001",
    "5e6f7a8b-1111-4111-8111-111111111112",
    "5e6f7a8b-2222-4222-8222-222222222223",
    "ABCDEF01-3333-4333-8333-333333333334",
    "deadbeef-4444-4444-8444-444444444445",
    "narrative-7",
];

/// Replies the generator once disagreed on, or that pin a quirk; always run.
const REGRESSIONS: &[&str] = &[
    "Paris is the capital of France [p-00000000]. Berlin is a capital too [p-00000001, p-deadbeef]. \
     So both are capitals [inference]. Trailing remark",
    "\u{130}nference tag [\u{130}nference]. Kelvin [bac\u{212a}ground].",
    "- one [p-1a2b3c4d]\n- two [P-1A2B3C4D]\n\n1. three [p:abcdef01]\n## four [inference][background]",
    "A [p-1a2b3c4d]. [p-deadbeef] [inference]. B",
    "Ⓐ [p-1a2b3c4d]. \u{93e} [inference]. ٣ [background]",
    "x\u{1c}[ p-1a2b3c4d ,\u{85}p-deadbeef ]\u{1f}.”) y",
    "[p-1a2b3c4d](http://x) [sic] [p-] [deadbeef-4444-4444-8444-444444444445]",
    "**bold** [deadbeef44444444844444444444444 5] __u__ [DEADBEEF-4444-4444-8444-444444444445].",
    "Narrative [p-narrative7], short [p-5e6f7a8b], long [p-5e6f7a8b11114111811111111111111 2].",
    "",
    "   \n  ",
    "only tags [inference]",
];

#[test]
fn grounding_matches_the_reference() {
    let Some(python) = reference_python() else {
        return;
    };
    let mut replies: Vec<String> = REGRESSIONS
        .iter()
        .map(|reply| (*reply).to_owned())
        .collect();
    let mut rng = SplitMix(0x5eed_0f91_0ded);
    replies.extend((0..400).map(|_| generate_reply(&mut rng)));

    let reference = run_reference(
        &python,
        "grounding.py",
        &json!({"ids": IDS, "replies": replies}),
    );
    let handles = Handles::from_ids(IDS.iter().copied());
    let ours_table: Vec<Value> = handles
        .iter()
        .map(|(id, handle)| json!([id, handle]))
        .collect();
    assert_eq!(
        Value::Array(ours_table),
        reference["handles"],
        "handle tables differ"
    );

    let results = reference["results"].as_array().expect("results are a list");
    let mut failures = Vec::new();
    for (reply, expected) in replies.iter().zip(results) {
        let (answer, attribution) = ground_answer(reply, &handles);
        let ours = json!({"answer": answer, "sentences": attribution.sentences});
        if &ours != expected {
            failures.push(format!(
                "reply {reply:?}\n  ours      {ours}\n  reference {expected}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} replies differ; first ones:\n{}",
        failures.len(),
        replies.len(),
        failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    let mut kinds = std::collections::BTreeMap::new();
    let mut invalid = 0;
    for result in results {
        for sentence in result["sentences"].as_array().into_iter().flatten() {
            *kinds
                .entry(sentence["kind"].as_str().unwrap_or("?").to_owned())
                .or_insert(0) += 1;
            invalid += sentence["invalid_citations"].as_array().map_or(0, Vec::len);
        }
    }
    // The generator must keep reaching every label, or the comparison proves little.
    assert_eq!(kinds.len(), 4, "sentence kinds reached: {kinds:?}");
    eprintln!(
        "grounding: {} replies identical to the reference (sentences {kinds:?}, {invalid} invalid citations)",
        replies.len()
    );
}

/// SplitMix64: a seeded, dependency-free source of test cases.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const WORDS: &[&str] = &[
    "gold",
    "is",
    "soft",
    "The",
    "coin",
    "was",
    "graded",
    "MS-65",
    "café",
    "naïve",
    "日本",
    "٣",
    "Ⓐ",
    "\u{93e}",
    "ſ",
    "K",
    "ẞ",
    "x_y",
    "__",
    "**",
    "*",
    "-",
    "1.",
    "(see",
    "above)",
    "\"quoted\"",
    "it's",
    "—",
    "🙂",
    "e.g.",
    "[sic]",
    "[note]",
    "p-",
    "[",
    "]",
    "\u{a0}",
    "\u{1c}",
    "\u{85}",
    "\u{2028}",
    ",",
    ";",
    ":",
    "İnference",
    "NO_RELEVANT_KNOWLEDGE",
];

const MARKERS: &[&str] = &[
    "- ", "* ", "+ ", "• ", "1. ", "12) ", "123. ", "1234. ", "# ", "### ", "###### ", "####### ",
    "> ", ">", "-", "  - ", "\t* ", "٣. ",
];

const PUNCT: &[&str] = &[
    "", "", ".", "!", "?", "...", ".”", ":", ";)", ".]", ".\"", "?!’", ",",
];

const SEPARATORS: &[&str] = &[" ", " ", "\n", "\n\n", "", "  \n", "\r\n", "\u{2029}"];

fn citation_token(rng: &mut SplitMix) -> String {
    let id = IDS[rng.below(IDS.len())];
    let handles = Handles::from_ids(IDS.iter().copied());
    let handle = handles.get(id).expect("every id has a handle").to_owned();
    let bare: String = id.chars().filter(|&ch| ch != '-').collect();
    match rng.below(14) {
        0..=3 => handle,
        4 => handle.to_uppercase(),
        5 => handle.replacen("p-", "p:", 1),
        6 => id.to_owned(),
        7 => id.to_uppercase(),
        8 => format!("p-{bare}"),
        9 => format!("p-{id}"),
        10 => rng
            .pick(&["p-deadbeef", "p-00000000", "p-日本", "p-x)", "P:zz"])
            .to_owned(),
        11 => rng
            .pick(&["deadbeef-0000-0000-0000-000000000000", "12345678-abcd"])
            .to_owned(),
        12 => format!("{handle}x"),
        _ => rng.pick(&["p-", "p-1a2b", "1a2b3c4d"]).to_owned(),
    }
}

fn tag(rng: &mut SplitMix) -> String {
    let pad = |rng: &mut SplitMix| rng.pick(&["", "", " ", "  ", "\n", "\u{a0}"]).to_owned();
    let body = match rng.below(10) {
        0 => rng
            .pick(&[
                "inference",
                "Inference",
                "INFERENCE",
                "\u{130}nference",
                "\u{131}nference",
            ])
            .to_owned(),
        1 => rng
            .pick(&[
                "background",
                "BACKGROUND",
                "bac\u{212a}ground",
                "back ground",
            ])
            .to_owned(),
        2 => rng
            .pick(&[
                "inference, p-1a2b3c4d",
                "sic",
                "",
                "unattributed",
                "p-1a2b3c4d p-deadbeef",
            ])
            .to_owned(),
        _ => {
            let count = 1 + rng.below(3);
            let mut tokens = Vec::new();
            for _ in 0..count {
                tokens.push(citation_token(rng));
            }
            let mut body = tokens[0].clone();
            for token in &tokens[1..] {
                body.push_str(&pad(rng));
                body.push(',');
                body.push_str(&pad(rng));
                body.push_str(token);
            }
            body
        }
    };
    let link = if rng.chance(5) {
        "(http://example.com)"
    } else {
        ""
    };
    format!("[{}{body}{}]{link}", pad(rng), pad(rng))
}

fn generate_reply(rng: &mut SplitMix) -> String {
    let mut reply = String::new();
    let units = rng.below(8);
    for _ in 0..units {
        if rng.chance(30) {
            reply.push_str(rng.pick(MARKERS));
        }
        let words = rng.below(7);
        for idx in 0..words {
            if idx > 0 {
                reply.push(' ');
            }
            reply.push_str(rng.pick(WORDS));
        }
        if rng.chance(80) {
            let tags = 1 + rng.below(3);
            for idx in 0..tags {
                if idx > 0 {
                    reply.push_str(rng.pick(&["", " ", "\n", ". "]));
                } else if words > 0 && rng.chance(70) {
                    reply.push(' ');
                }
                reply.push_str(&tag(rng));
            }
        }
        reply.push_str(rng.pick(PUNCT));
        reply.push_str(rng.pick(SEPARATORS));
    }
    if rng.chance(40) {
        for _ in 0..1 + rng.below(4) {
            reply.push(' ');
            reply.push_str(rng.pick(WORDS));
        }
        reply.push_str(rng.pick(&["", "\n", "  ", "."]));
    }
    reply
}
