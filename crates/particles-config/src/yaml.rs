//! YAML as PyYAML's `safe_load` reads it (YAML 1.1), on top of an event parser.
//!
//! `saphyr-parser` gives events with positions and scalar styles; everything
//! PyYAML decides on top of the syntax is done here: the YAML 1.1 implicit
//! resolver for plain scalars (`yes`/`on` are booleans, `010` is octal, `1:30` is
//! 90, a float needs a dot), the safe constructor's tags, merge keys `<<`,
//! anchors and aliases, Python's dict semantics for repeated keys (the last
//! value wins, the first position stays, and `1`, `1.0` and `true` are one key),
//! and the refusal of several documents in one stream or of a repeated anchor.
//!
//! Known gaps: `!!omap` and `!!pairs` are refused (PyYAML builds lists of
//! pairs); a `!!set` becomes a list in document order (Python's is hash order);
//! U+2028/U+2029 are not line breaks here; and where YAML 1.1 and 1.2 syntax
//! differ beyond what the differential corpus covers, the parser is 1.2.

use std::{collections::HashSet, fmt};

use saphyr_parser::{Event, Parser, ScalarStyle, Span, Tag};

/// Where a raw value came from, before validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pos {
    /// The config file, 1-based line and column.
    File { line: usize, column: usize },
    /// An environment override.
    Env { var: String },
}

/// An integer as Python holds it: unbounded. Values past `i128` keep their
/// decimal text, which is all validation needs from them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Int {
    Small(i128),
    Big(String),
}

impl Int {
    pub(crate) fn from_decimal(negative: bool, digits: &str) -> Option<Int> {
        let digits = digits.trim_start_matches('0');
        if digits.is_empty() {
            return Some(Int::Small(0));
        }
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let text = if negative {
            format!("-{digits}")
        } else {
            digits.to_owned()
        };
        Some(match text.parse::<i128>() {
            Ok(value) => Int::Small(value),
            Err(_) => Int::Big(text),
        })
    }

    /// `-self`, exact at any size (`-i128::MIN` becomes a `Big`).
    pub(crate) fn negated(self) -> Int {
        match self {
            Int::Small(value) => value
                .checked_neg()
                .map_or_else(|| Int::Big(value.unsigned_abs().to_string()), Int::Small),
            // A negative `Big` is below i128::MIN, so its negation is above
            // i128::MAX; a positive one may negate to exactly i128::MIN.
            Int::Big(digits) => match digits.strip_prefix('-') {
                Some(positive) => Int::Big(positive.to_owned()),
                None => Int::from_decimal(true, &digits)
                    .unwrap_or_else(|| Int::Big(format!("-{digits}"))),
            },
        }
    }

    /// The nearest f64, as Python's `float(int)` gives it; `None` when it
    /// overflows (Python raises `OverflowError`).
    pub(crate) fn to_f64(&self) -> Option<f64> {
        let value = match self {
            // Rounds to nearest, ties to even, like CPython.
            Int::Small(value) => *value as f64,
            Int::Big(text) => text.parse::<f64>().ok()?,
        };
        value.is_finite().then_some(value)
    }

    pub(crate) fn is_negative(&self) -> bool {
        match self {
            Int::Small(value) => *value < 0,
            Int::Big(text) => text.starts_with('-'),
        }
    }
}

impl fmt::Display for Int {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Int::Small(value) => write!(f, "{value}"),
            Int::Big(text) => f.write_str(text),
        }
    }
}

/// A constructed value: what `yaml.safe_load` returns, with positions.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) value: NodeValue,
    pub(crate) pos: Pos,
}

/// One mapping entry after Python's dict semantics were applied.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The key first inserted (Python keeps the first key object).
    pub(crate) key: Node,
    /// The value last assigned.
    pub(crate) value: Node,
    /// Where the winning occurrence's key stands: provenance points there.
    pub(crate) key_pos: Pos,
}

#[derive(Debug, Clone)]
pub(crate) enum NodeValue {
    Null,
    Bool(bool),
    Int(Int),
    Float(f64),
    Str(String),
    /// A `date` or `datetime` (PyYAML's timestamp), kept as its text. Every
    /// configuration field refuses it, so only its kind matters.
    Timestamp(String),
    /// `!!binary`: Python `bytes`.
    Bytes(Vec<u8>),
    Seq(Vec<Node>),
    Map(Vec<Entry>),
}

impl NodeValue {
    /// A Python type name, for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            NodeValue::Null => "null",
            NodeValue::Bool(_) => "a boolean",
            NodeValue::Int(_) => "an integer",
            NodeValue::Float(_) => "a float",
            NodeValue::Str(_) => "a string",
            NodeValue::Timestamp(_) => "a timestamp",
            NodeValue::Bytes(_) => "bytes",
            NodeValue::Seq(_) => "a list",
            NodeValue::Map(_) => "a mapping",
        }
    }
}

impl Node {
    pub(crate) fn new(value: NodeValue, pos: Pos) -> Node {
        Node { value, pos }
    }

    pub(crate) fn as_map(&self) -> Option<&Vec<Entry>> {
        match &self.value {
            NodeValue::Map(entries) => Some(entries),
            _ => None,
        }
    }

