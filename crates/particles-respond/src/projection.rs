//! The memory projection (the reference's `operations/projection`:
//! `render_memory_region` over `project_splice_body`): the `MEMORY.md` region
//! body a client splices into its memory directory, rendered from the client's
//! own manifest, with no model call. Each derived section is a ranking without
//! a query vector, with the recall lifts (`apply_utility`, `apply_owner`), the
//! section's code-symbol weight and the region's excluded source tags; then
//! premises of ACTIVE abstractions drop out, `select.deny` subtracts,
//! `select.allow` adds, the set is re-ranked by `(-score, id)` and cut to
//! `top_k` (pins exempt). Bullet sections render digest-style lines with
//! contested flags; prose sections, without synthesis, the deterministic
//! listing. The manifest's budget drops the lowest-ranked unpinned bullets
//! first. Everything is read in the caller's one snapshot.

use std::{
    collections::{HashMap, HashSet},
    path::Path,
};

use particles_model::{
    projection::{pin_body, DerivedSection, DocManifest, RenderMode, Section},
    Particle, QueryRequest, RecallOptions, Timestamp,
};
use particles_rank::{Policies, RankSettings};
use particles_store::{CandidateLoader, Store};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::{contested, digest::render::fixed, DigestSettings, Error, Result};

/// What a region render is asked for besides its manifest.
#[derive(Debug, Clone, Copy)]
pub struct RegionRequest<'a> {
    /// The manifest's directory, against which a mechanical block's file is
    /// read; `None` (a remote client) refuses a manifest with one.
    pub base_dir: Option<&'a Path>,
    /// Render through this project's observer.
    pub observer_project: Option<&'a str>,
    /// Drop candidates held only by sources with one of these tags.
    pub exclude_source_tags: &'a [String],
    /// File URIs whose fold verdicts are asked.
    pub fold_targets: &'a [String],
}

/// The configuration the region reads besides the ranking's.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionSettings {
    /// The badge settings and harness tags the digest reads too.
    pub digest: DigestSettings,
    /// `consolidation.abstraction.source_demotion` is `suppress_in_projection`
    /// (the default): an ACTIVE abstraction's premises are left out.
    pub suppress_premises: bool,
}

/// Why a fold target is not represented by the region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FoldVerdict {
    /// The file's newest snapshot is not extracted.
    #[serde(rename = "not-extracted")]
    NotExtracted,
    /// The region shows none of the beliefs the file states now.
    #[serde(rename = "not-in-region")]
    NotInRegion,
}

/// A rendered region body, its hash, and the fold verdicts asked of it (the
/// route's JSON body).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryRegion {
    /// The body.
    pub body: String,
    /// SHA-256 of the body's UTF-8 bytes, in hex.
    pub content_hash: String,
    /// Per fold target, in the order asked: `null` when the region represents
    /// the file, else why not.
    pub fold_verdicts: serde_json::Map<String, serde_json::Value>,
}

/// One selected belief and the score it was ranked by.
type Selected = (Particle, f64);

