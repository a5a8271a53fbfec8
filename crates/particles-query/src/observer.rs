//! The project observer: which candidates a project sees (the reference's
//! `operations/query/observer_scope.py` `filter_visible`, over the join of
//! `store/observer_scope_join.py` and the set algebra of `core/observer_scope.py`).
//!
//! A belief's scope is derived at read time from the `project:<key>` tags of the
//! corpus entries that attest it: its own non-`PARTICLE` provenance refs and those
//! of every particle it is CO_EVIDENTIAL with; a `MUTABLE` entry attests only
//! through its current generation. A derived belief (any `PARTICLE` ref) takes the
//! meet of its premises' scopes. Nothing is filtered until the store was rescoped
//! (an `OBSERVER_SCOPE_RESCOPED` operator event): before that the note says
//! `engaged: false` and every candidate stays.

use std::collections::{BTreeSet, HashMap, HashSet};

use particles_model::{response::ObserverScopeNote, Timestamp};
use particles_store::{EntryCurrency, Store, StoredRef, WideningTarget};

use crate::Result;

/// The compiled-in tag that makes a keyless entry unattributed whatever
/// `observer_scope.harness_tags` says.
const UNATTRIBUTED_MARKER: &str = "scope:unattributed";
/// The tag prefix that carries a project key.
const PROJECT_TAG_PREFIX: &str = "project:";
/// How deep a chain of derived-from-derived beliefs is followed; past it a belief
/// is unattributed (in view for no project), the fail-closed answer.
pub(crate) const MAX_DERIVATION_DEPTH: usize = 8;

/// `observer_scope.harness_tags`, the reference's default: the tag its Claude
/// Code adapter puts on everything it harvests.
pub fn default_harness_tags() -> Vec<String> {
    vec!["claude-code".to_owned()]
}

/// What reading a candidate set through a project observer kept, and its
/// disclosure.
#[derive(Debug, Clone, PartialEq)]
pub struct ObserverFilter {
    /// The ids in view (every id when the observer is not engaged).
    pub visible: HashSet<String>,
    /// The response's `observer_scope` note.
    pub note: ObserverScopeNote,
}

/// Reads the candidates `ids` (in the ranking's candidate order, which decides
/// nothing but the order scopes are derived in) through the observer `project`.
///
/// `as_of` is the request's believed-at instant: an entry's current generation is
/// taken at it. `harness_tags` is `observer_scope.harness_tags`.
///
/// # Errors
///
/// [`crate::Error::Store`] when the store cannot be read or holds a provenance
/// list, tag list or capture instant the reference also fails on.
pub fn observer_filter(
    store: &Store,
    project: &str,
    as_of: Option<Timestamp>,
    ids: &[&str],
    harness_tags: &[String],
) -> Result<ObserverFilter> {
    let mut seen = HashSet::new();
    let ids: Vec<&str> = ids.iter().copied().filter(|id| seen.insert(*id)).collect();
    let total = ids.len() as u64;
    if !particles_store::observer_scope_rescoped(store)? {
        return Ok(ObserverFilter {
            visible: ids.iter().map(|id| (*id).to_owned()).collect(),
            note: ObserverScopeNote {
                project: project.to_owned(),
                engaged: false,
                total,
                in_scope: total,
                unattributed: 0,
                lapsed: 0,
                attribution: None,
            },
        });
    }
    let scopes = load_scopes(store, &ids, as_of, harness_tags)?;
    let mut visible = HashSet::new();
    let (mut unattributed, mut lapsed) = (0, 0);
    for (id, scope) in ids.iter().zip(&scopes) {
        if scope.visible_to(project) {
            visible.insert((*id).to_owned());
        }
        if scope.unattributed() {
            unattributed += 1;
        }
        if scope.lapsed && !scope.widened {
            lapsed += 1;
        }
    }
    Ok(ObserverFilter {
        note: ObserverScopeNote {
            project: project.to_owned(),
            engaged: true,
            total,
            in_scope: visible.len() as u64,
            unattributed,
            lapsed,
            attribution: as_of.map(|at| {
                format!(
                    "Projects are today's attribution, applied to what the store believed at \
                     {}; they are not what a session in that project saw then.",
                    at.python_isoformat()
                )
            }),
        },
        visible,
    })
}

