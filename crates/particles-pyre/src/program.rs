//! `re/_compiler.py`'s choices, as a tree the matcher walks: which fold each
//! literal, set and back-reference is matched with under the flags in force,
//! how each anchor reads, the look-behind width check. The character
//! predicates are `_sre`'s, over the reference's Unicode tables.

use super::{
    parse::{
        self, At, Category, Item, Parsed, RepeatKind, SetItem, FLAG_DOTALL, FLAG_IGNORECASE,
        FLAG_MULTILINE, FLAG_TEMPLATE, FLAG_UNICODE, MAXREPEAT, TYPE_FLAGS,
    },
    tables, PatternError,
};

/// `_sre.MAXCODE`: a look-behind wider than this is refused.
const MAXCODE: u128 = 0xFFFF_FFFF;

fn in_ranges(table: &[(u32, u32)], code: u32) -> bool {
    let at = table.partition_point(|&(_, last)| last < code);
    table.get(at).is_some_and(|&(first, _)| first <= code)
}

fn lookup(pairs: &[(u32, u32)], code: u32) -> Option<u32> {
    pairs
        .binary_search_by_key(&code, |&(from, _)| from)
        .ok()
        .map(|at| pairs[at].1)
}

/// The value of a decimal digit (category Nd), as Python reads one.
pub(super) fn decimal_value(code: u32) -> Option<u32> {
    let zeros = tables::DECIMAL_ZEROS;
    let at = zeros.partition_point(|&zero| zero <= code);
    let zero = *zeros.get(at.checked_sub(1)?)?;
    (code - zero < 10).then_some(code - zero)
}

/// `Py_UNICODE_ISSPACE`.
fn is_space(code: u32) -> bool {
    matches!(
        code,
        0x09..=0x0D
            | 0x1C..=0x20
            | 0x85
            | 0xA0
            | 0x1680
            | 0x2000..=0x200A
            | 0x2028
            | 0x2029
            | 0x202F
            | 0x205F
            | 0x3000
    )
}

/// `str.isspace()` of one character.
pub(super) fn is_space_char(c: char) -> bool {
    is_space(u32::from(c))
}

/// `_sre.unicode_tolower`.
fn lower(code: u32) -> u32 {
    lookup(tables::LOWER, code).unwrap_or(code)
}

/// `sre_upper_unicode` where `RANGE_UNI_IGNORE` uses it (astral characters).
fn upper(code: u32) -> u32 {
    lookup(tables::UPPER_ASTRAL, code).unwrap_or(code)
}

/// `_sre.unicode_iscased`.
fn is_cased(code: u32) -> bool {
    in_ranges(tables::CASED, code)
}

fn ascii_lower(code: u32) -> u32 {
    if (u32::from(b'A')..=u32::from(b'Z')).contains(&code) {
        code + 32
    } else {
        code
    }
}

fn ascii_is_cased(code: u32) -> bool {
    code < 128 && (code as u8).is_ascii_alphabetic()
}

/// The characters whose lowercase is `code` (other than `code` itself).
fn preimages(code: u32) -> impl Iterator<Item = u32> {
    static BY_LOWER: std::sync::OnceLock<Vec<(u32, u32)>> = std::sync::OnceLock::new();
    let by_lower = BY_LOWER.get_or_init(|| {
        let mut pairs: Vec<(u32, u32)> =
            tables::LOWER.iter().map(|&(from, to)| (to, from)).collect();
        pairs.sort_unstable();
        pairs
    });
    let start = by_lower.partition_point(|&(to, _)| to < code);
    by_lower[start..]
        .iter()
        .take_while(move |&&(to, _)| to == code)
        .map(|&(_, from)| from)
}

/// The other lowercase characters that share `code`'s uppercase (`_EXTRA_CASES`).
fn extra_cases(code: u32) -> impl Iterator<Item = u32> {
    let pairs = tables::EXTRA_CASES;
    let start = pairs.partition_point(|&(k, _)| k < code);
    pairs[start..]
        .iter()
        .take_while(move |&&(k, _)| k == code)
        .map(|&(_, v)| v)
}

/// The fold a literal, set or back-reference is matched with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fold {
    /// Exact.
    None,
    /// `_sre.ascii_tolower` (IGNORECASE with ASCII).
    Ascii,
    /// `_sre.unicode_tolower` with the extra cases.
    Unicode,
}

impl Fold {
    pub(super) fn lower(self, code: u32) -> u32 {
        match self {
            Fold::None => code,
            Fold::Ascii => ascii_lower(code),
            Fold::Unicode => lower(code),
        }
    }

    fn is_cased(self, code: u32) -> bool {
        match self {
            Fold::None => false,
            Fold::Ascii => ascii_is_cased(code),
            Fold::Unicode => is_cased(code),
        }
    }
}