/// The region body of `manifest` over `store` (call it inside one read
/// transaction), at `now`; the sections' candidates come from `loader` (the
/// engine's cache of that store, or the uncached loader).
///
/// # Errors
///
/// [`Error::ClientFileSection`] for a block without a base directory,
/// [`Error::StalePin`] for an allow pin naming no ACTIVE belief,
/// [`Error::Block`] for a block file that cannot be read,
/// [`Error::Section`] for a section whose query the reference refuses too, and
/// the store's and ranking's errors.
pub fn memory_region(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    manifest: &DocManifest,
    request: RegionRequest<'_>,
    rank: &RankSettings,
    settings: &RegionSettings,
    now: Timestamp,
) -> Result<MemoryRegion> {
    if request.base_dir.is_none()
        && manifest
            .sections
            .iter()
            .any(|section| matches!(section, Section::Block(_)))
    {
        return Err(Error::ClientFileSection);
    }
    let rows = crate::adopted_in_order(store, particles_store::load_policy_rows(store)?)?;
    let policies = Policies::compile(&rows, rank)?;
    let single = manifest.sections.len() == 1;
    // The premises of ACTIVE abstractions, read at most once per render.
    let mut suppressed: Option<HashSet<String>> = None;
    let mut backrefs: Option<HashMap<String, String>> = None;
    let mut parts = Vec::with_capacity(manifest.sections.len());
    for section in &manifest.sections {
        let section = match section {
            Section::Block(path) => {
                let base = request.base_dir.unwrap_or_else(|| Path::new(""));
                parts.push(Part::Text(read_block(base, path)?));
                continue;
            }
            Section::Derived(section) => section,
        };
        let header = if single {
            String::new()
        } else {
            format!("## {}\n\n", section.title)
        };
        let selected = select_section(
            store,
            loader,
            section,
            &request,
            rank,
            &policies,
            settings,
            &mut suppressed,
            now,
        )?;
        if section.render == RenderMode::Bullets {
            if backrefs.is_none() {
                backrefs = Some(contested::inconsistency_backrefs(store)?);
            }
            let backrefs = backrefs.as_ref().expect("loaded above");
            let particles: Vec<Particle> = selected.iter().map(|(p, _)| p.clone()).collect();
            let badges = if particles.is_empty() || !settings.digest.badge_enabled {
                vec![None; particles.len()]
            } else {
                crate::digest::badges(
                    store,
                    &particles,
                    &rows,
                    rank,
                    &policies,
                    &settings.digest,
                    now,
                )?
            };
            let bodies: Vec<&str> = section.select.allow.iter().map(|a| pin_body(a)).collect();
            let entries = selected
                .into_iter()
                .zip(badges)
                .map(|((particle, score), badge)| {
                    let pinned = bodies
                        .iter()
                        .any(|body| particle.id == *body || particle.id.starts_with(body));
                    Entry {
                        versus: backrefs.get(&particle.id).cloned(),
                        bases: badge.map(|b| b.bases).unwrap_or_default(),
                        particle,
                        score,
                        pinned,
                    }
                })
                .collect();
            parts.push(Part::Bullets { header, entries });
        } else if selected.is_empty() {
            parts.push(Part::Text(format!("{header}{NO_MATCH}\n")));
        } else {
            let body = listing(&selected);
            parts.push(Part::Text(format!(
                "{header}{}\n",
                particles_pytext::rstrip(&body)
            )));
        }
    }
    let document = strip_wiki_links(&apply_budget(
        &mut parts,
        manifest.max_lines,
        manifest.max_bytes,
    ));
    let mut body = document;
    if let Some(project) = request.observer_project {
        let engaged = particles_store::observer_scope_rescoped(store)?;
        body = format!(
            "{}\n{}\n",
            body.trim_end_matches('\n'),
            observer_trailer(project, engaged)
        );
    }
    let fold_verdicts = if request.fold_targets.is_empty() {
        serde_json::Map::new()
    } else {
        fold_verdicts(store, request.fold_targets, &region_short_ids(&body))?
    };
    let content_hash = hex(&Sha256::digest(body.as_bytes()));
    Ok(MemoryRegion {
        body,
        content_hash,
        fold_verdicts,
    })
}

const NO_MATCH: &str = "_No current particles match this section's binding._";

/// One derived section's ranked selection.
#[allow(clippy::too_many_arguments)] // the render's own context, passed down once
fn select_section(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    section: &DerivedSection,
    request: &RegionRequest<'_>,
    rank: &RankSettings,
    policies: &Policies,
    settings: &RegionSettings,
    suppressed: &mut Option<HashSet<String>>,
    now: Timestamp,
) -> Result<Vec<Selected>> {
    let subject_ids: Vec<Option<String>> = if section.subjects.is_empty() {
        vec![None]
    } else {
        let mut ids = Vec::new();
        for name in &section.subjects {
            // A subject the store does not know is skipped (the reference logs it).
            if let Some(id) =
                particles_store::subject_by_name(store, &particles_pytext::lower(name))?
            {
                ids.push(Some(id));
            }
        }
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        ids
    };
    let options = RecallOptions {
        apply_utility: true,
        apply_owner: true,
        exclude_source_tags: request.exclude_source_tags.to_vec(),
        code_symbol_rank_weight: section.code_symbol_rank_weight,
    };
    let mut merged: Vec<Selected> = Vec::new();
    let mut seen = HashSet::new();
    for subject_id in subject_ids {
        let query = QueryRequest {
            question: Some(section.topic_query().to_owned()),
            tags: section.tags.clone(),
            subject_id,
            top_k: section.top_k,
            min_confidence: section.min_confidence,
            include_non_asserted: false,
            include_document_meta: false,
            observer_project: request.observer_project.map(str::to_owned),
            ..QueryRequest::default()
        };
        let valid = query
            .validate(now)
            .map_err(|errors| Error::Section(format!("section {:?}: {errors}", section.title)))?;
        let input = particles_query::QueryInput {
            settings: rank,
            ..particles_query::QueryInput::new(&valid, None, now)
        }
        .with_recall(&options);
        let outcome =
            particles_query::run_query_in_snapshot(store, loader, &input, &rank.harness_tags)?;
        for hit in outcome.hits {
            if seen.insert(hit.id.clone()) {
                merged.push(((*hit.particle).clone(), hit.effective_confidence));
            }
        }
    }
    if settings.suppress_premises {
        // Read once per render, at the first section that gets this far (as
        // the reference reads it per section, of the same snapshot).
        if suppressed.is_none() {
            *suppressed = Some(
                particles_store::active_derived_particles(store)?
                    .iter()
                    .flat_map(|derived| derived.premise_ids().map(str::to_owned))
                    .collect(),
            );
        }
        if let Some(suppressed) = suppressed.as_ref().filter(|s| !s.is_empty()) {
            merged.retain(|(particle, _)| !suppressed.contains(&particle.id));
        }
    }
    apply_select(store, section, merged, policies, now)
}