/// One belief's observer scope: global, or a set of project keys; neither is in
/// view for no project (unattributed, or lapsed when its sources stopped stating
/// it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct BeliefScope {
    global: bool,
    keys: BTreeSet<String>,
    lapsed: bool,
    /// An operator widened this belief to every project.
    widened: bool,
}

impl BeliefScope {
    fn global() -> BeliefScope {
        BeliefScope {
            global: true,
            ..BeliefScope::default()
        }
    }

    fn lapsed() -> BeliefScope {
        BeliefScope {
            lapsed: true,
            ..BeliefScope::default()
        }
    }

    fn everywhere(&self) -> bool {
        self.global || self.widened
    }

    fn unattributed(&self) -> bool {
        !self.everywhere() && self.keys.is_empty() && !self.lapsed
    }

    fn visible_to(&self, project: &str) -> bool {
        self.everywhere() || self.keys.contains(project)
    }
}

/// The project keys among an entry's tags (an empty key is no key).
fn project_keys(tags: &[String]) -> impl Iterator<Item = &str> {
    tags.iter()
        .filter_map(|tag| tag.strip_prefix(PROJECT_TAG_PREFIX))
        .filter(|key| !key.is_empty())
}

/// Folds the entries attesting a belief: global as soon as one keyless entry is
/// neither harness-harvested nor marked unattributed, else the union of keys.
fn scope_of_entries<'a>(
    entries: impl Iterator<Item = &'a [String]>,
    harness_tags: &[String],
) -> BeliefScope {
    let mut keys = BTreeSet::new();
    for tags in entries {
        let mut entry_keys = project_keys(tags).peekable();
        if entry_keys.peek().is_some() {
            keys.extend(entry_keys.map(str::to_owned));
        } else if !tags
            .iter()
            .any(|tag| tag == UNATTRIBUTED_MARKER || harness_tags.contains(tag))
        {
            return BeliefScope::global();
        }
    }
    BeliefScope {
        keys,
        ..BeliefScope::default()
    }
}

/// Whether one corpus entry with these tags is in view for `project`: an entry
/// naming projects is in view for those, an unattributed or harness-harvested one
/// for none, any other for all (the reference's `visible(scope_of_entries([tags]))`).
pub fn entry_in_view(tags: &[String], project: &str, harness_tags: &[String]) -> bool {
    scope_of_entries(std::iter::once(tags), harness_tags).visible_to(project)
}

/// The scope of a belief derived from `premises`: their intersection (a global
/// premise narrows nothing); no premise at all is unattributed, an empty meet over
/// a lapsed premise is lapsed.
fn meet(premises: impl Iterator<Item = BeliefScope>) -> BeliefScope {
    let mut keys: Option<BTreeSet<String>> = None;
    let mut seen = false;
    let mut lapsed = false;
    for premise in premises {
        seen = true;
        if premise.global {
            continue;
        }
        lapsed = lapsed || premise.lapsed;
        keys = Some(match keys {
            None => premise.keys,
            Some(held) => held.intersection(&premise.keys).cloned().collect(),
        });
    }
    match (seen, keys) {
        (false, _) => BeliefScope::default(),
        (true, None) => BeliefScope::global(),
        (true, Some(keys)) => BeliefScope {
            lapsed: lapsed && keys.is_empty(),
            keys,
            ..BeliefScope::default()
        },
    }
}

/// Whether a non-`PARTICLE` ref is a current statement by its entry: a `MUTABLE`
/// entry attests only through its current generation (an `ABSENT` one attests
/// nothing); other entries, refs without a snapshot and entries without a
/// processed generation attest through every ref.
fn attests(snapshot_id: Option<&str>, currency: &EntryCurrency) -> bool {
    if !currency.mutable {
        return true;
    }
    if currency.absent {
        return false;
    }
    match (&currency.latest_snapshot_id, snapshot_id) {
        (None, _) | (_, None) => true,
        (Some(latest), Some(snapshot)) => latest == snapshot,
    }
}

