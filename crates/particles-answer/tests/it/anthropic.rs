//! The Anthropic messages protocol against the scripted server: the request on the
//! wire, the SDK's retries, failures and their disclosure, citations.

use std::{collections::HashMap, time::Duration};

use particles_answer::{
    answer, AnthropicSettings, AttributionKind, Cause, ProviderSettings, ANTHROPIC_VERSION,
};
use serde_json::json;

use crate::{
    fixture::{self, input, message_reply, the_nonce, Fixture},
    server::{Server, Step},
};

fn anthropic(base_url: &str) -> AnthropicSettings {
    let env = HashMap::from([
        ("ANTHROPIC_API_KEY".to_owned(), "sk-ant-test".to_owned()),
        ("ANTHROPIC_BASE_URL".to_owned(), base_url.to_owned()),
    ]);
    let mut settings = AnthropicSettings::from_env("claude-test", &env);
    settings.retry_base_delay = Duration::from_millis(10);
    settings
}

#[test]
fn the_request_on_the_wire() {
    let server = Server::start(vec![Step::json(
        200,
        message_reply(
            json!([
                {"type": "thinking", "thinking": "Let me see.", "signature": "x"},
                {"type": "text", "text": "\n- Gold does not rust [P-1A2B3C4D].\n- I bought a penny [p-c0ffee00] [p-nope].\n\nMore [background]\n"},
                {"type": "text", "text": "ignored"}
            ]),
            "end_turn",
        ),
    )]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let mut input = input("Which coins rust?", &hits, &constituents);
    input.grounded = true;
    input.audience = particles_answer::Audience::Regulatory;
    let reply = answer(
        &input,
        &fixture::settings(ProviderSettings::Anthropic(anthropic(&server.base_url()))),
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(request.header("authorization"), Some("Bearer sk-ant-test"));
    assert_eq!(request.header("anthropic-version"), Some(ANTHROPIC_VERSION));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("x-api-key"), None);
    let body = request.json();
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["max_tokens", "messages", "model", "system"]);
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["model"], "claude-test");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["role"], "user");
    let (system, user) = (
        body["system"].as_str().unwrap(),
        messages[0]["content"].as_str().unwrap(),
    );
    the_nonce(&[system, user]);
    assert!(user.contains(
        "- [p-1a2b3c4d] Gold does not rust. <FALSIFIABLE>(confidence: 0.91) [source: entry-1/snap-1]\n"
    ));
    assert!(user.contains(
        "    - [p-c0ffee11] The dealer graded it VF-20. <FALSIFIABLE>(confidence: 0.90) [source: agent-9/None]\n"
    ));
    assert!(user.contains("Relevant particles (REGULATORY audience):"));

    assert_eq!(
        reply.answer,
        "- Gold does not rust [p-1a2b3c4d].\n- I bought a penny [p-c0ffee00].\n\nMore [background]"
    );
    let sentences = reply.answer_attribution.unwrap().sentences;
    assert_eq!(sentences.len(), 3);
    assert_eq!(sentences[0].text, "Gold does not rust.");
    assert_eq!(sentences[1].invalid_citations, ["p-nope"]);
    assert_eq!(sentences[1].cited_ids, [fixture::FIRST_MEMBER]);
    assert_eq!(sentences[2].kind, AttributionKind::Background);
}