    pub(crate) fn as_map_mut(&mut self) -> Option<&mut Vec<Entry>> {
        match &mut self.value {
            NodeValue::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The key as a location item, as pydantic reports it: ints (and bools, as
    /// ints) stay numbers, strings stay strings, anything else is its repr.
    pub(crate) fn key_text(&self) -> String {
        match &self.value {
            NodeValue::Str(text) => text.clone(),
            NodeValue::Int(value) => value.to_string(),
            NodeValue::Bool(value) => u8::from(*value).to_string(),
            NodeValue::Null => "None".to_owned(),
            NodeValue::Float(value) => crate::pyfmt::float_repr(*value),
            NodeValue::Timestamp(text) => text.clone(),
            NodeValue::Bytes(bytes) => format!(
                "b{}",
                crate::pyfmt::str_repr(&String::from_utf8_lossy(bytes))
            ),
            NodeValue::Seq(_) | NodeValue::Map(_) => "?".to_owned(),
        }
    }
}

/// Python's `==` between two hashable keys (`1 == 1.0 == True`).
pub(crate) fn keys_equal(a: &NodeValue, b: &NodeValue) -> bool {
    fn number(value: &NodeValue) -> Option<Number> {
        match value {
            NodeValue::Bool(value) => Some(Number::Int(i128::from(*value))),
            NodeValue::Int(Int::Small(value)) => Some(Number::Int(*value)),
            NodeValue::Int(Int::Big(text)) => Some(Number::Big(text.clone())),
            NodeValue::Float(value) => Some(Number::Float(*value)),
            _ => None,
        }
    }
    enum Number {
        Int(i128),
        Big(String),
        Float(f64),
    }
    match (a, b) {
        (NodeValue::Null, NodeValue::Null) => true,
        (NodeValue::Str(a), NodeValue::Str(b)) => a == b,
        (NodeValue::Timestamp(a), NodeValue::Timestamp(b)) => a == b,
        (NodeValue::Bytes(a), NodeValue::Bytes(b)) => a == b,
        _ => match (number(a), number(b)) {
            (Some(Number::Int(a)), Some(Number::Int(b))) => a == b,
            (Some(Number::Big(a)), Some(Number::Big(b))) => a == b,
            (Some(Number::Float(a)), Some(Number::Float(b))) => a == b,
            (Some(Number::Int(i)), Some(Number::Float(f)))
            | (Some(Number::Float(f)), Some(Number::Int(i))) => {
                // Exact: an integral float within range equals that integer.
                f.fract() == 0.0 && f.abs() < 1.7e38 && f as i128 == i
            }
            _ => false,
        },
    }
}

/// Looks a string key up with dict semantics.
pub(crate) fn get<'a>(entries: &'a [Entry], key: &str) -> Option<&'a Entry> {
    entries
        .iter()
        .find(|entry| matches!(&entry.key.value, NodeValue::Str(text) if text == key))
}

pub(crate) fn get_mut<'a>(entries: &'a mut [Entry], key: &str) -> Option<&'a mut Entry> {
    entries
        .iter_mut()
        .find(|entry| matches!(&entry.key.value, NodeValue::Str(text) if text == key))
}

/// `dict.pop(key, None)`: removes the entry and returns its value.
pub(crate) fn pop(entries: &mut Vec<Entry>, key: &str) -> Option<Node> {
    let index = entries
        .iter()
        .position(|entry| matches!(&entry.key.value, NodeValue::Str(text) if text == key))?;
    Some(entries.remove(index).value)
}

/// `dict[key] = value`: keeps the position of an existing key.
pub(crate) fn set(entries: &mut Vec<Entry>, key: &str, value: Node) {
    let key_pos = value.pos.clone();
    if let Some(entry) = get_mut(entries, key) {
        entry.value = value;
        entry.key_pos = key_pos;
    } else {
        entries.push(Entry {
            key: Node::new(NodeValue::Str(key.to_owned()), key_pos.clone()),
            value,
            key_pos,
        });
    }
}

/// Why a document did not load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct YamlError {
    /// 1-based.
    pub(crate) line: usize,
    /// 1-based.
    pub(crate) column: usize,
    pub(crate) message: String,
    /// A scanner/parser error (true) or one PyYAML's constructor or composer
    /// raises on well-formed syntax (false).
    pub(crate) syntax: bool,
}

fn construct_error(line: usize, column: usize, message: impl Into<String>) -> YamlError {
    YamlError {
        line,
        column,
        message: message.into(),
        syntax: false,
    }
}

/// The composed graph, before construction (PyYAML's nodes).
#[derive(Debug, Clone)]
struct Composed {
    /// Node identity: an alias yields a copy with its anchor's id, as PyYAML
    /// hands out the same node object.
    id: usize,
    kind: ComposedKind,
    tag: Option<Tag>,
    line: usize,
    column: usize,
}

#[derive(Debug, Clone)]
enum ComposedKind {
    Scalar { text: String, plain: bool },
    Seq(Vec<Composed>),
    Map(Vec<(Composed, Composed)>),
}

/// A guard against alias bombs: PyYAML shares aliased objects, a tree copies them.
const MAX_NODES: usize = 1_000_000;

struct Composer<'input> {
    parser: Parser<'input, saphyr_parser::StrInput<'input>>,
    /// The text, to read anchor names back (the parser keeps only ids).
    text: &'input str,
    /// Anchor names defined in this document: PyYAML refuses a repeat.
    anchor_names: Vec<String>,
    anchors: Vec<Option<Composed>>,
    n_nodes: usize,
    next_id: usize,
}

impl<'input> Composer<'input> {
    fn next(&mut self) -> Result<(Event<'input>, Span), YamlError> {
        match self.parser.next_event() {
            Some(Ok(pair)) => Ok(pair),
            Some(Err(error)) => Err(YamlError {
                line: error.marker().line(),
                column: error.marker().col() + 1,
                message: error.info().to_owned(),
                syntax: true,
            }),
            None => Err(YamlError {
                line: 0,
                column: 0,
                message: "unexpected end of the event stream".to_owned(),
                syntax: true,
            }),
        }
    }

    /// The anchor name in the node properties at `span` (`&name`, possibly
    /// after a tag): the parser's node spans start at the properties.
    fn anchor_name(&self, span: Span) -> Option<String> {
        let start = self.text.char_indices().nth(span.start.index())?.0;
        let mut rest = &self.text[start..];
        if rest.starts_with('!') {
            let end = rest.find(char::is_whitespace)?;
            rest = rest[end..].trim_start();
        }
        let name = rest.strip_prefix('&')?;
        let end = name
            .find(|c: char| c.is_whitespace() || ",[]{}".contains(c))
            .unwrap_or(name.len());
        Some(name[..end].to_owned())
    }

    fn remember(&mut self, anchor: usize, node: &Composed, span: Span) -> Result<(), YamlError> {
        if anchor == 0 {
            return Ok(());
        }
        if let Some(name) = self.anchor_name(span) {
            if self.anchor_names.contains(&name) {
                return Err(construct_error(
                    node.line,
                    node.column,
                    format!("found duplicate anchor '{name}'"),
                ));
            }
            self.anchor_names.push(name);
        }
        if self.anchors.len() <= anchor {
            self.anchors.resize(anchor + 1, None);
        }
        self.anchors[anchor] = Some(node.clone());
        Ok(())
    }