/// Which corpus entries state a sourced belief (through its co-evidential
/// group): those that state it now, those that ever did, each one's tags, and
/// whether an operator widened any of them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Attestation {
    pub(crate) now: BTreeSet<String>,
    pub(crate) ever: BTreeSet<String>,
    pub(crate) tags: HashMap<String, Vec<String>>,
    pub(crate) widened: bool,
}

/// The attestation join over a set of beliefs (the reference's
/// `store/observer_scope_join.py` `load_attestations`): each derived belief's
/// premises (followed [`MAX_DERIVATION_DEPTH`] levels down), and each sourced
/// belief's attestation.
#[derive(Debug, Default)]
pub(crate) struct AttestationGraph {
    pub(crate) premises: HashMap<String, Vec<String>>,
    pub(crate) sourced: HashMap<String, Attestation>,
}

/// Reads the attestation graph of `ids`, entry generations taken at `as_of`
/// (`None`: now).
pub(crate) fn attestation_graph(
    store: &Store,
    ids: &[&str],
    as_of: Option<Timestamp>,
) -> Result<AttestationGraph> {
    // The candidates' own refs: a candidate is derived when it names any premise.
    let mut provenance = particles_store::stored_provenance(store, ids)?;
    let known: HashSet<&str> = ids.iter().copied().collect();
    let mut premises: HashMap<String, Vec<String>> = HashMap::new();
    let mut sourced: BTreeSet<String> = BTreeSet::new();
    for id in ids {
        let refs = provenance.get(*id).map(Vec::as_slice).unwrap_or_default();
        let named: Vec<&StoredRef> = refs.iter().filter(|r| r.ref_type == "PARTICLE").collect();
        if named.is_empty() {
            sourced.insert((*id).to_owned());
        } else {
            let premise_ids = named
                .iter()
                .filter(|r| !r.corpus_entry_id.is_empty())
                .map(|r| r.corpus_entry_id.clone())
                .collect();
            premises.insert((*id).to_owned(), premise_ids);
        }
    }

    // Premises may be derived too: resolve the derivation graph level by level.
    let mut frontier: BTreeSet<String> = premises
        .values()
        .flatten()
        .filter(|id| !premises.contains_key(*id) && !sourced.contains(*id))
        .cloned()
        .collect();
    for _ in 0..MAX_DERIVATION_DEPTH {
        if frontier.is_empty() {
            break;
        }
        let batch: Vec<&str> = frontier.iter().map(String::as_str).collect();
        let loaded = particles_store::stored_provenance(store, &batch)?;
        let mut next = BTreeSet::new();
        for id in &frontier {
            let premise_ids: Vec<String> = loaded
                .get(id)
                .into_iter()
                .flatten()
                .filter(|r| r.ref_type == "PARTICLE" && !r.corpus_entry_id.is_empty())
                .map(|r| r.corpus_entry_id.clone())
                .collect();
            if premise_ids.is_empty() {
                sourced.insert(id.clone());
            } else {
                next.extend(premise_ids.iter().cloned());
                premises.insert(id.clone(), premise_ids);
            }
        }
        provenance.extend(loaded);
        frontier = next
            .into_iter()
            .filter(|id| !premises.contains_key(id) && !sourced.contains(id))
            .collect();
    }
    let sourced = attestations(store, &sourced, &known, provenance, as_of)?;
    Ok(AttestationGraph { premises, sourced })
}

/// Each candidate's scope, in the order of `ids`.
fn load_scopes(
    store: &Store,
    ids: &[&str],
    as_of: Option<Timestamp>,
    harness_tags: &[String],
) -> Result<Vec<BeliefScope>> {
    let graph = attestation_graph(store, ids, as_of)?;
    let mut resolved: HashMap<String, BeliefScope> = graph
        .sourced
        .iter()
        .map(|(id, attestation)| {
            let scope = if attestation.widened {
                BeliefScope::global()
            } else if !attestation.ever.is_empty() && attestation.now.is_empty() {
                BeliefScope::lapsed()
            } else {
                scope_of_entries(
                    attestation
                        .now
                        .iter()
                        .map(|entry| attestation.tags[entry].as_slice()),
                    harness_tags,
                )
            };
            (id.clone(), scope)
        })
        .collect();
    let mut scopes: Vec<BeliefScope> = ids
        .iter()
        .map(|id| scope_of(id, &mut Vec::new(), &graph.premises, &mut resolved))
        .collect();
    if particles_store::any_widening(store)? {
        let widened = particles_store::widened_ids(store, WideningTarget::Particle, ids)?;
        for (id, scope) in ids.iter().zip(&mut scopes) {
            if widened.contains(*id) {
                scope.widened = true;
            }
        }
    }
    Ok(scopes)
}

