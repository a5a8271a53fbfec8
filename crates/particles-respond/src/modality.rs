//! The viewer's modality lens (the reference's `operations/modality.py`
//! `ModalityLens` over `core/modality.py` `effective_modality`): the adopted
//! lenses' `modality_rules` read over each claim's stored `assertion_modality`. Only
//! the contested badge's inconsistency basis asks it, and only whether a claim
//! reads as adjudicable (FALSIFIABLE).

use std::collections::{HashMap, HashSet};

use particles_model::{policy::Lens, AssertionModality, Particle, ProvenanceRefType};
use particles_pyre::PyRegex;
use particles_store::Store;

use crate::Result;

/// Rule scopes from most to least specific: within one lens the most specific
/// scope its matching rules sit at decides that lens's reading.
const SCOPE_ORDER: [Scope; 4] = [
    Scope::Particle,
    Scope::Subject,
    Scope::UrlPattern,
    Scope::SourceType,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Particle,
    Subject,
    UrlPattern,
    SourceType,
}

/// One adopted lens's modality rule.
#[derive(Debug, Clone)]
struct Rule {
    lens: String,
    scope: Scope,
    pattern: String,
    modality: AssertionModality,
    /// Only for claims whose stored modality is this one.
    when: Option<AssertionModality>,
}

/// The adopted lenses' modality rules, in adoption then entry order.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModalityLens {
    rules: Vec<Rule>,
}

/// What the rules match on for one claim.
struct Facts<'a> {
    particle: &'a Particle,
    pinned: bool,
    source_types: HashSet<&'a str>,
    source_uris: Vec<&'a str>,
}

impl ModalityLens {
    /// The rules of `lenses` (adopted, in adoption order). An entry without a
    /// pattern or a modality is skipped, as the reference's lens reader skips it;
    /// a modality that does not parse already failed the ranking's lens check.
    pub(crate) fn from_lenses(lenses: &[Lens]) -> ModalityLens {
        let mut rules = Vec::new();
        for lens in lenses {
            for entry in &lens.entries {
                let scope = match entry.entry_kind.as_str() {
                    "modality_particle" => Scope::Particle,
                    "modality_subject" => Scope::Subject,
                    "modality_url_pattern" => Scope::UrlPattern,
                    "modality_source_type" => Scope::SourceType,
                    _ => continue,
                };
                let pattern = entry.pattern.as_deref().filter(|p| !p.is_empty());
                let modality = entry.modality.as_deref().filter(|m| !m.is_empty());
                let (Some(pattern), Some(Ok(modality))) =
                    (pattern, modality.map(str::parse::<AssertionModality>))
                else {
                    continue;
                };
                let when = entry
                    .modality_when
                    .as_deref()
                    .filter(|w| !w.is_empty())
                    .and_then(|w| w.parse().ok());
                rules.push(Rule {
                    lens: lens.name.clone(),
                    scope,
                    pattern: pattern.to_owned(),
                    modality,
                    when,
                });
            }
        }
        ModalityLens { rules }
    }

    /// Whether each of `particles` reads as adjudicable, keyed by id. With no rule
    /// every claim reads as its stored default and nothing is read from the store.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Store`] when the store cannot be read.
    pub(crate) fn adjudicable(
        &self,
        store: &Store,
        particles: &[&Particle],
    ) -> Result<HashMap<String, bool>> {
        if self.rules.is_empty() {
            return Ok(particles
                .iter()
                .map(|p| {
                    (
                        p.id.clone(),
                        p.assertion_modality == AssertionModality::Falsifiable,
                    )
                })
                .collect());
        }
        let ids: Vec<&str> = particles.iter().map(|p| p.id.as_str()).collect();
        let pinned = particles_store::operator_pinned_ids(store, &ids)?;
        let needs_sources = self
            .rules
            .iter()
            .any(|r| matches!(r.scope, Scope::SourceType | Scope::UrlPattern));
        let sources = if needs_sources {
            let entries: Vec<&str> = particles
                .iter()
                .flat_map(|p| source_entries(p))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            particles_store::entry_source_facts(store, &entries)?
        } else {
            HashMap::new()
        };
        let mut out = HashMap::new();
        for particle in particles {
            let found: Vec<&(String, Option<String>)> = source_entries(particle)
                .filter_map(|entry| sources.get(entry))
                .collect();
            let facts = Facts {
                particle,
                pinned: pinned.contains(&particle.id),
                source_types: found.iter().map(|(t, _)| t.as_str()).collect(),
                source_uris: found
                    .iter()
                    .filter_map(|(_, uri)| uri.as_deref().filter(|u| !u.is_empty()))
                    .collect(),
            };
            out.insert(particle.id.clone(), self.reads_adjudicable(&facts));
        }
        Ok(out)
    }