    fn count(&mut self, line: usize, column: usize) -> Result<(), YamlError> {
        self.n_nodes += 1;
        if self.n_nodes > MAX_NODES {
            return Err(construct_error(
                line,
                column,
                "the document expands to more than a million nodes through aliases",
            ));
        }
        Ok(())
    }

    fn node(&mut self, event: Event<'input>, span: Span) -> Result<Composed, YamlError> {
        let line = span.start.line();
        let column = span.start.col() + 1;
        self.count(line, column)?;
        self.next_id += 1;
        let id = self.next_id;
        match event {
            Event::Alias(anchor) => match self.anchors.get(anchor).cloned().flatten() {
                Some(node) => {
                    self.n_nodes += node_size(&node);
                    if self.n_nodes > MAX_NODES {
                        return Err(construct_error(line, column, "alias expansion too large"));
                    }
                    Ok(node)
                }
                None => Err(construct_error(line, column, "found undefined alias")),
            },
            Event::Scalar(text, style, anchor, tag) => {
                // PyYAML's scanner: '|' and '>' start a block scalar, and cannot
                // start a plain one (saphyr reads one in a flow collection).
                if style == ScalarStyle::Plain && text.starts_with(['|', '>']) {
                    return Err(YamlError {
                        line,
                        column,
                        message: "while scanning for the next token found character that cannot start any token".to_owned(),
                        syntax: true,
                    });
                }
                let node = Composed {
                    id,
                    kind: ComposedKind::Scalar {
                        text: text.into_owned(),
                        plain: style == ScalarStyle::Plain,
                    },
                    tag: tag.map(|tag| tag.into_owned()),
                    line,
                    column,
                };
                self.remember(anchor, &node, span)?;
                Ok(node)
            }
            Event::SequenceStart(anchor, tag) => {
                let mut items = Vec::new();
                loop {
                    let (event, span) = self.next()?;
                    if matches!(event, Event::SequenceEnd) {
                        break;
                    }
                    items.push(self.node(event, span)?);
                }
                let node = Composed {
                    id,
                    kind: ComposedKind::Seq(items),
                    tag: tag.map(|tag| tag.into_owned()),
                    line,
                    column,
                };
                self.remember(anchor, &node, span)?;
                Ok(node)
            }
            Event::MappingStart(anchor, tag) => {
                let mut pairs = Vec::new();
                loop {
                    let (event, span) = self.next()?;
                    if matches!(event, Event::MappingEnd) {
                        break;
                    }
                    let key = self.node(event, span)?;
                    let (event, span) = self.next()?;
                    let value = self.node(event, span)?;
                    pairs.push((key, value));
                }
                let node = Composed {
                    id,
                    kind: ComposedKind::Map(pairs),
                    tag: tag.map(|tag| tag.into_owned()),
                    line,
                    column,
                };
                self.remember(anchor, &node, span)?;
                Ok(node)
            }
            other => Err(YamlError {
                line,
                column,
                message: format!("unexpected event {other:?}"),
                syntax: true,
            }),
        }
    }
}

fn node_size(node: &Composed) -> usize {
    match &node.kind {
        ComposedKind::Scalar { .. } => 1,
        ComposedKind::Seq(items) => 1 + items.iter().map(node_size).sum::<usize>(),
        ComposedKind::Map(pairs) => {
            1 + pairs
                .iter()
                .map(|(k, v)| node_size(k) + node_size(v))
                .sum::<usize>()
        }
    }
}

/// `yaml.safe_load(text)`: `None` for an empty stream.
pub(crate) fn safe_load(text: &str) -> Result<Option<Node>, YamlError> {
    // YAML 1.1 (PyYAML) reads NEL as a line break; YAML 1.2 parsers do not.
    let text = text.replace('\u{85}', "\n");
    let mut composer = Composer {
        parser: Parser::new_from_str(&text),
        text: &text,
        anchor_names: Vec::new(),
        anchors: Vec::new(),
        n_nodes: 0,
        next_id: 0,
    };
    let mut document: Option<Composed> = None;
    let mut n_documents = 0usize;
    loop {
        let (event, span) = composer.next()?;
        match event {
            Event::StreamStart | Event::DocumentEnd | Event::Nothing => {}
            Event::StreamEnd => break,
            Event::DocumentStart(_) => {
                n_documents += 1;
                if n_documents > 1 {
                    return Err(construct_error(
                        span.start.line(),
                        span.start.col() + 1,
                        "expected a single document in the stream, but found another document",
                    ));
                }
                // PyYAML's anchors do not outlive their document.
                composer.anchors.clear();
                composer.anchor_names.clear();
            }
            event => {
                let node = composer.node(event, span)?;
                document = Some(node);
            }
        }
    }
    document
        .map(|node| {
            construct(&node).map_err(|error| first_error_in_pyyaml_order(&node).unwrap_or(error))
        })
        .transpose()
}

/// `base64.decodebytes` as PyYAML's `!!binary` calls it: characters outside
/// the alphabet are skipped, the padding must complete the last quantum.
fn decode_base64(text: &str) -> Result<Vec<u8>, String> {
    if !text.is_ascii() {
        return Err("failed to convert base64 data into ascii".to_owned());
    }
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut sextets = Vec::new();
    let mut padding = 0usize;
    for byte in text.bytes() {
        if byte == b'=' {
            padding += 1;
            if (sextets.len() + padding).is_multiple_of(4) {
                break;
            }
        } else if let Some(sextet) = value(byte) {
            if padding > 0 {
                padding = 0;
            }
            sextets.push(sextet);
        }
    }
    let remainder = sextets.len() % 4;
    if remainder == 1 {
        return Err("failed to decode base64 data: invalid number of data characters".to_owned());
    }
    if remainder != 0 && padding < 4 - remainder {
        return Err("failed to decode base64 data: Incorrect padding".to_owned());
    }
    let mut out = Vec::with_capacity(sextets.len() * 3 / 4);
    for chunk in sextets.chunks(4) {
        let mut bits = 0u32;
        for (index, sextet) in chunk.iter().enumerate() {
            bits |= u32::from(*sextet) << (18 - 6 * index);
        }
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Ok(out)
}

/// What a plain (or `!`-tagged) scalar resolves to under PyYAML's resolver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolved {
    Null,
    Bool,
    Int,
    Float,
    Timestamp,
    Merge,
    Value,
    Str,
}