/// A belief's scope: resolved already, else the meet of its premises' (followed
/// at most [`MAX_DERIVATION_DEPTH`] deep, never around a cycle), else unattributed.
/// Memoised in derivation order, as the reference does.
fn scope_of(
    id: &str,
    trail: &mut Vec<String>,
    premises: &HashMap<String, Vec<String>>,
    resolved: &mut HashMap<String, BeliefScope>,
) -> BeliefScope {
    if let Some(scope) = resolved.get(id) {
        return scope.clone();
    }
    let Some(named) = premises.get(id) else {
        return BeliefScope::default();
    };
    if trail.iter().any(|t| t == id) || trail.len() >= MAX_DERIVATION_DEPTH {
        return BeliefScope::default();
    }
    trail.push(id.to_owned());
    let parts: Vec<BeliefScope> = named
        .iter()
        .map(|premise| scope_of(premise, trail, premises, resolved))
        .collect();
    trail.pop();
    let scope = meet(parts.into_iter());
    resolved.insert(id.to_owned(), scope.clone());
    scope
}

/// The attestations of the sourced beliefs, from the entries their
/// co-evidential group names. `provenance` holds the refs read so far; group partners not among them
/// are read here.
fn attestations(
    store: &Store,
    sourced: &BTreeSet<String>,
    known: &HashSet<&str>,
    mut provenance: HashMap<String, Vec<StoredRef>>,
    as_of: Option<Timestamp>,
) -> Result<HashMap<String, Attestation>> {
    if sourced.is_empty() {
        return Ok(HashMap::new());
    }
    let sourced_ids: Vec<&str> = sourced.iter().map(String::as_str).collect();
    let neighbours = particles_store::co_evidential_neighbours(store, &sourced_ids)?;
    let groups: HashMap<&str, BTreeSet<&str>> = sourced_ids
        .iter()
        .map(|id| (*id, component(id, &neighbours)))
        .collect();
    let members: BTreeSet<&str> = groups.values().flatten().copied().collect();
    let unread: Vec<&str> = members
        .iter()
        .copied()
        .filter(|m| !provenance.contains_key(*m))
        .collect();
    provenance.extend(particles_store::stored_provenance(store, &unread)?);
    // A candidate's own refs count whatever their entry id; a partner's read from
    // its row only with one, as the reference reads them.
    let refs_of = |member: &str| -> Vec<(&str, Option<&str>)> {
        provenance
            .get(member)
            .into_iter()
            .flatten()
            .filter(|r| r.ref_type != "PARTICLE")
            .filter(|r| known.contains(member) || !r.corpus_entry_id.is_empty())
            .map(|r| (r.corpus_entry_id.as_str(), r.snapshot_id.as_deref()))
            .collect()
    };
    let member_refs: HashMap<&str, Vec<(&str, Option<&str>)>> =
        members.iter().map(|m| (*m, refs_of(m))).collect();
    let entries: Vec<&str> = member_refs
        .values()
        .flatten()
        .map(|(entry, _)| *entry)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let currency = particles_store::entry_currency(store, &entries, as_of)?;
    let widened_entries = if particles_store::any_widening(store)? {
        particles_store::widened_ids(store, WideningTarget::CorpusEntry, &entries)?
    } else {
        HashSet::new()
    };

    let mut out = HashMap::new();
    for id in &sourced_ids {
        let refs: Vec<(&str, Option<&str>)> = groups[id]
            .iter()
            .flat_map(|member| member_refs[member].iter().copied())
            .filter(|(entry, _)| currency.contains_key(*entry))
            .collect();
        let ever: BTreeSet<String> = refs.iter().map(|(entry, _)| (*entry).to_owned()).collect();
        let now: BTreeSet<String> = refs
            .iter()
            .filter(|(entry, snapshot)| attests(*snapshot, &currency[*entry]))
            .map(|(entry, _)| (*entry).to_owned())
            .collect();
        let attestation = Attestation {
            widened: ever
                .iter()
                .any(|entry| widened_entries.contains(entry.as_str())),
            tags: ever
                .iter()
                .map(|entry| (entry.clone(), currency[entry.as_str()].tags.clone()))
                .collect(),
            now,
            ever,
        };
        out.insert((*id).to_owned(), attestation);
    }
    Ok(out)
}

