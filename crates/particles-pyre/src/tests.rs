//! Python `re` verdicts pinned by hand (the differential fuzz covers far more).

use super::*;

fn compiles(pattern: &str) -> bool {
    PyRegex::compile(pattern).is_ok()
}

fn search(pattern: &str, text: &str) -> bool {
    PyRegex::compile(pattern)
        .unwrap_or_else(|e| panic!("{pattern:?}: {e:?}"))
        .search(text)
}

#[test]
fn python_semantics() {
    let seeded = r"en\.numista\.com/(?:catalogue/pieces\d+\.html|\d+/?$)";
    assert!(search(
        seeded,
        "https://en.numista.com/catalogue/pieces123.html"
    ));
    assert!(search(seeded, "https://en.numista.com/123/\n"));
    assert!(!search(seeded, "https://en.numista.com/123/x"));
    assert!(search(
        r"(?<=wiki/)Special:",
        "https://en.wikipedia.org/wiki/Special:Foo"
    ));
    assert!(search(r"[$]", "a$b"));
    assert!(!compiles("(unbalanced"));
}

#[test]
fn compile_verdicts() {
    for good in [
        "[[a]",
        "[]a]",
        "[^]a]",
        "a{,3}",
        "a{",
        "a{1,2,3}",
        "(?i)ab",
        "(?P<name>a)(?P=name)",
        "(?>a+)",
        "a*+",
        "(?a:\\w)",
        "(?s-i:.)",
        "(?(1)a|b)(a)",
        "x{}",
        "[\\b]",
    ] {
        assert!(compiles(good), "{good:?}");
    }
    for bad in [
        "a(?i)b",
        "\\p{L}",
        "(?<name>a)",
        "a**",
        "a{2}{3}",
        "*a",
        "[z-a]",
        "(?L)a",
        "(?au)a",
        "(?<=a|bc)",
        "\\1(a)",
        "(a)\\2",
        "(?P<1>a)",
        "\\q",
        "\\Q",
        "a{3,1}",
        "(?-a:x)",
        "(?i",
        "(a)(?i)",
    ] {
        assert!(!compiles(bad), "{bad:?}");
    }
    assert!(matches!(
        PyRegex::compile("a{4294967295}"),
        Err(PatternError::Fatal(_))
    ));
    assert!(matches!(
        PyRegex::compile("(?a)(?u)x"),
        Err(PatternError::Fatal(_))
    ));
    assert!(matches!(
        PyRegex::compile("\\N{DIGIT ONE}"),
        Err(PatternError::Unsupported(_))
    ));
}

#[test]
fn unicode_classes_and_folding() {
    assert!(search("\\s", "\u{1c}"));
    assert!(search("[\\w]", "\u{b2}"));
    assert!(!search("\\w", "\u{301}"));
    assert!(search("(?i)k", "\u{212a}"));
    assert!(search("(?i)[a-z]", "\u{17f}"));
    assert!(!search("(?ai)[a-z]", "\u{17f}"));
    assert!(search("(?i)\u{3c3}", "\u{3c2}"));
    assert!(!search("\\b", ""));
}

#[test]
fn long_texts_stay_within_the_stack() {
    // On a thread with the default 2 MiB stack, in a debug build: one-character
    // repeats walk in a loop; repeats of groups stop at DEPTH_LIMIT (no match)
    // instead of overflowing.
    let found = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let text = "ab".repeat(20_000);
            [
                search("[ab]*$", &text),
                search("(?:ab)+$", &text),
                search("(?:(?:a|b)(?=.))+b$", &text),
                search("(?:(a)|b)*\\1$", &text),
            ]
        })
        .expect("spawn")
        .join()
        .expect("no overflow");
    assert_eq!(found, [true, false, false, false]);
    assert!(search("(?:ab)+$", &"ab".repeat(100)));
}
