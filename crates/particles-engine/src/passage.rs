//! The source passage behind a particle (`GET /particles/{id}/source`), as the
//! reference's `ingest/source_passage.py` builds it: the particle's first SOURCE
//! ref with a corpus entry, its snapshot (pinned, else the entry's latest), the
//! stored blob, the text the extractor was shown, then the chunk whose SHA-256
//! is the ref's `chunk_hash` (EXACT), else the paragraph or line sharing the most
//! terms with the particle (LOCATED), else the whole text (WHOLE). Display only.
//!
//! Indices and lengths are Python's: characters, not bytes. HTML and PDF blobs
//! are not rendered here (the reference uses html2text and pypdf); they come back
//! as [`Hydrated::Unrendered`], which the server forwards to the reference's
//! engine when it has one.

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
};

use particles_model::{Particle, ProvenanceRefType};
use particles_store::{SnapshotRecord, SnapshotResolution, Store};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Python's `str.isspace` and `str.strip()`, on the reference's Unicode.
mod pytext {
    pub(super) use particles_pytext::{is_space, is_word, match_ignorecase};

    pub(super) fn strip(text: &str) -> &str {
        text.trim_matches(is_space)
    }
}

/// The configuration the passage reads.
#[derive(Debug, Clone)]
pub struct PassageSettings {
    /// `source_passage.locate_min_overlap`.
    pub(crate) locate_min_overlap: f64,
    /// `source_passage.max_passage_chars`.
    pub(crate) max_passage_chars: usize,
    /// `extraction.html_chunk_size`.
    pub(crate) html_chunk_size: usize,
    /// `extraction.tool_turn_source_types`.
    pub(crate) tool_turn_source_types: Vec<String>,
    /// `storage.blob_dir`, resolved beside the store.
    pub(crate) blob_dir: PathBuf,
}

impl PassageSettings {
    /// The keys the passage reads, from `loaded`; `store` is the store the
    /// passages are read from (a relative `storage.blob_dir` is resolved
    /// beside it, as the reference resolves it beside its default store).
    pub fn from_config(loaded: &particles_config::Loaded, store: &Path) -> PassageSettings {
        let config = loaded.config();
        let int_key = |key: &str, default: usize| {
            loaded
                .value(key)
                .and_then(|v| v.as_u64())
                .and_then(|v| usize::try_from(v).ok())
                .unwrap_or(default)
        };
        let tool_turn_source_types = loaded
            .value("extraction.tool_turn_source_types")
            .and_then(|v| {
                v.as_array().map(|items| {
                    items
                        .iter()
                        .filter_map(|item| item.as_str().map(str::to_owned))
                        .collect()
                })
            })
            .unwrap_or_else(|| vec!["CONVERSATION".to_owned(), "JOURNAL".to_owned()]);
        PassageSettings {
            locate_min_overlap: config.source_passage.locate_min_overlap,
            max_passage_chars: usize::try_from(config.source_passage.max_passage_chars)
                .unwrap_or(6000),
            html_chunk_size: int_key("extraction.html_chunk_size", 15_000),
            tool_turn_source_types,
            blob_dir: blob_dir(&config.storage.blob_dir, store, loaded.path()),
        }
    }
}

/// `storage.blob_dir` as the reference resolves it: `~` expanded, an absolute
/// path as is, a relative one beside the store (our store is always a file),
/// else beside the configuration file.
fn blob_dir(value: &str, store: &Path, config_file: Option<&Path>) -> PathBuf {
    let expanded = match value.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(rest))
            .unwrap_or_else(|| PathBuf::from(value)),
        None => PathBuf::from(value),
    };
    if expanded.is_absolute() {
        return expanded;
    }
    if let Some(parent) = store.parent().filter(|_| store.is_absolute()) {
        return parent.join(expanded);
    }
    match config_file.and_then(Path::parent) {
        Some(dir) => dir.join(expanded),
        None => expanded,
    }
}