/// PyYAML's implicit resolvers (`yaml/resolver.py`), applied to a plain scalar.
pub(crate) fn resolve_plain(text: &str) -> Resolved {
    // PyYAML picks the resolver list by the first character; an empty scalar
    // only has the null resolver.
    let Some(first) = text.chars().next() else {
        return Resolved::Null;
    };
    if "yYnNtTfFoO".contains(first) && is_bool(text) {
        return Resolved::Bool;
    }
    if "-+0123456789.".contains(first) && is_float(text) {
        return Resolved::Float;
    }
    if "-+0123456789".contains(first) && is_int(text) {
        return Resolved::Int;
    }
    if text == "<<" {
        return Resolved::Merge;
    }
    if matches!(text, "~" | "null" | "Null" | "NULL") {
        return Resolved::Null;
    }
    if first.is_ascii_digit() && is_timestamp(text) {
        return Resolved::Timestamp;
    }
    if text == "=" {
        return Resolved::Value;
    }
    Resolved::Str
}

fn is_bool(text: &str) -> bool {
    matches!(
        text,
        "yes"
            | "Yes"
            | "YES"
            | "no"
            | "No"
            | "NO"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    )
}

fn strip_sign(text: &str) -> &str {
    text.strip_prefix(['-', '+']).unwrap_or(text)
}

fn all(text: &str, allowed: impl Fn(u8) -> bool) -> bool {
    text.bytes().all(allowed)
}

fn digit_or_underscore(b: u8) -> bool {
    b.is_ascii_digit() || b == b'_'
}

/// `[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+` without the trailing part, which the
/// callers check: the sexagesimal groups after the first.
fn sexagesimal_tail(groups: &[&str]) -> bool {
    !groups.is_empty()
        && groups.iter().all(|group| match group.as_bytes() {
            [d] => d.is_ascii_digit(),
            [a, b] => (b'0'..=b'5').contains(a) && b.is_ascii_digit(),
            _ => false,
        })
}

/// PyYAML's int regex:
/// `[-+]?0b[0-1_]+ | [-+]?0[0-7_]+ | [-+]?(?:0|[1-9][0-9_]*) | [-+]?0x[0-9a-fA-F_]+ |
/// [-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+`
fn is_int(text: &str) -> bool {
    let body = strip_sign(text);
    if let Some(bits) = body.strip_prefix("0b") {
        return !bits.is_empty() && all(bits, |b| b == b'0' || b == b'1' || b == b'_');
    }
    if let Some(hex) = body.strip_prefix("0x") {
        return !hex.is_empty() && all(hex, |b| b.is_ascii_hexdigit() || b == b'_');
    }
    if let Some(octal) = body.strip_prefix('0') {
        return octal.is_empty() || all(octal, |b| (b'0'..=b'7').contains(&b) || b == b'_');
    }
    let mut groups = body.split(':');
    let head = groups.next().unwrap_or("");
    let head_ok = head
        .as_bytes()
        .first()
        .is_some_and(|b| (b'1'..=b'9').contains(b))
        && all(head, digit_or_underscore);
    if !head_ok {
        return false;
    }
    let tail: Vec<&str> = groups.collect();
    tail.is_empty() || sexagesimal_tail(&tail)
}

/// PyYAML's float regex:
/// `[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)? | \.[0-9][0-9_]*(?:[eE][-+][0-9]+)? |
/// [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]* | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)`
fn is_float(text: &str) -> bool {
    if matches!(text, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let body = strip_sign(text);
    if matches!(body, ".inf" | ".Inf" | ".INF") {
        return true;
    }
    fn exponent_ok(exponent: Option<&str>) -> bool {
        match exponent {
            None => true,
            Some(rest) => {
                let Some(digits) = rest.strip_prefix(['-', '+']) else {
                    return false;
                };
                !digits.is_empty() && all(digits, |b| b.is_ascii_digit())
            }
        }
    }
    fn split_exponent(text: &str) -> (&str, Option<&str>) {
        match text.find(['e', 'E']) {
            Some(index) => (&text[..index], Some(&text[index + 1..])),
            None => (text, None),
        }
    }
    // The unsigned `.5` form.
    if let Some(rest) = text.strip_prefix('.') {
        let (fraction, exponent) = split_exponent(rest);
        return fraction.as_bytes().first().is_some_and(u8::is_ascii_digit)
            && all(fraction, digit_or_underscore)
            && exponent_ok(exponent);
    }
    let Some(dot) = body.find('.') else {
        return false;
    };
    let (whole, rest) = (&body[..dot], &body[dot + 1..]);
    let whole_starts_ok = whole.as_bytes().first().is_some_and(u8::is_ascii_digit);
    if !whole_starts_ok {
        return false;
    }
    if whole.contains(':') {
        // Sexagesimal: no exponent allowed.
        let mut groups = whole.split(':');
        let head = groups.next().unwrap_or("");
        let tail: Vec<&str> = groups.collect();
        return all(head, digit_or_underscore)
            && sexagesimal_tail(&tail)
            && all(rest, digit_or_underscore);
    }
    let (fraction, exponent) = split_exponent(rest);
    all(whole, digit_or_underscore) && all(fraction, digit_or_underscore) && exponent_ok(exponent)
}

/// PyYAML's timestamp regex (the date form and the date-time form).
fn is_timestamp(text: &str) -> bool {
    timestamp_parts(text).is_some()
}

/// Hour, minute, second and the zone offset (hours, minutes) if given.
type TimeParts = (u32, u32, u32, Option<(i32, u32)>);

struct TimestampParts {
    year: u32,
    month: u32,
    day: u32,
    time: Option<TimeParts>,
}

fn take_digits(text: &str, min: usize, max: usize) -> Option<(&str, &str)> {
    let n = text
        .bytes()
        .take(max)
        .take_while(u8::is_ascii_digit)
        .count();
    (n >= min).then(|| text.split_at(n))
}

fn timestamp_parts(text: &str) -> Option<TimestampParts> {
    let (year, rest) = take_digits(text, 4, 4)?;
    let rest = rest.strip_prefix('-')?;
    let (month, rest) = take_digits(rest, 1, 2)?;
    let rest = rest.strip_prefix('-')?;
    let (day, rest) = take_digits(rest, 1, 2)?;
    let parse = |digits: &str| digits.parse::<u32>().ok();
    if rest.is_empty() {
        // The date-only form needs two-digit month and day.
        if month.len() != 2 || day.len() != 2 {
            return None;
        }
        return Some(TimestampParts {
            year: parse(year)?,
            month: parse(month)?,
            day: parse(day)?,
            time: None,
        });
    }
    let rest = if let Some(rest) = rest.strip_prefix(['T', 't']) {
        rest
    } else {
        let trimmed = rest.trim_start_matches([' ', '\t']);
        if trimmed.len() == rest.len() {
            return None;
        }
        trimmed
    };
    let (hour, rest) = take_digits(rest, 1, 2)?;
    let rest = rest.strip_prefix(':')?;
    let (minute, rest) = take_digits(rest, 2, 2)?;
    let rest = rest.strip_prefix(':')?;
    let (second, rest) = take_digits(rest, 2, 2)?;
    let rest = match rest.strip_prefix('.') {
        Some(fraction) => fraction.trim_start_matches(|c: char| c.is_ascii_digit()),
        None => rest,
    };
    let rest = rest.trim_start_matches([' ', '\t']);
    let zone = if rest.is_empty() {
        None
    } else if rest == "Z" {
        Some((0, 0))
    } else {
        let negative = rest.starts_with('-');
        let rest = rest.strip_prefix(['-', '+'])?;
        let (hours, rest) = take_digits(rest, 1, 2)?;
        let minutes = match rest.strip_prefix(':') {
            Some(minutes) => {
                let (minutes, tail) = take_digits(minutes, 2, 2)?;
                if !tail.is_empty() {
                    return None;
                }
                parse(minutes)?
            }
            None if rest.is_empty() => 0,
            None => return None,
        };
        let hours = i32::try_from(parse(hours)?).ok()?;
        Some((if negative { -hours } else { hours }, minutes))
    };
    Some(TimestampParts {
        year: parse(year)?,
        month: parse(month)?,
        day: parse(day)?,
        time: Some((parse(hour)?, parse(minute)?, parse(second)?, zone)),
    })
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        _ => 28,
    }
}

