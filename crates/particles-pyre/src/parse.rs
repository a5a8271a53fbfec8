//! A port of CPython 3.11.7's `re/_parser.py` for str patterns: the same items,
//! the same rewrites, and an error wherever it raises one.

use super::{tables, PatternError};

/// `_sre.MAXREPEAT`: repeat counts must stay below it.
pub(super) const MAXREPEAT: u64 = 4_294_967_295;
const MAXGROUPS: u64 = 1_073_741_823;
/// `MAXWIDTH` of `SubPattern.getwidth`.
pub(super) const MAXWIDTH: u128 = 1 << 64;
/// Deeper nesting is refused (Python would hit its recursion limit somewhat later).
pub(super) const MAX_NESTING: usize = 400;

pub(super) const FLAG_TEMPLATE: u32 = 1;
pub(super) const FLAG_IGNORECASE: u32 = 2;
const FLAG_LOCALE: u32 = 4;
pub(super) const FLAG_MULTILINE: u32 = 8;
pub(super) const FLAG_DOTALL: u32 = 16;
pub(super) const FLAG_UNICODE: u32 = 32;
const FLAG_VERBOSE: u32 = 64;
pub(super) const FLAG_ASCII: u32 = 256;
pub(super) const TYPE_FLAGS: u32 = FLAG_ASCII | FLAG_LOCALE | FLAG_UNICODE;
const GLOBAL_FLAGS: u32 = FLAG_TEMPLATE | 128;

fn flag(c: char) -> Option<u32> {
    Some(match c {
        'i' => FLAG_IGNORECASE,
        'L' => FLAG_LOCALE,
        'm' => FLAG_MULTILINE,
        's' => FLAG_DOTALL,
        'x' => FLAG_VERBOSE,
        'a' => FLAG_ASCII,
        't' => FLAG_TEMPLATE,
        'u' => FLAG_UNICODE,
        _ => return None,
    })
}

/// Zero-width positions (`AT` codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum At {
    Beginning,
    End,
    BeginningString,
    EndString,
    Boundary,
    NonBoundary,
}

/// Character categories (`CATEGORY` codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Category {
    Digit,
    NotDigit,
    Space,
    NotSpace,
    Word,
    NotWord,
}

/// A member of a set (`IN`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SetItem {
    Negate,
    Literal(u32),
    Range(u32, u32),
    Category(Category),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RepeatKind {
    Greedy,
    Lazy,
    Possessive,
}

/// One parsed item (an `(op, av)` pair of the parser).
#[derive(Debug, Clone)]
pub(super) enum Item {
    Literal(u32),
    NotLiteral(u32),
    Any,
    In(Vec<SetItem>),
    At(At),
    Branch(Vec<Vec<Item>>),
    Repeat {
        min: u64,
        max: u64,
        kind: RepeatKind,
        body: Vec<Item>,
    },
    Subpattern {
        group: Option<usize>,
        add: u32,
        del: u32,
        body: Vec<Item>,
    },
    Atomic(Vec<Item>),
    Assert {
        behind: bool,
        negate: bool,
        body: Vec<Item>,
    },
    GroupRef(usize),
    GroupRefExists {
        group: usize,
        yes: Vec<Item>,
        no: Option<Vec<Item>>,
    },
}

impl Item {
    /// Python's `item[0] != prefix` for the branch-prefix rewrite: tuples holding
    /// a sub-pattern compare by identity, so only these can be equal.
    fn same(&self, other: &Item) -> bool {
        match (self, other) {
            (Item::Literal(a), Item::Literal(b)) | (Item::NotLiteral(a), Item::NotLiteral(b)) => {
                a == b
            }
            (Item::Any, Item::Any) => true,
            (Item::In(a), Item::In(b)) => a == b,
            (Item::At(a), Item::At(b)) => a == b,
            (Item::GroupRef(a), Item::GroupRef(b)) => a == b,
            _ => false,
        }
    }
}

/// A parsed pattern: its items, the final flags and the group count (group 0
/// included, as `State.groups`).
#[derive(Debug)]
pub(super) struct Parsed {
    pub(super) items: Vec<Item>,
    pub(super) flags: u32,
    pub(super) groups: usize,
    pub(super) group_widths: Vec<Option<(u128, u128)>>,
}

