//! `POST /query` with our envelope fields beside the reference's body: a
//! `vector` or `no_embedding` stands in for the question and ranks as the
//! question with that vector does; both at once, or neither with no structural
//! field, is a 422 in FastAPI's shape.

use serde_json::{json, Value};

use crate::support::{fixture_store, post_query, vector_for, ServerSetup, TestServer};

const NOW: &str = "2026-06-01T00:00:00Z";

fn ranked(reply: &crate::support::Reply) -> Value {
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let body = reply.json();
    json!({
        "particles": body["particles"],
        "effective_confidences": body["effective_confidences"],
        "truncation_warning": body["truncation_warning"],
    })
}

#[test]
fn a_vector_or_no_embedding_stands_in_for_the_question() {
    let dir = tempfile::tempdir().unwrap();
    let store = fixture_store(dir.path());
    let server = TestServer::start(ServerSetup::new(&store));
    let question = "Gold coins came later.";
    // The server's encoder gives `vector_for(question)` for the question: the
    // same vector sent in the body must rank the same.
    let vector = vector_for(question);
    let asked = post_query(
        server.addr,
        &[],
        &json!({"question": question, "top_k": 3, "now": NOW}).to_string(),
    );
    let by_vector = post_query(
        server.addr,
        &[],
        &json!({"vector": vector, "top_k": 3, "now": NOW}).to_string(),
    );
    assert_eq!(ranked(&by_vector), ranked(&asked));
    assert_eq!(by_vector.json()["answer"], "");
    assert!(by_vector.header("x-particles-journal-seq").is_some());
    let by_confidence = post_query(
        server.addr,
        &[],
        &json!({"no_embedding": true, "top_k": 3, "now": NOW}).to_string(),
    );
    let asked_by_confidence = post_query(
        server.addr,
        &[],
        &json!({"question": question, "no_embedding": true, "top_k": 3, "now": NOW}).to_string(),
    );
    assert_eq!(ranked(&by_confidence), ranked(&asked_by_confidence));
    // Both at once: a 422 naming the field.
    let both = post_query(
        server.addr,
        &[],
        &json!({"vector": vector, "no_embedding": true}).to_string(),
    );
    assert_eq!(both.status, 422);
    assert_eq!(
        both.json()["detail"][0]["loc"],
        json!(["body", "no_embedding"])
    );
    // A vector of another length than the store's: a 422 naming both lengths
    // (the reference's numpy fails with a 500 there).
    let short = post_query(server.addr, &[], r#"{"vector": [0.5, 0.5]}"#);
    assert_eq!(
        short.status,
        422,
        "{}",
        String::from_utf8_lossy(&short.body)
    );
    assert!(
        short.detail().contains("the query vector has 2"),
        "{}",
        short.detail()
    );
    // Neither: the reference's own refusal.
    let neither = post_query(server.addr, &[], r#"{"top_k": 3}"#);
    assert_eq!(neither.status, 422);
    assert!(neither.body_text().contains("a query needs a question"));
}
