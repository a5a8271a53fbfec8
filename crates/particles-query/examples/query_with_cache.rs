//! Answering queries through `particles-query` with the candidate cache of
//! `particles-cache`: the first query builds the cache from the store, the next one
//! reuses it, and a write between them (through the store's writer, or the Python
//! engine) is seen by the one after, through the change journal.
//!
//! Run with `cargo run -p particles-query --example query_with_cache`.

use particles_cache::CandidateCache;
use particles_model::{parse_particle_json, QueryRequest, Timestamp};
use particles_query::{run_query_with, QueryInput};
use particles_store::{create_store, Store};

fn belief(id: &str, content: &str, confidence: f64) -> String {
    format!(
        r#"{{"id": "{id}", "content": "{content}", "confidence": {{"value": {confidence}}},
            "uncertainty_nature": "EPISTEMIC", "asserted_by": "example",
            "asserted_at": "2025-01-01T00:00:00"}}"#
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("beliefs.db");
    let mut writer = create_store(&path)?;
    let tx = writer.transaction()?;
    for (id, content, confidence) in [
        ("a", "Gold does not rust.", 0.9),
        ("b", "Silver tarnishes in air.", 0.8),
    ] {
        tx.insert(
            &parse_particle_json(&belief(id, content, confidence))?,
            Some(&[0.05; 384]),
        )?;
    }
    tx.commit()?;

    let store = Store::open_read_only(&path)?;
    let mut cache = CandidateCache::new();
    let now = Timestamp::parse("2026-01-01T00:00:00Z")?;
    let request = QueryRequest::question("which metals keep their shine?").validate(now)?;
    // No vector: rank by effective confidence (a program with an encoder passes
    // the question's vector here).
    let ask = |cache: &mut CandidateCache| -> Result<Vec<String>, Box<dyn std::error::Error>> {
        let outcome = run_query_with(&store, cache, &QueryInput::new(&request, None, now))?;
        Ok(outcome.hits.into_iter().map(|hit| hit.id).collect())
    };
    println!("{:?} via {:?}", ask(&mut cache)?, cache.last_route());
    println!("{:?} via {:?}", ask(&mut cache)?, cache.last_route());

    let tx = writer.transaction()?;
    tx.insert(
        &parse_particle_json(&belief("c", "Platinum resists acids.", 0.95))?,
        Some(&[0.05; 384]),
    )?;
    tx.commit()?;
    let hits = ask(&mut cache)?;
    println!("{hits:?} via {:?}", cache.last_route());
    assert_eq!(
        hits.first().map(String::as_str),
        Some("c"),
        "the write is seen"
    );
    Ok(())
}
