//! The OpenAI-compatible protocol against the scripted server: the request on the
//! wire, retries, failures and their disclosure, the refusal marker, citations.

use std::time::Duration;

use particles_answer::{
    answer, AttributionKind, Audience, Cause, EgressPosture, MaxTokensParam, ProviderSettings,
};
use serde_json::json;

use crate::{
    fixture::{self, chat_reply, input, openai_settings, the_nonce, Fixture},
    server::{Server, Step},
};

const LISTING: &str = "Showing the retrieved beliefs instead — this is a listing, not an answer:\n\
                       • Gold does not rust.\n• A day at the coin fair\n•   Proof coins are the most beautiful.  ";

#[test]
fn the_request_on_the_wire() {
    let server = Server::start(vec![Step::json(
        200,
        chat_reply(
            "Gold does not rust [p-1a2b3c4d]. The penny was graded VF-20 [p-c0ffee11, p-99999999]. \
             Collectors love proofs [inference]. No tag here",
            "stop",
        ),
    )]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let mut input = input("What do we know about <coins>?", &hits, &constituents);
    input.grounded = true;
    input.audience = Audience::Expert;
    let mut provider = openai_settings(&server.base_url());
    provider.api_key = Some("sk-local".into());
    let reply = answer(
        &input,
        &fixture::settings(ProviderSettings::OpenAiCompatible(provider)),
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("authorization"), Some("Bearer sk-local"));
    let body = request.json();
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["model", "messages", "max_tokens"]);
    assert_eq!(body["model"], "fake-model");
    assert_eq!(body["max_tokens"], 4096);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(
        (messages[0]["role"].as_str(), messages[1]["role"].as_str()),
        (Some("system"), Some("user"))
    );
    let (system, user) = (
        messages[0]["content"].as_str().unwrap(),
        messages[1]["content"].as_str().unwrap(),
    );
    let nonce = the_nonce(&[system, user]);
    assert!(
        system.contains(&nonce)
            && system.contains("NO_RELEVANT_KNOWLEDGE")
            && system.contains("[inference]")
    );
    assert!(user.starts_with(&format!(
        "Question:\n<question nonce=\"{nonce}\">\nWhat do we know about <coins>?\n</question nonce=\"{nonce}\">\n\n\
         Relevant particles (EXPERT audience):\n<particles nonce=\"{nonce}\">\n"
    )));
    for handle in [
        "p-1a2b3c4d",
        "p-5e6f7a8b",
        "p-c0ffee00",
        "p-c0ffee11",
        "p-deadbeef",
    ] {
        assert!(
            user.contains(&format!("[{handle}]")),
            "{handle} missing from\n{user}"
        );
    }
    assert!(user.contains(
        "- [p-1a2b3c4d] Gold does not rust. <FALSIFIABLE>[EPISTEMIC](confidence: 0.91)\n\
         - [p-5e6f7a8b] Narrative — A day at the coin fair:\n\
         \x20   - [p-c0ffee00] I bought a 1909 penny. <EXPERIENTIAL>[EPISTEMIC](confidence: 0.70)\n\
         \x20   - [p-c0ffee11] The dealer graded it VF-20. <FALSIFIABLE>[EPISTEMIC](confidence: 0.90)\n\
         - [p-deadbeef] Proof coins are the most beautiful.   <EVALUATIVE>[ALEATORY](confidence: 0.41)\n\
         </particles nonce="
    ));
    // Mean effective confidence 0.645: no low-confidence note; all hits calibrated.
    assert!(
        user.ends_with(&format!("</particles nonce=\"{nonce}\">\n\n\n")),
        "{user:?}"
    );

    assert_eq!(
        reply.answer,
        "Gold does not rust [p-1a2b3c4d]. The penny was graded VF-20 [p-c0ffee11]. \
         Collectors love proofs [inference]. No tag here [unattributed]"
    );
    let sentences = reply
        .answer_attribution
        .expect("a grounded answer")
        .sentences;
    let labels: Vec<_> = sentences
        .iter()
        .map(|s| (s.kind, s.cited_ids.clone(), s.invalid_citations.clone()))
        .collect();
    assert_eq!(
        labels,
        [
            (
                AttributionKind::Cited,
                vec![fixture::CLAIM.to_owned()],
                vec![]
            ),
            (
                AttributionKind::Cited,
                vec![fixture::SECOND_MEMBER.to_owned()],
                vec!["p-99999999".to_owned()]
            ),
            (AttributionKind::Inference, vec![], vec![]),
            (AttributionKind::Unattributed, vec![], vec![]),
        ]
    );
    assert!(!reply.answer_refused && reply.answer_generation_error.is_none());
}