/// `select.deny` subtracts, `select.allow` adds (a pin the cage missed is
/// loaded and scored on the cage's scale), then the set is re-ranked and cut
/// to `top_k`, pins exempt.
fn apply_select(
    store: &Store,
    section: &DerivedSection,
    cage: Vec<Selected>,
    policies: &Policies,
    now: Timestamp,
) -> Result<Vec<Selected>> {
    let deny: Vec<&str> = section.select.deny.iter().map(|d| pin_body(d)).collect();
    let mut merged: Vec<Selected> = cage
        .into_iter()
        .filter(|(particle, _)| {
            !deny
                .iter()
                .any(|d| particle.id == *d || particle.id.starts_with(d))
        })
        .collect();
    let mut allowed: HashSet<String> = HashSet::new();
    for raw in &section.select.allow {
        let pin = pin_body(raw);
        if let Some((particle, _)) = merged
            .iter()
            .find(|(particle, _)| particle.id == pin || particle.id.starts_with(pin))
        {
            allowed.insert(particle.id.clone());
            continue;
        }
        let Some(particle) = particles_store::active_particle_by_id_or_prefix(store, pin)? else {
            return Err(Error::StalePin(format!(
                "section {} select.allow id {} resolves to no ACTIVE particle (retracted, \
                 superseded, or never existed). Re-pin the successor id or widen the section's \
                 cage.",
                particles_model::python_repr(&section.title),
                particles_model::python_repr(raw)
            )));
        };
        let (_, scores) = crate::digest::confidence_and_rank(
            store,
            std::slice::from_ref(&particle),
            policies,
            now,
        )?;
        let score = scores.first().copied().unwrap_or(particle.confidence.value);
        allowed.insert(particle.id.clone());
        if let Some(slot) = merged.iter_mut().find(|(p, _)| p.id == particle.id) {
            *slot = (particle, score);
        } else {
            merged.push((particle, score));
        }
    }
    merged.sort_by(ranked);
    let top_k = section.top_k as usize;
    if merged.len() <= top_k {
        return Ok(merged);
    }
    // The kept top_k, then each pin past the cut at its ranked place (merged is
    // sorted, so keeping order keeps rank).
    let mut kept = 0;
    merged.retain(|(particle, _)| {
        kept += 1;
        kept <= top_k || allowed.contains(&particle.id)
    });
    Ok(merged)
}

/// The selection's order: score descending, then id.
fn ranked(a: &Selected, b: &Selected) -> std::cmp::Ordering {
    b.1.partial_cmp(&a.1)
        .unwrap_or(std::cmp::Ordering::Equal)
        .then_with(|| a.0.id.cmp(&b.0.id))
}

/// One rendered part of the body: text, or a bullet section the budget trims.
enum Part {
    Text(String),
    Bullets { header: String, entries: Vec<Entry> },
}

struct Entry {
    particle: Particle,
    score: f64,
    versus: Option<String>,
    bases: Vec<String>,
    pinned: bool,
}

impl Part {
    fn render(&self) -> String {
        match self {
            Part::Text(text) => text.clone(),
            Part::Bullets { header, entries } if entries.is_empty() => {
                format!("{header}{NO_MATCH}\n")
            }
            Part::Bullets { header, entries } => {
                let lines: Vec<String> = entries
                    .iter()
                    .map(|e| {
                        memory_bullet(
                            &e.particle.content,
                            short_id(&e.particle.id),
                            e.versus.as_deref().map(short_id),
                            &e.bases,
                        )
                    })
                    .collect();
                let trailer = sources_trailer(entries.iter().map(|e| short_id(&e.particle.id)));
                format!("{header}{}\n\n{trailer}", lines.join("\n"))
            }
        }
    }
}