/// The checks `datetime.date`/`datetime.datetime`/`timezone` make when PyYAML
/// builds the value; a failure is a `ValueError` out of `safe_load`.
fn check_timestamp(parts: &TimestampParts) -> Result<(), String> {
    if parts.year == 0 {
        return Err("year 0 is out of range".to_owned());
    }
    if !(1..=12).contains(&parts.month) {
        return Err("month must be in 1..12".to_owned());
    }
    if parts.day == 0 || parts.day > days_in_month(parts.year, parts.month) {
        return Err("day is out of range for month".to_owned());
    }
    if let Some((hour, minute, second, zone)) = parts.time {
        if hour > 23 {
            return Err("hour must be in 0..23".to_owned());
        }
        if minute > 59 {
            return Err("minute must be in 0..59".to_owned());
        }
        if second > 59 {
            return Err("second must be in 0..59".to_owned());
        }
        if let Some((hours, minutes)) = zone {
            let total = i64::from(hours.abs()) * 60 + i64::from(minutes);
            if total >= 24 * 60 {
                return Err(
                    "offset must be a timedelta strictly between -24 and 24 hours".to_owned(),
                );
            }
        }
    }
    Ok(())
}

/// `construct_yaml_int` on any text (an explicit `!!int` reaches it with text
/// the resolver never checked; Python's `int(text, base)` then decides).
pub(crate) fn construct_int(text: &str) -> Result<Int, String> {
    let cleaned = text.replace('_', "");
    let (negative, body) = match cleaned.as_bytes().first() {
        Some(b'-') => (true, &cleaned[1..]),
        Some(b'+') => (false, &cleaned[1..]),
        _ => (false, cleaned.as_str()),
    };
    let invalid = || format!("invalid literal for int(): {text:?}");
    // PyYAML's `sign * int(rest)`: `rest` may carry its own sign ("--5" is 5).
    let signed = |value: Int| if negative { value.negated() } else { value };
    if body == "0" {
        return Ok(Int::Small(0));
    }
    if let Some(bits) = body.strip_prefix("0b") {
        return python_int(bits, 2).map(signed).ok_or_else(invalid);
    }
    if let Some(hex) = body.strip_prefix("0x") {
        return python_int(hex, 16).map(signed).ok_or_else(invalid);
    }
    if body.starts_with('0') {
        return python_int(body, 8).map(signed).ok_or_else(invalid);
    }
    if body.contains(':') {
        let mut value: i128 = 0;
        let mut base: i128 = 1;
        for part in body.split(':').rev() {
            let Some(Int::Small(digit)) = python_int(part, 10) else {
                return Err(invalid());
            };
            value = digit
                .checked_mul(base)
                .and_then(|d| d.checked_add(value))
                .ok_or_else(invalid)?;
            base = base.checked_mul(60).ok_or_else(invalid)?;
        }
        let value = if negative {
            // A part may be negative ("-1:-30"), so the sum may be i128::MIN.
            value.checked_neg().ok_or_else(invalid)?
        } else {
            value
        };
        return Ok(Int::Small(value));
    }
    python_int(body, 10).map(signed).ok_or_else(invalid)
}

/// `_PyUnicode_TransformDecimalAndSpaceToASCII`, which `int()` and `float()`
/// apply first: Unicode decimal digits become ASCII digits, Unicode spaces a
/// space, any other non-ASCII character an invalid one.
fn decimal_and_space_to_ascii(text: &str) -> String {
    text.chars()
        .map(|c| {
            if u32::from(c) < 127 {
                c
            } else if particles_pytext::is_space(c) {
                ' '
            } else {
                particles_pytext::decimal_value(c).map_or('?', |digit| char::from(b'0' + digit))
            }
        })
        .collect()
}

const PY_ASCII_SPACE: [char; 6] = [' ', '\t', '\n', '\u{b}', '\u{c}', '\r'];

