//! The decision order of the semantic path's answer (§6.1).

use crate::{
    error::{Cause, Error},
    grounding::{ground_answer, handles_for, Attribution, Handles},
    input::{AnswerInput, Relevance},
    isoformat,
    prompt::{build_prompt, new_nonce, REFUSAL_MARKER},
    provider, pytext,
    settings::AnswerSettings,
};

/// The disclosure `ranking_degraded` carries when there was no query vector; the
/// answer is then prefixed with it in brackets.
pub const RANKING_DEGRADED_NO_ENCODER: &str = "Semantic ranking unavailable: no embedding model could be \
loaded. These beliefs are the store's most confident ones, NOT necessarily ones about your question, \
and the relevance floor that would normally refuse an off-topic answer is inactive. Install the \
embedding model (sentence-transformers) and re-run to get a real answer.";

/// What replaces a refusal marker that came with no prose of its own.
const EMPTY_REFUSAL: &str = "The knowledge base holds nothing relevant to this question.";
/// The most characters of a failure's message the response carries.
const ERROR_CHARS: usize = 300;

/// The answer and its disclosure fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The text: the model's answer (relabelled when grounded), a fixed refusal or
    /// no-hits sentence, or the fallback listing; with the degraded-ranking prefix
    /// when there was no query vector.
    pub answer: String,
    /// A refusal: below the relevance floor, or the model's refusal marker.
    pub answer_refused: bool,
    /// Per-sentence attribution; only for a grounded, generated, unrefused answer.
    pub answer_attribution: Option<Attribution>,
    /// The failure's message (at most 300 characters) when generation failed.
    pub answer_generation_error: Option<String>,
    /// `BUDGET` or `PROVIDER` when generation failed.
    pub answer_generation_error_cause: Option<Cause>,
    /// The response's `truncation_warning` must be null (it is, under a refusal).
    pub truncation_warning_suppressed: bool,
}

/// Answers the question over the hits, in the reference's order: the relevance
/// refusal (no model call), the no-hits sentence (no model call), one model call
/// (retried once at the larger cap after a reply without text), the refusal marker,
/// the citations; any failure becomes the listing fallback; then the degraded
/// prefix.
///
/// Blocking: the provider call does network IO. Never fails: a failure is reported
/// in the returned fields.
pub fn answer(input: &AnswerInput<'_>, settings: &AnswerSettings) -> Answer {
    let handles = (input.grounded && !input.hits.is_empty())
        .then(|| handles_for(input.hits, input.constituents));
    let mut outcome = match input.relevance {
        Some(relevance) if relevance.below_floor => Answer {
            answer: below_floor_sentence(relevance, input),
            answer_refused: true,
            ..Answer::plain(String::new())
        },
        _ => match generate(input, settings, handles.as_ref()) {
            Ok(reply) => settle_reply(reply, handles.as_ref()),
            Err(error) => fallback(&error, input),
        },
    };
    if input.ranking_degraded {
        outcome.answer = format!("[{RANKING_DEGRADED_NO_ENCODER}]\n\n{}", outcome.answer);
    }
    outcome.truncation_warning_suppressed = outcome.answer_refused;
    outcome
}

impl Answer {
    fn plain(answer: String) -> Answer {
        Answer {
            answer,
            answer_refused: false,
            answer_attribution: None,
            answer_generation_error: None,
            answer_generation_error_cause: None,
            truncation_warning_suppressed: false,
        }
    }
}

fn below_floor_sentence(relevance: Relevance, input: &AnswerInput<'_>) -> String {
    let detail = format!(
        "(nearest belief similarity {:.2}, below the relevance floor {:.2})",
        relevance.max_similarity, relevance.floor
    );
    let tail = format!(
        " The {} nearest belief(s) are listed for transparency; they are likely unrelated to the question.",
        input.hits.len()
    );
    match input.as_of {
        Some(as_of) => format!(
            "As of {}, the store held no beliefs relevant to this question {detail}.{tail}",
            isoformat(as_of)
        ),
        None => format!("The store holds no beliefs relevant to this question {detail}.{tail}"),
    }
}