/// The reference's `SourcePassage`, fields in its declaration order: the text
/// behind a particle and how it was found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourcePassage {
    /// The particle's id.
    pub particle_id: String,
    /// `EXACT`, `LOCATED`, `WHOLE` or `UNAVAILABLE`.
    #[serde(rename = "match")]
    pub match_kind: &'static str,
    /// The passage.
    pub text: String,
    /// The corpus entry it was read from.
    pub corpus_entry_id: Option<String>,
    /// The snapshot it was read from.
    pub snapshot_id: Option<String>,
    /// The entry's URI.
    pub uri_r: Option<String>,
    /// The entry's source type.
    pub source_type: Option<String>,
    /// The term overlap of a `LOCATED` passage.
    pub locate_overlap: Option<f64>,
    /// The snapshot text's length, in characters.
    pub snapshot_chars: usize,
    /// Whether the passage was cut to `source_passage.max_passage_chars`.
    pub truncated: bool,
    /// Why the passage is not the chunk itself, when it is not.
    pub note: Option<String>,
}

/// What hydration found.
#[derive(Debug, Clone, PartialEq)]
pub enum Hydrated {
    /// No particle with this id (404).
    Missing,
    /// The passage.
    Passage(SourcePassage),
    /// The blob is HTML or PDF, which only the reference renders.
    Unrendered(SourcePassage),
    /// Where the reference raises (an ambiguous snapshot prefix, a malformed
    /// content hash): a 500.
    Raised(String),
}

impl Hydrated {
    /// The passage as `particles query --show-source` prints it: `None` when no
    /// particle has this id; an HTML or PDF source, which only the reference
    /// renders, with its metadata and a note saying so.
    ///
    /// # Errors
    ///
    /// The reference's message where it raises.
    pub fn for_display(self, id: &str) -> Result<Option<SourcePassage>, String> {
        match self {
            Hydrated::Missing => Ok(None),
            Hydrated::Passage(passage) => Ok(Some(passage)),
            Hydrated::Unrendered(mut passage) => {
                passage.note = Some(format!(
                    "This source is HTML or PDF, which particles-rs does not render; \
                     `particles particle source {id}` shows it."
                ));
                Ok(Some(passage))
            }
            Hydrated::Raised(message) => Err(message),
        }
    }
}

const NO_SOURCE: &str = "This particle has no corpus source (it derives from other particles).";
const NOT_PINNED: &str = "Provenance pins no snapshot; the entry's latest snapshot was read.";
const NO_SNAPSHOT: &str = "The source snapshot is not in this store.";
const NO_BLOB: &str = "The snapshot's stored content is missing (not archived, or the blob is \
unreachable — see `particles corpus fsck`).";
const IMAGE: &str = "The source is an image; it has no text.";
const NO_TEXT: &str = "The source rendered to no text.";
const HASH_MISSED: &str = "The recorded chunk hash matched no re-derived chunk (chunking \
configuration changed since extraction, or a domain extractor's own chunker produced it).";