/// Python's `int(text, base)` for base 2, 8, 10 or 16: surrounding whitespace,
/// a sign, the base's prefix (`0b`, `0o`, `0x`, any case) with one underscore
/// after it, digits with single underscores between them; any size.
fn python_int(text: &str, base: u32) -> Option<Int> {
    let ascii = decimal_and_space_to_ascii(text);
    let trimmed = ascii.trim_matches(PY_ASCII_SPACE);
    let (negative, mut rest) = match trimmed.as_bytes().first()? {
        b'-' => (true, &trimmed[1..]),
        b'+' => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let prefix = match base {
        2 => Some('b'),
        8 => Some('o'),
        16 => Some('x'),
        _ => None,
    };
    if let Some(letter) = prefix {
        let bytes = rest.as_bytes();
        if bytes.len() >= 2 && bytes[0] == b'0' && bytes[1].eq_ignore_ascii_case(&(letter as u8)) {
            rest = &rest[2..];
            rest = rest.strip_prefix('_').unwrap_or(rest);
        }
    }
    // Digits, in base 10 for the result: little-endian limbs of 10^9.
    let mut limbs: Vec<u64> = vec![0];
    let mut previous_digit = false;
    let mut any = false;
    for c in rest.chars() {
        if c == '_' {
            if !previous_digit {
                return None;
            }
            previous_digit = false;
            continue;
        }
        let digit = c.to_digit(base)?;
        let mut carry = u64::from(digit);
        for limb in &mut limbs {
            let value = *limb * u64::from(base) + carry;
            *limb = value % 1_000_000_000;
            carry = value / 1_000_000_000;
        }
        if carry > 0 {
            limbs.push(carry);
        }
        previous_digit = true;
        any = true;
    }
    if !any || !previous_digit {
        return None;
    }
    let mut digits = limbs.last().map(u64::to_string).unwrap_or_default();
    for limb in limbs.iter().rev().skip(1) {
        digits.push_str(&format!("{limb:09}"));
    }
    Int::from_decimal(negative, &digits)
}

/// `construct_yaml_float` on any text.
pub(crate) fn construct_float(text: &str) -> Result<f64, String> {
    let cleaned = particles_pytext::lower(&text.replace('_', ""));
    let (sign, body) = match cleaned.as_bytes().first() {
        Some(b'-') => (-1.0, &cleaned[1..]),
        Some(b'+') => (1.0, &cleaned[1..]),
        _ => (1.0, cleaned.as_str()),
    };
    let invalid = || format!("could not convert string to float: {text:?}");
    if body == ".inf" {
        return Ok(sign * f64::INFINITY);
    }
    if body == ".nan" {
        return Ok(f64::NAN);
    }
    if body.contains(':') {
        let mut value = 0.0f64;
        let mut base = 1.0f64;
        for part in body.split(':').rev() {
            let digit = python_float(part).ok_or_else(invalid)?;
            value += digit * base;
            base *= 60.0;
        }
        return Ok(sign * value);
    }
    Ok(sign * python_float(body).ok_or_else(invalid)?)
}

/// Python's `float(str)` for the text PyYAML hands it (already without `_`):
/// Unicode digits and spaces as `float()` reads them, ASCII whitespace trimmed.
fn python_float(text: &str) -> Option<f64> {
    let ascii = decimal_and_space_to_ascii(text);
    let text = ascii.trim_matches(PY_ASCII_SPACE);
    let lower = text.to_ascii_lowercase();
    let unsigned = lower.strip_prefix(['-', '+']).unwrap_or(&lower);
    if matches!(unsigned, "inf" | "infinity" | "nan") {
        return lower.parse::<f64>().ok();
    }
    if unsigned.starts_with(['-', '+']) {
        return None;
    }
    // Rust accepts the same decimal grammar, and is correctly rounded.
    text.parse::<f64>().ok()
}

/// The node's tag in full, as PyYAML looks its constructor up.
fn full_tag(node: &Composed) -> Option<String> {
    node.tag.as_ref().map(|tag| {
        if tag.handle == "tag:yaml.org,2002:" {
            format!("tag:yaml.org,2002:{}", tag.suffix)
        } else {
            format!("{}{}", tag.handle, tag.suffix)
        }
    })
}

fn unknown_tag_error(node: &Composed, tag: &str) -> YamlError {
    construct_error(
        node.line,
        node.column,
        format!("could not determine a constructor for the tag '{tag}'"),
    )
}

/// The tags a collection may carry (`!!set` only on a mapping).
fn check_collection_tag(node: &Composed) -> Result<(), YamlError> {
    let tag = full_tag(node);
    match (&node.kind, tag.as_deref()) {
        (_, None | Some("!"))
        | (ComposedKind::Seq(_), Some("tag:yaml.org,2002:seq"))
        | (ComposedKind::Map(_), Some("tag:yaml.org,2002:map" | "tag:yaml.org,2002:set")) => Ok(()),
        (ComposedKind::Scalar { .. }, _) => Ok(()),
        (_, Some(other)) => Err(unknown_tag_error(node, other)),
    }
}

/// The error PyYAML meets first, once `construct` has failed. PyYAML's
/// constructor is breadth-first: a collection is created empty and filled by a
/// generator that runs after every collection of the level above
/// (`construct_document`'s state generators), so of two errors at different
/// depths it reports the shallower one, where `construct`, depth-first, meets
/// the first in document order. Only the failing path pays for this walk.
fn first_error_in_pyyaml_order(root: &Composed) -> Option<YamlError> {
    let mut seen: HashSet<usize> = HashSet::new();
    let mut level: Vec<&Composed> = Vec::new();
    if let Err(error) = construct_object(root, &mut seen, &mut level) {
        return Some(error);
    }
    while !level.is_empty() {
        let mut next: Vec<&Composed> = Vec::new();
        for node in level {
            if let Err(error) = fill_collection(node, &mut seen, &mut next) {
                return Some(error);
            }
        }
        level = next;
    }
    None
}

/// PyYAML's `construct_object(node, deep=False)`: a scalar is constructed at
/// once; a collection's constructor is chosen at once (an unknown tag fails
/// here) and its contents are left to the next round, once per node, since
/// PyYAML caches constructed objects by node (aliases share them).
fn construct_object<'a>(
    node: &'a Composed,
    seen: &mut HashSet<usize>,
    next: &mut Vec<&'a Composed>,
) -> Result<(), YamlError> {
    if matches!(node.kind, ComposedKind::Scalar { .. }) {
        return construct(node).map(drop);
    }
    if !seen.insert(node.id) {
        return Ok(());
    }
    check_collection_tag(node)?;
    next.push(node);
    Ok(())
}