#[test]
fn a_missing_key_fails_before_any_request() {
    let server = Server::start(vec![]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let mut settings = anthropic(&server.base_url());
    settings.api_key = None;
    let reply = answer(
        &input("q", &hits, &constituents),
        &fixture::settings(ProviderSettings::Anthropic(settings)),
    );
    assert_eq!(
        reply.answer_generation_error.as_deref(),
        Some(
            "ANTHROPIC_API_KEY environment variable is not set. Set it before running extract / query / \
             lint:   export ANTHROPIC_API_KEY=sk-ant-…  (get a key at https://console.anthropic.com/settings/keys)"
        )
    );
    assert_eq!(reply.answer_generation_error_cause, Some(Cause::Provider));
    assert!(server.requests().is_empty());
}

#[test]
fn the_sdks_retries() {
    let server = Server::start(vec![
        Step::json(529, json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
            .with_header("retry-after-ms", "20"),
        Step::Close,
        Step::json(200, message_reply(json!([{"type": "text", "text": "Third time."}]), "end_turn")),
    ]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let settings = fixture::settings(ProviderSettings::Anthropic(anthropic(&server.base_url())));
    assert_eq!(
        answer(&input("q", &hits, &constituents), &settings).answer,
        "Third time."
    );
    assert_eq!(server.requests().len(), 3);

    // The server can forbid the retry; a 400 is never retried.
    let server = Server::start(vec![
        Step::json(
            500,
            json!({"type": "error", "error": {"type": "api_error", "message": "it's \"down\""}}),
        )
        .with_header("x-should-retry", "false"),
        Step::json(
            400,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}),
        ),
        Step::text(503, "  plain text body \n"),
        Step::text(503, ""),
        Step::text(503, ""),
    ]);
    let settings = fixture::settings(ProviderSettings::Anthropic(anthropic(&server.base_url())));
    let forbidden = answer(&input("q", &hits, &constituents), &settings);
    assert_eq!(
        forbidden.answer_generation_error.as_deref(),
        Some(
            r#"Error code: 500 - {'type': 'error', 'error': {'type': 'api_error', 'message': 'it\'s "down"'}}"#
        )
    );
    let bad = answer(&input("q", &hits, &constituents), &settings);
    assert_eq!(
        bad.answer_generation_error.as_deref(),
        Some("Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', 'message': 'bad'}}")
    );
    let plain = answer(&input("q", &hits, &constituents), &settings);
    assert_eq!(
        plain.answer_generation_error.as_deref(),
        Some("Error code: 503")
    );
    assert_eq!(server.requests().len(), 5);
}

#[test]
fn timeouts_and_refusals_are_provider_failures() {
    let server = Server::start(vec![
        Step::Hang(Duration::from_secs(3)),
        Step::json(
            200,
            json!({"content": [], "stop_reason": "refusal", "stop_details": {"category": "cyber"}}),
        ),
    ]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let mut provider = anthropic(&server.base_url());
    provider.max_retries = 0;
    provider.timeout = Duration::from_millis(300);
    let settings = fixture::settings(ProviderSettings::Anthropic(provider));
    let timed_out = answer(&input("q", &hits, &constituents), &settings);
    assert_eq!(
        timed_out.answer_generation_error.as_deref(),
        Some(
            "Request timed out or interrupted. This could be due to a network timeout, dropped connection, \
             or request cancellation. See https://docs.anthropic.com/en/api/errors#long-requests for more details."
        )
    );
    let refused = answer(&input("q", &hits, &constituents), &settings);
    assert_eq!(
        refused.answer_generation_error.as_deref(),
        Some(
            "Anthropic declined the request (stop_reason=refusal, category=cyber) — the model's safety \
             classifiers refused this content"
        )
    );
    assert_eq!(refused.answer_generation_error_cause, Some(Cause::Provider));
    assert!(
        !refused.answer_refused,
        "a provider refusal is a failure, not an answer refusal"
    );
}

#[test]
fn no_text_block_twice_is_a_budget_failure() {
    let thinking_only = message_reply(
        json!([{"type": "thinking", "thinking": "hmm", "signature": "s"}]),
        "max_tokens",
    );
    let server = Server::start(vec![
        Step::json(200, thinking_only.clone()),
        Step::json(200, thinking_only),
    ]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let reply = answer(
        &input("q", &hits, &constituents),
        &fixture::settings(ProviderSettings::Anthropic(anthropic(&server.base_url()))),
    );
    assert_eq!(reply.answer_generation_error_cause, Some(Cause::Budget));
    assert_eq!(
        reply.answer_generation_error.as_deref(),
        Some(
            "Anthropic response carried no text block (stop_reason=max_tokens, max_tokens=16384). To fix: \
             raise query.answer_max_tokens (llm purpose query_response)"
        )
    );
    let bodies: Vec<_> = server
        .requests()
        .iter()
        .map(|request| request.json())
        .collect();
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        (
            bodies[0]["max_tokens"].clone(),
            bodies[1]["max_tokens"].clone()
        ),
        (json!(4096), json!(16384))
    );
    assert_eq!(bodies[0]["system"], bodies[1]["system"]);
    assert_eq!(bodies[0]["messages"], bodies[1]["messages"]);
}
