//! `PyRegex` against Python's `re`: the same compile verdict (`re.error` is a
//! skipped rule) and, for each haystack, the same `re.search` outcome. A search
//! the reference cannot finish within its time limit (catastrophic backtracking)
//! is not compared.
//!
//! Patterns come from a grammar of what the reference's URL patterns use:
//! literals and escaped metacharacters, `.`, classes (ranges, negation, a leading
//! `]`, escapes inside, stray `[`, `&&`, `--`, POSIX-looking names), the shorthand
//! and anchor escapes, quantifiers (greedy, lazy, possessive, counted, malformed),
//! groups (capturing, named, non-capturing, scoped flags, atomic), alternation,
//! look-ahead and look-behind, back-references and inline flags such as `(?i)`,
//! at the start and elsewhere; then near misses by editing the text. Each pattern
//! comes with haystacks built to match it (and edits of those), so both outcomes
//! of a search are exercised.

use particles_pyre::{PatternError, PyRegex};
use particles_testkit::fuzz::{
    self,
    grammar::{mutated, pick},
};
use proptest::{
    collection::vec,
    prelude::*,
    sample::{select, Index},
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A pattern and the texts it is searched in.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Case {
    pattern: String,
    haystacks: Vec<String>,
}

/// A piece of pattern and a text it matches (best effort: look-arounds and
/// anchors match the empty text, which may not satisfy them).
type Piece = (String, String);

/// Characters a haystack is made of: URL punctuation, letters whose case folds
/// oddly, digits and spaces of other scripts, line breaks.
const CHARS: &[&str] = &[
    "a",
    "b",
    "A",
    "z",
    "0",
    "9",
    "/",
    ".",
    ":",
    "-",
    "_",
    "?",
    "=",
    "&",
    "%",
    "#",
    " ",
    "\n",
    "\r",
    "\t",
    "\u{00E9}",
    "\u{00C9}",
    "\u{00DF}",
    "\u{1E9E}",
    "\u{0130}",
    "\u{0131}",
    "\u{017F}",
    "s",
    "S",
    "k",
    "K",
    "\u{212A}",
    "\u{03A3}",
    "\u{03C3}",
    "\u{03C2}",
    "\u{0663}",
    "\u{FF11}",
    "\u{00B2}",
    "\u{00A0}",
    "\u{2028}",
    "\u{001C}",
    "\u{0301}",
    "\u{00AA}",
    "\u{02B0}",
    "\u{2160}",
    "\u{FB00}",
    "\u{1F600}",
    "\u{0085}",
    "\u{000B}",
    "\u{200B}",
    "$",
    "^",
    "[",
    "]",
    "\\",
];

fn literal() -> BoxedStrategy<Piece> {
    prop_oneof![
        6 => select(vec!["a", "b", "w", "x", "k", "s", "0", "1", "/", ":", "-", "_", "=", "&", "%", "#", " ", "~", ",", "'", "\"", "@", "!", "<", ">"])
            .prop_map(|c| (c.to_owned(), c.to_owned())),
        2 => select(vec!["\u{00E9}", "\u{00DF}", "\u{0130}", "\u{017F}", "\u{212A}", "\u{03A3}", "\u{03C2}", "\u{FB00}", "\u{1F600}"])
            .prop_map(|c| (c.to_owned(), c.to_owned())),
        4 => select(vec![".", "/", "?", "*", "+", "(", ")", "[", "]", "{", "}", "|", "^", "$", "\\", "-", "#", "&", "~", " ", ":", "=", "<", "\"", "'", "@", "%"])
            .prop_map(|c| (format!("\\{c}"), c.to_owned())),
        2 => select(vec!["www.example.com", "en.wikipedia.org/wiki/", "https://", "numista", "catalogue", "pieces", "Special:"])
            .prop_map(|word| (word.replace('.', "\\."), word.to_owned())),
        1 => select(vec![
            ("\\n", "\n"), ("\\t", "\t"), ("\\r", "\r"), ("\\f", "\u{000C}"), ("\\v", "\u{000B}"),
            ("\\a", "\u{0007}"), ("\\x41", "A"), ("\\x2f", "/"), ("\\u00e9", "\u{00E9}"),
            ("\\U0001F600", "\u{1F600}"), ("\\0", "\0"), ("\\07", "\u{0007}"), ("\\101", "A"),
            ("\\N{LATIN SMALL LETTER E WITH ACUTE}", "\u{00E9}"), ("\\x{41}", "A"), ("\\u{41}", "A"),
            ("\\e", "\u{001B}"), ("\\q", "q"), ("\\p{L}", "a"), ("\\P{L}", "1"), ("\\pL", "a"),
            ("\\h", " "), ("\\K", ""), ("\\X", "a"), ("\\R", "\n"), ("\\Q.\\E", "."), ("\\_", "_"),
            ("\\%", "%"), ("\\ ", " "), ("\\<", "<"), ("\\'", "'"), ("\\\"", "\""), ("\\/", "/"),
        ])
        .prop_map(|(p, s)| (p.to_owned(), s.to_owned())),
    ]
    .boxed()
}

fn shorthand() -> BoxedStrategy<Piece> {
    select(vec![
        ("\\d", "5"),
        ("\\d", "\u{0663}"),
        ("\\D", "x"),
        ("\\w", "a"),
        ("\\w", "\u{00E9}"),
        ("\\w", "_"),
        ("\\w", "\u{0301}"),
        ("\\w", "\u{00B2}"),
        ("\\W", "/"),
        ("\\s", " "),
        ("\\s", "\u{001C}"),
        ("\\s", "\u{00A0}"),
        ("\\S", "x"),
        (".", "x"),
        (".", "\n"),
        (".", "\r"),
        ("\\b", ""),
        ("\\B", ""),
        ("^", ""),
        ("$", ""),
        ("\\A", ""),
        ("\\Z", ""),
        ("\\z", ""),
        ("\\G", ""),
    ])
    .prop_map(|(p, s)| (p.to_owned(), s.to_owned()))
    .boxed()
}

fn class() -> BoxedStrategy<Piece> {
    let item = || {
        select(vec![
            ("a-z", "m"),
            ("A-Z", "Q"),
            ("0-9", "7"),
            ("a", "a"),
            ("/", "/"),
            (".", "."),
            ("-", "-"),
            ("_", "_"),
            ("\\w", "b"),
            ("\\d", "3"),
            ("\\s", " "),
            ("\\W", "/"),
            ("\\.", "."),
            ("\\-", "-"),
            ("\\]", "]"),
            ("\\\\", "\\"),
            ("\\[", "["),
            ("[", "["),
            ("^", "^"),
            ("$", "$"),
            ("&&", "&"),
            ("--", "-"),
            ("~~", "~"),
            ("[:alpha:]", "a"),
            ("[:digit:]", "1"),
            ("\\b", "\u{0008}"),
            ("\\n", "\n"),
            ("\\x41", "A"),
            ("\u{00E9}", "\u{00E9}"),
            ("z-a", "z"),
            ("\\d-z", "z"),
            ("a-\\d", "a"),
            ("\\u00e9", "\u{00E9}"),
            ("*", "*"),
            ("(", "("),
            ("|", "|"),
            ("{", "{"),
            ("\u{017F}", "\u{017F}"),
            ("\u{212A}", "\u{212A}"),
            ("\\p{L}", "a"),
            ("\\N{DIGIT ONE}", "1"),
        ])
    };
    (
        pick(&["[", "[", "[", "[^", "[]", "[^]", "[-", "[^-"]),
        vec(item(), 0..4),
        pick(&["]", "]", "]", "-]", "", "]]"]),
        any::<Index>(),
    )
        .prop_map(|(open, items, close, which)| {
            let pattern = format!(
                "{open}{}{close}",
                items.iter().map(|(p, _)| *p).collect::<String>()
            );
            let sample = if items.is_empty() {
                "]".to_owned()
            } else {
                items[which.index(items.len())].1.to_owned()
            };
            (pattern, sample)
        })
        .boxed()
}

fn leaf() -> BoxedStrategy<Piece> {
    prop_oneof![6 => literal(), 3 => shorthand(), 3 => class()].boxed()
}

fn quantified(inner: BoxedStrategy<Piece>) -> BoxedStrategy<Piece> {
    (
        inner,
        select(vec![
            ("*", 0usize, 3usize),
            ("+", 1, 3),
            ("?", 0, 1),
            ("{2}", 2, 2),
            ("{1,3}", 1, 3),
            ("{2,}", 2, 4),
            ("{,2}", 0, 2),
            ("{0}", 0, 0),
            ("{3,1}", 1, 1),
            ("{", 1, 1),
            ("{a}", 1, 1),
            ("{ 1}", 1, 1),
            ("{1,2,3}", 1, 1),
            ("{99999999999}", 1, 1),
            ("{65536}", 1, 1),
            ("{1, 2}", 1, 1),
            ("**", 0, 2),
            ("*?*", 0, 2),
            ("{2}{3}", 6, 6),
            ("{,}", 1, 1),
        ]),
        pick(&["", "", "", "?", "+"]),
        0usize..4,
    )
        .prop_map(
            |((pattern, sample), (quantifier, low, high), mode, count)| {
                let times = low + count % (high - low + 1);
                (format!("{pattern}{quantifier}{mode}"), sample.repeat(times))
            },
        )
        .boxed()
}

fn grouped(inner: BoxedStrategy<Piece>) -> BoxedStrategy<Piece> {
    (
        inner,
        select(vec![
            ("(", true),
            ("(?:", true),
            ("(?P<name>", true),
            ("(?<name>", true),
            ("(?'name'", true),
            ("(?i:", true),
            ("(?-i:", true),
            ("(?s:", true),
            ("(?m:", true),
            ("(?x:", true),
            ("(?a:", true),
            ("(?u:", true),
            ("(?iu:", true),
            ("(?>", true),
            ("(?=", false),
            ("(?!", false),
            ("(?<=", false),
            ("(?<!", false),
            ("(?#", false),
            ("(?P<1>", true),
            ("(?P<n-m>", true),
            ("(?L:", true),
            ("(?", true),
        ]),
        pick(&[")", ")", ")", ")", "", "))"]),
    )
        .prop_map(|((pattern, sample), (open, consumes), close)| {
            (
                format!("{open}{pattern}{close}"),
                if consumes { sample } else { String::new() },
            )
        })
        .boxed()
}

fn node() -> BoxedStrategy<Piece> {
    leaf()
        .prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                4 => vec(inner.clone(), 1..4).prop_map(|pieces| {
                    let pattern: String = pieces.iter().map(|(p, _)| p.as_str()).collect();
                    let sample: String = pieces.iter().map(|(_, s)| s.as_str()).collect();
                    (pattern, sample)
                }),
                2 => (vec(inner.clone(), 2..4), any::<Index>()).prop_map(|(pieces, which)| {
                    let pattern = pieces.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join("|");
                    (pattern, pieces[which.index(pieces.len())].1.clone())
                }),
                3 => quantified(inner.clone()),
                3 => grouped(inner.clone()),
                1 => (inner, pick(&["\\1", "(?P=name)", "\\2", "\\10"])).prop_map(|((p, s), backref)| {
                    (format!("({p}){backref}"), format!("{s}{s}"))
                }),
            ]
        })
        .boxed()
}

