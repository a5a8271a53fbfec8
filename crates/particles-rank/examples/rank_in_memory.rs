//! Ranking candidates that live in memory, with `particles-rank` alone: no store,
//! no SQLite. A downstream program that holds its own beliefs builds a
//! `CandidateSet`, composes the (here empty) policies with the reference's default
//! settings, scores every candidate against a question vector, sorts stably and
//! cuts, as the reference's `retrieve_ranked` does.
//!
//! Run with `cargo run -p particles-rank --example rank_in_memory`.

use particles_candidates::CandidateSet;
use particles_model::{parse_particle_json, policy::PolicyRows, policy::SourceFacts, Timestamp};
use particles_rank::{NormKernel, Policies, QueryVector, RankSettings, Ranked};

/// A unit vector pointing mostly along `axis`.
fn vector(axis: usize) -> Vec<f32> {
    let mut v = vec![0.01f32; 384];
    v[axis] = 1.0;
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let beliefs = [
        ("a", "Gold does not rust.", 0.9, 0),
        ("b", "Silver tarnishes in air.", 0.8, 1),
        ("c", "Copper turns green over decades.", 0.6, 0),
    ];
    let mut set = CandidateSet::new();
    for (rowid, (id, content, confidence, axis)) in beliefs.iter().enumerate() {
        let json = format!(
            r#"{{"id": "{id}", "content": "{content}", "confidence": {{"value": {confidence}}},
                "uncertainty_nature": "EPISTEMIC", "asserted_by": "example",
                "asserted_at": "2025-01-01T00:00:00"}}"#
        );
        let particle = parse_particle_json(&json)?.into_inner();
        set.push(rowid as i64 + 1, &particle, &vector(*axis), None);
    }
    let policies = Policies::compile(&PolicyRows::default(), &RankSettings::default())?;
    let question = QueryVector::new(vector(0), NormKernel::detect());
    let now = Timestamp::parse("2026-01-01T00:00:00Z")?;
    let mut scored: Vec<Ranked> = Vec::new();
    for row in 0..set.len() {
        let similarity = particles_rank::similarity(&set, row, &question)?;
        let factors =
            particles_rank::factors(&set, row, &SourceFacts::default(), 1.0, &policies, now)?;
        if let Some(ranked) = particles_rank::score_with_similarity(
            &set,
            row,
            &factors,
            Some(similarity),
            0.0,
            &policies,
        ) {
            scored.push(ranked);
        }
    }
    particles_rank::sort_and_truncate(&mut scored, 2);
    for ranked in &scored {
        println!(
            "{}  similarity {:.4}  effective confidence {:.2}  score {:.4}",
            set.id(ranked.row),
            ranked.similarity,
            ranked.effective_confidence,
            ranked.score
        );
    }
    assert_eq!(
        set.id(scored[0].row),
        "a",
        "the nearest, most confident belief first"
    );
    Ok(())
}
