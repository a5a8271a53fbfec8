//! Interned strings: extractor names and entry, snapshot and source-key ids repeat
//! across rows, so a set stores each once and rows keep an index.

use std::collections::HashMap;

use foldhash::fast::RandomState;

use crate::column::StrColumn;

/// Interned strings; the lookup index is built on first use, so a set read from a
/// sidecar pays for it only when it is extended. The index hashes with foldhash,
/// not std's SipHash: a build interns four strings a row (SipHash was 1.3% of a
/// 100k build, perf), and nothing reads the index's order. Its keys come from the
/// user's own store and its seed is per process, so foldhash's weaker promise
/// against crafted collisions costs nothing here.
#[derive(Debug, Clone, Default)]
pub(crate) struct Interner {
    pub(crate) strings: StrColumn,
    pub(crate) index: Option<HashMap<String, u32, RandomState>>,
}

impl Interner {
    pub(crate) fn intern(&mut self, text: &str) -> u32 {
        let strings = &self.strings;
        let index = self.index.get_or_insert_with(|| {
            (0..strings.len())
                .map(|at| (strings.get(at).to_owned(), at as u32))
                .collect()
        });
        if let Some(&at) = index.get(text) {
            return at;
        }
        let at = u32::try_from(self.strings.len()).expect("fewer than 2^32 distinct strings");
        self.strings.push(text);
        index.insert(text.to_owned(), at);
        at
    }
}