fn invalid(message: impl Into<String>) -> PatternError {
    PatternError::Invalid(message.into())
}

type Parse<T> = Result<T, PatternError>;

/// A token: one character, or a backslash and the character after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Char(char),
    Escape(char),
}

impl Token {
    fn len(self) -> usize {
        match self {
            Token::Char(_) => 1,
            Token::Escape(_) => 2,
        }
    }

    fn push_to(self, out: &mut String) {
        if let Token::Escape(c) = self {
            out.push('\\');
            out.push(c);
        } else if let Token::Char(c) = self {
            out.push(c);
        }
    }
}

struct Tokenizer {
    chars: Vec<char>,
    index: usize,
    next: Option<Token>,
}

impl Tokenizer {
    fn new(pattern: &str) -> Parse<Tokenizer> {
        let mut tokenizer = Tokenizer {
            chars: pattern.chars().collect(),
            index: 0,
            next: None,
        };
        tokenizer.advance()?;
        Ok(tokenizer)
    }

    fn advance(&mut self) -> Parse<()> {
        let Some(&c) = self.chars.get(self.index) else {
            self.next = None;
            return Ok(());
        };
        if c == '\\' {
            let Some(&escaped) = self.chars.get(self.index + 1) else {
                return Err(invalid("bad escape (end of pattern)"));
            };
            self.next = Some(Token::Escape(escaped));
            self.index += 2;
        } else {
            self.next = Some(Token::Char(c));
            self.index += 1;
        }
        Ok(())
    }

    fn match_char(&mut self, c: char) -> Parse<bool> {
        if self.next == Some(Token::Char(c)) {
            self.advance()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn get(&mut self) -> Parse<Option<Token>> {
        let this = self.next;
        self.advance()?;
        Ok(this)
    }

    fn next_char(&self) -> Option<char> {
        match self.next {
            Some(Token::Char(c)) => Some(c),
            _ => None,
        }
    }

    /// Up to `n` single-character tokens from `set`.
    fn getwhile(&mut self, n: usize, set: &str) -> Parse<String> {
        let mut result = String::new();
        for _ in 0..n {
            match self.next_char() {
                Some(c) if set.contains(c) => {
                    result.push(c);
                    self.advance()?;
                }
                _ => break,
            }
        }
        Ok(result)
    }

    fn getuntil(&mut self, terminator: char) -> Parse<String> {
        let mut result = String::new();
        loop {
            let c = self.next;
            self.advance()?;
            match c {
                None => return Err(invalid("missing terminator")),
                Some(Token::Char(t)) if t == terminator => {
                    if result.is_empty() {
                        return Err(invalid("missing group name"));
                    }
                    return Ok(result);
                }
                Some(token) => token.push_to(&mut result),
            }
        }
    }

    fn tell(&self) -> usize {
        self.index - self.next.map_or(0, Token::len)
    }

    fn seek(&mut self, index: usize) -> Parse<()> {
        self.index = index;
        self.advance()
    }
}

struct State {
    flags: u32,
    group_names: Vec<(String, usize)>,
    group_widths: Vec<Option<(u128, u128)>>,
    lookbehind_groups: Option<usize>,
    groupref_pos: Vec<u64>,
}

impl State {
    fn groups(&self) -> usize {
        self.group_widths.len()
    }

    fn open_group(&mut self, name: Option<String>) -> Parse<usize> {
        let gid = self.groups();
        self.group_widths.push(None);
        if self.groups() as u64 > MAXGROUPS {
            return Err(invalid("too many groups"));
        }
        if let Some(name) = name {
            if self.group_names.iter().any(|(n, _)| *n == name) {
                return Err(invalid("redefinition of group name"));
            }
            self.group_names.push((name, gid));
        }
        Ok(gid)
    }

    fn group_of(&self, name: &str) -> Option<usize> {
        self.group_names
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, gid)| *gid)
    }

    fn check_group(&self, gid: usize) -> bool {
        gid < self.groups() && self.group_widths[gid].is_some()
    }

    fn check_lookbehind_group(&self, gid: usize) -> Parse<()> {
        if let Some(first) = self.lookbehind_groups {
            if !self.check_group(gid) {
                return Err(invalid("cannot refer to an open group"));
            }
            if gid >= first {
                return Err(invalid(
                    "cannot refer to group defined in the same lookbehind subpattern",
                ));
            }
        }
        Ok(())
    }
}