fn pattern_and_sample() -> BoxedStrategy<Piece> {
    (
        pick(&[
            "", "", "", "", "(?i)", "^", "(?i)^", "(?s)", "(?x)", "(?a)", "(?m)", "(?u)", "(?L)",
            "(?iL)", "(?-i)",
        ]),
        node(),
        pick(&["", "", "", "$", "\\Z", "(?i)", "/?$", "\\b"]),
    )
        .prop_map(|(prefix, (pattern, sample), suffix)| {
            (format!("{prefix}{pattern}{suffix}"), sample)
        })
        .boxed()
}

fn haystack(sample: String) -> BoxedStrategy<String> {
    let around = || pick(&["", "", "", "https://", "x", "/", "\n", "A", " ", "\u{00E9}"]);
    let framed = sample.clone();
    prop_oneof![
        4 => (around(), around()).prop_map(move |(before, after)| format!("{before}{framed}{after}")),
        1 => Just(sample.clone()).prop_map(|s| s.to_uppercase()),
        1 => Just(sample.clone()).prop_map(|s| s.to_lowercase()),
        1 => Just(format!("{sample}\n")),
        2 => mutated(Just(sample.clone()), CHARS),
        1 => vec(select(CHARS.to_vec()), 0..12).prop_map(|chars| chars.concat()),
    ]
    .boxed()
}