/// The CO_EVIDENTIAL component of `id` (itself included).
fn component<'a>(
    id: &'a str,
    neighbours: &'a HashMap<String, BTreeSet<String>>,
) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::from([id]);
    let mut stack = vec![id];
    while let Some(node) = stack.pop() {
        for next in neighbours.get(node).into_iter().flatten() {
            if seen.insert(next.as_str()) {
                stack.push(next.as_str());
            }
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|t| (*t).to_owned()).collect()
    }

    fn keyed(keys: &[&str]) -> BeliefScope {
        BeliefScope {
            keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            ..BeliefScope::default()
        }
    }

    #[test]
    fn entries_fold_to_global_keys_or_unattributed() {
        let harness = default_harness_tags();
        let fold =
            |entries: &[Vec<String>]| scope_of_entries(entries.iter().map(Vec::as_slice), &harness);
        assert_eq!(
            fold(&[tags(&["project:a"]), tags(&["project:b", "x"])]),
            keyed(&["a", "b"])
        );
        assert_eq!(
            fold(&[tags(&["project:a"]), tags(&[])]),
            BeliefScope::global()
        );
        assert_eq!(fold(&[tags(&["claude-code"])]), keyed(&[]));
        assert_eq!(fold(&[tags(&["scope:unattributed"])]), keyed(&[]));
        // An empty key is no key: the entry is keyless and not harvested.
        assert_eq!(fold(&[tags(&["project:"])]), BeliefScope::global());
        assert_eq!(fold(&[tags(&["claude-code", "project:a"])]), keyed(&["a"]));
        assert!(fold(&[]).unattributed());
    }

    #[test]
    fn meet_intersects_and_keeps_lapse() {
        assert_eq!(meet(std::iter::empty()), BeliefScope::default());
        assert_eq!(
            meet([BeliefScope::global()].into_iter()),
            BeliefScope::global()
        );
        assert_eq!(
            meet([keyed(&["a", "b"]), BeliefScope::global(), keyed(&["b"])].into_iter()),
            keyed(&["b"])
        );
        let met = meet([keyed(&["a"]), BeliefScope::lapsed()].into_iter());
        assert!(met.lapsed && met.keys.is_empty());
        let met = meet([keyed(&["a"]), keyed(&["b"])].into_iter());
        assert!(met.unattributed());
    }

    #[test]
    fn visibility() {
        assert!(BeliefScope::global().visible_to("p"));
        assert!(keyed(&["p"]).visible_to("p"));
        assert!(!keyed(&["q"]).visible_to("p"));
        let widened = BeliefScope {
            widened: true,
            ..BeliefScope::lapsed()
        };
        assert!(widened.visible_to("p") && !widened.unattributed());
    }

    #[test]
    fn mutable_entries_attest_through_their_current_generation() {
        let currency = |mutable, latest: Option<&str>, absent| EntryCurrency {
            tags: Vec::new(),
            mutable,
            latest_snapshot_id: latest.map(str::to_owned),
            absent,
        };
        assert!(attests(Some("old"), &currency(false, Some("new"), false)));
        assert!(!attests(Some("old"), &currency(true, Some("new"), false)));
        assert!(attests(Some("new"), &currency(true, Some("new"), false)));
        assert!(attests(None, &currency(true, Some("new"), false)));
        assert!(attests(Some("old"), &currency(true, None, false)));
        assert!(!attests(None, &currency(true, Some("gone"), true)));
    }
}
