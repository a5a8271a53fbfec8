//! A backtracking matcher with `_sre`'s semantics, in continuation-passing
//! style: each node matches at a position and hands the position after it to
//! the rest of the pattern. Greedy and lazy repeats follow `MAX_UNTIL` and
//! `MIN_UNTIL` (an optional iteration that starts where the last one started is
//! not tried: zero-width protection), possessive repeats and atomic groups
//! commit to their first match, look-arounds match to their first success,
//! captures persist across iterations and are restored on backtracking.

use super::{
    parse::{At, Category, RepeatKind},
    program::{category, AtTest, CharTest, Fold, Node},
    DEPTH_LIMIT, STEP_LIMIT,
};

type Caps = Vec<Option<(usize, usize)>>;

/// A greedy or lazy repeat of a body that is not one character.
struct Repeat<'n> {
    body: &'n [Node],
    min: u64,
    max: Option<u64>,
    kind: RepeatKind,
    zero_width: bool,
}

/// What a node hands its successful end position to.
type Cont<'k, 't> = &'k mut dyn FnMut(&mut Matcher<'t>, usize) -> bool;

pub(super) struct Matcher<'t> {
    text: &'t [u32],
    caps: Caps,
    steps: u64,
    depth: u32,
    aborted: bool,
}

/// `pattern.search(text) is not None`, or `None` past the step or depth limit.
/// Start positions whose character fails `filter` are skipped, as `_sre` skips
/// them with the INFO block's charset.
pub(super) fn search(
    program: &[Node],
    groups: usize,
    filter: Option<&CharTest>,
    text: &[u32],
) -> Option<bool> {
    let mut matcher = Matcher {
        text,
        caps: vec![None; groups],
        steps: 0,
        depth: 0,
        aborted: false,
    };
    for start in 0..=text.len() {
        if filter.is_some_and(|f| !text.get(start).is_some_and(|&c| f.matches(c))) {
            continue;
        }
        matcher.caps.iter_mut().for_each(|cap| *cap = None);
        if matcher.seq(program, start, &mut |_, _| true) {
            return Some(true);
        }
        if matcher.aborted {
            return None;
        }
    }
    Some(false)
}

impl<'t> Matcher<'t> {
    /// Matches `nodes` at `pos`, then `k`. Characters and anchors are walked in
    /// a loop; only the other nodes recurse, which keeps the stack shallow.
    fn seq(&mut self, nodes: &[Node], pos: usize, k: Cont<'_, 't>) -> bool {
        if self.aborted {
            return false;
        }
        self.steps += 1;
        if self.steps > STEP_LIMIT || self.depth > DEPTH_LIMIT {
            self.aborted = true;
            return false;
        }
        self.depth += 1;
        let matched = self.walk(nodes, pos, k);
        self.depth -= 1;
        matched
    }

    fn walk(&mut self, nodes: &[Node], pos: usize, k: Cont<'_, 't>) -> bool {
        let mut pos = pos;
        let mut nodes = nodes;
        loop {
            match nodes.split_first() {
                None => return k(self, pos),
                Some((Node::Char(test), rest)) => {
                    if !self.char_at(pos, test) {
                        return false;
                    }
                    pos += 1;
                    nodes = rest;
                }
                Some((Node::At(at), rest)) => {
                    if !self.holds(*at, pos) {
                        return false;
                    }
                    nodes = rest;
                }
                Some((node, rest)) => return self.node(node, rest, pos, k),
            }
        }
    }

    fn char_at(&self, pos: usize, test: &CharTest) -> bool {
        self.text.get(pos).is_some_and(|&c| test.matches(c))
    }

