//! The OpenAI-compatible chat-completions protocol (§6.5).

use std::{thread, time::Duration};

use serde_json::{json, Map, Value};

use super::http::Client;
use crate::{
    egress::is_cleartext_remote, prompt::Prompt, pytext, settings::OpenAiCompatibleSettings, Error,
};

/// Statuses worth another attempt: rate limiting and transient server errors.
const RETRYABLE_STATUSES: [u16; 5] = [429, 500, 502, 503, 504];
/// How much of an error body the message keeps, in characters.
const DETAIL_CHARS: usize = 500;

/// One completion: the stripped reply text.
pub(crate) fn complete(
    settings: &OpenAiCompatibleSettings,
    prompt: &Prompt,
    max_tokens: u32,
) -> Result<String, Error> {
    let mut headers: Vec<(&str, String)> = Vec::new();
    if let Some(key) = &settings.api_key {
        if is_cleartext_remote(&settings.base_url) && !settings.allow_plaintext_key {
            return Err(Error::PlaintextKeyRefused {
                name: settings.name.clone(),
                base_url: settings.base_url.clone(),
            });
        }
        headers.push(("authorization", format!("Bearer {key}")));
    }
    let url = format!(
        "{}/chat/completions",
        settings.base_url.trim_end_matches('/')
    );
    let body = request_body(settings, prompt, max_tokens).to_string();
    let client = Client::new(settings.timeout, settings.timeout);
    let provider_model = format!("{}:{}", settings.name, settings.model);

    let mut last_detail = String::new();
    for attempt in 0..=settings.max_retries {
        match client.post_json(&url, &headers, &body) {
            Ok(reply) if reply.status == 200 => {
                let payload = parse_reply(&reply.body)?;
                return reply_text(&payload, &provider_model, max_tokens);
            }
            Ok(reply) => {
                last_detail = scrub_body(&reply.body);
                if !RETRYABLE_STATUSES.contains(&reply.status) {
                    return Err(Error::HttpStatus {
                        status: reply.status,
                        detail: last_detail,
                    });
                }
            }
            Err(transport) => last_detail = transport.httpx_detail(),
        }
        if attempt < settings.max_retries {
            thread::sleep(backoff(settings.retry_backoff, attempt));
        }
    }
    Err(Error::RetriesExhausted {
        attempts: settings.max_retries + 1,
        detail: last_detail,
    })
}

/// The reply's JSON. A body that cannot even start a JSON value (an HTML error
/// page, plain text, nothing) is reported with the message Python's `json` gives
/// it, which is what the reference shows; other malformed bodies in our words.
fn parse_reply(body: &str) -> Result<Value, Error> {
    serde_json::from_str(body).map_err(|source| {
        let start = body.trim_start_matches([' ', '\t', '\n', '\r']);
        let can_start = start.starts_with(['{', '[', '"', '-', 't', 'f', 'n', 'N', 'I'])
            || start.starts_with(|ch: char| ch.is_ascii_digit());
        if can_start {
            return Error::MalformedReply {
                detail: source.to_string(),
            };
        }
        let skipped = &body[..body.len() - start.len()];
        let char_index = skipped.chars().count();
        let line = 1 + skipped.matches('\n').count();
        let column = match skipped.rfind('\n') {
            Some(newline) => skipped[newline..].chars().count() - 1,
            None => char_index,
        } + 1;
        Error::JsonExpectingValue {
            line,
            column,
            char_index,
        }
    })
}

/// `backoff · 2^attempt`.
fn backoff(base: Duration, attempt: u32) -> Duration {
    base.saturating_mul(2u32.saturating_pow(attempt))
}

fn request_body(settings: &OpenAiCompatibleSettings, prompt: &Prompt, max_tokens: u32) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model));
    body.insert(
        "messages".into(),
        json!([
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": prompt.user},
        ]),
    );
    body.insert(settings.max_tokens_param.as_str().into(), json!(max_tokens));
    if let Some(effort) = &settings.reasoning_effort {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    Value::Object(body)
}

