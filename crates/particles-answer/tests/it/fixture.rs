//! A small set of particles the protocol tests answer over: a claim, a narrative
//! with two constituents, an opinion.

use std::collections::HashMap;

use particles_answer::{
    AnswerHit, AnswerInput, AnswerSettings, Audience, OpenAiCompatibleSettings, ProviderSettings,
};
use particles_model::{parse_particle_json, Particle};
use serde_json::{json, Value};

pub const CLAIM: &str = "1a2b3c4d-0000-4000-8000-000000000001";
pub const NARRATIVE: &str = "5e6f7a8b-1111-4111-8111-111111111112";
pub const FIRST_MEMBER: &str = "c0ffee00-2222-4222-8222-222222222223";
pub const SECOND_MEMBER: &str = "c0ffee11-3333-4333-8333-333333333334";
pub const OPINION: &str = "deadbeef-4444-4444-8444-444444444445";

pub fn particle_json(id: &str, content: &str, extra: Value) -> Value {
    let mut base = json!({
        "id": id,
        "content": content,
        "confidence": {"value": 0.9, "calibration_source": "HUMAN_REVIEW"},
        "uncertainty_nature": "EPISTEMIC",
        "asserted_by": "tester",
        "asserted_at": "2024-01-01T00:00:00",
    });
    if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), extra) {
        base.extend(extra);
    }
    base
}

pub fn particle(value: &Value) -> Particle {
    parse_particle_json(&value.to_string())
        .expect("a valid fixture particle")
        .into_inner()
}

pub struct Fixture {
    pub particles: Vec<Particle>,
    pub members: Vec<Particle>,
    pub effective: Vec<f64>,
}

impl Fixture {
    pub fn new() -> Fixture {
        let particles = vec![
            particle(&particle_json(
                CLAIM,
                "Gold does not rust.",
                json!({"provenance": [{"type": "SOURCE", "corpus_entry_id": "entry-1", "snapshot_id": "snap-1"}]}),
            )),
            particle(&particle_json(
                NARRATIVE,
                "A day at the coin fair",
                json!({"particle_type": "NARRATIVE"}),
            )),
            particle(&particle_json(
                OPINION,
                "  Proof coins are the most beautiful.  ",
                json!({"assertion_modality": "EVALUATIVE", "uncertainty_nature": "ALEATORY"}),
            )),
        ];
        let members = vec![
            particle(&particle_json(
                FIRST_MEMBER,
                "I bought a 1909 penny.",
                json!({"assertion_modality": "EXPERIENTIAL", "confidence": {"value": 0.7}}),
            )),
            particle(&particle_json(
                SECOND_MEMBER,
                "The dealer graded it VF-20.",
                json!({"provenance": [{"type": "AGENT", "corpus_entry_id": "agent-9"}]}),
            )),
        ];
        Fixture {
            particles,
            members,
            effective: vec![0.91, 0.62, 0.405],
        }
    }

    pub fn hits(&self) -> Vec<AnswerHit<'_>> {
        self.particles
            .iter()
            .zip(&self.effective)
            .map(|(particle, &effective_confidence)| AnswerHit {
                particle,
                effective_confidence,
            })
            .collect()
    }

    pub fn constituents(&self) -> HashMap<String, Vec<&Particle>> {
        HashMap::from([(NARRATIVE.to_owned(), self.members.iter().collect())])
    }
}

/// An input over the hits: GENERAL audience, not grounded, nothing disclosed.
pub fn input<'a>(
    question: &'a str,
    hits: &'a [AnswerHit<'a>],
    constituents: &'a HashMap<String, Vec<&'a Particle>>,
) -> AnswerInput<'a> {
    AnswerInput {
        question,
        audience: Audience::General,
        as_of: None,
        grounded: false,
        hits,
        constituents,
        relevance: None,
        ranking_degraded: false,
        coverage_gap: None,
    }
}

/// An OpenAI-compatible provider named `fake` on the server, fast retries.
pub fn openai_settings(base_url: &str) -> OpenAiCompatibleSettings {
    let mut settings =
        OpenAiCompatibleSettings::new("fake", format!("{base_url}/v1"), "fake-model");
    settings.retry_backoff = std::time::Duration::from_millis(10);
    settings.timeout = std::time::Duration::from_secs(5);
    settings
}

pub fn settings(provider: ProviderSettings) -> AnswerSettings {
    AnswerSettings::new(provider)
}

/// The fence nonce every `nonce="..."` in a text carries; panics unless there is
/// at least one and all agree.
pub fn the_nonce(texts: &[&str]) -> String {
    let mut found: Vec<&str> = Vec::new();
    for text in texts {
        let mut rest = *text;
        while let Some(at) = rest.find("nonce=\"") {
            let after = &rest[at + 7..];
            let end = after.find('"').expect("a closed nonce attribute");
            found.push(&after[..end]);
            rest = &after[end..];
        }
    }
    assert!(!found.is_empty(), "no nonce found");
    assert!(
        found.iter().all(|nonce| *nonce == found[0]),
        "nonces differ: {found:?}"
    );
    let nonce = found[0];
    assert_eq!(nonce.len(), 32);
    assert!(nonce
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    nonce.to_owned()
}

/// A chat-completions reply carrying `content`.
pub fn chat_reply(content: &str, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    })
}

/// An Anthropic message reply with the given content blocks.
pub fn message_reply(content: Value, stop_reason: &str) -> Value {
    json!({
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    })
}

/// A streamed Anthropic reply: `message_start`, one block per `(type, text)`
/// (`thinking` or `text`) sent in two deltas each, `message_delta`, `message_stop`.
pub fn event_stream(blocks: &[(&str, &str)]) -> String {
    let mut events = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": "claude-test", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        ("ping", json!({"type": "ping"})),
    ];
    for (index, (kind, text)) in blocks.iter().enumerate() {
        let (start, delta_type) = match *kind {
            "thinking" => (
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                "thinking_delta",
            ),
            _ => (json!({"type": "text", "text": ""}), "text_delta"),
        };
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        let middle = text
            .char_indices()
            .nth(text.chars().count() / 2)
            .map_or(text.len(), |(at, _)| at);
        for part in [&text[..middle], &text[middle..]] {
            let field = if *kind == "thinking" {
                "thinking"
            } else {
                "text"
            };
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": delta_type, field: part}}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn",
        "stop_sequence": null}, "usage": {"output_tokens": 42}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}