    fn node(&mut self, node: &Node, rest: &[Node], pos: usize, k: Cont<'_, 't>) -> bool {
        match node {
            Node::Char(_) | Node::At(_) => {
                self.seq(std::slice::from_ref(node), pos, &mut |m, p| {
                    m.seq(rest, p, k)
                })
            }
            Node::Branch(alternatives) => self.branch(alternatives, rest, pos, k),
            Node::Group { index, body } => self.group(*index, body, rest, pos, k),
            Node::Repeat {
                min,
                max,
                kind,
                body,
                zero_width,
            } => match (body.as_slice(), kind) {
                ([Node::Char(test)], _) => self.repeat_one(test, *min, *max, kind, rest, pos, k),
                (_, RepeatKind::Possessive) => self.possessive(body, *min, *max, rest, pos, k),
                _ => {
                    let repeat = Repeat {
                        body,
                        min: *min,
                        max: *max,
                        kind: *kind,
                        zero_width: *zero_width,
                    };
                    self.repeat(&repeat, 0, pos, None, rest, k)
                }
            },
            Node::Atomic(body) => self.atomic(body, rest, pos, k),
            Node::Assert {
                behind,
                negate,
                body,
            } => self.assert(*behind, *negate, body, rest, pos, k),
            Node::Backref { group, fold } => self.backref(*group, *fold, rest, pos, k),
            Node::Conditional { group, yes, no } => {
                let branch = if self.caps[*group].is_some() { yes } else { no };
                self.seq(branch, pos, &mut |m, p| m.seq(rest, p, k))
            }
        }
    }

    #[inline(never)]
    fn branch(
        &mut self,
        alternatives: &[Vec<Node>],
        rest: &[Node],
        pos: usize,
        k: Cont<'_, 't>,
    ) -> bool {
        for alternative in alternatives {
            if self.seq(alternative, pos, &mut |m, p| m.seq(rest, p, k)) {
                return true;
            }
            if self.aborted {
                return false;
            }
        }
        false
    }

    #[inline(never)]
    fn group(
        &mut self,
        index: usize,
        body: &[Node],
        rest: &[Node],
        pos: usize,
        k: Cont<'_, 't>,
    ) -> bool {
        self.seq(body, pos, &mut |m, end| {
            let old = m.caps[index];
            m.caps[index] = Some((pos, end));
            if m.seq(rest, end, k) {
                return true;
            }
            m.caps[index] = old;
            false
        })
    }

    #[inline(never)]
    fn atomic(&mut self, body: &[Node], rest: &[Node], pos: usize, k: Cont<'_, 't>) -> bool {
        let snapshot = self.caps.clone();
        let Some(end) = self.first_match(body, pos) else {
            return false;
        };
        if self.seq(rest, end, k) {
            return true;
        }
        self.caps = snapshot;
        false
    }

    #[inline(never)]
    fn assert(
        &mut self,
        behind: Option<usize>,
        negate: bool,
        body: &[Node],
        rest: &[Node],
        pos: usize,
        k: Cont<'_, 't>,
    ) -> bool {
        let start = match behind {
            None => Some(pos),
            Some(width) => pos.checked_sub(width),
        };
        let snapshot = self.caps.clone();
        let found = start.is_some_and(|start| self.first_match(body, start).is_some());
        if negate {
            self.caps = snapshot;
            return !found && !self.aborted && self.seq(rest, pos, k);
        }
        if !found {
            return false;
        }
        if self.seq(rest, pos, k) {
            return true;
        }
        self.caps = snapshot;
        false
    }

    #[inline(never)]
    fn backref(
        &mut self,
        group: usize,
        fold: Fold,
        rest: &[Node],
        pos: usize,
        k: Cont<'_, 't>,
    ) -> bool {
        let Some((start, end)) = self.caps[group] else {
            return false;
        };
        let len = end - start;
        let fits = pos + len <= self.text.len()
            && (0..len).all(|i| {
                let (a, b) = (self.text[start + i], self.text[pos + i]);
                match fold {
                    Fold::None => a == b,
                    fold => fold.lower(a) == fold.lower(b),
                }
            });
        fits && self.seq(rest, pos + len, k)
    }

    /// The end of the body's first match at `pos` (its captures kept).
    fn first_match(&mut self, body: &[Node], pos: usize) -> Option<usize> {
        let mut end = None;
        self.seq(body, pos, &mut |_, e| {
            end = Some(e);
            true
        });
        end
    }

    fn holds(&self, at: AtTest, pos: usize) -> bool {
        let text = self.text;
        let newline = u32::from('\n');
        let word = |c: u32| category(Category::Word, c, at.unicode);
        match at.at {
            At::Beginning if at.multiline => pos == 0 || text[pos - 1] == newline,
            At::Beginning | At::BeginningString => pos == 0,
            At::End if at.multiline => pos == text.len() || text[pos] == newline,
            At::End => pos == text.len() || (pos + 1 == text.len() && text[pos] == newline),
            At::EndString => pos == text.len(),
            At::Boundary | At::NonBoundary => {
                if text.is_empty() {
                    return false;
                }
                let before = pos > 0 && word(text[pos - 1]);
                let after = pos < text.len() && word(text[pos]);
                (before != after) == (at.at == At::Boundary)
            }
        }
    }