/// `SubPattern.getwidth`.
pub(super) fn width(items: &[Item], group_widths: &[Option<(u128, u128)>]) -> (u128, u128) {
    let (mut lo, mut hi) = (0u128, 0u128);
    for item in items {
        let (i, j) = match item {
            Item::Branch(alternatives) => {
                let mut i = MAXWIDTH;
                let mut j = 0;
                for alternative in alternatives {
                    let (l, h) = width(alternative, group_widths);
                    i = i.min(l);
                    j = j.max(h);
                }
                (i, j)
            }
            Item::Atomic(body) | Item::Subpattern { body, .. } => width(body, group_widths),
            Item::Repeat { min, max, body, .. } => {
                let (i, j) = width(body, group_widths);
                let low = i.saturating_mul(u128::from(*min));
                let high = if *max == MAXREPEAT && j > 0 {
                    MAXWIDTH
                } else {
                    j.saturating_mul(u128::from(*max))
                };
                (low, high)
            }
            Item::Literal(_) | Item::NotLiteral(_) | Item::Any | Item::In(_) => (1, 1),
            Item::GroupRef(gid) => group_widths.get(*gid).copied().flatten().unwrap_or((0, 0)),
            Item::GroupRefExists { yes, no, .. } => {
                let (i, j) = width(yes, group_widths);
                match no {
                    Some(no) => {
                        let (l, h) = width(no, group_widths);
                        (i.min(l), j.max(h))
                    }
                    None => (0, j),
                }
            }
            Item::At(_) | Item::Assert { .. } => (0, 0),
        };
        lo = lo.saturating_add(i);
        hi = hi.saturating_add(j);
    }
    (lo.min(MAXWIDTH), hi.min(MAXWIDTH))
}

/// `re._parser.parse(pattern)` for a str pattern with no flags argument.
pub(super) fn parse(pattern: &str) -> Parse<Parsed> {
    let mut source = Tokenizer::new(pattern)?;
    let mut state = State {
        flags: 0,
        group_names: Vec::new(),
        group_widths: vec![None],
        lookbehind_groups: None,
        groupref_pos: Vec::new(),
    };
    let items = parse_sub(&mut source, &mut state, false, 0)?;
    // `fix_flags` for a str pattern.
    let mut flags = state.flags;
    if flags & FLAG_ASCII == 0 {
        flags |= FLAG_UNICODE;
    } else if flags & FLAG_UNICODE != 0 {
        return Err(PatternError::Fatal(
            "ValueError: ASCII and UNICODE flags are incompatible",
        ));
    }
    if source.next.is_some() {
        return Err(invalid("unbalanced parenthesis"));
    }
    if state
        .groupref_pos
        .iter()
        .any(|&g| g >= state.groups() as u64)
    {
        return Err(invalid("invalid group reference"));
    }
    Ok(Parsed {
        items,
        flags,
        groups: state.groups(),
        group_widths: state.group_widths,
    })
}

fn parse_sub(
    source: &mut Tokenizer,
    state: &mut State,
    verbose: bool,
    nested: usize,
) -> Parse<Vec<Item>> {
    if nested > MAX_NESTING {
        return Err(PatternError::Unsupported("nesting deeper than 200 groups"));
    }
    let mut verbose = verbose;
    let mut items: Vec<Vec<Item>> = Vec::new();
    loop {
        let first = nested == 0 && items.is_empty();
        items.push(parse_one(source, state, verbose, nested + 1, first)?);
        if !source.match_char('|')? {
            break;
        }
        if nested == 0 {
            verbose = state.flags & FLAG_VERBOSE != 0;
        }
    }
    if items.len() == 1 {
        return Ok(items.pop().unwrap_or_default());
    }
    let mut subpattern = Vec::new();
    // Move a prefix all alternatives share out of the branch.
    while let Some(prefix) = items[0].first().cloned() {
        if !items
            .iter()
            .all(|item| item.first().is_some_and(|first| first.same(&prefix)))
        {
            break;
        }
        for item in &mut items {
            item.remove(0);
        }
        subpattern.push(prefix);
    }
    // Single characters and non-negated sets become one set.
    let mut set: Vec<SetItem> = Vec::new();
    let mut all_single = true;
    for item in &items {
        match item.as_slice() {
            [Item::Literal(c)] => set.push(SetItem::Literal(*c)),
            [Item::In(members)] if members.first() != Some(&SetItem::Negate) => {
                set.extend(members.iter().copied())
            }
            _ => {
                all_single = false;
                break;
            }
        }
    }
    if all_single {
        subpattern.push(Item::In(uniq(set)));
        return Ok(subpattern);
    }
    subpattern.push(Item::Branch(items));
    Ok(subpattern)
}