fn assemble(parts: &[Part]) -> String {
    let rendered: Vec<String> = parts
        .iter()
        .map(|part| part.render().trim_end_matches('\n').to_owned())
        .collect();
    format!("{}\n", rendered.join("\n").trim_matches('\n'))
}

/// The document budget: while over it, drop the globally lowest-ranked unpinned
/// bullet (lowest score, greatest id among ties; the first such in document
/// order) and assemble again. Text parts are never cut; a budget they alone
/// exceed is rendered over (the reference warns).
fn apply_budget(parts: &mut [Part], max_lines: Option<u64>, max_bytes: Option<u64>) -> String {
    let mut document = assemble(parts);
    if max_lines.is_none() && max_bytes.is_none() {
        return document;
    }
    let over = |doc: &str| {
        max_lines.is_some_and(|max| particles_pytext::splitlines(doc).len() as u64 > max)
            || max_bytes.is_some_and(|max| doc.len() as u64 > max)
    };
    while over(&document) {
        let mut worst: Option<(usize, usize, f64, String)> = None;
        for (p, part) in parts.iter().enumerate() {
            let Part::Bullets { entries, .. } = part else {
                continue;
            };
            for (i, entry) in entries.iter().enumerate().filter(|(_, e)| !e.pinned) {
                let later = match &worst {
                    None => true,
                    // Greater in (-score, id): a strictly lower score, or an
                    // equal one with a greater id.
                    Some((_, _, score, id)) => {
                        entry.score < *score || (entry.score == *score && entry.particle.id > *id)
                    }
                };
                if later {
                    worst = Some((p, i, entry.score, entry.particle.id.clone()));
                }
            }
        }
        let Some((p, i, _, _)) = worst else {
            break;
        };
        if let Part::Bullets { entries, .. } = &mut parts[p] {
            entries.remove(i);
        }
        document = assemble(parts);
    }
    document
}

/// The deterministic listing of a prose section without synthesis.
fn listing(selected: &[Selected]) -> String {
    let lines: Vec<String> = selected
        .iter()
        .map(|(particle, score)| {
            format!(
                "- {} `p-{}` _(confidence {})_",
                neutralize(&flatten(&particle.content)),
                short_id(&particle.id),
                fixed(*score, 2)
            )
        })
        .collect();
    let trailer = sources_trailer(selected.iter().map(|(p, _)| short_id(&p.id)));
    format!("{}\n\n{trailer}", lines.join("\n"))
}

/// One memory bullet (the reference core's `format_memory_bullet`).
fn memory_bullet(content: &str, short: &str, versus: Option<&str>, bases: &[String]) -> String {
    let flat = neutralize(&flatten(content));
    let versus = versus.map_or(String::new(), |v| format!(" (vs. p-{v})"));
    if !bases.is_empty() {
        format!(
            "- ⚠ contested ({}) — {flat}{versus} `p-{short}`",
            bases.join(", ")
        )
    } else if !versus.is_empty() {
        format!("- ⚠ contested — {flat}{versus} `p-{short}`")
    } else {
        format!("- {flat} `p-{short}`")
    }
}

/// The sources trailer: the short ids, sorted and unique, in one comment line
/// (empty for none).
fn sources_trailer<'a>(ids: impl Iterator<Item = &'a str>) -> String {
    let mut ids: Vec<&str> = ids.collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return String::new();
    }
    let listed: Vec<String> = ids.iter().map(|id| format!("p-{id}")).collect();
    format!("<!-- sources: {} -->\n", listed.join(", "))
}

/// The eight-character display prefix of an id.
fn short_id(id: &str) -> &str {
    id.char_indices().nth(8).map_or(id, |(at, _)| &id[..at])
}

