//! The whole response around a ranking: the ranking's own fields and
//! disclosures, then the answer step.

use std::collections::HashMap;

use particles_model::{
    response::{ClaimCoverage, QueryResponse, RelevanceNote},
    Audience, Particle, ValidRequest,
};
use particles_query::QueryOutcome;

use crate::Settings;

/// The response's ranking fields: the hits, their effective confidences and
/// publication dates, the as-of, window and claim disclosures, the truncation
/// warning, relevance and the degraded-ranking disclosure. The answer fields are
/// left for [`answer`].
pub(crate) fn ranking_response(
    outcome: &QueryOutcome,
    request: &ValidRequest,
    settings: &Settings,
    with_vector: bool,
) -> QueryResponse {
    let mut response = QueryResponse::empty(String::new());
    response.particles = outcome
        .hits
        .iter()
        .map(|h| particles_model::Particle::clone(&h.particle))
        .collect();
    response.effective_confidences = outcome
        .hits
        .iter()
        .map(|h| h.effective_confidence)
        .collect();
    response.content_published_ats = outcome.hits.iter().map(|h| h.source.published_at).collect();
    response.truncation_warning = particles_query::truncation_warning(
        outcome,
        request.top_k,
        &settings.rank,
        &settings.truncation,
    );
    response.as_of = request.as_of;
    if request.as_of.is_some() {
        response.as_of_notes = outcome.hits.iter().map(|h| h.as_of_note.clone()).collect();
    }
    response.as_of_excluded_undatable = outcome.as_of_excluded_undatable as u64;
    response.window = request.window;
    if request.window.is_some() {
        response.window_hits = outcome.hits.iter().map(|h| h.window_hit.clone()).collect();
    }
    response.window_coverage = outcome.window_coverage;
    response.claim_coverage = outcome.claim_coverage.map(|c| ClaimCoverage {
        active_total: c.active_total,
        with_claims: c.with_claims,
        matched: c.matched as u64,
        not_normalizable_excluded: c.not_normalizable_excluded as u64,
        below_min_effective_confidence: 0,
    });
    if with_vector {
        let max = outcome
            .hits
            .iter()
            .map(|h| h.similarity)
            .fold(None, |best: Option<f64>, s| match best {
                // Python's max(): a later value replaces the best only when
                // strictly greater (`particles_rank::py_max`).
                Some(b) => Some(particles_rank::py_max(b, s)),
                None => Some(s),
            });
        response.relevance = max.map(|max_similarity| RelevanceNote {
            max_similarity,
            floor: settings.relevance_floor,
            below_floor: max_similarity < settings.relevance_floor,
        });
    } else {
        response.ranking_degraded = Some(particles_answer::RANKING_DEGRADED_NO_ENCODER.to_owned());
    }
    response
}

/// Runs the answer step over the response's hits and fills the answer fields
/// (and nulls the truncation warning under a refusal).
pub(crate) fn answer(
    response: &mut QueryResponse,
    outcome: &QueryOutcome,
    request: &ValidRequest,
    settings: &Settings,
    answer_settings: &particles_answer::AnswerSettings,
    with_vector: bool,
) {
    let hits: Vec<particles_answer::AnswerHit<'_>> = outcome
        .hits
        .iter()
        .map(|h| particles_answer::AnswerHit {
            particle: &h.particle,
            effective_confidence: h.effective_confidence,
        })
        .collect();
    let constituents: HashMap<String, Vec<&Particle>> = response
        .narrative_constituents
        .0
        .iter()
        .map(|(id, parts)| (id.clone(), parts.iter().collect()))
        .collect();
    let gap = response
        .subject_coverage_gaps
        .first()
        .map(|gap| particles_answer::CoverageGapNote {
            kind: match gap.kind {
                particles_model::response::CoverageGapKind::NoSubjectMatch => {
                    particles_answer::CoverageGapKind::NoSubjectMatch
                }
                particles_model::response::CoverageGapKind::SubjectHasNoParticles => {
                    particles_answer::CoverageGapKind::SubjectHasNoParticles
                }
                particles_model::response::CoverageGapKind::SubjectHasLowCoverage => {
                    particles_answer::CoverageGapKind::SubjectHasLowCoverage
                }
            },
            subject_name: gap.subject_name.as_deref(),
            particle_count: gap.particle_count,
        });
    let question = request.question.as_deref().unwrap_or_default();
    let input = particles_answer::AnswerInput {
        question,
        audience: match request.audience {
            Audience::Expert => particles_answer::Audience::Expert,
            Audience::General => particles_answer::Audience::General,
            Audience::Regulatory => particles_answer::Audience::Regulatory,
        },
        as_of: request.as_of,
        grounded: request.grounded.unwrap_or(settings.grounded_answers),
        hits: &hits,
        constituents: &constituents,
        relevance: response
            .relevance
            .map(|r| particles_answer::Relevance::new(r.max_similarity, r.floor)),
        ranking_degraded: !with_vector,
        coverage_gap: gap,
    };
    let answer = particles_answer::answer(&input, answer_settings);
    response.answer = answer.answer;
    response.answer_refused = answer.answer_refused;
    response.answer_generation_error = answer.answer_generation_error;
    response.answer_generation_error_cause =
        answer.answer_generation_error_cause.map(|c| match c {
            particles_answer::Cause::Budget => {
                particles_model::response::AnswerFailureCause::Budget
            }
            particles_answer::Cause::Provider => {
                particles_model::response::AnswerFailureCause::Provider
            }
        });
    response.answer_attribution =
        answer
            .answer_attribution
            .map(|a| particles_model::response::AnswerAttribution {
                sentences: a
                    .sentences
                    .into_iter()
                    .map(|s| particles_model::response::AttributedSentence {
                        text: s.text,
                        kind: match s.kind {
                            particles_answer::AttributionKind::Cited => {
                                particles_model::response::AttributionKind::Cited
                            }
                            particles_answer::AttributionKind::Inference => {
                                particles_model::response::AttributionKind::Inference
                            }
                            particles_answer::AttributionKind::Background => {
                                particles_model::response::AttributionKind::Background
                            }
                            particles_answer::AttributionKind::Unattributed => {
                                particles_model::response::AttributionKind::Unattributed
                            }
                        },
                        cited_ids: s.cited_ids,
                        invalid_citations: s.invalid_citations,
                    })
                    .collect(),
            });
    if answer.truncation_warning_suppressed {
        response.truncation_warning = None;
    }
}