fn uniq(items: Vec<SetItem>) -> Vec<SetItem> {
    let mut out: Vec<SetItem> = Vec::with_capacity(items.len());
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

const SPECIAL_CHARS: &str = ".\\[{()*+?^$|";
const DIGITS: &str = "0123456789";
const OCTDIGITS: &str = "01234567";
const HEXDIGITS: &str = "0123456789abcdefABCDEF";
const WHITESPACE: &str = " \t\n\r\u{b}\u{c}";

fn category_of(c: char) -> Option<Item> {
    let category = |cat| Item::In(vec![SetItem::Category(cat)]);
    Some(match c {
        'A' => Item::At(At::BeginningString),
        'b' => Item::At(At::Boundary),
        'B' => Item::At(At::NonBoundary),
        'd' => category(Category::Digit),
        'D' => category(Category::NotDigit),
        's' => category(Category::Space),
        'S' => category(Category::NotSpace),
        'w' => category(Category::Word),
        'W' => category(Category::NotWord),
        'Z' => Item::At(At::EndString),
        _ => return None,
    })
}

fn simple_escape(c: char) -> Option<u32> {
    Some(match c {
        'a' => 7,
        'b' => 8,
        'f' => 12,
        'n' => 10,
        'r' => 13,
        't' => 9,
        'v' => 11,
        '\\' => 92,
        _ => return None,
    })
}

/// `\x`, `\u`, `\U` and `\N` escapes, shared by sets and expressions.
fn code_escape(source: &mut Tokenizer, c: char) -> Parse<Option<u32>> {
    let digits = match c {
        'x' => 2,
        'u' => 4,
        'U' => 8,
        'N' => {
            if !source.match_char('{')? {
                return Err(invalid("missing {"));
            }
            return Err(PatternError::Unsupported("\\N{...} escapes"));
        }
        _ => return Ok(None),
    };
    let hex = source.getwhile(digits, HEXDIGITS)?;
    if hex.len() != digits {
        return Err(invalid(format!("incomplete escape \\{c}{hex}")));
    }
    let code = u32::from_str_radix(&hex, 16).map_err(|_| invalid("bad escape"))?;
    if code > 0x10FFFF {
        // `chr(c)` raises ValueError, which the parser reports as a bad escape.
        return Err(invalid(format!("bad escape \\{c}{hex}")));
    }
    Ok(Some(code))
}

/// `_class_escape`: an escape inside a set.
fn class_escape(source: &mut Tokenizer, c: char) -> Parse<SetItem> {
    if let Some(code) = simple_escape(c) {
        return Ok(SetItem::Literal(code));
    }
    if let Some(Item::In(members)) = category_of(c) {
        return Ok(members[0]);
    }
    if let Some(code) = code_escape(source, c)? {
        return Ok(SetItem::Literal(code));
    }
    if OCTDIGITS.contains(c) {
        let more = source.getwhile(2, OCTDIGITS)?;
        let value = u32::from_str_radix(&format!("{c}{more}"), 8).unwrap_or(u32::MAX);
        if value > 0o377 {
            return Err(invalid("octal escape value outside of range 0-0o377"));
        }
        return Ok(SetItem::Literal(value));
    }
    if DIGITS.contains(c) || c.is_ascii_alphabetic() {
        return Err(invalid(format!("bad escape \\{c}")));
    }
    Ok(SetItem::Literal(u32::from(c)))
}

/// `_escape`: an escape outside a set.
fn escape(source: &mut Tokenizer, state: &State, c: char) -> Parse<Item> {
    if let Some(item) = category_of(c) {
        return Ok(item);
    }
    if let Some(code) = simple_escape(c) {
        return Ok(Item::Literal(code));
    }
    if let Some(code) = code_escape(source, c)? {
        return Ok(Item::Literal(code));
    }
    if c == '0' {
        let more = source.getwhile(2, OCTDIGITS)?;
        let value = u32::from_str_radix(&format!("0{more}"), 8).unwrap_or(0);
        return Ok(Item::Literal(value));
    }
    if DIGITS.contains(c) {
        let mut text = c.to_string();
        if let Some(d) = source.next_char().filter(|d| DIGITS.contains(*d)) {
            source.advance()?;
            text.push(d);
            let first_two_octal = text.chars().all(|d| OCTDIGITS.contains(d));
            if let Some(third) = source.next_char().filter(|d| OCTDIGITS.contains(*d)) {
                if first_two_octal {
                    source.advance()?;
                    text.push(third);
                    let value = u32::from_str_radix(&text, 8).unwrap_or(u32::MAX);
                    if value > 0o377 {
                        return Err(invalid("octal escape value outside of range 0-0o377"));
                    }
                    return Ok(Item::Literal(value));
                }
            }
        }
        let group: usize = text.parse().unwrap_or(usize::MAX);
        if group < state.groups() {
            if !state.check_group(group) {
                return Err(invalid("cannot refer to an open group"));
            }
            state.check_lookbehind_group(group)?;
            return Ok(Item::GroupRef(group));
        }
        return Err(invalid(format!("invalid group reference {group}")));
    }
    if c.is_ascii_alphabetic() {
        return Err(invalid(format!("bad escape \\{c}")));
    }
    Ok(Item::Literal(u32::from(c)))
}

fn is_identifier(name: &str) -> bool {
    let in_table = |table: &[(u32, u32)], c: char| {
        let code = u32::from(c);
        let at = table.partition_point(|&(_, last)| last < code);
        table.get(at).is_some_and(|&(first, _)| first <= code)
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| in_table(tables::IDENTIFIER_START, c))
        && chars.all(|c| in_table(tables::IDENTIFIER_CONTINUE, c))
}

/// Python's `int(text)` for a conditional group's number: surrounding
/// whitespace, a sign, ASCII or Unicode decimal digits, underscores between
/// digits. Values past `u64` saturate (they are past `MAXGROUPS` anyway).
fn python_int(text: &str) -> Option<i128> {
    let trimmed = text.trim_matches(super::program::is_space_char);
    let (negative, digits) = match trimmed.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, trimmed.strip_prefix('+').unwrap_or(trimmed)),
    };
    let mut value: i128 = 0;
    let mut previous_digit = false;
    let mut any = false;
    let mut last_underscore = false;
    for c in digits.chars() {
        if c == '_' {
            if !previous_digit {
                return None;
            }
            previous_digit = false;
            last_underscore = true;
            continue;
        }
        let d = super::program::decimal_value(u32::from(c))?;
        value = value.saturating_mul(10).saturating_add(i128::from(d));
        previous_digit = true;
        last_underscore = false;
        any = true;
    }
    if !any || last_underscore {
        return None;
    }
    Some(if negative { -value } else { value })
}

