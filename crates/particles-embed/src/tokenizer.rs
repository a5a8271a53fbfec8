//! BERT WordPiece tokenisation as `tokenizer.json` of all-MiniLM-L6-v2 specifies
//! it: the BERT normaliser (clean control characters, space out CJK ideographs,
//! lowercase, strip accents), the BERT pre-tokeniser (split on whitespace and
//! punctuation), greedy longest-match WordPiece with `##` continuations, then
//! `[CLS] … [SEP]` truncated to the model's 256 word pieces as
//! sentence-transformers does (not the 128 the file's own truncation says).

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;

/// The longest word WordPiece splits; longer words become `[UNK]`.
const MAX_WORD_CHARS: usize = 100;

/// A WordPiece vocabulary and the special token ids.
pub(crate) struct WordPiece {
    vocab: HashMap<String, u32>,
    unk: u32,
    cls: u32,
    sep: u32,
}

/// Why `tokenizer.json` could not be used.
#[derive(Debug, thiserror::Error)]
#[error("tokenizer.json: {0}")]
pub struct TokenizerError(pub(crate) String);

/// The part of `tokenizer.json` the encoder reads; serde skips the rest without
/// building it (a typed parse reads the 30k-entry vocabulary straight into the
/// map, several times faster than going through `serde_json::Value`).
#[derive(serde::Deserialize)]
struct TokenizerFile {
    model: TokenizerModel,
}

#[derive(serde::Deserialize)]
struct TokenizerModel {
    #[serde(rename = "type")]
    kind: String,
    vocab: HashMap<String, u32>,
}

impl WordPiece {
    /// Reads the WordPiece vocabulary out of a `tokenizer.json`.
    pub(crate) fn from_tokenizer_json(text: &str) -> Result<WordPiece, TokenizerError> {
        let file: TokenizerFile =
            serde_json::from_str(text).map_err(|e| TokenizerError(e.to_string()))?;
        if file.model.kind != "WordPiece" {
            return Err(TokenizerError(format!(
                "model type {:?} is not WordPiece",
                file.model.kind
            )));
        }
        let vocab = file.model.vocab;
        let id = |token: &str| {
            vocab
                .get(token)
                .copied()
                .ok_or_else(|| TokenizerError(format!("the vocabulary lacks {token}")))
        };
        Ok(WordPiece {
            unk: id("[UNK]")?,
            cls: id("[CLS]")?,
            sep: id("[SEP]")?,
            vocab,
        })
    }

    /// The largest id the vocabulary holds.
    pub(crate) fn max_id(&self) -> u32 {
        self.vocab.values().copied().max().unwrap_or(0)
    }

    /// The ids of `[CLS] text [SEP]`, at most `max_len` of them (the text's pieces are
    /// cut, the special tokens kept).
    pub(crate) fn encode(&self, text: &str, max_len: usize) -> Vec<u32> {
        let mut ids = vec![self.cls];
        let room = max_len.saturating_sub(2);
        let mut candidate = String::new();
        'words: for word in pre_tokenize(&normalize(text)) {
            for piece in self.word_pieces(&word, &mut candidate) {
                if ids.len() > room {
                    break 'words;
                }
                ids.push(piece);
            }
        }
        ids.push(self.sep);
        ids
    }

    /// Greedy longest-match WordPiece of one word; `candidate` is scratch space,
    /// so a lookup allocates nothing.
    fn word_pieces(&self, word: &str, candidate: &mut String) -> Vec<u32> {
        // Byte offsets of the char boundaries, the end included.
        let bounds: Vec<usize> = word
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(word.len()))
            .collect();
        let n_chars = bounds.len() - 1;
        if n_chars > MAX_WORD_CHARS {
            return vec![self.unk];
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < n_chars {
            let mut end = n_chars;
            let mut found = None;
            while start < end {
                candidate.clear();
                if start > 0 {
                    candidate.push_str("##");
                }
                candidate.push_str(&word[bounds[start]..bounds[end]]);
                if let Some(&id) = self.vocab.get(candidate.as_str()) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => {
                    pieces.push(id);
                    start = end;
                }
                // One unmatched piece makes the whole word unknown.
                None => return vec![self.unk],
            }
        }
        pieces
    }
}

fn is_control(ch: char) -> bool {
    if matches!(ch, '\t' | '\n' | '\r') {
        return false;
    }
    ch.is_control() || matches!(unicode_general_category(ch), Category::Format)
}

