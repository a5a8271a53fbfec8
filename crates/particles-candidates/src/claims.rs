//! Structured claims by particle id, parsed lazily when they come from a sidecar.

use std::{
    collections::HashMap,
    sync::{Arc, OnceLock},
};

use particles_model::StructuredClaim;

use crate::column::Column;

/// A predicate over bytes.
pub type BytesPredicate = dyn Fn(&[u8]) -> bool + Send + Sync;

/// Checks bytes read back from a sidecar (its section checksum).
#[derive(Clone)]
pub struct BytesCheck(pub Arc<BytesPredicate>);

impl std::fmt::Debug for BytesCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BytesCheck")
    }
}

/// Structured claims by particle id: parsed at build, or kept as JSON (from a
/// sidecar) and checked and parsed on first use, since only claim filters read
/// them (at a million rows they are 160 MB that a query without claim filters
/// need not hash).
#[derive(Debug, Clone, Default)]
pub(crate) struct Claims {
    /// Each claim behind an `Arc`: a delta clones the map, and sharing the
    /// claims makes that a reference count per row, not a deep copy of every
    /// claim's strings (measured: 5% of a server's CPU under a 1/s writer).
    pub(crate) parsed: OnceLock<(HashMap<String, Arc<StructuredClaim>>, bool)>,
    pub(crate) json: Option<Column<u8>>,
    pub(crate) check: Option<BytesCheck>,
}

impl Claims {
    /// The claims, and whether they are intact (checksum and parse).
    pub(crate) fn load(&self) -> &(HashMap<String, Arc<StructuredClaim>>, bool) {
        self.parsed.get_or_init(|| match &self.json {
            None => (HashMap::new(), true),
            Some(json) => {
                if self.check.as_ref().is_some_and(|check| !(check.0)(json)) {
                    return (HashMap::new(), false);
                }
                match serde_json::from_slice(json) {
                    Ok(map) => (map, true),
                    Err(_) => (HashMap::new(), false),
                }
            }
        })
    }

    pub(crate) fn map(&self) -> &HashMap<String, Arc<StructuredClaim>> {
        &self.load().0
    }

    pub(crate) fn map_mut(&mut self) -> &mut HashMap<String, Arc<StructuredClaim>> {
        self.map();
        self.json = None;
        &mut self.parsed.get_mut().expect("initialised by map() above").0
    }
}