fn parse_one(
    source: &mut Tokenizer,
    state: &mut State,
    verbose: bool,
    nested: usize,
    first: bool,
) -> Parse<Vec<Item>> {
    let mut verbose = verbose;
    let mut subpattern: Vec<Item> = Vec::new();
    while let Some(this) = source.next {
        if matches!(this, Token::Char('|' | ')')) {
            break;
        }
        source.advance()?;
        if verbose {
            if let Token::Char(c) = this {
                if WHITESPACE.contains(c) {
                    continue;
                }
                if c == '#' {
                    loop {
                        match source.get()? {
                            None | Some(Token::Char('\n')) => break,
                            _ => {}
                        }
                    }
                    continue;
                }
            }
        }
        let c = match this {
            Token::Escape(c) => {
                subpattern.push(escape(source, state, c)?);
                continue;
            }
            Token::Char(c) => c,
        };
        if !SPECIAL_CHARS.contains(c) {
            subpattern.push(Item::Literal(u32::from(c)));
        } else if c == '[' {
            subpattern.push(parse_set(source)?);
        } else if "*+?{".contains(c) {
            let here = source.tell();
            let (min, max) = match c {
                '?' => (0, 1),
                '*' => (0, MAXREPEAT),
                '+' => (1, MAXREPEAT),
                _ => {
                    if source.next_char() == Some('}') {
                        subpattern.push(Item::Literal(u32::from('{')));
                        continue;
                    }
                    let lo = source.getwhile(usize::MAX, DIGITS)?;
                    let hi = if source.match_char(',')? {
                        source.getwhile(usize::MAX, DIGITS)?
                    } else {
                        lo.clone()
                    };
                    if !source.match_char('}')? {
                        subpattern.push(Item::Literal(u32::from('{')));
                        source.seek(here)?;
                        continue;
                    }
                    let count = |digits: &str| -> Parse<u64> {
                        let significant = digits.trim_start_matches('0');
                        let value = if significant.len() > 19 {
                            u64::MAX
                        } else {
                            significant.parse::<u64>().unwrap_or(0)
                        };
                        if value >= MAXREPEAT {
                            return Err(PatternError::Fatal(
                                "OverflowError: the repetition number is too large",
                            ));
                        }
                        Ok(value)
                    };
                    let min = if lo.is_empty() { 0 } else { count(&lo)? };
                    let max = if hi.is_empty() {
                        MAXREPEAT
                    } else {
                        let max = count(&hi)?;
                        if max < min {
                            return Err(invalid("min repeat greater than max repeat"));
                        }
                        max
                    };
                    (min, max)
                }
            };
            let body = match subpattern.pop() {
                None | Some(Item::At(_)) => return Err(invalid("nothing to repeat")),
                Some(Item::Repeat { .. }) => return Err(invalid("multiple repeat")),
                Some(Item::Subpattern {
                    group: None,
                    add: 0,
                    del: 0,
                    body,
                }) => body,
                Some(item) => vec![item],
            };
            let kind = if source.match_char('?')? {
                RepeatKind::Lazy
            } else if source.match_char('+')? {
                RepeatKind::Possessive
            } else {
                RepeatKind::Greedy
            };
            subpattern.push(Item::Repeat {
                min,
                max,
                kind,
                body,
            });
        } else if c == '.' {
            subpattern.push(Item::Any);
        } else if c == '(' {
            match parse_group(source, state, verbose, nested, first, &subpattern)? {
                Group::Item(item) => subpattern.push(item),
                Group::GlobalFlags => {
                    verbose = state.flags & FLAG_VERBOSE != 0;
                }
                Group::Nothing => {}
            }
        } else if c == '^' {
            subpattern.push(Item::At(At::Beginning));
        } else if c == '$' {
            subpattern.push(Item::At(At::End));
        }
    }
    // Unpack non-capturing groups without flags.
    let mut out = Vec::with_capacity(subpattern.len());
    for item in subpattern {
        match item {
            Item::Subpattern {
                group: None,
                add: 0,
                del: 0,
                body,
            } => out.extend(body),
            item => out.push(item),
        }
    }
    Ok(out)
}