/// Python's `" ".join(text.split())`.
fn flatten(text: &str) -> String {
    text.split(particles_pytext::is_space)
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// HTML comment delimiters escaped, so a belief cannot open or close a region.
fn neutralize(text: &str) -> String {
    text.replace("<!--", "&lt;!--").replace("-->", "--&gt;")
}

/// `[[Target]]` as `Target`, `[[Target|alias]]` as `alias` (the reference's
/// `_WIKI_LINK_RE`: a target of characters other than `[`, `]` and `|`, an
/// alias of characters other than `[` and `]`).
fn strip_wiki_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("[[") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        match wiki_link(after) {
            Some((shown, used)) => {
                out.push_str(shown);
                rest = &after[used..];
            }
            None => {
                out.push('[');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// After `[[`: the text shown and the bytes the link used, if one is there.
fn wiki_link(after: &str) -> Option<(&str, usize)> {
    let target_len = after.find(['[', ']', '|']).unwrap_or(after.len());
    if target_len == 0 {
        return None;
    }
    let target = &after[..target_len];
    let tail = &after[target_len..];
    if let Some(alias_part) = tail.strip_prefix('|') {
        let alias_len = alias_part.find(['[', ']']).unwrap_or(alias_part.len());
        if alias_len > 0 && alias_part[alias_len..].starts_with("]]") {
            return Some((&alias_part[..alias_len], target_len + 1 + alias_len + 2));
        }
        return None;
    }
    tail.starts_with("]]").then_some((target, target_len + 2))
}

/// A mechanical block's fragment, stripped, with one newline.
fn read_block(base: &Path, path: &str) -> Result<String> {
    let file = Path::new(path);
    let file = if file.is_absolute() {
        file.to_path_buf()
    } else {
        base.join(file)
    };
    let text = std::fs::read_to_string(&file).map_err(|error| {
        Error::Block(format!(
            "the manifest's block {} cannot be read: {error}",
            file.display()
        ))
    })?;
    Ok(format!("{}\n", particles_pytext::strip(&text)))
}

/// The region's last line under a project observer.
fn observer_trailer(project: &str, engaged: bool) -> String {
    if engaged {
        format!("<!-- observer: project {project} -->")
    } else {
        format!(
            "<!-- observer: project {project} NOT applied — this store has not been rescoped \
             (`particles memory rescope`); the whole store is shown -->"
        )
    }
}

/// The short ids the body's memory bullets cite (the reference core's
/// `parse_memory_bullet` over each line).
fn region_short_ids(body: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for line in particles_pytext::splitlines(body) {
        if let Some(id) = bullet_id(line) {
            if !ids.iter().any(|seen| seen == id) {
                ids.push(id.to_owned());
            }
        }
    }
    ids
}

/// `^- .*`p-(?P<id>[0-9A-Za-z-]+)`\s*$`: the id of the last `` `p-…` `` span
/// closing the line.
fn bullet_id(line: &str) -> Option<&str> {
    if !line.starts_with("- ") {
        return None;
    }
    let inner = line
        .trim_end_matches(particles_pytext::is_space)
        .strip_suffix('`')?;
    let at = inner.rfind("`p-")?;
    if at < 2 {
        return None;
    }
    let id = &inner[at + 3..];
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')).then_some(id)
}

/// Per target: `null` when the region shows an ACTIVE belief its newest
/// complete snapshot states, else why not.
fn fold_verdicts(
    store: &Store,
    targets: &[String],
    region_ids: &[String],
) -> Result<serde_json::Map<String, serde_json::Value>> {
    let mut verdicts = serde_json::Map::new();
    for uri in targets {
        let verdict = match particles_store::newest_snapshot_beliefs(store, uri)? {
            Some((status, ids)) if status == "COMPLETE" => {
                let shown = ids.iter().any(|id| {
                    region_ids
                        .iter()
                        .any(|short| id.starts_with(short.as_str()))
                });
                (!shown).then_some(FoldVerdict::NotInRegion)
            }
            _ => Some(FoldVerdict::NotExtracted),
        };
        verdicts.insert(
            uri.clone(),
            serde_json::to_value(verdict).unwrap_or(serde_json::Value::Null),
        );
    }
    Ok(verdicts)
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wiki_links_read_as_plain_text() {
        assert_eq!(
            strip_wiki_links("a [[B]] c [[D|e f]] [[[g]]"),
            "a B c e f [g"
        );
        assert_eq!(
            strip_wiki_links("[[a|]] [[|b]] [[x|y|z]] [[q"),
            "[[a|]] [[|b]] y|z [[q"
        );
    }

    #[test]
    fn bullets_read_back_their_last_handle() {
        assert_eq!(bullet_id("- text `p-abc` `p-0123abcd`  "), Some("0123abcd"));
        assert_eq!(
            bullet_id("- ⚠ contested (stance) — x (vs. p-1) `p-9f`"),
            Some("9f")
        );
        assert_eq!(bullet_id("- `p-a b`"), None);
        assert_eq!(bullet_id("* `p-ab`"), None);
        assert_eq!(
            memory_bullet("a\n b <!-- c -->", "0123abcd", Some("ffffffff"), &[]),
            "- ⚠ contested — a b &lt;!-- c --&gt; (vs. p-ffffffff) `p-0123abcd`"
        );
        assert_eq!(
            sources_trailer(["b", "a", "b"].into_iter()),
            "<!-- sources: p-a, p-b -->\n"
        );
    }
}
