//! The whole answer step against the reference's `_build_response`: each scenario
//! runs twice, ours and the reference's (its real OpenAI-compatible client and
//! Anthropic SDK), each against its own copy of the same scripted server. The
//! answer fields must be equal, and so must the requests, except for the wording
//! of the instructions and notes, which is ours, and the random nonce.

use std::{collections::HashMap, time::Duration};

use particles_answer::{
    answer, AllowEntry, AnswerHit, AnswerInput, AnswerSettings, AnthropicSettings, Audience,
    CoverageGapKind, CoverageGapNote, EgressPosture, ProviderSettings, Relevance,
    RANKING_DEGRADED_NO_ENCODER,
};
use particles_model::{Particle, Timestamp};
use serde_json::{json, Value};

use crate::{
    fixture::{self, chat_reply, message_reply, particle, particle_json, the_nonce},
    server::{Recorded, Server, Step},
    support::{reference_python, run_reference},
};

#[derive(Clone)]
enum Provider {
    /// The OpenAI-compatible entry `fake`.
    Fake {
        key: Option<&'static str>,
        max_retries: u32,
        timeout_seconds: f64,
        /// Replaces the scripted server's URL (a refusal before any request).
        base_url: Option<&'static str>,
    },
    Anthropic {
        key: Option<&'static str>,
    },
}

impl Provider {
    fn fake() -> Provider {
        Provider::Fake {
            key: None,
            max_retries: 2,
            timeout_seconds: 5.0,
            base_url: None,
        }
    }
}