/// `[...]` after its `[`.
fn parse_set(source: &mut Tokenizer) -> Parse<Item> {
    let mut set: Vec<SetItem> = Vec::new();
    let negate = source.match_char('^')?;
    loop {
        let this = source
            .get()?
            .ok_or_else(|| invalid("unterminated character set"))?;
        if this == Token::Char(']') && !set.is_empty() {
            break;
        }
        let code1 = match this {
            Token::Escape(c) => class_escape(source, c)?,
            Token::Char(c) => SetItem::Literal(u32::from(c)),
        };
        if source.match_char('-')? {
            let that = source
                .get()?
                .ok_or_else(|| invalid("unterminated character set"))?;
            if that == Token::Char(']') {
                set.push(code1);
                set.push(SetItem::Literal(u32::from('-')));
                break;
            }
            let code2 = match that {
                Token::Escape(c) => class_escape(source, c)?,
                Token::Char(c) => SetItem::Literal(u32::from(c)),
            };
            let (SetItem::Literal(lo), SetItem::Literal(hi)) = (code1, code2) else {
                return Err(invalid("bad character range"));
            };
            if hi < lo {
                return Err(invalid("bad character range"));
            }
            set.push(SetItem::Range(lo, hi));
        } else {
            set.push(code1);
        }
    }
    let set = uniq(set);
    if let [SetItem::Literal(c)] = set.as_slice() {
        return Ok(if negate {
            Item::NotLiteral(*c)
        } else {
            Item::Literal(*c)
        });
    }
    let mut members = Vec::with_capacity(set.len() + 1);
    if negate {
        members.push(SetItem::Negate);
    }
    members.extend(set);
    Ok(Item::In(members))
}