#[derive(PartialEq)]
enum Category {
    Format,
    Other,
}

/// Only the `Cf` (format) test the normaliser needs, for the characters that occur.
fn unicode_general_category(ch: char) -> Category {
    let format = matches!(ch as u32,
        0x00AD | 0x0600..=0x0605 | 0x061C | 0x06DD | 0x070F | 0x08E2 | 0x180E | 0x200B..=0x200F
        | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB
        | 0x110BD | 0x110CD | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A
        | 0xE0001 | 0xE0020..=0xE007F);
    if format {
        Category::Format
    } else {
        Category::Other
    }
}

fn is_whitespace(ch: char) -> bool {
    matches!(ch, ' ' | '\t' | '\n' | '\r') || ch.is_whitespace()
}

fn is_chinese(ch: char) -> bool {
    matches!(ch as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

fn is_punctuation(ch: char) -> bool {
    let code = ch as u32;
    // ASCII symbols count as punctuation for BERT, whatever Unicode says.
    if (33..=47).contains(&code)
        || (58..=64).contains(&code)
        || (91..=96).contains(&code)
        || (123..=126).contains(&code)
    {
        return true;
    }
    unicode_punctuation(ch)
}

/// Unicode general category P* for non-ASCII characters.
fn unicode_punctuation(ch: char) -> bool {
    use unicode_normalization::char::is_combining_mark;
    let _ = is_combining_mark;
    matches!(ch as u32,
        0x00A1 | 0x00A7 | 0x00AB | 0x00B6 | 0x00B7 | 0x00BB | 0x00BF | 0x037E | 0x0387
        | 0x055A..=0x055F | 0x0589 | 0x058A | 0x05BE | 0x05C0 | 0x05C3 | 0x05C6 | 0x05F3 | 0x05F4
        | 0x0609 | 0x060A | 0x060C | 0x060D | 0x061B | 0x061D..=0x061F | 0x066A..=0x066D | 0x06D4
        | 0x0964 | 0x0965 | 0x0970 | 0x0E4F | 0x0E5A | 0x0E5B | 0x10FB | 0x1360..=0x1368
        | 0x2010..=0x2027 | 0x2030..=0x2043 | 0x2045..=0x2051 | 0x2053..=0x205E | 0x207D | 0x207E
        | 0x208D | 0x208E | 0x2308..=0x230B | 0x2329 | 0x232A | 0x2768..=0x2775 | 0x27C5 | 0x27C6
        | 0x27E6..=0x27EF | 0x2983..=0x2998 | 0x29D8..=0x29DB | 0x29FC | 0x29FD | 0x2CF9..=0x2CFC
        | 0x2CFE | 0x2CFF | 0x2E00..=0x2E2E | 0x2E30..=0x2E4F | 0x3001..=0x3003 | 0x3008..=0x3011
        | 0x3014..=0x301F | 0x3030 | 0x303D | 0x30A0 | 0x30FB | 0xFE10..=0xFE19 | 0xFE30..=0xFE52
        | 0xFE54..=0xFE61 | 0xFE63 | 0xFE68 | 0xFE6A | 0xFE6B | 0xFF01..=0xFF03 | 0xFF05..=0xFF0A
        | 0xFF0C..=0xFF0F | 0xFF1A | 0xFF1B | 0xFF1F | 0xFF20 | 0xFF3B..=0xFF3D | 0xFF3F | 0xFF5B
        | 0xFF5D | 0xFF5F..=0xFF65)
}

/// The BERT normaliser: drop NUL, U+FFFD and control characters, map whitespace to
/// a space, space out CJK ideographs, lowercase, strip accents (NFD, drop marks).
pub(crate) fn normalize(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len());
    for ch in text.chars() {
        if ch == '\0' || ch == '\u{FFFD}' || is_control(ch) {
            continue;
        }
        if is_whitespace(ch) {
            cleaned.push(' ');
        } else if is_chinese(ch) {
            cleaned.push(' ');
            cleaned.push(ch);
            cleaned.push(' ');
        } else {
            cleaned.push(ch);
        }
    }
    cleaned
        .to_lowercase()
        .nfd()
        .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
        .collect()
}

/// The BERT pre-tokeniser: split on whitespace, and make each punctuation
/// character a word of its own.
pub(crate) fn pre_tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    for ch in text.chars() {
        if is_whitespace(ch) {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
        } else if is_punctuation(ch) {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            words.push(ch.to_string());
        } else {
            current.push(ch);
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}