/// A collection's generator: its items, or its pairs after `flatten_mapping`,
/// in the order `construct` visits them.
fn fill_collection<'a>(
    node: &'a Composed,
    seen: &mut HashSet<usize>,
    next: &mut Vec<&'a Composed>,
) -> Result<(), YamlError> {
    match &node.kind {
        ComposedKind::Scalar { .. } => Ok(()),
        ComposedKind::Seq(items) => items
            .iter()
            .try_for_each(|item| construct_object(item, seen, next)),
        ComposedKind::Map(pairs) if full_tag(node).as_deref() == Some("tag:yaml.org,2002:set") => {
            for (key, _) in pairs {
                if matches!(key.kind, ComposedKind::Seq(_) | ComposedKind::Map(_)) {
                    return Err(construct_error(
                        key.line,
                        key.column,
                        "found unhashable key",
                    ));
                }
                construct_object(key, seen, next)?;
            }
            Ok(())
        }
        ComposedKind::Map(_) => {
            for (key, value) in flatten_mapping(node)? {
                if matches!(key.kind, ComposedKind::Seq(_) | ComposedKind::Map(_)) {
                    return Err(construct_error(
                        key.line,
                        key.column,
                        "while constructing a mapping, found unhashable key",
                    ));
                }
                if !is_value_key(key) {
                    construct_object(key, seen, next)?;
                }
                construct_object(value, seen, next)?;
            }
            Ok(())
        }
    }
}

fn construct(node: &Composed) -> Result<Node, YamlError> {
    let pos = Pos::File {
        line: node.line,
        column: node.column,
    };
    let tag = full_tag(node);
    let unknown_tag = |tag: &str| unknown_tag_error(node, tag);
    match &node.kind {
        ComposedKind::Scalar { text, plain } => {
            let resolved = match tag.as_deref() {
                None if *plain => resolve_plain(text),
                None | Some("!") => Resolved::Str,
                Some("tag:yaml.org,2002:str") => Resolved::Str,
                Some("tag:yaml.org,2002:null") => Resolved::Null,
                Some("tag:yaml.org,2002:bool") => Resolved::Bool,
                Some("tag:yaml.org,2002:int") => Resolved::Int,
                Some("tag:yaml.org,2002:float") => Resolved::Float,
                Some("tag:yaml.org,2002:timestamp") => Resolved::Timestamp,
                Some("tag:yaml.org,2002:merge") => Resolved::Merge,
                Some("tag:yaml.org,2002:value") => Resolved::Value,
                Some("tag:yaml.org,2002:binary") => {
                    let bytes = decode_base64(text)
                        .map_err(|message| construct_error(node.line, node.column, message))?;
                    return Ok(Node::new(NodeValue::Bytes(bytes), pos));
                }
                Some(
                    "tag:yaml.org,2002:map" | "tag:yaml.org,2002:seq" | "tag:yaml.org,2002:set",
                ) => {
                    return Err(construct_error(
                        node.line,
                        node.column,
                        "expected a collection node, but found scalar",
                    ))
                }
                Some(other) => return Err(unknown_tag(other)),
            };
            let fail = |message: String| construct_error(node.line, node.column, message);
            let value = match resolved {
                Resolved::Null => NodeValue::Null,
                Resolved::Str => NodeValue::Str(text.clone()),
                Resolved::Bool => match particles_pytext::lower(text).as_str() {
                    "yes" | "true" | "on" => NodeValue::Bool(true),
                    "no" | "false" | "off" => NodeValue::Bool(false),
                    _ => return Err(fail(format!("{text:?} is not a YAML boolean (KeyError)"))),
                },
                Resolved::Int => NodeValue::Int(construct_int(text).map_err(fail)?),
                Resolved::Float => NodeValue::Float(construct_float(text).map_err(fail)?),
                Resolved::Timestamp => {
                    let parts = timestamp_parts(text)
                        .ok_or_else(|| fail(format!("{text:?} is not a timestamp")))?;
                    check_timestamp(&parts).map_err(fail)?;
                    NodeValue::Timestamp(text.clone())
                }
                Resolved::Merge => return Err(unknown_tag("tag:yaml.org,2002:merge")),
                Resolved::Value => return Err(unknown_tag("tag:yaml.org,2002:value")),
            };
            Ok(Node::new(value, pos))
        }
        ComposedKind::Seq(items) => {
            match tag.as_deref() {
                None | Some("!") | Some("tag:yaml.org,2002:seq") => {}
                Some(other) => return Err(unknown_tag(other)),
            }
            let items = items.iter().map(construct).collect::<Result<Vec<_>, _>>()?;
            Ok(Node::new(NodeValue::Seq(items), pos))
        }
        ComposedKind::Map(pairs) => {
            match tag.as_deref() {
                None | Some("!") | Some("tag:yaml.org,2002:map") => {}
                // A Python set of the keys. pydantic turns it into a list in
                // Python's set order, which is hash order; document order here.
                Some("tag:yaml.org,2002:set") => {
                    let mut items: Vec<Node> = Vec::with_capacity(pairs.len());
                    for (key, _) in pairs {
                        if matches!(key.kind, ComposedKind::Seq(_) | ComposedKind::Map(_)) {
                            return Err(construct_error(
                                key.line,
                                key.column,
                                "found unhashable key",
                            ));
                        }
                        let item = construct(key)?;
                        if !items
                            .iter()
                            .any(|seen| keys_equal(&seen.value, &item.value))
                        {
                            items.push(item);
                        }
                    }
                    return Ok(Node::new(NodeValue::Seq(items), pos));
                }
                Some(other) => return Err(unknown_tag(other)),
            }
            let pairs = flatten_mapping(node)?;
            let mut entries: Vec<Entry> = Vec::with_capacity(pairs.len());
            for (key, value) in pairs {
                if matches!(key.kind, ComposedKind::Seq(_) | ComposedKind::Map(_)) {
                    return Err(construct_error(
                        key.line,
                        key.column,
                        "while constructing a mapping, found unhashable key",
                    ));
                }
                // PyYAML turns a `=` key into a plain string key.
                let key_node = if is_value_key(key) {
                    Node::new(
                        NodeValue::Str("=".to_owned()),
                        Pos::File {
                            line: key.line,
                            column: key.column,
                        },
                    )
                } else {
                    construct(key)?
                };
                let value_node = construct(value)?;
                let key_pos = key_node.pos.clone();
                match entries
                    .iter_mut()
                    .find(|entry| keys_equal(&entry.key.value, &key_node.value))
                {
                    Some(entry) => {
                        entry.value = value_node;
                        entry.key_pos = key_pos;
                    }
                    None => entries.push(Entry {
                        key: key_node,
                        value: value_node,
                        key_pos,
                    }),
                }
            }
            Ok(Node::new(NodeValue::Map(entries), pos))
        }
    }
}