/// A test of one character.
#[derive(Debug, Clone)]
pub(super) enum CharTest {
    /// `.`: anything but `\n`, or anything with DOTALL.
    Any { dotall: bool },
    /// `LITERAL`/`NOT_LITERAL` with its fold: `lowered` holds the lowercase
    /// forms a character's fold must be one of (one, or more with extra cases).
    Literal {
        lowered: Vec<u32>,
        fold: Fold,
        negate: bool,
    },
    /// `IN` (or `IN_IGNORE`/`IN_UNI_IGNORE` when `fold` is not `None`).
    Set {
        items: Vec<SetItem>,
        negate: bool,
        fold: Fold,
        unicode: bool,
    },
}

impl CharTest {
    pub(super) fn matches(&self, code: u32) -> bool {
        match self {
            CharTest::Any { dotall } => *dotall || code != u32::from('\n'),
            CharTest::Literal {
                lowered,
                fold,
                negate,
            } => lowered.contains(&fold.lower(code)) != *negate,
            CharTest::Set {
                items,
                negate,
                fold,
                unicode,
            } => {
                let ch = fold.lower(code);
                items
                    .iter()
                    .any(|item| set_member(*item, ch, *fold, *unicode))
                    != *negate
            }
        }
    }
}

pub(super) fn category(category: Category, code: u32, unicode: bool) -> bool {
    let word = |code: u32| {
        if unicode {
            in_ranges(tables::WORD, code)
        } else {
            code < 128 && ((code as u8).is_ascii_alphanumeric() || code == u32::from(b'_'))
        }
    };
    let digit = |code: u32| {
        if unicode {
            decimal_value(code).is_some()
        } else {
            (u32::from(b'0')..=u32::from(b'9')).contains(&code)
        }
    };
    let space = |code: u32| {
        if unicode {
            is_space(code)
        } else {
            matches!(code, 0x09..=0x0D | 0x20)
        }
    };
    match category {
        Category::Digit => digit(code),
        Category::NotDigit => !digit(code),
        Category::Space => space(code),
        Category::NotSpace => !space(code),
        Category::Word => word(code),
        Category::NotWord => !word(code),
    }
}

/// Whether the (already folded) character `ch` is in a set member as
/// `_optimize_charset` compiled it: under a fold, each BMP literal or range
/// member stands for its folded forms (and their extra cases); an astral
/// literal stays as written; a range reaching past the BMP also matches by
/// `RANGE_UNI_IGNORE` (the character or its uppercase in the range).
fn set_member(item: SetItem, ch: u32, fold: Fold, unicode: bool) -> bool {
    match item {
        SetItem::Negate => false,
        SetItem::Category(c) => category(c, ch, unicode),
        SetItem::Literal(x) => match fold {
            Fold::None => ch == x,
            _ if x > 0xFFFF => ch == x,
            Fold::Ascii => ascii_lower(x) == ch,
            Fold::Unicode => {
                let folded = lower(x);
                folded == ch || extra_cases(folded).any(|e| e == ch)
            }
        },
        SetItem::Range(lo, hi) => match fold {
            Fold::None => (lo..=hi).contains(&ch),
            _ => {
                let bmp_hi = hi.min(0xFFFF);
                let in_bmp_part = lo <= bmp_hi && folds_into_range(ch, lo, bmp_hi, fold);
                let astral =
                    hi > 0xFFFF && ((lo..=hi).contains(&ch) || (lo..=hi).contains(&upper(ch)));
                in_bmp_part || astral
            }
        },
    }
}

/// Whether some `i` in `lo..=hi` folds to `ch` or to one of `ch`'s extra cases.
fn folds_into_range(ch: u32, lo: u32, hi: u32, fold: Fold) -> bool {
    let targets: Vec<u32> = match fold {
        Fold::Unicode => std::iter::once(ch).chain(extra_cases(ch)).collect(),
        _ => vec![ch],
    };
    targets.into_iter().any(|t| {
        if fold.lower(t) == t && (lo..=hi).contains(&t) {
            return true;
        }
        match fold {
            Fold::Ascii => {
                (u32::from(b'a')..=u32::from(b'z')).contains(&t) && (lo..=hi).contains(&(t - 32))
            }
            _ => preimages(t).any(|from| (lo..=hi).contains(&from)),
        }
    })
}

/// A zero-width test with the flags it was compiled under.
#[derive(Debug, Clone, Copy)]
pub(super) struct AtTest {
    pub(super) at: At,
    pub(super) multiline: bool,
    pub(super) unicode: bool,
}