/// Hydrates the passage behind `particle_id` (exact id).
///
/// # Errors
///
/// A store read that fails.
pub(crate) fn hydrate(
    store: &Store,
    particle_id: &str,
    settings: &PassageSettings,
) -> particles_store::Result<Hydrated> {
    let Some(particle) = particles_store::particles_by_ids(store, &[particle_id])?
        .into_iter()
        .next()
    else {
        return Ok(Hydrated::Missing);
    };
    let mut passage = SourcePassage {
        particle_id: particle.id.clone(),
        match_kind: "UNAVAILABLE",
        text: String::new(),
        corpus_entry_id: None,
        snapshot_id: None,
        uri_r: None,
        source_type: None,
        locate_overlap: None,
        snapshot_chars: 0,
        truncated: false,
        note: None,
    };
    let Some(reference) = particle
        .provenance
        .iter()
        .find(|r| r.ref_type == ProvenanceRefType::Source && !r.corpus_entry_id.is_empty())
    else {
        passage.note = Some(NO_SOURCE.to_owned());
        return Ok(Hydrated::Passage(passage));
    };
    let entry = particles_store::corpus_entry(store, &reference.corpus_entry_id)?;
    let mut notes: Vec<&str> = Vec::new();
    let snapshot: Option<SnapshotRecord> = match &reference.snapshot_id {
        Some(snapshot_id) if !snapshot_id.is_empty() => {
            particles_store::snapshot_by_id(store, snapshot_id)?
        }
        _ => {
            let resolved = particles_store::resolve_snapshot(store, &reference.corpus_entry_id)?;
            notes.push(NOT_PINNED);
            match resolved {
                SnapshotResolution::Found(row) => Some(row),
                SnapshotResolution::Missing => None,
                SnapshotResolution::Ambiguous { kind, count } => {
                    return Ok(Hydrated::Raised(format!(
                        "ambiguous {kind} prefix {:?} matches {count} rows",
                        reference.corpus_entry_id
                    )))
                }
            }
        }
    };
    passage.corpus_entry_id = Some(reference.corpus_entry_id.clone());
    passage.snapshot_id = snapshot
        .as_ref()
        .map(|s| s.snapshot_id.clone())
        .or_else(|| reference.snapshot_id.clone());
    passage.uri_r = entry.as_ref().and_then(|e| e.uri_r.clone());
    passage.source_type = entry.as_ref().map(|e| e.source_type.clone());
    let Some(snapshot) = snapshot else {
        passage.note = Some(NO_SNAPSHOT.to_owned());
        return Ok(Hydrated::Passage(passage));
    };
    let Some(path) = blob_path(&settings.blob_dir, &snapshot.content_hash) else {
        return Ok(Hydrated::Raised(format!(
            "content_hash must be a 64-char lowercase SHA-256 hex digest, got {:?}",
            snapshot.content_hash
        )));
    };
    let content = match std::fs::read(&path) {
        Ok(content) => content,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            passage.note = Some(NO_BLOB.to_owned());
            return Ok(Hydrated::Passage(passage));
        }
        Err(e) => return Ok(Hydrated::Raised(format!("{}: {e}", path.display()))),
    };
    if is_image(&content) {
        passage.note = Some(IMAGE.to_owned());
        return Ok(Hydrated::Passage(passage));
    }
    if content.starts_with(b"%PDF") || is_html(&content) {
        return Ok(Hydrated::Unrendered(passage));
    }
    let text = extractor_view_text(&content, passage.source_type.as_deref(), settings);
    if pytext::strip(&text).is_empty() {
        passage.note = Some(NO_TEXT.to_owned());
        return Ok(Hydrated::Passage(passage));
    }
    let record = entry
        .as_ref()
        .is_some_and(|e| e.mutability == "APPEND_ONLY" || e.source_type == "CONVERSATION");
    let chunk_hash = reference.chunk_hash.as_deref().filter(|h| !h.is_empty());
    let (kind, found, overlap) = derive_passage(&text, &particle, chunk_hash, record, settings);
    if chunk_hash.is_some() && kind != "EXACT" {
        notes.push(HASH_MISSED);
    }
    let found_chars: Vec<char> = found.chars().collect();
    let truncated = found_chars.len() > settings.max_passage_chars;
    passage.match_kind = kind;
    passage.text = if truncated {
        found_chars[..settings.max_passage_chars].iter().collect()
    } else {
        found
    };
    passage.locate_overlap = overlap;
    passage.snapshot_chars = text.chars().count();
    passage.truncated = truncated;
    passage.note = (!notes.is_empty()).then(|| notes.join(" "));
    Ok(Hydrated::Passage(passage))
}

/// `<blob_dir>/<hh>/<hash>`, or `None` for a hash that is not 64 lower-case hex
/// digits (the reference raises).
fn blob_path(blob_dir: &Path, content_hash: &str) -> Option<PathBuf> {
    let valid = content_hash.len() == 64
        && content_hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    valid.then(|| blob_dir.join(&content_hash[..2]).join(content_hash))
}