fn scalar_resolves_to(node: &Composed, wanted: Resolved, tag_suffix: &str) -> bool {
    match (&node.kind, &node.tag) {
        (ComposedKind::Scalar { text, plain: true }, None) => resolve_plain(text) == wanted,
        (_, Some(tag)) => tag.handle == "tag:yaml.org,2002:" && tag.suffix == tag_suffix,
        _ => false,
    }
}

fn is_merge_key(node: &Composed) -> bool {
    scalar_resolves_to(node, Resolved::Merge, "merge")
}

fn is_value_key(node: &Composed) -> bool {
    scalar_resolves_to(node, Resolved::Value, "value")
}

/// The identity PyYAML 6.0.4 de-duplicates merged keys by: `id()` of the key
/// node's string. Aliased nodes share it; distinct nodes share it only when
/// CPython caches the string (the empty string and one Latin-1 character).
#[derive(PartialEq, Eq)]
enum KeyIdentity {
    Node(usize),
    Cached(String),
}

fn key_identity(key: &Composed) -> KeyIdentity {
    match &key.kind {
        ComposedKind::Scalar { text, .. } => {
            let mut chars = text.chars();
            match (chars.next(), chars.next()) {
                (None, _) => KeyIdentity::Cached(String::new()),
                (Some(c), None) if (c as u32) < 256 => KeyIdentity::Cached(text.clone()),
                _ => KeyIdentity::Node(key.id),
            }
        }
        _ => KeyIdentity::Node(key.id),
    }
}

/// PyYAML's `flatten_mapping` (6.0.4): the pairs of every merged mapping, in
/// order, each key identity once (the first merged occurrence), then the
/// mapping's own pairs. Construction then lets later pairs win, so among
/// merged mappings with distinct key nodes the *later* one wins, and the
/// mapping's own keys beat every merged one.
fn flatten_mapping(node: &Composed) -> Result<Vec<(&Composed, &Composed)>, YamlError> {
    let ComposedKind::Map(pairs) = &node.kind else {
        return Ok(Vec::new());
    };
    let mut merged: Vec<(&Composed, &Composed)> = Vec::new();
    let mut seen: Vec<KeyIdentity> = Vec::new();
    let mut own: Vec<(&Composed, &Composed)> = Vec::new();
    fn take<'a>(
        pairs: Vec<(&'a Composed, &'a Composed)>,
        merged: &mut Vec<(&'a Composed, &'a Composed)>,
        seen: &mut Vec<KeyIdentity>,
    ) {
        for (key, value) in pairs {
            let identity = key_identity(key);
            if !seen.contains(&identity) {
                seen.push(identity);
                merged.push((key, value));
            }
        }
    }
    for (key, value) in pairs {
        if !is_merge_key(key) {
            own.push((key, value));
            continue;
        }
        match &value.kind {
            ComposedKind::Map(_) => take(flatten_mapping(value)?, &mut merged, &mut seen),
            ComposedKind::Seq(items) => {
                for item in items {
                    if !matches!(item.kind, ComposedKind::Map(_)) {
                        return Err(construct_error(
                            item.line,
                            item.column,
                            "while constructing a mapping, expected a mapping for merging",
                        ));
                    }
                    take(flatten_mapping(item)?, &mut merged, &mut seen);
                }
            }
            ComposedKind::Scalar { .. } => return Err(construct_error(
                value.line,
                value.column,
                "while constructing a mapping, expected a mapping or list of mappings for merging",
            )),
        }
    }
    merged.extend(own);
    Ok(merged)
}

#[cfg(test)]
mod tests;

/// A YAML document (PyYAML's `safe_load`) as JSON, for a file the engine reads
/// as data (a projection manifest): `None` for an empty document. A non-string
/// key is written as its text; a timestamp as its text; bytes refused.
///
/// # Errors
///
/// The parse error, or a value JSON cannot hold.
pub fn yaml_to_json(text: &str) -> Result<Option<serde_json::Value>, String> {
    fn convert(node: &Node) -> Result<serde_json::Value, String> {
        use serde_json::Value as J;
        Ok(match &node.value {
            NodeValue::Null => J::Null,
            NodeValue::Bool(flag) => J::Bool(*flag),
            NodeValue::Int(Int::Small(int)) => i64::try_from(*int)
                .map(J::from)
                .or_else(|_| u64::try_from(*int).map(J::from))
                .map_err(|_| format!("the integer {int} is too large"))?,
            NodeValue::Int(Int::Big(text)) => {
                return Err(format!("the integer {text} is too large"))
            }
            NodeValue::Float(float) => {
                serde_json::Number::from_f64(*float).map_or(J::Null, J::Number)
            }
            NodeValue::Str(text) | NodeValue::Timestamp(text) => J::String(text.clone()),
            NodeValue::Bytes(_) => return Err("binary values are not data here".to_owned()),
            NodeValue::Seq(items) => J::Array(items.iter().map(convert).collect::<Result<_, _>>()?),
            NodeValue::Map(entries) => {
                let mut object = serde_json::Map::new();
                for entry in entries {
                    let key = match &entry.key.value {
                        NodeValue::Str(text) => text.clone(),
                        _ => match convert(&entry.key)? {
                            J::String(text) => text,
                            value => value.to_string(),
                        },
                    };
                    object.insert(key, convert(&entry.value)?);
                }
                J::Object(object)
            }
        })
    }
    match safe_load(text).map_err(|error| {
        format!(
            "line {}, column {}: {}",
            error.line, error.column, error.message
        )
    })? {
        None => Ok(None),
        Some(node) => convert(&node).map(Some),
    }
}
