//! The session digest (the reference's `operations/digest.py`
//! `build_digest_located`): one line per ACTIVE belief, ranked by effective
//! confidence with the recall lifts, capped, contested beliefs flagged. No
//! embedding and no model: every ACTIVE belief is scored with the ranking's
//! effective-confidence formula, read in one snapshot.

pub(crate) mod render;
mod spend;

use particles_model::{Particle, Timestamp};
use particles_query::LiftItem;
use particles_rank::{Policies, RankSettings};
use particles_store::Store;
use serde::Serialize;

pub use self::render::{render_digest, DigestEntry};
use crate::{contested, contestedness, effective, modality::ModalityLens, Result};

/// The configuration keys the digest reads, with the reference's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct DigestSettings {
    /// `mcp.recall.digest_max_beliefs` (200; 0: no cap).
    pub max_beliefs: u64,
    /// `contestedness.badge_enabled` (true).
    pub badge_enabled: bool,
    /// `contestedness.callout_threshold` (0.2).
    pub callout_threshold: f64,
    /// `observer_scope.harness_tags`.
    pub harness_tags: Vec<String>,
    /// `extraction.refusal_retry_days` (30; 0: nothing is held).
    pub refusal_retry_days: f64,
    /// The extraction model as `provider:model` (`llm.extraction`, else
    /// `llm.default`): a refusal counts only under the model that would retry.
    pub extraction_model: String,
}

impl Default for DigestSettings {
    fn default() -> Self {
        DigestSettings {
            max_beliefs: 200,
            badge_enabled: true,
            callout_threshold: 0.2,
            harness_tags: particles_query::default_harness_tags(),
            refusal_retry_days: 30.0,
            extraction_model: "anthropic:claude-sonnet-5-5".to_owned(),
        }
    }
}

/// The digest text, with the belief behind each of its lines (the reference's
/// `RenderedDigest`; its JSON is `GET /digest/{store}`'s body).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RenderedDigest {
    /// The Markdown.
    pub markdown: String,
    /// One per belief line, in order.
    pub lines: Vec<DigestLine>,
}

/// Which belief one digest line shows, and where the line starts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DigestLine {
    /// The belief.
    pub particle_id: String,
    /// The line's first character in the text, counted in code points (a Python
    /// string index).
    pub offset: u64,
    /// The contested bases the line shows.
    pub contested_bases: Vec<String>,
}

/// The digest of `store` (shown as `name`), read through the observer
/// `project` when given, with decay, use events and contestedness at `now`.
/// Call it inside one read transaction so every part reads one snapshot.
///
/// # Errors
///
/// [`crate::Error::Store`] / [`crate::Error::Rank`] when the store cannot be read
/// or holds data the reference also fails on.
pub fn session_digest(
    store: &Store,
    name: &str,
    project: Option<&str>,
    rank: &RankSettings,
    settings: &DigestSettings,
    now: Timestamp,
) -> Result<RenderedDigest> {
    let mut actives = particles_store::particles_with_status(store, "ACTIVE")?;
    let observer = match project {
        None => None,
        Some(project) => {
            let ids: Vec<&str> = actives.iter().map(|p| p.id.as_str()).collect();
            let filter = particles_query::observer_filter(
                store,
                project,
                None,
                &ids,
                &settings.harness_tags,
            )?;
            actives.retain(|p| filter.visible.contains(&p.id));
            Some(filter.note)
        }
    };
    let total = actives.len() as u64;
    let rows = crate::adopted_in_order(store, particles_store::load_policy_rows(store)?)?;
    let policies = Policies::compile(&rows, rank)?;
    let (effective, rank_scores) = confidence_and_rank(store, &actives, &policies, now)?;
    let backrefs = contested::inconsistency_backrefs(store)?;
    let spend = spend::store_spend(store)?;
    let refused = refused_in_view(store, project, settings, now)?;
    let names = particles_store::subject_names(store)?;

    let mut order: Vec<usize> = (0..actives.len()).collect();
    order.sort_by(|&a, &b| {
        rank_scores[b]
            .partial_cmp(&rank_scores[a])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| actives[a].id.cmp(&actives[b].id))
    });
    if settings.max_beliefs > 0 {
        order.truncate(usize::try_from(settings.max_beliefs).unwrap_or(usize::MAX));
    }
    let shown: Vec<Particle> = order.iter().map(|&i| actives[i].clone()).collect();
    let badges = if settings.badge_enabled {
        badges(store, &shown, &rows, rank, &policies, settings, now)?
    } else {
        vec![None; shown.len()]
    };
    let entries: Vec<DigestEntry<'_>> = order
        .iter()
        .zip(&shown)
        .zip(&badges)
        .map(|((&i, particle), badge)| DigestEntry {
            content: &particle.content,
            effective_confidence: effective[i],
            subjects: particle
                .subject_ids
                .iter()
                .filter_map(|id| names.get(id).map(String::as_str))
                .collect(),
            asserted_at: particle.asserted_at,
            contested: backrefs.get(&particle.id).map(String::as_str),
            contested_bases: badge.as_ref().map_or(&[][..], |b| b.bases.as_slice()),
        })
        .collect();
    let spend_line = spend.map(|s| s.line());
    let refused_line = (refused > 0).then(|| {
        format!(
            "{refused} source(s) are not in memory: the extraction model declined them \
             (see `particles curate`)."
        )
    });
    let (markdown, offsets) = render_digest(
        name,
        &entries,
        total,
        observer.as_ref(),
        spend_line.as_deref(),
        refused_line.as_deref(),
    );
    let lines = shown
        .iter()
        .zip(&entries)
        .zip(offsets)
        .map(|((particle, entry), offset)| DigestLine {
            particle_id: particle.id.clone(),
            offset,
            contested_bases: entry.contested_bases.to_vec(),
        })
        .collect();
    Ok(RenderedDigest { markdown, lines })
}