fn is_image(content: &[u8]) -> bool {
    const MAGIC: [&[u8]; 4] = [b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a"];
    MAGIC.iter().any(|magic| content.starts_with(magic))
        || (content.get(..4) == Some(b"RIFF") && content.get(8..12) == Some(b"WEBP"))
}

fn is_html(content: &[u8]) -> bool {
    let sniff = content[..content.len().min(1024)].to_ascii_lowercase();
    let contains = |needle: &[u8]| sniff.windows(needle.len()).any(|w| w == needle);
    contains(b"<!doctype html") || contains(b"<html")
}

/// The text the general extractor was shown: the bytes decoded (invalid UTF-8
/// replaced), Markdown frontmatter dropped for `LOCAL_MARKDOWN`, tool turns
/// relabelled for the conversational source types.
fn extractor_view_text(
    content: &[u8],
    source_type: Option<&str>,
    settings: &PassageSettings,
) -> String {
    let mut text = String::from_utf8_lossy(content).into_owned();
    if source_type == Some("LOCAL_MARKDOWN") {
        text = strip_frontmatter(&text);
    }
    if source_type.is_some_and(|t| settings.tool_turn_source_types.iter().any(|s| s == t)) {
        text = mark_tool_turns(&text);
    }
    text
}

/// The body after an Obsidian frontmatter block (`---` first line, a closing
/// `---` line within the first 8192 characters), else the text unchanged.
fn strip_frontmatter(text: &str) -> String {
    let after_open = if text.starts_with("---\n") {
        4
    } else if text.starts_with("---\r\n") {
        5
    } else {
        return text.to_owned();
    };
    let chars: Vec<char> = text.chars().collect();
    let lookup_end = chars.len().min(8192);
    let haystack = &chars[after_open..lookup_end.max(after_open)];
    let mut cursor = 0;
    let mut close = None;
    while cursor < haystack.len() {
        let newline = haystack[cursor..]
            .iter()
            .position(|&c| c == '\n')
            .map(|p| p + cursor);
        let line: String = haystack[cursor..newline.unwrap_or(haystack.len())]
            .iter()
            .collect();
        if line.trim_end_matches(pytext::is_space) == "---" {
            close = Some(cursor);
            break;
        }
        match newline {
            Some(n) => cursor = n + 1,
            None => break,
        }
    }
    let Some(close) = close else {
        return text.to_owned();
    };
    let mut body_start = after_open + close + 3;
    if body_start < chars.len() && chars[body_start] == '\n' {
        body_start += 1;
    } else if body_start + 1 < chars.len()
        && chars[body_start] == '\r'
        && chars[body_start + 1] == '\n'
    {
        body_start += 2;
    }
    chars[body_start..].iter().collect()
}

const TOOL_TURN_LABEL: &str = "tool output (unverified, not the speaker's words)";

/// Splits `line` into (indent, rest) at the first character that is neither a
/// space nor a tab.
fn indent_of(line: &str) -> (&str, &str) {
    let end = line.find(|c| c != ' ' && c != '\t').unwrap_or(line.len());
    line.split_at(end)
}

/// The body of a `tool:` speaker turn (`tool`, `tool_result`, `tool output`,
/// `tool-output`, under `re.IGNORECASE`, then optional spaces, a colon), or of
/// a distilled `[tool: ...]` line. Case is matched as Python's `re` matches it
/// (`ſ` is an `s`), and the role's length is what it matched in `rest`.
fn tool_turn_body(rest: &str) -> Option<&str> {
    for role in ["tool", "tool_result", "tool output", "tool-output"] {
        let Some(end) = pytext::match_ignorecase(rest, role) else {
            continue;
        };
        let after = rest[end..].trim_start_matches(pytext::is_space);
        if let Some(body) = after.strip_prefix(':') {
            return Some(body.trim_start_matches(pytext::is_space));
        }
    }
    if let Some(end) = pytext::match_ignorecase(rest, "[tool:") {
        let after = rest[end..].trim_start_matches(pytext::is_space);
        // The lazy body ends at the first `]` followed only by whitespace.
        for (index, c) in after.char_indices() {
            if c == ']' && after[index + 1..].chars().all(pytext::is_space) {
                return Some(&after[..index]);
            }
        }
    }
    None
}

/// Relabels every tool turn (the reference's `mark_tool_turns`).
fn mark_tool_turns(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for line in particles_model::python_splitlines(text) {
        if line.contains(TOOL_TURN_LABEL) {
            out.push(line.to_owned());
            continue;
        }
        let (indent, rest) = indent_of(line);
        match tool_turn_body(rest) {
            Some(body) => out.push(format!(
                "{indent}{TOOL_TURN_LABEL}: {}",
                pytext::strip(body)
            )),
            None => out.push(line.to_owned()),
        }
    }
    let mut joined = out.join("\n");
    if text.ends_with('\n') {
        joined.push('\n');
    }
    joined
}

/// Cosmetic noise removed before chunking (the reference's
/// `_normalise_for_hashing`): `[edit]` markers and whole-line wiki footers.
fn normalise_for_hashing(text: &str) -> String {
    remove_wiki_footers(&remove_edit_markers(text))
}

/// `re.sub(r"\[\s*edit\s*\]", "", text, flags=re.IGNORECASE)`: `\s` is
/// Python's whitespace and `edit` matches as `re` folds case.
fn remove_edit_markers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = text[at..].find('[') {
        let open = at + found;
        out.push_str(&text[at..open]);
        match edit_marker_end(&text[open + 1..]) {
            Some(len) => at = open + 1 + len,
            None => {
                out.push('[');
                at = open + 1;
            }
        }
    }
    out.push_str(&text[at..]);
    out
}