enum Group {
    Item(Item),
    GlobalFlags,
    Nothing,
}

fn check_group_name(name: &str) -> Parse<()> {
    if is_identifier(name) {
        Ok(())
    } else {
        Err(invalid(format!("bad character in group name {name:?}")))
    }
}

/// `(` ... `)` after its `(`.
fn parse_group(
    source: &mut Tokenizer,
    state: &mut State,
    verbose: bool,
    nested: usize,
    first: bool,
    subpattern: &[Item],
) -> Parse<Group> {
    let unexpected_end = || invalid("unexpected end of pattern");
    let mut capture = true;
    let mut atomic = false;
    let mut name = None;
    let mut add = 0;
    let mut del = 0;
    if source.match_char('?')? {
        let char = source.get()?.ok_or_else(unexpected_end)?;
        match char {
            Token::Char('P') => {
                if source.match_char('<')? {
                    let group_name = source.getuntil('>')?;
                    check_group_name(&group_name)?;
                    name = Some(group_name);
                } else if source.match_char('=')? {
                    let group_name = source.getuntil(')')?;
                    check_group_name(&group_name)?;
                    let gid = state
                        .group_of(&group_name)
                        .ok_or_else(|| invalid("unknown group name"))?;
                    if !state.check_group(gid) {
                        return Err(invalid("cannot refer to an open group"));
                    }
                    state.check_lookbehind_group(gid)?;
                    return Ok(Group::Item(Item::GroupRef(gid)));
                } else {
                    source.get()?.ok_or_else(unexpected_end)?;
                    return Err(invalid("unknown extension ?P"));
                }
            }
            Token::Char(':') => capture = false,
            Token::Char('#') => {
                loop {
                    if source.next.is_none() {
                        return Err(invalid("missing ), unterminated comment"));
                    }
                    if source.get()? == Some(Token::Char(')')) {
                        break;
                    }
                }
                return Ok(Group::Nothing);
            }
            Token::Char(c @ ('=' | '!' | '<')) => {
                let mut kind = c;
                let mut behind = false;
                let mut outer_lookbehind = None;
                if c == '<' {
                    kind = match source.get()?.ok_or_else(unexpected_end)? {
                        Token::Char(k @ ('=' | '!')) => k,
                        _ => return Err(invalid("unknown extension ?<")),
                    };
                    behind = true;
                    outer_lookbehind = Some(state.lookbehind_groups);
                    if state.lookbehind_groups.is_none() {
                        state.lookbehind_groups = Some(state.groups());
                    }
                }
                let body = parse_sub(source, state, verbose, nested + 1)?;
                if let Some(None) = outer_lookbehind {
                    state.lookbehind_groups = None;
                }
                if !source.match_char(')')? {
                    return Err(invalid("missing ), unterminated subpattern"));
                }
                return Ok(Group::Item(Item::Assert {
                    behind,
                    negate: kind == '!',
                    body,
                }));
            }
            Token::Char('(') => {
                let condname = source.getuntil(')')?;
                let group = if is_identifier(&condname) {
                    state
                        .group_of(&condname)
                        .ok_or_else(|| invalid("unknown group name"))?
                } else {
                    let number = python_int(&condname)
                        .filter(|&n| n >= 0)
                        .ok_or_else(|| invalid("bad character in group name"))?;
                    if number == 0 {
                        return Err(invalid("bad group number"));
                    }
                    if number >= i128::from(MAXGROUPS) {
                        return Err(invalid("invalid group reference"));
                    }
                    let number = number as u64;
                    if !state.groupref_pos.contains(&number) {
                        state.groupref_pos.push(number);
                    }
                    number as usize
                };
                state.check_lookbehind_group(group)?;
                let yes = parse_one(source, state, verbose, nested + 1, false)?;
                let no = if source.match_char('|')? {
                    let no = parse_one(source, state, verbose, nested + 1, false)?;
                    if source.next_char() == Some('|') {
                        return Err(invalid("conditional backref with more than two branches"));
                    }
                    Some(no)
                } else {
                    None
                };
                if !source.match_char(')')? {
                    return Err(invalid("missing ), unterminated subpattern"));
                }
                return Ok(Group::Item(Item::GroupRefExists { group, yes, no }));
            }
            Token::Char('>') => {
                capture = false;
                atomic = true;
            }
            Token::Char(c) if flag(c).is_some() || c == '-' => {
                match parse_flags(source, state, c)? {
                    None => {
                        if !first || !subpattern.is_empty() {
                            return Err(invalid("global flags not at the start of the expression"));
                        }
                        return Ok(Group::GlobalFlags);
                    }
                    Some((a, d)) => {
                        add = a;
                        del = d;
                        capture = false;
                    }
                }
            }
            _ => return Err(invalid("unknown extension")),
        }
    }
    let group = if capture {
        Some(state.open_group(name)?)
    } else {
        None
    };
    let sub_verbose = (verbose || add & FLAG_VERBOSE != 0) && del & FLAG_VERBOSE == 0;
    let body = parse_sub(source, state, sub_verbose, nested + 1)?;
    if !source.match_char(')')? {
        return Err(invalid("missing ), unterminated subpattern"));
    }
    if let Some(gid) = group {
        state.group_widths[gid] = Some(width(&body, &state.group_widths));
    }
    Ok(Group::Item(if atomic {
        Item::Atomic(body)
    } else {
        Item::Subpattern {
            group,
            add,
            del,
            body,
        }
    }))
}

