//! Unit tests of the source passage: matching, locating, cuts and notes.

use super::*;

fn settings() -> PassageSettings {
    PassageSettings {
        locate_min_overlap: 0.5,
        max_passage_chars: 6000,
        html_chunk_size: 40,
        tool_turn_source_types: vec!["CONVERSATION".into()],
        blob_dir: PathBuf::from("/nonexistent"),
    }
}

#[test]
fn paragraphs_split_on_blank_lines_with_whitespace() {
    assert_eq!(
        split_paragraphs("a\n \t\nb\n\n\nc\nd"),
        vec!["a", "b", "c\nd"]
    );
    assert_eq!(split_paragraphs("no break"), vec!["no break"]);
}

#[test]
fn located_passages_prefer_the_tightest_line() {
    let text = "Intro.\n\n- Silver denarius coins\n- struck in Rome\n\nOther.";
    let (found, score) = locate_passage(text, "Silver denarius coins", false, 0.5).expect("found");
    assert_eq!(found, "- Silver denarius coins");
    assert_eq!(score, 1.0);
    // Terms spread over two lines keep the whole paragraph.
    let (found, _) = locate_passage(text, "denarius struck Rome", false, 0.5).expect("found");
    assert_eq!(found, "- Silver denarius coins\n- struck in Rome");
    assert_eq!(
        locate_passage(text, "the and for", false, 0.5),
        None,
        "stopwords only"
    );
    // A record's repeated paragraphs: the latest wins a tie.
    let record = "run one: coins ok\n\nrun two: coins ok";
    assert_eq!(
        locate_passage(record, "coins", true, 0.5).expect("found").0,
        "run two: coins ok"
    );
    assert_eq!(
        locate_passage(record, "coins", false, 0.5)
            .expect("found")
            .0,
        "run one: coins ok"
    );
}

#[test]
fn chunks_are_cut_at_paragraphs_then_lines_then_hard() {
    let text: Vec<char> = "aaaa\n\nbbbb\ncccc dddd".chars().collect();
    assert_eq!(
        paragraph_chunks(&text, 8),
        vec!["aaaa", "bbbb", "cccc ddd", "d"]
    );
    let hash = {
        let digest = Sha256::digest(b"bbbb");
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    assert_eq!(
        find_chunk("aaaa\n\nbbbb [edit]", &hash, 6),
        Some("bbbb".to_owned())
    );
}

#[test]
fn tool_turns_are_relabelled() {
    let text = "user: hi\n  Tool_Result : diet keto\n[tool: search — coins]\r\nassistant: ok\n";
    assert_eq!(
        mark_tool_turns(text),
        "user: hi\n  tool output (unverified, not the speaker's words): diet keto\n\
         tool output (unverified, not the speaker's words): search — coins\nassistant: ok\n"
    );
}

#[test]
fn frontmatter_is_dropped_for_markdown() {
    let text = "---\ntitle: x\n---\nBody text.";
    assert_eq!(strip_frontmatter(text), "Body text.");
    assert_eq!(strip_frontmatter("---\nunclosed"), "---\nunclosed");
    let view = extractor_view_text(text.as_bytes(), Some("LOCAL_MARKDOWN"), &settings());
    assert_eq!(view, "Body text.");
}

#[test]
fn blobs_are_sniffed_as_the_reference_does() {
    assert!(is_image(b"\x89PNG\r\n\x1a\nrest"));
    assert!(is_image(b"RIFF1234WEBPxx"));
    assert!(is_html(b"  <!DOCTYPE HTML><html>"));
    assert!(!is_html(b"plain text"));
    assert_eq!(blob_path(Path::new("/b"), "ab"), None);
    let hash = "a".repeat(64);
    assert_eq!(
        blob_path(Path::new("/b"), &hash),
        Some(PathBuf::from(format!("/b/aa/{hash}")))
    );
}

/// The cosmetic-noise patterns as Python's `re` reads them: `\s` is Python's
/// whitespace, `edit` matches `EDİT` under IGNORECASE, and `\b` after a footer's
/// opening needs a non-word character (Unicode `\w`). Expected values printed by
/// Python 3.11 for the same inputs.
#[test]
fn normalising_follows_pythons_re() {
    assert_eq!(
        normalise_for_hashing("a[\u{a0}EDİT]b[ edit ]c[editx]d[\n edit\u{1c}]e[[edit]]"),
        "abc[editx]de[]"
    );
    assert_eq!(
        normalise_for_hashing(
            "x\n  retrieved FROM wiki\nRetrieved fromX\nLast updatedé\nlast updated: now\nThis page was last modified\n"
        ),
        "x\n\nRetrieved fromX\nLast updatedé\n\n\n"
    );
}

#[test]
fn tool_roles_match_as_re_ignorecase_does() {
    assert_eq!(tool_turn_body("TOOL_REſULT : diet"), Some("diet"));
    assert_eq!(tool_turn_body("tool\u{3000}: x"), Some("x"));
    assert_eq!(tool_turn_body("toolx: y"), None);
}