/// One node of the program.
#[derive(Debug, Clone)]
pub(super) enum Node {
    Char(CharTest),
    At(AtTest),
    Branch(Vec<Vec<Node>>),
    Repeat {
        min: u64,
        /// `None`: unbounded.
        max: Option<u64>,
        kind: RepeatKind,
        body: Vec<Node>,
        /// The body can only match the empty string (look-arounds, anchors):
        /// every mandatory iteration is the same, so they are not recursed.
        zero_width: bool,
    },
    Group {
        index: usize,
        body: Vec<Node>,
    },
    Atomic(Vec<Node>),
    Assert {
        /// The look-behind's width; `None` for a look-ahead.
        behind: Option<usize>,
        negate: bool,
        body: Vec<Node>,
    },
    Backref {
        group: usize,
        fold: Fold,
    },
    Conditional {
        group: usize,
        yes: Vec<Node>,
        no: Vec<Node>,
    },
}

struct Compiler<'p> {
    group_widths: &'p [Option<(u128, u128)>],
    template: bool,
}

/// `_compile` of the whole pattern.
pub(super) fn compile(parsed: &Parsed) -> Result<Vec<Node>, PatternError> {
    let compiler = Compiler {
        group_widths: &parsed.group_widths,
        template: parsed.flags & FLAG_TEMPLATE != 0,
    };
    compiler.compile(&parsed.items, parsed.flags)
}

/// The first-character set `_compile_info` puts in the pattern's INFO block,
/// which `search` uses to skip start positions. It is taken from the first item
/// (inside any leading groups, under their flags) but its categories are
/// compiled under the pattern's global flags: with `(?a:\W)` first in a Unicode
/// pattern, CPython skips positions whose character is a Unicode word
/// character. Only that difference from the plain match needs reproducing, so
/// `None` wherever the filter cannot change a verdict.
pub(super) fn search_filter(parsed: &Parsed) -> Option<CharTest> {
    let (lo, _) = parse::width(&parsed.items, &parsed.group_widths);
    if lo == 0 || has_literal_prefix(&parsed.items, parsed.flags) {
        return None;
    }
    let set = charset_prefix(&parsed.items, parsed.flags)?;
    let negate = set.first() == Some(&SetItem::Negate);
    Some(CharTest::Set {
        items: set.into_iter().filter(|m| *m != SetItem::Negate).collect(),
        negate,
        fold: Fold::None,
        unicode: parsed.flags & FLAG_UNICODE != 0,
    })
}

/// `_get_literal_prefix` finds at least one character.
fn has_literal_prefix(items: &[Item], flags: u32) -> bool {
    match items.first() {
        Some(Item::Literal(c)) => !Compiler::fold(flags).is_cased(*c),
        Some(Item::Subpattern { add, del, body, .. }) => {
            has_literal_prefix(body, combine_flags(flags, *add, *del))
        }
        _ => false,
    }
}

/// `_get_charset_prefix`.
fn charset_prefix(items: &[Item], flags: u32) -> Option<Vec<SetItem>> {
    let mut items = items;
    let mut flags = flags;
    let first = loop {
        match items.first()? {
            Item::Subpattern { add, del, body, .. } => {
                flags = combine_flags(flags, *add, *del);
                items = body;
            }
            first => break first,
        }
    };
    let fold = Compiler::fold(flags);
    let cased = |c: u32| fold != Fold::None && fold.is_cased(c);
    match first {
        Item::Literal(c) if !cased(*c) => Some(vec![SetItem::Literal(*c)]),
        Item::Branch(alternatives) => alternatives
            .iter()
            .map(|alternative| match alternative.first() {
                Some(Item::Literal(c)) if !cased(*c) => Some(SetItem::Literal(*c)),
                _ => None,
            })
            .collect(),
        Item::In(members) => {
            let safe = fold == Fold::None
                || members.iter().all(|member| match *member {
                    SetItem::Literal(c) => !cased(c),
                    SetItem::Range(lo, hi) => hi <= 0xFFFF && !(lo..=hi).any(cased),
                    _ => true,
                });
            safe.then(|| members.clone())
        }
        _ => None,
    }
}

fn combine_flags(flags: u32, add: u32, del: u32) -> u32 {
    let flags = if add & TYPE_FLAGS != 0 {
        flags & !TYPE_FLAGS
    } else {
        flags
    };
    (flags | add) & !del
}

