//! Grounded answers: the handles particles are cited by, and the reply's citations
//! read back into per-sentence attribution (§6.2, §6.8).
//!
//! The reference parses with three Python regular expressions (the tag, the
//! trailing punctuation, the line markers). They are written out here as small
//! scanners rather than handed to a regex engine, because the reference's meaning
//! depends on Python's `re` specifics: `re.IGNORECASE` lets `i` match U+0130 and
//! U+0131 and `k` match the Kelvin sign, `\s` is `str.isspace`, `\d` is `Nd`, and
//! `^` under `re.MULTILINE` follows `\n` only. The differential test in
//! `tests/it/grounding_reference.rs` holds the two to the same output.

use std::collections::{HashMap, HashSet};

use particles_model::{Particle, ParticleType};
use serde::{Deserialize, Serialize};

use crate::{input::AnswerHit, pytext};

/// Hex characters a short handle carries (the CLI's display-id length).
const SHORT_HANDLE_CHARS: usize = 8;
/// Hex characters of a handle whose short form collides with another's.
const LONG_HANDLE_CHARS: usize = 32;

/// Where one sentence of a grounded answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttributionKind {
    /// At least one valid handle was cited for it.
    Cited,
    /// Declared `[inference]`: the composer's own reasoning over cited claims.
    Inference,
    /// Declared `[background]`: from the composer's general knowledge.
    Background,
    /// Neither a valid citation nor a declaration.
    Unattributed,
}

impl AttributionKind {
    /// The lower-case label, as tags and JSON spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            AttributionKind::Cited => "cited",
            AttributionKind::Inference => "inference",
            AttributionKind::Background => "background",
            AttributionKind::Unattributed => "unattributed",
        }
    }
}

/// One attributed unit of a grounded answer (`answer_attribution.sentences[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttributedSentence {
    /// The unit's prose, tag removed, markdown line markers and emphasis dropped,
    /// whitespace collapsed.
    pub text: String,
    /// Where it came from.
    pub kind: AttributionKind,
    /// Full ids of the particles it cites, first-seen order, no repeats.
    pub cited_ids: Vec<String>,
    /// What the composer wrote for citations that named no particle it was shown.
    pub invalid_citations: Vec<String>,
}

/// Per-sentence attribution of a grounded answer (`answer_attribution`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Attribution {
    /// Every unit of the answer, in order.
    pub sentences: Vec<AttributedSentence>,
}

/// The handle each particle shown to the composer is cited by, in the order the
/// composer sees them.
///
/// A handle is `p-` and the first eight characters of the id without dashes,
/// lower-cased; ids whose eight-character handles coincide get 32 characters instead,
/// so a handle never names two particles.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Handles {
    entries: Vec<(String, String)>,
    position: HashMap<String, usize>,
}

impl Handles {
    /// Handles for a list of ids (repeats ignored, first occurrence kept).
    pub fn from_ids<I, S>(ids: I) -> Handles
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut unique: Vec<String> = Vec::new();
        let mut seen = HashSet::new();
        for id in ids {
            let id = id.into();
            if seen.insert(id.clone()) {
                unique.push(id);
            }
        }
        let short: Vec<String> = unique
            .iter()
            .map(|id| handle_of(id, SHORT_HANDLE_CHARS))
            .collect();
        let mut uses: HashMap<&str, usize> = HashMap::new();
        for handle in &short {
            *uses.entry(handle.as_str()).or_default() += 1;
        }
        let entries: Vec<(String, String)> = unique
            .iter()
            .zip(&short)
            .map(|(id, handle)| {
                let handle = if uses[handle.as_str()] == 1 {
                    handle.clone()
                } else {
                    handle_of(id, LONG_HANDLE_CHARS)
                };
                (id.clone(), handle)
            })
            .collect();
        let position = entries
            .iter()
            .enumerate()
            .map(|(idx, (id, _))| (id.clone(), idx))
            .collect();
        Handles { entries, position }
    }

    /// The handle of a particle id, if it was shown.
    pub fn get(&self, id: &str) -> Option<&str> {
        self.position
            .get(id)
            .map(|&idx| self.entries[idx].1.as_str())
    }

    /// `(id, handle)` pairs in the order the composer sees the particles.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries
            .iter()
            .map(|(id, handle)| (id.as_str(), handle.as_str()))
    }

    /// How many particles have a handle.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no particle has a handle.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// `p-` plus the first `length` characters of the id without dashes, lower-cased