#[test]
fn dialect_knobs_and_no_key() {
    let server = Server::start(vec![Step::json(200, chat_reply("Fine.", "stop"))]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let mut provider = openai_settings(&server.base_url());
    provider.max_tokens_param = MaxTokensParam::MaxCompletionTokens;
    provider.reasoning_effort = Some("none".into());
    let reply = answer(
        &input("q", &hits, &constituents),
        &fixture::settings(ProviderSettings::OpenAiCompatible(provider)),
    );
    assert_eq!(reply.answer, "Fine.");
    assert!(reply.answer_attribution.is_none());
    let request = &server.requests()[0];
    assert_eq!(request.header("authorization"), None);
    let body = request.json();
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "model",
            "messages",
            "max_completion_tokens",
            "reasoning_effort"
        ]
    );
    assert_eq!(body["reasoning_effort"], "none");
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("- Gold does not rust. <FALSIFIABLE>\n"),
        "{user}"
    );
    assert!(!user.contains("[p-"));
}

#[test]
fn transient_statuses_are_retried() {
    let server = Server::start(vec![
        Step::text(500, "boom"),
        Step::text(429, "slow down"),
        Step::json(200, chat_reply("Recovered.", "stop")),
    ]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let provider = openai_settings(&server.base_url());
    let reply = answer(
        &input("q", &hits, &constituents),
        &fixture::settings(ProviderSettings::OpenAiCompatible(provider)),
    );
    assert_eq!(reply.answer, "Recovered.");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests
        .iter()
        .all(|request| request.body == requests[0].body));
}