/// `choices[0].message.content`, stripped; the content filter, an empty reply and
/// an empty reply cut by the budget are errors. A reply cut by the budget with
/// text is returned as it is.
fn reply_text(payload: &Value, provider_model: &str, max_tokens: u32) -> Result<String, Error> {
    let first = payload
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|choices| choices.first())
        .filter(|first| first.is_object());
    let finish_reason = first
        .and_then(|first| first.get("finish_reason"))
        .filter(|v| !v.is_null());
    let content = first
        .and_then(|first| first.get("message"))
        .and_then(|message| message.get("content"))
        .and_then(Value::as_str)
        .map(pytext::strip)
        .filter(|content| !content.is_empty());
    if finish_reason.and_then(Value::as_str) == Some("content_filter") {
        return Err(Error::ContentFiltered {
            provider_model: provider_model.to_owned(),
        });
    }
    if let Some(content) = content {
        return Ok(content.to_owned());
    }
    if finish_reason.and_then(Value::as_str) == Some("length") {
        return Err(Error::TruncatedEmpty {
            provider_model: provider_model.to_owned(),
            max_tokens,
        });
    }
    Err(Error::EmptyReply {
        finish_reason: finish_reason.map(pytext::py_str),
    })
}

/// An error body fit for a message: bearer tokens an endpoint echoed back are
/// redacted (`(?i)(authorization\s*:\s*)?bearer\s+\S+`), then it is cut to 500
/// characters.
pub(crate) fn scrub_body(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut copied = 0;
    let mut at = 0;
    while at < body.len() {
        let token_end = pytext::literal_ci(body, at, "authorization")
            .and_then(|after| {
                let colon = pytext::skip_spaces(body, after);
                body[colon..]
                    .starts_with(':')
                    .then(|| pytext::skip_spaces(body, colon + 1))
            })
            .and_then(|bearer| bearer_token_end(body, bearer))
            .or_else(|| bearer_token_end(body, at));
        if let Some(end) = token_end {
            out.push_str(&body[copied..at]);
            out.push_str("Bearer [REDACTED]");
            copied = end;
            at = end;
        } else {
            at += body[at..].chars().next().map_or(1, char::len_utf8);
        }
    }
    out.push_str(&body[copied..]);
    pytext::take_chars(&out, DETAIL_CHARS).to_owned()
}

/// `bearer\s+\S+` at `at`: the end of the token.
fn bearer_token_end(text: &str, at: usize) -> Option<usize> {
    let after_word = pytext::literal_ci(text, at, "bearer")?;
    let token = pytext::skip_spaces(text, after_word);
    if token == after_word {
        return None;
    }
    let len = text[token..]
        .find(pytext::is_space)
        .unwrap_or(text.len() - token);
    (len > 0).then_some(token + len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_redacted() {
        assert_eq!(
            scrub_body("echo: Authorization : Bearer sk-123 and bearer   xyz, BEARER"),
            "echo: Bearer [REDACTED] and Bearer [REDACTED] BEARER"
        );
        assert_eq!(scrub_body(&"é".repeat(600)).chars().count(), 500);
    }

    #[test]
    fn bodies_that_start_no_json_value() {
        let message = |body: &str| parse_reply(body).unwrap_err().to_string();
        assert_eq!(
            message("<html>"),
            "Expecting value: line 1 column 1 (char 0)"
        );
        assert_eq!(message(""), "Expecting value: line 1 column 1 (char 0)");
        assert_eq!(
            message(" \n\n  oops"),
            "Expecting value: line 3 column 3 (char 5)"
        );
        assert!(message("{\"a\" 1}").starts_with("LLM endpoint reply is not valid JSON"));
    }

    #[test]
    fn reply_shapes() {
        let ok =
            json!({"choices": [{"message": {"content": "  hi \n"}, "finish_reason": "length"}]});
        assert_eq!(reply_text(&ok, "f:m", 9).unwrap(), "hi");
        let filtered =
            json!({"choices": [{"message": {"content": "x"}, "finish_reason": "content_filter"}]});
        assert!(matches!(
            reply_text(&filtered, "f:m", 9),
            Err(Error::ContentFiltered { .. })
        ));
        let cut = json!({"choices": [{"message": {"content": " "}, "finish_reason": "length"}]});
        assert!(matches!(
            reply_text(&cut, "f:m", 9),
            Err(Error::TruncatedEmpty { max_tokens: 9, .. })
        ));
        let empty = json!({"choices": [{"message": {}, "finish_reason": "stop"}]});
        assert_eq!(
            reply_text(&empty, "f:m", 9).unwrap_err().to_string(),
            "LLM endpoint response carried no text content (finish_reason=stop)"
        );
        assert_eq!(
            reply_text(&json!([1]), "f:m", 9).unwrap_err().to_string(),
            "LLM endpoint response carried no text content"
        );
    }
}
