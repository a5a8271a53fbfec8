//! Why an answer could not be generated.
//!
//! Unlike the other crates' errors, these messages are not ours to word: a client
//! reads them in `answer_generation_error`, so each renders exactly as the reference's
//! exception does (capitalised, with its punctuation). `answer` never returns an
//! error; it turns one into the fallback listing and its disclosure.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The machine-readable class of a failed answer (`answer_generation_error_cause`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Cause {
    /// The model replied with no text, even at the retry's larger token cap.
    Budget,
    /// Anything else: network, status, refusal, policy, configuration, bad reply.
    Provider,
}

impl Cause {
    /// `BUDGET` or `PROVIDER`.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Budget => "BUDGET",
            Cause::Provider => "PROVIDER",
        }
    }
}

/// How the egress posture refused the provider's endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusingPosture {
    /// `network.egress: none`.
    None,
    /// `network.egress: allowlist` without the destination in `network.allow`.
    Allowlist,
}

/// A failed answer generation. `Display` is the reference's message, verbatim.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The egress posture does not allow the provider's endpoint; nothing was sent.
    /// Allow the destination in the posture or choose another provider.
    #[error("{}", egress_message(.host, *.port, *.posture))]
    EgressRefused {
        /// The endpoint's host, as the URL names it (lower-cased).
        host: String,
        /// The endpoint's port, or the scheme's default; `None` when neither is known.
        port: Option<u16>,
        /// The refusing posture.
        posture: RefusingPosture,
    },
    /// The Anthropic provider has no `ANTHROPIC_API_KEY`. Set it.
    #[error(
        "ANTHROPIC_API_KEY environment variable is not set. Set it before running \
         extract / query / lint:   export ANTHROPIC_API_KEY=sk-ant-…  (get a key at \
         https://console.anthropic.com/settings/keys)"
    )]
    MissingAnthropicKey,
    /// An OpenAI-compatible entry's key would travel over cleartext HTTP to a host
    /// that is not loopback. Use https, a loopback tunnel, or `allow_plaintext_key`.
    #[error(
        "Refusing to send the llm.providers.{name} API key to {base_url} over \
         unencrypted http://. Use https://, or reach the endpoint through a loopback \
         hop (an SSH or Tailscale forward to http://127.0.0.1). To send it anyway on a \
         network you trust end to end, set llm.providers.{name}.allow_plaintext_key: true."
    )]
    PlaintextKeyRefused {
        /// The provider entry's name.
        name: String,
        /// Its base URL.
        base_url: String,
    },
    /// The OpenAI-compatible endpoint answered with a status that is not retried.
    #[error("LLM endpoint returned HTTP {status}: {detail}")]
    HttpStatus {
        /// The HTTP status.
        status: u16,
        /// The body, bearer tokens redacted, at most 500 characters.
        detail: String,
    },
    /// Every attempt at the OpenAI-compatible endpoint failed transiently.
    #[error("LLM endpoint call failed after {attempts} attempt(s): {detail}")]
    RetriesExhausted {
        /// Attempts made (`max_retries + 1`).
        attempts: u32,
        /// The last failure: an httpx-style `Kind: message`, or a redacted body.
        detail: String,
    },
    /// The OpenAI-compatible endpoint's content filter declined the request.
    #[error("LLM endpoint {provider_model} declined the request (finish_reason=content_filter)")]
    ContentFiltered {
        /// `<provider name>:<model>`.
        provider_model: String,
    },
    /// The OpenAI-compatible reply carried no text and was not cut by the budget.
    #[error("LLM endpoint response carried no text content{}", finish_detail(.finish_reason.as_deref()))]
    EmptyReply {
        /// The reply's `finish_reason`, as Python's `str()` renders it.
        finish_reason: Option<String>,
    },
    /// The OpenAI-compatible reply spent its whole budget before any text.
    #[error(
        "LLM endpoint {provider_model} returned an empty reply truncated at \
         max_tokens={max_tokens} (finish_reason=length): the whole budget was spent \
         before any answer text — for reasoning models the thinking spends from the \
         same budget as the answer; {hint}",
        hint = BUDGET_HINT
    )]
    TruncatedEmpty {
        /// `<provider name>:<model>`.
        provider_model: String,
        /// The cap the call was sent with.
        max_tokens: u32,
    },
    /// A 200 reply whose body does not start a JSON value (Python's `json` message).
    #[error("Expecting value: line {line} column {column} (char {char_index})")]
    JsonExpectingValue {
        /// 1-based line of the first non-whitespace character.
        line: usize,
        /// 1-based column of it.
        column: usize,
        /// Its 0-based index in characters.
        char_index: usize,
    },
    /// A 200 reply whose body is not the JSON the protocol promises.
    #[error("LLM endpoint reply is not valid JSON: {detail}")]
    MalformedReply {
        /// What the JSON parser reported.
        detail: String,
    },
    /// Anthropic answered with an error status (after the SDK-style retries).
    #[error("{message}")]
    AnthropicStatus {
        /// The HTTP status.
        status: u16,
        /// The SDK's message: `Error code: <status> - <body as Python repr>`, or
        /// the body's text when it is not JSON.
        message: String,
    },
    /// Anthropic could not be reached.
    #[error("Connection error.")]
    AnthropicConnection,
    /// An Anthropic attempt timed out (after the SDK-style retries).
    #[error(
        "Request timed out or interrupted. This could be due to a network timeout, \
         dropped connection, or request cancellation. See \
         https://docs.anthropic.com/en/api/errors#long-requests for more details."
    )]
    AnthropicTimeout,
    /// Anthropic's safety classifiers refused the request (`stop_reason=refusal`).
    #[error(
        "Anthropic declined the request (stop_reason=refusal{}) — the model's safety \
         classifiers refused this content",
        .category.as_deref().map(|category| format!(", category={category}")).unwrap_or_default()
    )]
    AnthropicRefusal {
        /// `stop_details.category`, when reported.
        category: Option<String>,
    },
    /// The Anthropic reply held no text block.
    #[error(
        "Anthropic response carried no text block (stop_reason={stop}, \
         max_tokens={max_tokens}). To fix: {hint}",
        stop = .stop_reason.as_deref().unwrap_or("None"),
        hint = BUDGET_HINT
    )]
    AnthropicNoText {
        /// The reply's `stop_reason`.
        stop_reason: Option<String>,
        /// The cap the call was sent with.
        max_tokens: u32,
    },
    /// The operating system gave no randomness for the fence nonce.
    #[error("no randomness for the prompt fence nonce: {detail}")]
    Randomness {
        /// The OS error.
        detail: String,
    },
}

/// What the reference tells the operator to raise for this purpose.
const BUDGET_HINT: &str = "raise query.answer_max_tokens (llm purpose query_response)";

impl Error {
    /// `BUDGET` for a reply without text (the cap was spent), else `PROVIDER`.
    pub fn cause(&self) -> Cause {
        match self {
            Error::EmptyReply { .. }
            | Error::TruncatedEmpty { .. }
            | Error::AnthropicNoText { .. } => Cause::Budget,
            _ => Cause::Provider,
        }
    }
}

fn finish_detail(finish_reason: Option<&str>) -> String {
    finish_reason
        .map(|reason| format!(" (finish_reason={reason})"))
        .unwrap_or_default()
}

fn egress_message(host: &str, port: Option<u16>, posture: RefusingPosture) -> String {
    let place = match port {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let why = match posture {
        RefusingPosture::None => "network.egress is none".to_owned(),
        RefusingPosture::Allowlist => {
            format!("network.egress is allowlist and {place} is not in network.allow")
        }
    };
    format!(
        "{why}: refusing to connect to {place} (llm purpose query_response). Add the \
         destination to network.allow to permit it."
    )
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