/// (cut first, then lower-cased, as the reference does).
fn handle_of(id: &str, length: usize) -> String {
    let bare: String = id.chars().filter(|&ch| ch != '-').collect();
    format!("p-{}", pytext::lower(pytext::take_chars(&bare, length)))
}

/// The handles of every particle the composer is shown: each hit and, under a
/// NARRATIVE hit, its constituents, first occurrence kept.
pub fn handles_for(
    hits: &[AnswerHit<'_>],
    constituents: &HashMap<String, Vec<&Particle>>,
) -> Handles {
    let mut ids: Vec<&str> = Vec::new();
    for hit in hits {
        ids.push(&hit.particle.id);
        if hit.particle.particle_type == ParticleType::Narrative {
            if let Some(members) = constituents.get(&hit.particle.id) {
                ids.extend(members.iter().map(|member| member.id.as_str()));
            }
        }
    }
    Handles::from_ids(ids)
}

/// Reads a grounded reply: splits it into units at its citation tags, labels each
/// unit, and rewrites every tag to its canonical form.
///
/// Returns the relabelled answer (valid handles only, `[inference]`,
/// `[background]`, or `[unattributed]` where the composer left a unit untagged or
/// cited nothing it was shown) and the attribution. Nothing is dropped.
pub fn ground_answer(reply: &str, handles: &Handles) -> (String, Attribution) {
    let lookup = citation_lookup(handles);
    let mut sentences: Vec<AttributedSentence> = Vec::new();
    let mut pieces = String::with_capacity(reply.len() + 16);
    let mut cursor = 0;
    for group in tag_groups(reply, &lookup) {
        let unit = &reply[cursor..group.start];
        let punct_end = trailing_punct_end(reply, group.end);
        let punct = &reply[group.end..punct_end];
        let kind = match group.declared {
            Some(declared) => declared,
            None if !group.cited.is_empty() => AttributionKind::Cited,
            None => AttributionKind::Unattributed,
        };
        let prose = clean_unit(&format!("{}{punct}", pytext::rstrip(unit)));
        pieces.push_str(unit);
        pieces.push_str(&canonical_tag(kind, &group.cited, handles));
        if prose.chars().any(pytext::is_alnum) {
            sentences.push(AttributedSentence {
                text: prose,
                kind,
                cited_ids: group.cited,
                invalid_citations: group.invalid,
            });
        } else if let Some(prior) = sentences.last_mut() {
            // A tag with no prose of its own ("... [p-a]. [p-b]") belongs to the unit
            // before it.
            for id in group.cited {
                if !prior.cited_ids.contains(&id) {
                    prior.cited_ids.push(id);
                }
            }
            prior.invalid_citations.extend(group.invalid);
            if prior.kind == AttributionKind::Unattributed {
                if let Some(declared) = group.declared {
                    prior.kind = declared;
                } else if !prior.cited_ids.is_empty() {
                    prior.kind = AttributionKind::Cited;
                }
            }
        }
        pieces.push_str(punct);
        cursor = punct_end;
    }
    let tail = &reply[cursor..];
    let prose = clean_unit(tail);
    if prose.chars().any(pytext::is_alnum) {
        sentences.push(AttributedSentence {
            text: prose,
            kind: AttributionKind::Unattributed,
            cited_ids: Vec::new(),
            invalid_citations: Vec::new(),
        });
        let body = pytext::rstrip(tail);
        pieces.push_str(body);
        pieces.push_str(" [unattributed]");
        pieces.push_str(&tail[body.len()..]);
    } else {
        pieces.push_str(tail);
    }
    (pytext::strip(&pieces).to_owned(), Attribution { sentences })
}

/// Lower-cased handle without `p-`, full id, and id without dashes -> particle id.
/// Later particles overwrite earlier keys, as the reference's dict does.
fn citation_lookup(handles: &Handles) -> HashMap<String, String> {
    let mut lookup = HashMap::new();
    for (id, handle) in handles.iter() {
        let bare_handle: String = handle.chars().skip(2).collect();
        lookup.insert(pytext::lower(&bare_handle), id.to_owned());
        lookup.insert(pytext::lower(id), id.to_owned());
        let no_dashes: String = id.chars().filter(|&ch| ch != '-').collect();
        lookup.insert(pytext::lower(&no_dashes), id.to_owned());
    }
    lookup
}

/// A citation token as the lookup keys it: trimmed, lower-cased, one `p-`/`p:`
/// prefix removed.
fn normalise_token(token: &str) -> String {
    let token = pytext::lower(pytext::strip(token));
    for prefix in ["p-", "p:"] {
        if let Some(rest) = token.strip_prefix(prefix) {
            return rest.to_owned();
        }
    }
    token
}

fn canonical_tag(kind: AttributionKind, cited: &[String], handles: &Handles) -> String {
    if kind == AttributionKind::Cited {
        let cited: Vec<&str> = cited.iter().filter_map(|id| handles.get(id)).collect();
        format!("[{}]", cited.join(", "))
    } else {
        format!("[{}]", kind.as_str())
    }
}

/// Adjacent tags read as one: everything the composer attached to one unit.
#[derive(Debug)]
struct TagGroup {
    start: usize,
    end: usize,
    cited: Vec<String>,
    invalid: Vec<String>,
    declared: Option<AttributionKind>,
}

fn tag_groups(text: &str, lookup: &HashMap<String, String>) -> Vec<TagGroup> {
    let mut groups: Vec<TagGroup> = Vec::new();
    let mut from = 0;
    while let Some(tag) = find_tag(text, from) {
        from = tag.end;
        let joins = groups
            .last()
            .is_some_and(|last| pytext::strip(&text[last.end..tag.start]).is_empty());
        if !joins {
            groups.push(TagGroup {
                start: tag.start,
                end: tag.end,
                cited: Vec::new(),
                invalid: Vec::new(),
                declared: None,
            });
        }
        let group = groups.last_mut().expect("a group was pushed or joined");
        group.end = tag.end;
        let body = &text[tag.body.0..tag.body.1];
        let lowered = pytext::lower(pytext::strip(body));
        let declared = match lowered.as_str() {
            "inference" => Some(AttributionKind::Inference),
            "background" => Some(AttributionKind::Background),
            _ => None,
        };
        if let Some(label) = declared {
            // Both declared on one unit: the stronger disclosure wins.
            if group.declared != Some(AttributionKind::Background) {
                group.declared = Some(label);
            }
        } else {
            for raw in body.split(',') {
                match lookup.get(&normalise_token(raw)) {
                    None => group.invalid.push(pytext::strip(raw).to_owned()),
                    Some(id) if !group.cited.contains(id) => group.cited.push(id.clone()),
                    Some(_) => {}
                }
            }
        }
    }
    groups
}

/// One tag match: its byte span and the span of its body (the label or token list).
struct TagMatch {
    start: usize,
    end: usize,
    body: (usize, usize),
}

/// The leftmost tag at or after `from`:
/// `\[\s*(inference|background|TOKEN(\s*,\s*TOKEN)*)\s*\](?!\()`, case-insensitive.
fn find_tag(text: &str, from: usize) -> Option<TagMatch> {
    let mut search = from;
    while let Some(offset) = text[search..].find('[') {
        let start = search + offset;
        if let Some(found) = tag_at(text, start) {
            return Some(found);
        }
        search = start + 1;
    }
    None
}

fn tag_at(text: &str, start: usize) -> Option<TagMatch> {
    let body_start = skip_spaces(text, start + 1);
    // The alternatives in the reference's order; the first that completes wins.
    let label_end = |word: &str| pytext::literal_ci(text, body_start, word);
    let candidates = [
        label_end("inference"),
        label_end("background"),
        token_list_end(text, body_start),
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(|body_end| close_at(text, body_end).map(|end| (body_end, end)))
        .map(|(body_end, end)| TagMatch {
            start,
            end,
            body: (body_start, body_end),
        })
}

/// `\s*\](?!\()` at `at`: the end of the match.
fn close_at(text: &str, at: usize) -> Option<usize> {
    let at = skip_spaces(text, at);
    let rest = text[at..].strip_prefix(']')?;
    (!rest.starts_with('(')).then_some(at + 1)
}

fn skip_spaces(text: &str, at: usize) -> usize {
    pytext::skip_spaces(text, at)
}

/// `TOKEN(?:\s*,\s*TOKEN)*` at `at`: the end of the list.
fn token_list_end(text: &str, at: usize) -> Option<usize> {
    let mut end = token_end(text, at)?;
    loop {
        let comma = skip_spaces(text, end);
        if !text[comma..].starts_with(',') {
            return Some(end);
        }
        match token_end(text, skip_spaces(text, comma + 1)) {
            Some(next) => end = next,
            None => return Some(end),
        }
    }
}

/// One citation token: `p[-:][^\[\]\s,]+` or `[0-9a-f]{8}-[0-9a-f-]{27,}`.
fn token_end(text: &str, at: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let rest = &text[at..];
    if matches!(bytes.get(at), Some(b'p' | b'P')) && matches!(bytes.get(at + 1), Some(b'-' | b':'))
    {
        let body = &rest[2..];
        let len = body
            .find(|ch: char| matches!(ch, '[' | ']' | ',') || pytext::is_space(ch))
            .unwrap_or(body.len());
        return (len > 0).then_some(at + 2 + len);
    }
    let head = rest.as_bytes();
    if head.len() < 9 || !head[..8].iter().all(u8::is_ascii_hexdigit) || head[8] != b'-' {
        return None;
    }
    let tail = head[9..]
        .iter()
        .take_while(|&&byte| byte.is_ascii_hexdigit() || byte == b'-')
        .count();
    (tail >= 27).then_some(at + 9 + tail)
}

/// `[.!?:;]+["'”’)\]]*` at `at`: the end of the run, or `at` when there is none.
fn trailing_punct_end(text: &str, at: usize) -> usize {
    let rest = &text[at..];
    let stops = rest
        .find(|ch: char| !matches!(ch, '.' | '!' | '?' | ':' | ';'))
        .unwrap_or(rest.len());
    if stops == 0 {
        return at;
    }
    let closers = &rest[stops..];
    let closing = closers
        .find(|ch: char| !matches!(ch, '"' | '\'' | '\u{201d}' | '\u{2019}' | ')' | ']'))
        .unwrap_or(closers.len());
    at + stops + closing
}

/// A unit's prose: markdown line markers, `**` and `__` removed, whitespace
/// collapsed, a leading clause comma or colon dropped.
fn clean_unit(unit: &str) -> String {
    let unmarked = remove_line_marks(unit).replace("**", "").replace("__", "");
    pytext::collapse_spaces(&unmarked)
        .trim_start_matches([',', ';', ':', ' '])
        .to_owned()
}

/// `re.sub(r"(?m)^\s*(?:[-*+•]|\d{1,3}[.)]|#{1,6}|>)\s+", "", text)`.
fn remove_line_marks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    while at <= text.len() {
        let line_start = at == 0 || text.as_bytes()[at - 1] == b'\n';
        if line_start {
            if let Some(end) = line_mark_at(text, at) {
                out.push_str(&text[copied..at]);
                copied = end;
                at = end;
                continue;
            }
        }
        // Line starts follow '\n' only; jump to the next one.
        match text[at..].find('\n') {
            Some(offset) => at += offset + 1,
            None => break,
        }
    }
    out.push_str(&text[copied..]);
    out
}

fn line_mark_at(text: &str, at: usize) -> Option<usize> {
    let mark = skip_spaces(text, at);
    let rest = &text[mark..];
    let first = rest.chars().next()?;
    let after_mark = match first {
        '-' | '*' | '+' | '\u{2022}' | '>' => mark + first.len_utf8(),
        '#' => {
            let hashes = rest.bytes().take_while(|&byte| byte == b'#').count();
            if hashes > 6 {
                return None;
            }
            mark + hashes
        }
        _ => {
            let mut end = mark;
            let mut digits = 0;
            for ch in rest.chars().take_while(|&ch| pytext::is_decimal(ch)) {
                digits += 1;
                end += ch.len_utf8();
            }
            if !(1..=3).contains(&digits) || !matches!(text[end..].chars().next(), Some('.' | ')'))
            {
                return None;
            }
            end + 1
        }
    };
    let end = skip_spaces(text, after_mark);
    (end > after_mark).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Handles {
        Handles::from_ids([
            "00000000-aaaa-4000-8000-000000000000",
            "00000001-bbbb-4000-8000-000000000001",
        ])
    }

    #[test]
    fn the_specs_worked_example() {
        let reply = "Paris is the capital of France [p-00000000]. Berlin is a capital too \
                     [p-00000001, p-deadbeef]. So both are capitals [inference]. Trailing remark";
        let (answer, attribution) = ground_answer(reply, &table());
        assert_eq!(
            answer,
            "Paris is the capital of France [p-00000000]. Berlin is a capital too \
             [p-00000001]. So both are capitals [inference]. Trailing remark [unattributed]"
        );
        let kinds: Vec<_> = attribution.sentences.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [
                AttributionKind::Cited,
                AttributionKind::Cited,
                AttributionKind::Inference,
                AttributionKind::Unattributed
            ]
        );
        assert_eq!(attribution.sentences[1].invalid_citations, ["p-deadbeef"]);
        assert_eq!(
            attribution.sentences[0].text,
            "Paris is the capital of France."
        );
    }

    #[test]
    fn colliding_handles_get_the_long_form() {
        let handles = Handles::from_ids(["ABCDEF12-0001", "abcdef12-0002", "99999999"]);
        assert_eq!(handles.get("ABCDEF12-0001"), Some("p-abcdef120001"));
        assert_eq!(handles.get("99999999"), Some("p-99999999"));
    }

    #[test]
    fn a_bare_tag_joins_the_sentence_before_it() {
        let (answer, attribution) = ground_answer("Gold is soft. [p-00000000]", &table());
        assert_eq!(answer, "Gold is soft. [p-00000000]");
        assert_eq!(attribution.sentences.len(), 1);
        let (answer, attribution) = ground_answer("Gold is soft [p-1]. [p-00000000]", &table());
        assert_eq!(answer, "Gold is soft [unattributed]. [p-00000000]");
        assert_eq!(attribution.sentences[0].kind, AttributionKind::Cited);
        assert_eq!(attribution.sentences[0].invalid_citations, ["p-1"]);
    }

    #[test]
    fn links_and_prose_brackets_are_not_tags() {
        let (answer, attribution) = ground_answer("See [p-00000000](http://x) [sic].", &table());
        assert_eq!(answer, "See [p-00000000](http://x) [sic]. [unattributed]");
        assert_eq!(attribution.sentences[0].kind, AttributionKind::Unattributed);
    }

    #[test]
    fn pythons_ignorecase_quirks() {
        assert!(pytext::literal_ci("\u{130}nference", 0, "inference").is_some());
        assert!(pytext::literal_ci("bac\u{212a}ground", 0, "background").is_some());
        assert!(pytext::literal_ci("infer", 0, "inference").is_none());
    }

    #[test]
    fn line_marks() {
        assert_eq!(
            remove_line_marks("- a\n  2. b\n### c\n####### d"),
            "a\nb\nc\n####### d"
        );
        assert_eq!(remove_line_marks("1234. x\n>y\n> z"), "1234. x\n>y\nz");
        assert_eq!(remove_line_marks("- \n- x"), "x");
    }
}