/// After a `[`: the length of `\s*edit\s*\]`, when it follows.
fn edit_marker_end(rest: &str) -> Option<usize> {
    let spaced = rest.trim_start_matches(pytext::is_space);
    let end = pytext::match_ignorecase(spaced, "edit")?;
    let tail = spaced[end..].trim_start_matches(pytext::is_space);
    tail.starts_with(']').then(|| rest.len() - tail.len() + 1)
}

/// The reference's whole-line wiki footers, under `re.IGNORECASE |
/// re.MULTILINE`: `^[ \t]*(?:This page was last (?:edited|modified)|Retrieved
/// from|Last updated)\b[^\n]*$`. A line (split at `\n` only, as `^` and `$`
/// see it) that matches is emptied; its newline stays.
fn remove_wiki_footers(text: &str) -> String {
    const OPENINGS: [&str; 4] = [
        "This page was last edited",
        "This page was last modified",
        "Retrieved from",
        "Last updated",
    ];
    let footer = |line: &str| {
        let rest = line.trim_start_matches([' ', '\t']);
        OPENINGS.iter().any(|opening| {
            pytext::match_ignorecase(rest, opening).is_some_and(|end| {
                // `\b` after a word character: the next is not one.
                !rest[end..].chars().next().is_some_and(pytext::is_word)
            })
        })
    };
    text.split('\n')
        .map(|line| if footer(line) { "" } else { line })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The chunks `_split_into_paragraph_chunks` cuts: at most `size` characters,
/// cut at the last paragraph break, else the last line break, else hard;
/// whitespace-trimmed, empty ones dropped.
fn paragraph_chunks(text: &[char], size: usize) -> Vec<String> {
    let rfind = |needle: &[char], start: usize, end: usize| -> Option<usize> {
        if end < start + needle.len() {
            return None;
        }
        (start..=end - needle.len())
            .rev()
            .find(|&i| text[i..i + needle.len()] == *needle)
    };
    let mut chunks = Vec::new();
    let mut push = |start: usize, end: usize| {
        let segment: String = text[start..end].iter().collect();
        let body = pytext::strip(&segment);
        if !body.is_empty() {
            chunks.push(body.to_owned());
        }
    };
    let n = text.len();
    let mut start = 0;
    while start < n {
        if n - start <= size {
            push(start, n);
            break;
        }
        let window_end = start + size;
        let (end, advance) =
            match rfind(&['\n', '\n'], start, window_end).filter(|&cut| cut > start) {
                Some(cut) => (cut, cut + 2 - start),
                None => match rfind(&['\n'], start, window_end).filter(|&nl| nl > start) {
                    Some(nl) => (nl, nl + 1 - start),
                    None => (window_end, size),
                },
            };
        push(start, end);
        start += advance;
    }
    chunks
}

fn find_chunk(text: &str, chunk_hash: &str, size: usize) -> Option<String> {
    let normalised: Vec<char> = normalise_for_hashing(text).chars().collect();
    paragraph_chunks(&normalised, size.max(1))
        .into_iter()
        .find(|chunk| {
            let digest = Sha256::digest(chunk.as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            hex == chunk_hash
        })
}

const STOPWORDS: &[&str] = &[
    "the", "and", "for", "that", "this", "with", "from", "are", "was", "were", "has", "have",
    "had", "not", "but", "its", "into", "than", "then", "they", "them", "their", "will", "would",
    "can", "could", "should", "been", "being", "which", "when", "what", "where", "who", "how",
    "also", "such", "each", "other", "over", "under",
];

/// Distinct terms: runs of `[a-z0-9_]` in the lower-cased text, three
/// characters or more, not a stopword.
fn terms(text: &str) -> HashSet<String> {
    let lowered = particles_pytext::lower(text);
    lowered
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
        .filter(|t| t.len() >= 3 && !STOPWORDS.contains(t))
        .map(str::to_owned)
        .collect()
}

/// Python's `re.split(r"\n\s*\n", text)`: a separator is a newline, the longest
/// run of whitespace after it that still ends in a newline.
fn split_paragraphs(text: &str) -> Vec<&str> {
    let bytes: Vec<(usize, char)> = text.char_indices().collect();
    let mut parts = Vec::new();
    let mut part_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].1 != '\n' {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < bytes.len() && pytext::is_space(bytes[j].1) {
            j += 1;
        }
        match (i + 1..j).rev().find(|&k| bytes[k].1 == '\n') {
            Some(k) => {
                parts.push(&text[part_start..bytes[i].0]);
                part_start = bytes[k].0 + 1;
                i = k + 1;
            }
            None => i += 1,
        }
    }
    parts.push(&text[part_start..]);
    parts
}

/// The best-overlap paragraph (or the line within it that alone carries all
/// its terms), with its share of the particle's distinct terms; `None` below
/// `floor`. Ties go to the first unit, or the last when `latest`.
fn locate_passage(text: &str, content: &str, latest: bool, floor: f64) -> Option<(String, f64)> {
    let wanted = terms(content);
    if wanted.is_empty() {
        return None;
    }
    let best = |units: &[&str]| -> (String, f64) {
        let mut best: Option<(&str, f64)> = None;
        for unit in units {
            let found = terms(unit);
            let score = wanted.intersection(&found).count() as f64 / wanted.len() as f64;
            let better = match best {
                None => true,
                Some((_, top)) => score > top || (latest && score == top),
            };
            if better {
                best = Some((unit, score));
            }
        }
        let (unit, score) = best.unwrap_or(("", 0.0));
        (unit.to_owned(), score)
    };
    let paragraphs: Vec<&str> = split_paragraphs(text)
        .into_iter()
        .map(pytext::strip)
        .filter(|p| !p.is_empty())
        .collect();
    if paragraphs.is_empty() {
        return None;
    }
    let (paragraph, score) = best(&paragraphs);
    if score < floor {
        return None;
    }
    let lines: Vec<&str> = particles_model::python_splitlines(&paragraph)
        .into_iter()
        .map(pytext::strip)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.len() > 1 {
        let (line, line_score) = best(&lines);
        if line_score >= score {
            return Some((line, line_score));
        }
    }
    Some((paragraph, score))
}

fn derive_passage(
    text: &str,
    particle: &Particle,
    chunk_hash: Option<&str>,
    record: bool,
    settings: &PassageSettings,
) -> (&'static str, String, Option<f64>) {
    if let Some(hash) = chunk_hash {
        if let Some(chunk) = find_chunk(text, hash, settings.html_chunk_size) {
            return ("EXACT", chunk, None);
        }
    }
    if let Some((passage, overlap)) =
        locate_passage(text, &particle.content, record, settings.locate_min_overlap)
    {
        return ("LOCATED", passage, Some(overlap));
    }
    ("WHOLE", pytext::strip(text).to_owned(), None)
}

#[cfg(test)]
mod tests;