fn cases() -> impl Strategy<Value = Case> {
    prop_oneof![
        6 => pattern_and_sample(),
        2 => pattern_and_sample().prop_flat_map(|(pattern, sample)| {
            mutated(Just(pattern), &["(", ")", "[", "]", "{", "}", "?", "*", "+", "\\", "|", "^", "$", "-", ":", "<", "=", "!", "P", "i", "1"])
                .prop_map(move |pattern| (pattern, sample.clone()))
        }),
    ]
    .prop_flat_map(|(pattern, sample)| {
        vec(haystack(sample), 1..6).prop_map(move |haystacks| Case {
            pattern: pattern.clone(),
            haystacks,
        })
    })
}

fn check(case: &Case, verdict: &Value) -> Result<(), String> {
    let pattern = &case.pattern;
    let ours = PyRegex::compile(pattern);
    let regex = match (verdict["compiles"].as_bool(), ours) {
        (Some(true), Ok(regex)) => regex,
        (Some(false), Err(PatternError::Invalid(_) | PatternError::Unsupported(_))) => {
            return Ok(())
        }
        // Python raises something else than re.error: the reference's query
        // fails, and so does ours (particles-rank's Error::BadPattern).
        (None, Err(PatternError::Fatal(_))) if verdict["error"] != "timeout" => return Ok(()),
        (theirs, Err(PatternError::Unsupported(what))) if theirs != Some(false) => {
            return Err(format!(
                "{}{pattern:?}: Python compiles {what} (or fails later), which PyRegex does not carry",
                fuzz::DOCUMENTED
            ))
        }
        (theirs, ours) => {
            return Err(format!(
                "{pattern:?}: the reference {}, ours {}",
                match theirs {
                    Some(true) => "compiles it".to_owned(),
                    Some(false) => "raises re.error".to_owned(),
                    None => format!("raises {}", verdict["error"]),
                },
                match ours {
                    Ok(_) => "compiles it".to_owned(),
                    Err(e) => format!("refuses it ({e:?})"),
                }
            ))
        }
    };
    for (haystack, theirs) in case
        .haystacks
        .iter()
        .zip(verdict["matches"].as_array().into_iter().flatten())
    {
        let Some(theirs) = theirs.as_bool() else {
            continue;
        };
        let Some(mine) = regex.try_search(haystack) else {
            return Err(format!(
                "{}{pattern:?} in {haystack:?}: past PyRegex's step or depth limit (the reference {})",
                fuzz::DOCUMENTED,
                if theirs { "matches" } else { "does not match" },
            ));
        };
        if mine != theirs {
            return Err(format!(
                "{pattern:?} in {haystack:?}: the reference {}, ours {}",
                if theirs { "matches" } else { "does not match" },
                if mine { "matches" } else { "does not match" },
            ));
        }
    }
    Ok(())
}

#[test]
fn differential() {
    let corpus = [
        (
            r"en\.numista\.com/(?:catalogue/pieces\d+\.html|\d+/?$)",
            vec![
                "https://en.numista.com/catalogue/pieces123.html",
                "https://en.numista.com/123/\n",
                "https://en.numista.com/123/x",
            ],
        ),
        (
            r"(?<=wiki/)Special:",
            vec!["https://en.wikipedia.org/wiki/Special:Foo"],
        ),
        (r"[$]", vec!["a$b"]),
        ("(unbalanced", vec![]),
        ("a(?i)b", vec!["aB"]),
        ("[[a]", vec!["["]),
        (r"\p{L}", vec!["a"]),
        ("(?<name>a)", vec!["a"]),
    ];
    fuzz::run(fuzz::Target {
        decoder: "regex",
        strategy: cases(),
        corpus: corpus
            .into_iter()
            .map(|(pattern, haystacks)| Case {
                pattern: pattern.to_owned(),
                haystacks: haystacks.into_iter().map(str::to_owned).collect(),
            })
            .collect(),
        regressions: include_str!("../../fuzz-regressions/regex.jsonl"),
        check,
    });
}