    /// `REPEAT_ONE` / `MIN_REPEAT_ONE` / a possessive one-character repeat: no
    /// recursion per character.
    #[allow(clippy::too_many_arguments)]
    fn repeat_one(
        &mut self,
        test: &CharTest,
        min: u64,
        max: Option<u64>,
        kind: &RepeatKind,
        rest: &[Node],
        pos: usize,
        k: Cont<'_, 't>,
    ) -> bool {
        let limit = max.unwrap_or(u64::MAX);
        let available = |m: &Matcher<'t>, count: u64| {
            usize::try_from(count).is_ok_and(|c| m.char_at(pos + c, test))
        };
        match kind {
            RepeatKind::Lazy => {
                let mut count = 0u64;
                while count < min {
                    if !available(self, count) {
                        return false;
                    }
                    count += 1;
                }
                loop {
                    if self.seq(rest, pos + count as usize, k) {
                        return true;
                    }
                    if self.aborted || count >= limit || !available(self, count) {
                        return false;
                    }
                    count += 1;
                }
            }
            RepeatKind::Greedy | RepeatKind::Possessive => {
                let mut count = 0u64;
                while count < limit && available(self, count) {
                    count += 1;
                }
                if count < min {
                    return false;
                }
                if *kind == RepeatKind::Possessive {
                    return self.seq(rest, pos + count as usize, k);
                }
                loop {
                    if self.seq(rest, pos + count as usize, k) {
                        return true;
                    }
                    if self.aborted || count == min {
                        return false;
                    }
                    count -= 1;
                }
            }
        }
    }

    /// `MAX_UNTIL` / `MIN_UNTIL` after `count` iterations, at `pos`; `last` is
    /// where the last optional iteration started.
    fn repeat(
        &mut self,
        r: &Repeat<'_>,
        count: u64,
        pos: usize,
        last: Option<usize>,
        rest: &[Node],
        k: Cont<'_, 't>,
    ) -> bool {
        if count < r.min {
            // A body that only matches empty matches the same way each time:
            // the first mandatory iteration stands for all of them.
            let next = if r.zero_width { r.min } else { count + 1 };
            return self.seq(r.body, pos, &mut |m, p| m.repeat(r, next, p, last, rest, k));
        }
        let may_iterate = r.max.is_none_or(|max| count < max) && last != Some(pos);
        if r.kind == RepeatKind::Lazy {
            if self.seq(rest, pos, k) {
                return true;
            }
            if self.aborted || !may_iterate {
                return false;
            }
            return self.seq(r.body, pos, &mut |m, p| {
                m.repeat(r, count + 1, p, Some(pos), rest, k)
            });
        }
        if may_iterate
            && self.seq(r.body, pos, &mut |m, p| {
                m.repeat(r, count + 1, p, Some(pos), rest, k)
            })
        {
            return true;
        }
        !self.aborted && self.seq(rest, pos, k)
    }

    /// `POSSESSIVE_REPEAT`: each iteration takes the body's first match, none is
    /// given back.
    fn possessive(
        &mut self,
        body: &[Node],
        min: u64,
        max: Option<u64>,
        rest: &[Node],
        pos: usize,
        k: Cont<'_, 't>,
    ) -> bool {
        let snapshot = self.caps.clone();
        let mut at = pos;
        let mut count = 0u64;
        while count < min {
            match self.first_match(body, at) {
                Some(end) => at = end,
                None => {
                    self.caps = snapshot;
                    return false;
                }
            }
            count += 1;
        }
        let mut previous = None;
        while max.is_none_or(|max| count < max) && previous != Some(at) {
            previous = Some(at);
            match self.first_match(body, at) {
                Some(end) => {
                    at = end;
                    count += 1;
                }
                None => break,
            }
        }
        if self.seq(rest, at, k) {
            return true;
        }
        self.caps = snapshot;
        false
    }
}