#[test]
fn exhausted_retries_fall_back_to_the_listing() {
    let server = Server::start(vec![
        Step::text(503, "down"),
        Step::text(502, "still down"),
        Step::text(504, "echo Authorization: Bearer sk-secret"),
    ]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let mut input = input("q", &hits, &constituents);
    input.ranking_degraded = true;
    let reply = answer(
        &input,
        &fixture::settings(ProviderSettings::OpenAiCompatible(openai_settings(
            &server.base_url(),
        ))),
    );
    let error = "LLM endpoint call failed after 3 attempt(s): echo Bearer [REDACTED]";
    assert_eq!(reply.answer_generation_error.as_deref(), Some(error));
    assert_eq!(reply.answer_generation_error_cause, Some(Cause::Provider));
    assert_eq!(
        reply.answer,
        format!(
            "[{}]\n\n[Answer generation unavailable: {error}]\n{LISTING}",
            particles_answer::RANKING_DEGRADED_NO_ENCODER
        )
    );
    assert!(!reply.answer_refused && reply.answer_attribution.is_none());
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn other_statuses_fail_at_once() {
    let server = Server::start(vec![Step::text(401, "bad key")]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let reply = answer(
        &input("q", &hits, &constituents),
        &fixture::settings(ProviderSettings::OpenAiCompatible(openai_settings(
            &server.base_url(),
        ))),
    );
    assert_eq!(
        reply.answer_generation_error.as_deref(),
        Some("LLM endpoint returned HTTP 401: bad key")
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_timeout_is_a_provider_failure() {
    let server = Server::start(vec![Step::Hang(Duration::from_secs(3))]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let mut provider = openai_settings(&server.base_url());
    provider.timeout = Duration::from_millis(300);
    provider.max_retries = 0;
    let reply = answer(
        &input("q", &hits, &constituents),
        &fixture::settings(ProviderSettings::OpenAiCompatible(provider)),
    );
    // httpx's ReadTimeout carries no message, and the reason is stripped.
    assert_eq!(
        reply.answer_generation_error.as_deref(),
        Some("LLM endpoint call failed after 1 attempt(s): ReadTimeout:")
    );
    assert_eq!(reply.answer_generation_error_cause, Some(Cause::Provider));
}

#[test]
fn transport_failures_are_named_as_httpx_names_them() {
    let closed = Server::start(vec![Step::Close]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let mut provider = openai_settings(&closed.base_url());
    provider.max_retries = 0;
    let reply = answer(
        &input("q", &hits, &constituents),
        &fixture::settings(ProviderSettings::OpenAiCompatible(provider.clone())),
    );
    assert_eq!(
        reply.answer_generation_error.as_deref(),
        Some("LLM endpoint call failed after 1 attempt(s): RemoteProtocolError: Server disconnected without sending a response.")
    );
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    provider.base_url = format!("http://127.0.0.1:{port}/v1");
    let reply = answer(
        &input("q", &hits, &constituents),
        &fixture::settings(ProviderSettings::OpenAiCompatible(provider)),
    );
    assert_eq!(
        reply.answer_generation_error.as_deref(),
        Some("LLM endpoint call failed after 1 attempt(s): ConnectError: All connection attempts failed")
    );
}

#[test]
fn malformed_and_filtered_replies_are_provider_failures() {
    let server = Server::start(vec![
        Step::text(200, "this is not json"),
        Step::json(200, chat_reply("partial", "content_filter")),
    ]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let settings = fixture::settings(ProviderSettings::OpenAiCompatible(openai_settings(
        &server.base_url(),
    )));
    let garbage = answer(&input("q", &hits, &constituents), &settings);
    assert_eq!(garbage.answer_generation_error_cause, Some(Cause::Provider));
    assert!(garbage
        .answer
        .starts_with("[Answer generation unavailable: LLM endpoint reply is not valid JSON"));
    let filtered = answer(&input("q", &hits, &constituents), &settings);
    assert_eq!(
        filtered.answer_generation_error.as_deref(),
        Some("LLM endpoint fake:fake-model declined the request (finish_reason=content_filter)")
    );
    assert_eq!(
        filtered.answer_generation_error_cause,
        Some(Cause::Provider)
    );
    assert_eq!(server.requests().len(), 2, "neither is retried");
}

#[test]
fn an_empty_completion_is_retried_once_at_the_larger_cap() {
    let server = Server::start(vec![
        Step::json(200, chat_reply("", "length")),
        Step::json(200, chat_reply("  ", "stop")),
    ]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let reply = answer(
        &input("q", &hits, &constituents),
        &fixture::settings(ProviderSettings::OpenAiCompatible(openai_settings(
            &server.base_url(),
        ))),
    );
    assert_eq!(
        reply.answer_generation_error.as_deref(),
        Some("LLM endpoint response carried no text content (finish_reason=stop)")
    );
    assert_eq!(reply.answer_generation_error_cause, Some(Cause::Budget));
    let requests = server.requests();
    let bodies: Vec<_> = requests.iter().map(|request| request.json()).collect();
    assert_eq!(
        (
            bodies[0]["max_tokens"].clone(),
            bodies[1]["max_tokens"].clone()
        ),
        (json!(4096), json!(16384))
    );
    assert_eq!(
        bodies[0]["messages"], bodies[1]["messages"],
        "same turns, same nonce"
    );

    // A retry cap no larger than the first disables the retry.
    let server = Server::start(vec![Step::json(200, chat_reply("", "length"))]);
    let mut settings = fixture::settings(ProviderSettings::OpenAiCompatible(openai_settings(
        &server.base_url(),
    )));
    settings.answer_retry_max_tokens = 0;
    let reply = answer(&input("q", &hits, &constituents), &settings);
    assert_eq!(reply.answer_generation_error_cause, Some(Cause::Budget));
    assert_eq!(
        reply.answer_generation_error.as_deref(),
        Some(
            "LLM endpoint fake:fake-model returned an empty reply truncated at max_tokens=4096 \
             (finish_reason=length): the whole budget was spent before any answer text — for \
             reasoning models the thinking spends from the same budget as the answer; raise \
             query.answer_max_tokens (llm purpose query_response)"
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn the_retry_can_recover_the_answer() {
    let server = Server::start(vec![
        Step::json(200, chat_reply("", "length")),
        Step::json(200, chat_reply("Found it.", "stop")),
    ]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let reply = answer(
        &input("q", &hits, &constituents),
        &fixture::settings(ProviderSettings::OpenAiCompatible(openai_settings(
            &server.base_url(),
        ))),
    );
    assert_eq!(reply.answer, "Found it.");
    assert!(reply.answer_generation_error.is_none());
}

#[test]
fn the_refusal_marker() {
    let server = Server::start(vec![
        Step::json(
            200,
            chat_reply(
                "NO_RELEVANT_KNOWLEDGE\nThe store is about coins [p-1a2b3c4d].",
                "stop",
            ),
        ),
        Step::json(200, chat_reply("NO_RELEVANT_KNOWLEDGE", "stop")),
    ]);
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    let mut input = input("q", &hits, &constituents);
    input.grounded = true;
    let settings = fixture::settings(ProviderSettings::OpenAiCompatible(openai_settings(
        &server.base_url(),
    )));
    let reply = answer(&input, &settings);
    assert!(reply.answer_refused && reply.truncation_warning_suppressed);
    assert_eq!(reply.answer, "The store is about coins [p-1a2b3c4d].");
    assert!(
        reply.answer_attribution.is_none(),
        "a refusal is not grounded"
    );
    let bare = answer(&input, &settings);
    assert_eq!(
        bare.answer,
        "The knowledge base holds nothing relevant to this question."
    );
    assert!(bare.answer_refused);
}

#[test]
fn refusals_before_any_request() {
    let fx = Fixture::new();
    let (hits, constituents) = (fx.hits(), fx.constituents());
    // A key bound for cleartext http to a host that is not loopback.
    let mut provider = openai_settings("http://llm.example.invalid");
    provider.api_key = Some("sk".into());
    let reply = answer(
        &input("q", &hits, &constituents),
        &fixture::settings(ProviderSettings::OpenAiCompatible(provider.clone())),
    );
    let message = "Refusing to send the llm.providers.fake API key to http://llm.example.invalid/v1 over \
                   unencrypted http://. Use https://, or reach the endpoint through a loopback hop (an SSH \
                   or Tailscale forward to http://127.0.0.1). To send it anyway on a network you trust end \
                   to end, set llm.providers.fake.allow_plaintext_key: true.";
    // The response keeps the first 300 characters of a failure's message.
    let kept: String = message.chars().take(300).collect();
    assert_eq!(
        reply.answer_generation_error.as_deref(),
        Some(kept.as_str())
    );
    assert!(reply
        .answer
        .starts_with(&format!("[Answer generation unavailable: {kept}]\n")));
    // The egress posture refuses before the key is looked at.
    let server = Server::start(vec![]);
    let mut settings = fixture::settings(ProviderSettings::OpenAiCompatible(openai_settings(
        &server.base_url(),
    )));
    settings.egress = EgressPosture::None;
    let reply = answer(&input("q", &hits, &constituents), &settings);
    let port = server.base_url().rsplit(':').next().unwrap().to_owned();
    assert_eq!(
        reply.answer_generation_error.as_deref(),
        Some(
            format!(
                "network.egress is none: refusing to connect to 127.0.0.1:{port} (llm purpose \
                 query_response). Add the destination to network.allow to permit it."
            )
            .as_str()
        )
    );
    assert_eq!(reply.answer_generation_error_cause, Some(Cause::Provider));
    assert!(server.requests().is_empty());
}