impl Compiler<'_> {
    fn fold(flags: u32) -> Fold {
        if flags & FLAG_IGNORECASE == 0 {
            Fold::None
        } else if flags & FLAG_UNICODE != 0 {
            Fold::Unicode
        } else {
            Fold::Ascii
        }
    }

    fn compile(&self, items: &[Item], flags: u32) -> Result<Vec<Node>, PatternError> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Item::Literal(c) => out.push(Node::Char(literal(*c, flags, false))),
                Item::NotLiteral(c) => out.push(Node::Char(literal(*c, flags, true))),
                Item::Any => out.push(Node::Char(CharTest::Any {
                    dotall: flags & FLAG_DOTALL != 0,
                })),
                Item::In(members) => out.push(Node::Char(set(members, flags))),
                Item::At(at) => out.push(Node::At(AtTest {
                    at: *at,
                    multiline: flags & FLAG_MULTILINE != 0,
                    unicode: flags & FLAG_UNICODE != 0,
                })),
                Item::Branch(alternatives) => out.push(Node::Branch(
                    alternatives
                        .iter()
                        .map(|alternative| self.compile(alternative, flags))
                        .collect::<Result<_, _>>()?,
                )),
                Item::Repeat {
                    min,
                    max,
                    kind,
                    body,
                } => {
                    if self.template {
                        return Err(PatternError::Invalid(
                            "internal: unsupported template operator".to_owned(),
                        ));
                    }
                    out.push(Node::Repeat {
                        min: *min,
                        max: (*max != MAXREPEAT).then_some(*max),
                        kind: *kind,
                        body: self.compile(body, flags)?,
                        zero_width: parse::width(body, self.group_widths).1 == 0,
                    });
                }
                Item::Subpattern {
                    group,
                    add,
                    del,
                    body,
                } => {
                    let body = self.compile(body, combine_flags(flags, *add, *del))?;
                    match group {
                        Some(index) => out.push(Node::Group {
                            index: *index,
                            body,
                        }),
                        None => out.extend(body),
                    }
                }
                Item::Atomic(body) => out.push(Node::Atomic(self.compile(body, flags)?)),
                Item::Assert {
                    behind,
                    negate,
                    body,
                } => {
                    let width = if *behind {
                        let (lo, hi) = parse::width(body, self.group_widths);
                        if lo > MAXCODE {
                            return Err(PatternError::Invalid("looks too much behind".to_owned()));
                        }
                        if lo != hi {
                            return Err(PatternError::Invalid(
                                "look-behind requires fixed-width pattern".to_owned(),
                            ));
                        }
                        Some(lo as usize)
                    } else {
                        None
                    };
                    out.push(Node::Assert {
                        behind: width,
                        negate: *negate,
                        body: self.compile(body, flags)?,
                    });
                }
                Item::GroupRef(group) => out.push(Node::Backref {
                    group: *group,
                    fold: Self::fold(flags),
                }),
                Item::GroupRefExists { group, yes, no } => out.push(Node::Conditional {
                    group: *group,
                    yes: self.compile(yes, flags)?,
                    no: match no {
                        Some(no) => self.compile(no, flags)?,
                        None => Vec::new(),
                    },
                }),
            }
        }
        Ok(out)
    }
}

/// A literal as `_compile` emits it: exact unless IGNORECASE applies to a
/// cased character; then its lowercase (and, under Unicode, the extra cases).
fn literal(c: u32, flags: u32, negate: bool) -> CharTest {
    let fold = Compiler::fold(flags);
    if fold == Fold::None || !fold.is_cased(c) {
        return CharTest::Literal {
            lowered: vec![c],
            fold: Fold::None,
            negate,
        };
    }
    let lo = fold.lower(c);
    let mut lowered = vec![lo];
    if fold == Fold::Unicode {
        lowered.extend(extra_cases(lo));
    }
    CharTest::Literal {
        lowered,
        fold,
        negate,
    }
}

/// A set as `_compile` emits it: `IN_*IGNORE` (the character folded before the
/// test) only when the flags fold and some member is cased.
fn set(members: &[SetItem], flags: u32) -> CharTest {
    let fold = Compiler::fold(flags);
    let negate = members.first() == Some(&SetItem::Negate);
    let items: Vec<SetItem> = members
        .iter()
        .copied()
        .filter(|m| *m != SetItem::Negate)
        .collect();
    let has_cased = fold != Fold::None
        && items.iter().any(|item| match *item {
            SetItem::Literal(x) => x > 0xFFFF || fold.is_cased(x),
            SetItem::Range(lo, hi) => {
                hi > 0xFFFF
                    || match fold {
                        Fold::Ascii => (lo..=hi.min(0x7F)).any(ascii_is_cased),
                        _ => tables::CASED
                            .iter()
                            .any(|&(first, last)| first <= hi && lo <= last),
                    }
            }
            _ => false,
        });
    // Without a cased member the set is tested as written: every member folds
    // to itself.
    let fold = if has_cased { fold } else { Fold::None };
    CharTest::Set {
        items,
        negate,
        fold,
        unicode: flags & FLAG_UNICODE != 0,
    }
}
