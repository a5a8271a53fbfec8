//! The natural-language answer of a Particles semantic query, as the reference
//! (`linkedparticles` 1.214.1, `_build_response`) produces it.
//!
//! [`answer`] takes the ranked hits and the query's disclosures ([`AnswerInput`])
//! and returns the answer with its disclosure fields ([`Answer`]), in the
//! reference's order: a fixed refusal below the relevance floor, a fixed sentence
//! when nothing was retrieved, else one model call over a fenced prompt (retried
//! once at a larger cap when the reply has no text), the `NO_RELEVANT_KNOWLEDGE`
//! refusal marker, and for a grounded answer the citations read back into
//! per-sentence [`Attribution`] ([`ground_answer`]). A failed call never fails the
//! answer: the hits are listed instead and the failure is disclosed, with a
//! [`Cause`].
//!
//! Two wire protocols stand behind the call: the Anthropic messages API and any
//! OpenAI-compatible chat-completions endpoint ([`ProviderSettings`]). The call is
//! blocking (ureq); run it on a blocking thread. Keys come from an environment
//! map the caller passes in ([`provider_api_key`], [`AnthropicSettings::from_env`]);
//! nothing here reads the process environment or the clock.
//!
//! Fixed texts a client sees (the refusal and no-hit sentences, the fallback, the
//! degraded prefix, the failure messages, the canonical citation tags) are the
//! reference's, byte for byte. The prompt's instructions are our own wording of
//! the same content.
//!
//! Known differences from the reference: a 200 reply whose body is malformed JSON
//! is reported in our words (the reference shows Python's `JSONDecodeError` text;
//! a body that starts no JSON value at all gets that text here too);
//! transport failures are named as httpx names the common ones (refused, timed out,
//! disconnected, unknown host) and otherwise carry ureq's message; egress host
//! names are compared lower-cased without IDNA encoding; Anthropic `retry-after`
//! dates are not read (seconds and milliseconds are), and Anthropic redirects are
//! followed by ureq's rules. Above 21 333 tokens the Anthropic call is streamed, as
//! the reference's adapter streams it, and the events are added up the SDK's way.
//!
//! ```
//! use std::collections::HashMap;
//! use particles_answer::{answer, AnswerInput, AnswerSettings, Audience, ProviderSettings,
//!     AnthropicSettings};
//! let constituents = HashMap::new();
//! let input = AnswerInput {
//!     question: "how are old coins graded?",
//!     audience: Audience::General,
//!     as_of: None,
//!     grounded: false,
//!     hits: &[],
//!     constituents: &constituents,
//!     relevance: None,
//!     ranking_degraded: false,
//!     coverage_gap: None,
//! };
//! let settings = AnswerSettings::new(ProviderSettings::Anthropic(
//!     AnthropicSettings::from_env("claude-sonnet-5-5", &HashMap::new()),
//! ));
//! // No hits: a fixed sentence, no model call.
//! let reply = answer(&input, &settings);
//! assert_eq!(reply.answer, "No relevant particles found for this question in the current knowledge base.");
//! ```
#![warn(missing_docs)]
#![forbid(unsafe_code)]
#![warn(clippy::unwrap_used)]

mod answer;
mod egress;
mod error;
mod grounding;
mod input;
mod prompt;
mod provider;
mod pytext;
mod settings;

pub use crate::{
    answer::{answer, Answer, RANKING_DEGRADED_NO_ENCODER},
    egress::{AllowEntry, EgressPosture},
    error::{Cause, Error, RefusingPosture},
    grounding::{
        ground_answer, handles_for, AttributedSentence, Attribution, AttributionKind, Handles,
    },
    input::{AnswerHit, AnswerInput, Audience, CoverageGapKind, CoverageGapNote, Relevance},
    prompt::{build_prompt, new_nonce, Prompt, REFUSAL_MARKER},
    provider::ANTHROPIC_VERSION,
    settings::{
        provider_api_key, AnswerSettings, AnthropicSettings, MaxTokensParam,
        OpenAiCompatibleSettings, ProviderSettings, ANTHROPIC_DEFAULT_BASE_URL,
        DEFAULT_ANSWER_MAX_TOKENS, DEFAULT_ANSWER_RETRY_MAX_TOKENS, DEFAULT_ANTHROPIC_MODEL,
        LOCAL_DEFAULT_BASE_URL,
    },
};

use particles_model::Timestamp;

/// Python's `datetime.isoformat()` of the request's aware instant
/// (`2000-01-01T00:00:00+00:00`); a naive value is read as UTC, as the reference's
/// request validator makes it.
pub(crate) fn isoformat(at: Timestamp) -> String {
    let text = at.to_string();
    let offset = at.offset_seconds().unwrap_or(0);
    let wall = match at.offset_seconds() {
        None => text.as_str(),
        Some(0) => text.strip_suffix('Z').unwrap_or(&text),
        // Display writes a non-zero offset as a fixed-width `±HH:MM`.
        Some(_) => &text[..text.len() - 6],
    };
    let sign = if offset < 0 { '-' } else { '+' };
    let seconds = offset.unsigned_abs();
    let mut out = format!(
        "{wall}{sign}{:02}:{:02}",
        seconds / 3600,
        (seconds / 60) % 60
    );
    if !seconds.is_multiple_of(60) {
        out.push_str(&format!(":{:02}", seconds % 60));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isoformat_is_pythons() {
        for (text, iso) in [
            ("2000-01-01T00:00:00Z", "2000-01-01T00:00:00+00:00"),
            ("2000-01-01T00:00:00", "2000-01-01T00:00:00+00:00"),
            (
                "2001-02-03T04:05:06.5-05:30",
                "2001-02-03T04:05:06.500000-05:30",
            ),
            (
                "2001-02-03T04:05:06+01:02:03",
                "2001-02-03T04:05:06+01:02:03",
            ),
        ] {
            assert_eq!(isoformat(Timestamp::parse(text).unwrap()), iso, "{text}");
        }
    }
}