#[derive(Clone)]
struct Scenario {
    name: &'static str,
    audience: Audience,
    as_of: Option<(&'static str, &'static str)>,
    grounded: bool,
    top: Vec<(Value, f64, f64)>,
    constituents: Vec<(&'static str, Vec<Value>)>,
    embeddings_used: bool,
    gap: Option<Value>,
    provider: Provider,
    egress: Option<(Value, EgressPosture)>,
    steps: Vec<Step>,
    /// `query.answer_retry_max_tokens`.
    retry_cap: u32,
    /// The reference's text for this failure is Python's own exception text.
    same_error_text: bool,
}

fn base(name: &'static str, steps: Vec<Step>) -> Scenario {
    Scenario {
        name,
        audience: Audience::General,
        as_of: None,
        grounded: false,
        top: top(),
        constituents: vec![],
        embeddings_used: true,
        gap: None,
        provider: Provider::fake(),
        egress: None,
        steps,
        retry_cap: 16384,
        same_error_text: true,
    }
}

fn top() -> Vec<(Value, f64, f64)> {
    vec![
        (
            particle_json(
                fixture::CLAIM,
                "Gold does not rust.",
                json!({"provenance": [{"type": "SOURCE", "corpus_entry_id": "entry-1", "snapshot_id": "snap-1"}]}),
            ),
            0.71,
            0.905,
        ),
        (
            particle_json(
                fixture::NARRATIVE,
                "A day at the coin fair",
                json!({"particle_type": "NARRATIVE", "confidence": {"value": 0.5, "calibration_source": "IMPORTED"}}),
            ),
            0.52,
            0.5,
        ),
        (
            particle_json(
                fixture::OPINION,
                " Proof coins are the most beautiful. ",
                json!({"assertion_modality": "EVALUATIVE", "uncertainty_nature": "ALEATORY",
                       "provenance": [{"type": "PARTICLE", "corpus_entry_id": "premise-1"}]}),
            ),
            0.333,
            0.125,
        ),
    ]
}

fn members() -> Vec<(&'static str, Vec<Value>)> {
    vec![(
        fixture::NARRATIVE,
        vec![
            particle_json(
                fixture::FIRST_MEMBER,
                "I bought a 1909 penny.",
                json!({"assertion_modality": "EXPERIENTIAL", "confidence": {"value": 0.625}}),
            ),
            particle_json(
                fixture::SECOND_MEMBER,
                "The dealer graded it VF-20.",
                json!({}),
            ),
        ],
    )]
}

/// The grounded reply the scenarios script: tagged and untagged sentences,
/// citations valid and not.
const GROUNDED_REPLY: &str = "- Gold does not rust [p-1a2b3c4d].\n- The penny was bought [P:C0FFEE00, p-zzz]. \
                              [p-deadbeef]\n\nIt suggests a hobby [inference][background]. Untagged tail";

fn scenarios() -> Vec<Scenario> {
    [
        without_a_request(),
        openai_compatible(),
        keys_and_egress(),
        anthropic(),
        anthropic_streams_and_redirects(),
    ]
    .concat()
}

/// Scenarios that end before any request: every hit below the relevance
/// floor, or no hits (with and without `--as-of`).
fn without_a_request() -> Vec<Scenario> {
    vec![
        Scenario {
            top: vec![
                (top()[0].0.clone(), 0.1, 0.9),
                (top()[1].0.clone(), 0.2, 0.5),
            ],
            ..base("below the floor", vec![])
        },
        Scenario {
            top: vec![(top()[0].0.clone(), 0.0, 0.9)],
            as_of: Some(("2000-01-01T00:00:00Z", "2000-01-01T00:00:00+00:00")),
            ..base("below the floor, as of", vec![])
        },
        Scenario {
            top: vec![],
            ..base("no hits", vec![])
        },
        Scenario {
            top: vec![],
            as_of: Some((
                "2001-02-03T04:05:06.250+02:00",
                "2001-02-03T04:05:06.250000+02:00",
            )),
            ..base("no hits, as of", vec![])
        },
    ]
}

/// The OpenAI-compatible client: retries, statuses, empty and refused
/// replies, the grounded and regulatory prompts, timeouts and broken replies.
fn openai_compatible() -> Vec<Scenario> {
    vec![
        Scenario {
            embeddings_used: false,
            ..base(
                "degraded ranking, retries exhausted",
                vec![
                    Step::text(503, "down"),
                    Step::text(500, "{\"error\": \"Authorization: Bearer sk-echoed\"}"),
                    Step::text(429, "slow"),
                ],
            )
        },
        base(
            "a status that is not retried",
            vec![Step::text(404, "no such model")],
        ),
        base(
            "the content filter",
            vec![Step::json(200, chat_reply("x", "content_filter"))],
        ),
        base(
            "no text twice",
            vec![
                Step::json(200, chat_reply("", "length")),
                Step::json(200, json!({"choices": []})),
            ],
        ),
        Scenario {
            grounded: true,
            ..base(
                "a bare refusal marker",
                vec![Step::json(
                    200,
                    chat_reply("NO_RELEVANT_KNOWLEDGE:", "stop"),
                )],
            )
        },
        Scenario {
            grounded: true,
            audience: Audience::Expert,
            constituents: members(),
            gap: Some(
                json!({"subject_id": "s1", "subject_name": "Coins", "kind": "SUBJECT_HAS_LOW_COVERAGE",
                             "particle_count": 2, "detail": "few"}),
            ),
            ..base(
                "grounded, expert, narrative, low coverage",
                vec![Step::json(200, chat_reply(GROUNDED_REPLY, "stop"))],
            )
        },
        Scenario {
            audience: Audience::Regulatory,
            as_of: Some(("2010-06-01T12:00:00", "2010-06-01T12:00:00+00:00")),
            constituents: members(),
            gap: Some(
                json!({"subject_id": "s1", "subject_name": "Coins", "kind": "SUBJECT_HAS_NO_PARTICLES",
                             "particle_count": 0, "detail": "none"}),
            ),
            ..base(
                "regulatory, as of, no particles",
                vec![Step::json(200, chat_reply("  Answer.\n", "length"))],
            )
        },
        Scenario {
            provider: Provider::Fake {
                key: None,
                max_retries: 0,
                timeout_seconds: 0.3,
                base_url: None,
            },
            ..base("a timeout", vec![Step::Hang(Duration::from_secs(2))])
        },
        Scenario {
            provider: Provider::Fake {
                key: None,
                max_retries: 1,
                timeout_seconds: 5.0,
                base_url: None,
            },
            ..base("a dropped connection", vec![Step::Close, Step::Close])
        },
        base(
            "a reply that is not JSON",
            vec![Step::text(200, " \n <html>oops</html>")],
        ),
        Scenario {
            same_error_text: false,
            ..base(
                "a reply of malformed JSON",
                vec![Step::text(200, "{\"choices\": [{\"message\"")],
            )
        },
    ]
}

/// Where the client may send: a key over cleartext HTTP, and each egress
/// posture.
fn keys_and_egress() -> Vec<Scenario> {
    vec![
        Scenario {
            provider: Provider::Fake {
                key: Some("sk-plain"),
                max_retries: 2,
                timeout_seconds: 5.0,
                base_url: Some("http://llm.example.invalid:8080/v1"),
            },
            ..base("a key over cleartext http", vec![])
        },
        Scenario {
            egress: Some((json!({"egress": "none"}), EgressPosture::None)),
            provider: Provider::Fake {
                key: None,
                max_retries: 2,
                timeout_seconds: 5.0,
                base_url: Some("http://127.0.0.1:9/v1"),
            },
            ..base("egress none", vec![])
        },
        Scenario {
            egress: Some((
                json!({"egress": "allowlist", "allow": [{"host": "10.0.0.0/8"}, {"host": "127.0.0.1", "port": 1}]}),
                EgressPosture::Allowlist(vec![
                    AllowEntry {
                        host: "10.0.0.0/8".into(),
                        port: None,
                    },
                    AllowEntry {
                        host: "127.0.0.1".into(),
                        port: Some(1),
                    },
                ]),
            )),
            provider: Provider::Fake {
                key: None,
                max_retries: 2,
                timeout_seconds: 5.0,
                base_url: Some("http://127.0.0.1:9/v1"),
            },
            ..base("egress allowlist without the endpoint", vec![])
        },
        Scenario {
            egress: Some((
                json!({"egress": "allowlist", "allow": [{"host": "127.0.0.0/8"}]}),
                EgressPosture::Allowlist(vec![AllowEntry {
                    host: "127.0.0.0/8".into(),
                    port: None,
                }]),
            )),
            provider: Provider::Fake {
                key: Some("sk-loopback"),
                max_retries: 2,
                timeout_seconds: 5.0,
                base_url: None,
            },
            ..base(
                "egress allowlist with the endpoint",
                vec![Step::json(200, chat_reply("Allowed.", "stop"))],
            )
        },
    ]
}

/// The Anthropic client: a grounded answer, no key, an error status, empty
/// replies and a refusal.
fn anthropic() -> Vec<Scenario> {
    vec![
        Scenario {
            grounded: true,
            constituents: members(),
            provider: Provider::Anthropic {
                key: Some("sk-ant-1"),
            },
            ..base(
                "anthropic, grounded",
                vec![Step::json(
                    200,
                    message_reply(
                        json!([{"type": "thinking", "thinking": "t", "signature": "s"},
                               {"type": "text", "text": GROUNDED_REPLY}]),
                        "end_turn",
                    ),
                )],
            )
        },
        Scenario {
            provider: Provider::Anthropic { key: None },
            ..base("anthropic without a key", vec![])
        },
        Scenario {
            provider: Provider::Anthropic {
                key: Some("sk-ant-1"),
            },
            ..base(
                "anthropic, a 400",
                vec![Step::json(
                    400,
                    json!({"type": "error", "error": {"type": "invalid_request_error",
                           "message": "max_tokens: 99999 > 64000, the maximum — it's \"too many\"\u{7}"},
                           "request_id": null, "n": [1, 2.5, 1e20, true]}),
                )],
            )
        },
        Scenario {
            provider: Provider::Anthropic {
                key: Some("sk-ant-1"),
            },
            ..base(
                "anthropic, no text twice",
                vec![
                    Step::json(
                        200,
                        message_reply(
                            json!([{"type": "thinking", "thinking": "t", "signature": "s"}]),
                            "max_tokens",
                        ),
                    ),
                    Step::json(200, message_reply(json!([]), "max_tokens")),
                ],
            )
        },
        Scenario {
            provider: Provider::Anthropic {
                key: Some("sk-ant-1"),
            },
            ..base(
                "anthropic, a refusal",
                vec![Step::json(
                    200,
                    json!({"id": "m", "type": "message", "role": "assistant", "model": "c",
                                            "content": [], "stop_reason": "refusal",
                                            "stop_details": {"type": "refusal", "category": "cyber"},
                                            "usage": {"input_tokens": 1, "output_tokens": 0}}),
                )],
            )
        },
    ]
}

/// The Anthropic client's streamed retry (and an error event in its stream)
/// and its redirects.
fn anthropic_streams_and_redirects() -> Vec<Scenario> {
    vec![
        Scenario {
            provider: Provider::Anthropic { key: Some("sk-ant-1") },
            grounded: true,
            retry_cap: 32000,
            ..base(
                "anthropic, a streamed retry above the plain-request ceiling",
                vec![
                    Step::json(200, message_reply(json!([]), "max_tokens")),
                    Step::Reply {
                        status: 200,
                        headers: vec![("content-type".into(), "text/event-stream".into())],
                        body: fixture::event_stream(&[
                            ("thinking", "Let me think."),
                            ("text", "Gold does not rust [p-1a2b3c4d]. "),
                            ("text", "Proofs are pretty [p-deadbeef, p-00]."),
                        ]),
                    },
                ],
            )
        },
        Scenario {
            provider: Provider::Anthropic { key: Some("sk-ant-1") },
            ..base(
                "anthropic, redirects",
                vec![
                    Step::text(307, "").with_header("location", "/moved/v1/messages"),
                    Step::text(302, "").with_header("location", "elsewhere"),
                    Step::json(200, message_reply(json!([{"type": "text", "text": "Moved."}]), "end_turn")),
                ],
            )
        },
        Scenario {
            provider: Provider::Anthropic { key: Some("sk-ant-1") },
            egress: Some((
                json!({"egress": "allowlist", "allow": [{"host": "127.0.0.1"}]}),
                EgressPosture::Allowlist(vec![AllowEntry { host: "127.0.0.1".into(), port: None }]),
            )),
            ..base(
                "anthropic, a redirect the posture refuses",
                vec![
                    Step::text(308, "").with_header("location", "http://127.0.0.2:9/x"),
                    Step::text(308, "").with_header("location", "http://127.0.0.2:9/x"),
                    Step::text(308, "").with_header("location", "http://127.0.0.2:9/x"),
                ],
            )
        },
        Scenario {
            provider: Provider::Anthropic { key: Some("sk-ant-1") },
            retry_cap: 32000,
            ..base(
                "anthropic, an error event in the stream",
                vec![
                    Step::json(200, message_reply(json!([]), "max_tokens")),
                    Step::Reply {
                        status: 200,
                        headers: vec![("content-type".into(), "text/event-stream".into())],
                        body: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\
                               \"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\
                               \"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n\
                               event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\
                               \"message\":\"Overloaded\"}}\n\n"
                            .into(),
                    },
                ],
            )
        },
    ]
}

struct Ours {
    outcome: Value,
    requests: Vec<Recorded>,
}

#[test]
fn the_answer_step_matches_the_reference() {
    let Some(python) = reference_python() else {
        return;
    };
    let scenarios = scenarios();
    let mut ours = Vec::new();
    let mut theirs_servers = Vec::new();
    let mut payload = Vec::new();
    for scenario in &scenarios {
        let server = Server::start(scenario.steps.clone());
        ours.push(run_ours(scenario, &server.base_url(), &server));
        let reference_server = Server::start(scenario.steps.clone());
        payload.push(reference_scenario(scenario, &reference_server.base_url()));
        theirs_servers.push(reference_server);
    }
    let reference = run_reference(&python, "build_response.py", &json!({"scenarios": payload}));
    let reference = reference.as_array().expect("a list of outcomes");
    if std::env::var_os("SHOW_REFERENCE").is_some() {
        for outcome in reference {
            eprintln!("{outcome}");
        }
    }

    let mut failures = Vec::new();
    for (((scenario, ours), theirs), server) in scenarios
        .iter()
        .zip(&ours)
        .zip(reference)
        .zip(&theirs_servers)
    {
        let mut ours_outcome = ours.outcome.clone();
        let mut theirs_outcome = theirs.clone();
        if !scenario.same_error_text {
            for outcome in [&mut ours_outcome, &mut theirs_outcome] {
                outcome["answer"] = Value::Null;
                outcome["answer_generation_error"] = Value::Null;
            }
        }
        if ours_outcome != theirs_outcome {
            failures.push(format!(
                "{}:\n  ours      {ours_outcome}\n  reference {theirs_outcome}",
                scenario.name
            ));
        }
        if let Err(difference) = compare_requests(scenario, &ours.requests, &server.requests()) {
            failures.push(format!("{}: requests differ: {difference}", scenario.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!(
        "answer step: {} scenarios identical to the reference",
        scenarios.len()
    );
}

fn run_ours(scenario: &Scenario, base_url: &str, server: &Server) -> Ours {
    let particles: Vec<Particle> = scenario
        .top
        .iter()
        .map(|(json, _, _)| particle(json))
        .collect();
    let hits: Vec<AnswerHit<'_>> = particles
        .iter()
        .zip(&scenario.top)
        .map(|(particle, (_, _, effective))| AnswerHit {
            particle,
            effective_confidence: *effective,
        })
        .collect();
    let member_particles: Vec<(String, Vec<Particle>)> = scenario
        .constituents
        .iter()
        .map(|(id, members)| ((*id).to_owned(), members.iter().map(particle).collect()))
        .collect();
    let constituents: HashMap<String, Vec<&Particle>> = member_particles
        .iter()
        .map(|(id, members)| (id.clone(), members.iter().collect()))
        .collect();
    let relevance = (scenario.embeddings_used && !scenario.top.is_empty()).then(|| {
        let max = scenario
            .top
            .iter()
            .map(|(_, sim, _)| *sim)
            .fold(f64::MIN, f64::max);
        Relevance::new(max, 0.25)
    });
    let coverage_gap = scenario.gap.as_ref().map(|gap| CoverageGapNote {
        kind: serde_json::from_value::<CoverageGapKind>(gap["kind"].clone()).expect("a gap kind"),
        subject_name: gap["subject_name"].as_str(),
        particle_count: gap["particle_count"].as_u64().unwrap_or(0),
    });
    let input = AnswerInput {
        question: "Tell me about <old> coins?",
        audience: scenario.audience,
        as_of: scenario
            .as_of
            .map(|(text, _)| Timestamp::parse(text).expect("a valid instant")),
        grounded: scenario.grounded,
        hits: &hits,
        constituents: &constituents,
        relevance,
        ranking_degraded: !scenario.embeddings_used,
        coverage_gap,
    };
    let provider = match &scenario.provider {
        Provider::Fake {
            key,
            max_retries,
            timeout_seconds,
            base_url: fixed,
        } => {
            let mut settings = fixture::openai_settings(base_url);
            if let Some(fixed) = fixed {
                settings.base_url = (*fixed).to_owned();
            }
            settings.api_key = key.map(str::to_owned);
            settings.max_retries = *max_retries;
            settings.timeout = Duration::from_secs_f64(*timeout_seconds);
            ProviderSettings::OpenAiCompatible(settings)
        }
        Provider::Anthropic { key } => {
            let mut env = HashMap::from([("ANTHROPIC_BASE_URL".to_owned(), base_url.to_owned())]);
            if let Some(key) = key {
                env.insert("ANTHROPIC_API_KEY".to_owned(), (*key).to_owned());
            }
            ProviderSettings::Anthropic(AnthropicSettings::from_env("claude-test", &env))
        }
    };
    let mut settings = AnswerSettings::new(provider);
    settings.answer_retry_max_tokens = scenario.retry_cap;
    if let Some((_, posture)) = &scenario.egress {
        settings.egress = posture.clone();
    }
    let reply = answer(&input, &settings);
    let outcome = json!({
        "answer": reply.answer,
        "answer_refused": reply.answer_refused,
        "answer_attribution": reply.answer_attribution,
        "answer_generation_error": reply.answer_generation_error,
        "answer_generation_error_cause": reply.answer_generation_error_cause,
        "truncation_warning": (!reply.truncation_warning_suppressed).then_some("a truncation warning"),
        "relevance": relevance,
        "ranking_degraded": (!scenario.embeddings_used).then_some(RANKING_DEGRADED_NO_ENCODER),
    });
    Ours {
        outcome,
        requests: server.requests(),
    }
}

fn reference_scenario(scenario: &Scenario, base_url: &str) -> Value {
    let (llm, env) = match &scenario.provider {
        Provider::Fake {
            key,
            max_retries,
            timeout_seconds,
            base_url: fixed,
        } => (
            json!({"provider": "fake", "model": "fake-model",
                   "base_url": fixed.map_or_else(|| format!("{base_url}/v1"), str::to_owned),
                   "max_retries": max_retries, "timeout_seconds": timeout_seconds}),
            key.map_or_else(
                || json!({}),
                |key| json!({"PARTICLES_LLM_API_KEY_FAKE": key}),
            ),
        ),
        Provider::Anthropic { key } => {
            let mut env = json!({"ANTHROPIC_BASE_URL": base_url});
            if let Some(key) = key {
                env["ANTHROPIC_API_KEY"] = json!(key);
            }
            (
                json!({"provider": "anthropic", "model": "claude-test"}),
                env,
            )
        }
    };
    json!({
        "request": {
            "question": "Tell me about <old> coins?",
            "audience": scenario.audience,
            "as_of": scenario.as_of.map(|(text, _)| text),
            "grounded": scenario.grounded,
        },
        "top": scenario.top.iter().map(|(p, sim, eff)| json!([p, sim, eff])).collect::<Vec<_>>(),
        "constituents": scenario.constituents.iter().map(|(id, m)| ((*id).to_owned(), json!(m))).collect::<serde_json::Map<_, _>>(),
        "embeddings_used": scenario.embeddings_used,
        "gaps": scenario.gap.iter().collect::<Vec<_>>(),
        "llm": llm,
        "env": env,
        "answer_retry_max_tokens": scenario.retry_cap,
        "network": scenario.egress.as_ref().map_or_else(|| json!({"egress": "open"}), |(network, _)| network.clone()),
    })
}

/// Same count, path, body members, caps and model; the same user turn up to the
/// end of the particle fence once the nonces are set aside, and notes in the same
/// places; the same credentials and API version.
fn compare_requests(
    scenario: &Scenario,
    ours: &[Recorded],
    theirs: &[Recorded],
) -> Result<(), String> {
    if ours.len() != theirs.len() {
        return Err(format!("{} requests against {}", ours.len(), theirs.len()));
    }
    for (ours, theirs) in ours.iter().zip(theirs) {
        if (&ours.method, &ours.path) != (&theirs.method, &theirs.path)
            || ours.header("authorization") != theirs.header("authorization")
        {
            return Err(format!(
                "{} {} (authorization {:?}) against {} {} ({:?})",
                ours.method,
                ours.path,
                ours.header("authorization"),
                theirs.method,
                theirs.path,
                theirs.header("authorization")
            ));
        }
        if ours.body.is_empty() && theirs.body.is_empty() {
            continue;
        }
        let (ours_body, theirs_body) = (ours.json(), theirs.json());
        let keys = |body: &Value| {
            body.as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>())
        };
        let same = [
            (ours.path == theirs.path, "path"),
            (keys(&ours_body) == keys(&theirs_body), "body members"),
            (
                ours_body["max_tokens"] == theirs_body["max_tokens"],
                "max_tokens",
            ),
            (ours_body["model"] == theirs_body["model"], "model"),
            (
                ours.header("authorization") == theirs.header("authorization"),
                "authorization",
            ),
            (
                ours.header("anthropic-version") == theirs.header("anthropic-version"),
                "anthropic-version",
            ),
        ];
        if let Some((_, what)) = same.iter().find(|(same, _)| !same) {
            return Err(format!(
                "{what}: ours {} / reference {}",
                ours.body, theirs.body
            ));
        }
        let turns = |body: &Value| -> (String, String) {
            match body.get("system") {
                Some(system) => (
                    system.as_str().unwrap_or_default().to_owned(),
                    body["messages"][0]["content"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                ),
                None => (
                    body["messages"][0]["content"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    body["messages"][1]["content"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                ),
            }
        };
        let (ours_system, ours_user) = turns(&ours_body);
        let (theirs_system, theirs_user) = turns(&theirs_body);
        let ours_nonce = the_nonce(&[&ours_system, &ours_user]);
        let theirs_nonce = the_nonce(&[&theirs_system, &theirs_user]);
        let ours_user = ours_user.replace(&ours_nonce, "N");
        let theirs_user = theirs_user.replace(&theirs_nonce, "N");
        let fence_end = "</particles nonce=\"N\">";
        let split = |user: &str| -> (String, Vec<bool>) {
            let end = user
                .find(fence_end)
                .map_or(user.len(), |at| at + fence_end.len());
            let notes = user[end..].split('\n').map(str::is_empty).collect();
            (user[..end].to_owned(), notes)
        };
        if split(&ours_user) != split(&theirs_user) {
            return Err(format!(
                "user turns:\n--- ours\n{ours_user}\n--- reference\n{theirs_user}"
            ));
        }
        if let Some((_, iso)) = scenario.as_of {
            if !(ours_system.contains(iso) && theirs_system.contains(iso)) {
                return Err(format!(
                    "the as-of instant {iso} is missing from a system turn"
                ));
            }
        }
        let grounded_rules =
            |system: &str| system.contains("[inference]") && system.contains("[background]");
        if grounded_rules(&ours_system) != grounded_rules(&theirs_system) {
            return Err("grounded rules present in one system turn only".to_owned());
        }
    }
    Ok(())
}