/// The reply text, a fixed sentence when there is nothing to ask about, or the
/// failure of the call (after the larger-cap retry where that applies).
fn generate(
    input: &AnswerInput<'_>,
    settings: &AnswerSettings,
    handles: Option<&Handles>,
) -> Result<String, Error> {
    if input.hits.is_empty() {
        return Ok(match input.as_of {
            Some(as_of) => format!(
                "The store held no beliefs matching this question as of {}.",
                isoformat(as_of)
            ),
            None => "No relevant particles found for this question in the current knowledge base."
                .to_owned(),
        });
    }
    let prompt = build_prompt(input, handles, &new_nonce()?);
    let call = |max_tokens| {
        provider::check_egress(&settings.provider, &settings.egress)?;
        provider::complete(&settings.provider, &prompt, max_tokens, &settings.egress)
    };
    match call(settings.answer_max_tokens) {
        // Only a reply without text is worth re-issuing, and only at a larger cap:
        // the same call at the same cap would spend it the same way.
        Err(error)
            if error.cause() == Cause::Budget
                && settings.answer_retry_max_tokens > settings.answer_max_tokens =>
        {
            call(settings.answer_retry_max_tokens)
        }
        result => result,
    }
}

/// The refusal marker, then (grounded, not refused) the citations.
fn settle_reply(reply: String, handles: Option<&Handles>) -> Answer {
    let (text, refused) = strip_refusal_marker(reply);
    if refused {
        return Answer {
            answer_refused: true,
            ..Answer::plain(text)
        };
    }
    match handles {
        Some(handles) => {
            let (text, attribution) = ground_answer(&text, handles);
            Answer {
                answer_attribution: Some(attribution),
                ..Answer::plain(text)
            }
        }
        None => Answer::plain(text),
    }
}

/// Splits the refusal marker off a reply that starts with it; a marker anywhere
/// else is prose.
fn strip_refusal_marker(reply: String) -> (String, bool) {
    let Some(rest) = pytext::lstrip(&reply).strip_prefix(REFUSAL_MARKER) else {
        return (reply, false);
    };
    let rest = rest.trim_start_matches([' ', ':', '\n']);
    let text = if rest.is_empty() { EMPTY_REFUSAL } else { rest };
    (text.to_owned(), true)
}

/// The listing shown instead of an answer, with the failure disclosed.
fn fallback(error: &Error, input: &AnswerInput<'_>) -> Answer {
    let message = error.to_string();
    let reason = pytext::take_chars(pytext::strip(&message), ERROR_CHARS).to_owned();
    let listing: Vec<String> = input
        .hits
        .iter()
        .map(|hit| format!("• {}", hit.particle.content))
        .collect();
    Answer {
        answer: format!(
            "[Answer generation unavailable: {reason}]\nShowing the retrieved beliefs instead — this is a \
             listing, not an answer:\n{}",
            listing.join("\n")
        ),
        answer_generation_error: Some(reason),
        answer_generation_error_cause: Some(error.cause()),
        ..Answer::plain(String::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_marker() {
        let (text, refused) =
            strip_refusal_marker("  NO_RELEVANT_KNOWLEDGE:\n nothing here".into());
        assert_eq!((text.as_str(), refused), ("nothing here", true));
        let (text, refused) = strip_refusal_marker("NO_RELEVANT_KNOWLEDGE \n: ".into());
        assert_eq!((text.as_str(), refused), (EMPTY_REFUSAL, true));
        let (text, refused) = strip_refusal_marker("Gold. NO_RELEVANT_KNOWLEDGE".into());
        assert_eq!(
            (text.as_str(), refused),
            ("Gold. NO_RELEVANT_KNOWLEDGE", false)
        );
    }
}