/// `_parse_flags`: `None` for global flags (`(?i)`), else the scoped ones.
fn parse_flags(source: &mut Tokenizer, state: &mut State, c: char) -> Parse<Option<(u32, u32)>> {
    let mut add = 0;
    let mut del = 0;
    let mut token = Token::Char(c);
    if c != '-' {
        loop {
            let Token::Char(c) = token else {
                return Err(invalid("missing -, : or )"));
            };
            let value = flag(c).ok_or_else(|| invalid("unknown flag"))?;
            if c == 'L' {
                return Err(invalid(
                    "bad inline flags: cannot use 'L' flag with a str pattern",
                ));
            }
            add |= value;
            if value & TYPE_FLAGS != 0 && add & TYPE_FLAGS != value {
                return Err(invalid(
                    "bad inline flags: flags 'a', 'u' and 'L' are incompatible",
                ));
            }
            token = source.get()?.ok_or_else(|| invalid("missing -, : or )"))?;
            if matches!(token, Token::Char(')' | '-' | ':')) {
                break;
            }
            if !matches!(token, Token::Char(c) if flag(c).is_some()) {
                return Err(invalid("unknown flag"));
            }
        }
    }
    if token == Token::Char(')') {
        state.flags |= add;
        return Ok(None);
    }
    if add & GLOBAL_FLAGS != 0 {
        return Err(invalid("bad inline flags: cannot turn on global flag"));
    }
    if token == Token::Char('-') {
        token = source.get()?.ok_or_else(|| invalid("missing flag"))?;
        if !matches!(token, Token::Char(c) if flag(c).is_some()) {
            return Err(invalid("missing flag"));
        }
        loop {
            let Token::Char(c) = token else {
                return Err(invalid("missing :"));
            };
            let value = flag(c).ok_or_else(|| invalid("unknown flag"))?;
            if value & TYPE_FLAGS != 0 {
                return Err(invalid(
                    "bad inline flags: cannot turn off flags 'a', 'u' and 'L'",
                ));
            }
            del |= value;
            token = source.get()?.ok_or_else(|| invalid("missing :"))?;
            if token == Token::Char(':') {
                break;
            }
            if !matches!(token, Token::Char(c) if flag(c).is_some()) {
                return Err(invalid("unknown flag"));
            }
        }
    }
    if token != Token::Char(':') {
        return Err(invalid("missing :"));
    }
    if del & GLOBAL_FLAGS != 0 {
        return Err(invalid("bad inline flags: cannot turn off global flag"));
    }
    if add & del != 0 {
        return Err(invalid("bad inline flags: flag turned on and off"));
    }
    Ok(Some((add, del)))
}