    /// An operator verdict wins; else each lens's most specific matching rules
    /// decide its reading (abstention first), and across lenses any abstention
    /// wins; silence leaves the stored default.
    fn reads_adjudicable(&self, facts: &Facts<'_>) -> bool {
        let stored = facts.particle.assertion_modality;
        if facts.pinned {
            return stored == AssertionModality::Falsifiable;
        }
        let mut lenses: Vec<(&str, Vec<&Rule>)> = Vec::new();
        for rule in self.rules.iter().filter(|r| matches(r, facts)) {
            match lenses.iter_mut().find(|(lens, _)| *lens == rule.lens) {
                Some((_, rules)) => rules.push(rule),
                None => lenses.push((&rule.lens, vec![rule])),
            }
        }
        if lenses.is_empty() {
            return stored == AssertionModality::Falsifiable;
        }
        lenses.iter().all(|(_, rules)| {
            let scope = SCOPE_ORDER
                .iter()
                .find(|scope| rules.iter().any(|r| r.scope == **scope));
            rules
                .iter()
                .filter(|r| Some(&r.scope) == scope)
                .all(|r| r.modality == AssertionModality::Falsifiable)
        })
    }
}

/// The corpus entries a particle's `SOURCE` refs name.
fn source_entries(particle: &Particle) -> impl Iterator<Item = &str> {
    particle
        .provenance
        .iter()
        .filter(|r| r.ref_type == ProvenanceRefType::Source)
        .map(|r| r.corpus_entry_id.as_str())
}

fn matches(rule: &Rule, facts: &Facts<'_>) -> bool {
    if rule
        .when
        .is_some_and(|when| when != facts.particle.assertion_modality)
    {
        return false;
    }
    match rule.scope {
        Scope::Particle => rule.pattern == facts.particle.id,
        Scope::Subject => facts.particle.subject_ids.contains(&rule.pattern),
        Scope::SourceType => facts.source_types.contains(rule.pattern.as_str()),
        // A pattern PyRegex refuses matches nothing here, as before the merge
        // with the PyRegex port (which this check predates).
        Scope::UrlPattern => match PyRegex::compile(&rule.pattern) {
            Err(_) => false,
            Ok(regex) => facts.source_uris.iter().any(|uri| regex.search(uri)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use particles_model::policy::LensEntry;

    fn entry(kind: &str, pattern: &str, modality: &str, when: Option<&str>) -> LensEntry {
        LensEntry {
            entry_kind: kind.to_owned(),
            pattern: Some(pattern.to_owned()),
            modality: Some(modality.to_owned()),
            modality_when: when.map(str::to_owned),
            ..LensEntry::default()
        }
    }

    fn lens(name: &str, entries: Vec<LensEntry>) -> Lens {
        Lens {
            name: name.to_owned(),
            version: 1,
            entries,
        }
    }

    fn particle(id: &str, modality: AssertionModality, subjects: &[&str]) -> Particle {
        let json = serde_json::json!({
            "id": id, "content": "c", "confidence": {"value": 0.5},
            "uncertainty_nature": "EPISTEMIC", "asserted_by": "x",
            "asserted_at": "2024-01-01T00:00:00", "assertion_modality": modality.as_str(),
            "subject_ids": subjects,
        });
        serde_json::from_value(json).unwrap()
    }

    fn reads(lens: &ModalityLens, p: &Particle, pinned: bool) -> bool {
        lens.reads_adjudicable(&Facts {
            particle: p,
            pinned,
            source_types: HashSet::new(),
            source_uris: Vec::new(),
        })
    }

    #[test]
    fn the_most_specific_scope_decides_within_a_lens() {
        let rules = ModalityLens::from_lenses(&[lens(
            "a",
            vec![
                entry("modality_subject", "s", "EVALUATIVE", None),
                entry("modality_particle", "p", "FALSIFIABLE", None),
            ],
        )]);
        let p = particle("p", AssertionModality::Evaluative, &["s"]);
        assert!(reads(&rules, &p, false));
        let q = particle("q", AssertionModality::Falsifiable, &["s"]);
        assert!(!reads(&rules, &q, false));
    }

    #[test]
    fn abstention_wins_across_lenses_and_an_operator_pin_wins_over_all() {
        let rules = ModalityLens::from_lenses(&[
            lens(
                "a",
                vec![entry("modality_particle", "p", "FALSIFIABLE", None)],
            ),
            lens(
                "b",
                vec![entry(
                    "modality_subject",
                    "s",
                    "EXPERIENTIAL",
                    Some("FALSIFIABLE"),
                )],
            ),
        ]);
        let p = particle("p", AssertionModality::Falsifiable, &["s"]);
        assert!(!reads(&rules, &p, false));
        assert!(reads(&rules, &p, true));
        // `when` limits lens b to FALSIFIABLE claims: an EVALUATIVE one is granted by a.
        let p = particle("p", AssertionModality::Evaluative, &["s"]);
        assert!(reads(&rules, &p, false));
        // Silence leaves the stored default.
        let r = particle("r", AssertionModality::Evaluative, &[]);
        assert!(!reads(&rules, &r, false));
    }
}