/// The contested badge of each of `shown` (the reference's
/// `compute_contested_badges`), parallel to it.
pub(crate) fn badges(
    store: &Store,
    shown: &[Particle],
    rows: &particles_model::policy::PolicyRows,
    rank: &RankSettings,
    policies: &Policies,
    settings: &DigestSettings,
    now: Timestamp,
) -> Result<Vec<Option<particles_model::response::ContestedBadge>>> {
    let members = particles_rank::member_policies(rows, rank)?;
    let readings = contestedness::contestedness_readings(store, shown, &members, policies, now)?;
    let lens = ModalityLens::from_lenses(&rows.lenses);
    contested::contested_badges(store, shown, &readings, &lens, settings.callout_threshold)
}

/// Each particle's effective confidence (what a line shows) and its rank score
/// (what orders the lines: the effective confidence plus the usefulness and
/// owner lifts), parallel to `particles`.
pub(crate) fn confidence_and_rank(
    store: &Store,
    particles: &[Particle],
    policies: &Policies,
    now: Timestamp,
) -> Result<(Vec<f64>, Vec<f64>)> {
    if particles.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let refs: Vec<&Particle> = particles.iter().collect();
    let (effective, facts) = effective::effective_with_facts(store, &refs, policies, now)?;
    let items: Vec<LiftItem<'_>> = particles
        .iter()
        .zip(&facts)
        .map(|(particle, source)| LiftItem {
            id: &particle.id,
            source_type: &source.source_type,
            uri: source.uri.as_deref(),
            subject_ids: &particle.subject_ids,
        })
        .collect();
    let owner = particles_query::owner_viewer(store, &policies.settings.owner_lens)?;
    let rank = particles_query::recall_lifts(
        store,
        &items,
        &effective,
        policies.utility.as_ref(),
        owner.as_ref(),
        now,
    )?;
    Ok((effective, rank))
}

/// How many held sources the observer may learn of: every one without a
/// project, else those whose corpus entry is in view for it (by its tags alone:
/// the rescope marker is not consulted, as in the reference).
fn refused_in_view(
    store: &Store,
    project: Option<&str>,
    settings: &DigestSettings,
    now: Timestamp,
) -> Result<u64> {
    let days = settings.refusal_retry_days;
    if days.is_nan() || days <= 0.0 {
        return Ok(0);
    }
    let window = (days * 86_400_000_000.0).round_ties_even();
    let cutoff = Timestamp::from_utc_micros(now.utc_micros().saturating_sub(window as i64))
        .map(|t| t.to_store_text())
        .unwrap_or_default();
    let held = particles_store::held_snapshot_tags(store, &settings.extraction_model, &cutoff)?;
    let Some(project) = project else {
        return Ok(held.len() as u64);
    };
    Ok(held
        .iter()
        .filter(|tags| {
            particles_query::entry_in_view(
                &tag_list(tags.as_deref()),
                project,
                &settings.harness_tags,
            )
        })
        .count() as u64)
}

/// A corpus entry's `tags_json` as the reference reads it for the held list:
/// the string elements of a JSON list, nothing for anything else.
fn tag_list(json: Option<&str>) -> Vec<String> {
    match serde_json::from_str::<serde_json::Value>(json.filter(|j| !j.is_empty()).unwrap_or("[]"))
    {
        Ok(serde_json::Value::Array(items)) => items
            .into_iter()
            .filter_map(|item| match item {
                serde_json::Value::String(tag) => Some(tag),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}
