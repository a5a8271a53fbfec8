//! The Anthropic messages API, as the reference's SDK (anthropic 2.14.0) sends and
//! retries it (§6.6).

use std::{thread, time::Duration};

use serde_json::{json, Value};

use super::http::{Client, Reply, TransportError};
use crate::{
    egress::{host_port, EgressPosture},
    prompt::Prompt,
    pytext,
    settings::AnthropicSettings,
    Error,
};

/// The `anthropic-version` header SDK 2.14.0 pins.
pub const ANTHROPIC_VERSION: &str = "2026-10-21";
/// The largest cap sent as one plain request; above it the reference's adapter
/// streams, because the SDK refuses a plain request whose reply could outlast ten
/// minutes at its assumed 128 000 tokens an hour.
const NONSTREAMING_MAX_TOKENS: u32 = 21_333;
/// The most redirects httpx follows before giving up.
const MAX_REDIRECTS: usize = 20;
/// The SDK's cap on one retry's computed delay.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(8);

/// One completion: the first text block, stripped.
pub(crate) fn complete(
    settings: &AnthropicSettings,
    prompt: &Prompt,
    max_tokens: u32,
    egress: &EgressPosture,
) -> Result<String, Error> {
    let key = settings
        .api_key
        .as_deref()
        .ok_or(Error::MissingAnthropicKey)?;
    let url = format!("{}/v1/messages", settings.base_url.trim_end_matches('/'));
    let headers = [
        ("authorization", format!("Bearer {key}")),
        ("anthropic-version", ANTHROPIC_VERSION.to_owned()),
    ];
    let streamed = max_tokens > NONSTREAMING_MAX_TOKENS;
    let mut body = json!({
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": prompt.user}],
        "model": settings.model,
        "system": prompt.system,
    });
    if streamed {
        body["stream"] = json!(true);
    }
    let body = body.to_string();
    let client = Client::new(settings.connect_timeout, settings.timeout);

    let mut retries_taken = 0;
    loop {
        let retries_left = retries_taken < settings.max_retries;
        let wait = match send_following_redirects(&client, &url, &headers, &body, egress) {
            Ok(reply) if (200..300).contains(&reply.status) => {
                let message = if streamed {
                    accumulate_stream(&reply)?
                } else {
                    serde_json::from_str(&reply.body).map_err(|source| Error::MalformedReply {
                        detail: source.to_string(),
                    })?
                };
                return message_text(&message, max_tokens);
            }
            Ok(reply) => {
                if !(retries_left && should_retry(&reply)) {
                    return Err(status_error(&reply));
                }
                reply
                    .retry_after()
                    .unwrap_or_else(|| backoff(settings.retry_base_delay, retries_taken))
            }
            Err(failure) => {
                if !retries_left {
                    return Err(if failure.is_some_and(|transport| transport.is_timeout()) {
                        Error::AnthropicTimeout
                    } else {
                        Error::AnthropicConnection
                    });
                }
                backoff(settings.retry_base_delay, retries_taken)
            }
        };
        thread::sleep(wait);
        retries_taken += 1;
    }
}

/// One attempt, redirects followed as the SDK's httpx client follows them: 301,
/// 302 and 303 turn the POST into a GET, 307 and 308 repeat it, and the key is
/// dropped when the origin changes. Every hop is held to the egress posture; a hop
/// it refuses fails the attempt as a connection error does in the SDK (`None`).
fn send_following_redirects(
    client: &Client,
    url: &str,
    headers: &[(&str, String)],
    body: &str,
    egress: &EgressPosture,
) -> Result<Reply, Option<TransportError>> {
    let mut url = url.to_owned();
    let mut headers = headers.to_vec();
    let mut post = true;
    for hop in 0..=MAX_REDIRECTS {
        if hop > 0 {
            let (host, port) = host_port(&url);
            egress.check(&host, port).map_err(|_| None)?;
        }
        let reply = if post {
            client.post_json(&url, &headers, body)
        } else {
            client.get(&url, &headers)
        }
        .map_err(Some)?;
        let Some(location) = reply.redirect_location() else {
            return Ok(reply);
        };
        let next = join_url(&url, location);
        if origin(&next) != origin(&url) {
            headers.retain(|(name, _)| *name != "authorization");
        }
        post = post && matches!(reply.status, 307 | 308);
        url = next;
    }
    // httpx's TooManyRedirects, which the SDK reports as a connection error.
    Err(None)
}

/// `scheme://authority` of an absolute URL, lower-cased as httpx lower-cases the
/// scheme and host (Python's `str.lower()`).
fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    format!("{}://{}", pytext::lower(scheme), pytext::lower(authority))
}

/// A `location` resolved against the URL it came from.
fn join_url(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    let scheme = base.split_once("://").map_or("http", |(scheme, _)| scheme);
    if let Some(rest) = location.strip_prefix("//") {
        return format!("{scheme}://{rest}");
    }
    let origin = origin(base);
    if location.starts_with('/') {
        return format!("{origin}{location}");
    }
    let path = base[origin.len().min(base.len())..]
        .split(['?', '#'])
        .next()
        .unwrap_or_default();
    let directory = path.rfind('/').map_or("/", |slash| &path[..=slash]);
    format!("{origin}{directory}{location}")
}

/// The SDK's rule: an explicit `x-should-retry` wins, else 408, 409, 429 and 5xx.
fn should_retry(reply: &Reply) -> bool {
    match reply.should_retry_header() {
        Some("true") => true,
        Some("false") => false,
        _ => matches!(reply.status, 408 | 409 | 429) || reply.status >= 500,
    }
}

/// `min(base · 2^n, 8 s)`, less up to a quarter at random.
fn backoff(base: Duration, retries_taken: u32) -> Duration {
    let delay = base
        .saturating_mul(2u32.saturating_pow(retries_taken.min(30)))
        .min(MAX_RETRY_DELAY);
    delay.mul_f64(1.0 - 0.25 * unit_random())
}

/// A number in `[0, 1)` from the OS, for jitter; no randomness means no jitter.
fn unit_random() -> f64 {
    let mut bytes = [0u8; 8];
    match getrandom::fill(&mut bytes) {
        Ok(()) => (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.0,
    }
}

/// The SDK's status error text: `Error code: N - <repr of the JSON body>`, or the
/// body's text when it is not JSON, or `Error code: N` when it is empty.
fn status_error(reply: &Reply) -> Error {
    let text = pytext::strip(&reply.body);
    let message = match serde_json::from_str::<Value>(text) {
        Ok(body) => format!("Error code: {} - {}", reply.status, pytext::py_repr(&body)),
        Err(_) if !text.is_empty() => text.to_owned(),
        Err(_) => format!("Error code: {}", reply.status),
    };
    Error::AnthropicStatus {
        status: reply.status,
        message,
    }
}

/// The message a streamed reply's server-sent events add up to, as the SDK's
/// stream helper accumulates it; an `error` event is a status error.
fn accumulate_stream(reply: &Reply) -> Result<Value, Error> {
    let mut message: Option<Value> = None;
    for (event, data) in server_sent_events(&reply.body) {
        match event.as_deref() {
            None | Some("ping") => continue,
            Some("error") => {
                let text = data.as_str();
                let message = match serde_json::from_str::<Value>(text) {
                    Ok(body) => pytext::py_str(&body),
                    Err(_) if !text.is_empty() => text.to_owned(),
                    Err(_) => format!("Error code: {}", reply.status),
                };
                return Err(Error::AnthropicStatus {
                    status: reply.status,
                    message,
                });
            }
            Some(_) if data.is_empty() => continue,
            Some(name) => {
                let payload: Value =
                    serde_json::from_str(&data).map_err(|source| Error::MalformedReply {
                        detail: format!("stream event {name}: {source}"),
                    })?;
                message = Some(apply_event(message, name, &payload)?);
            }
        }
    }
    message.ok_or_else(|| Error::MalformedReply {
        detail: "the stream carried no message_start event".to_owned(),
    })
}

fn apply_event(message: Option<Value>, name: &str, payload: &Value) -> Result<Value, Error> {
    let Some(mut message) = message else {
        return match name {
            "message_start" => Ok(payload.get("message").cloned().unwrap_or(Value::Null)),
            _ => Err(Error::MalformedReply {
                detail: format!("Unexpected event order, got {name} before \"message_start\""),
            }),
        };
    };
    let index = payload.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
    match name {
        "content_block_start" => {
            if let Some(content) = message.get_mut("content").and_then(Value::as_array_mut) {
                content.push(payload.get("content_block").cloned().unwrap_or(Value::Null));
            }
        }
        "content_block_delta" => {
            let delta = payload.get("delta").cloned().unwrap_or(Value::Null);
            let block = message
                .get_mut("content")
                .and_then(|content| content.get_mut(index));
            if let Some(block) = block {
                let kind = block
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let append = |block: &mut Value, field: &str, key: &str| {
                    let more = delta.get(key).and_then(Value::as_str).unwrap_or_default();
                    let text = block.get(field).and_then(Value::as_str).unwrap_or_default();
                    block[field] = Value::String(format!("{text}{more}"));
                };
                match (delta.get("type").and_then(Value::as_str), kind.as_str()) {
                    (Some("text_delta"), "text") => append(block, "text", "text"),
                    (Some("thinking_delta"), "thinking") => append(block, "thinking", "thinking"),
                    (Some("signature_delta"), "thinking") => {
                        block["signature"] = delta.get("signature").cloned().unwrap_or(Value::Null);
                    }
                    _ => {}
                }
            }
        }
        "message_delta" => {
            let delta = payload.get("delta").cloned().unwrap_or(Value::Null);
            for field in ["stop_reason", "stop_sequence", "stop_details"] {
                message[field] = delta.get(field).cloned().unwrap_or(Value::Null);
            }
        }
        _ => {}
    }
    Ok(message)
}

/// `(event, data)` pairs of a `text/event-stream` body; data lines joined by `\n`.
fn server_sent_events(body: &str) -> Vec<(Option<String>, String)> {
    let mut events = Vec::new();
    let mut event: Option<String> = None;
    let mut data: Vec<&str> = Vec::new();
    for line in body
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
    {
        if line.is_empty() {
            if event.is_some() || !data.is_empty() {
                events.push((event.take(), data.join("\n")));
                data.clear();
            }
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = Some(value.to_owned()),
            "data" => data.push(value),
            _ => {}
        }
    }
    if event.is_some() || !data.is_empty() {
        events.push((event, data.join("\n")));
    }
    events
}

/// A refusal is an error; otherwise the first content block that has a `text`.
fn message_text(message: &Value, max_tokens: u32) -> Result<String, Error> {
    let stop_reason = message.get("stop_reason").filter(|value| !value.is_null());
    if stop_reason.and_then(Value::as_str) == Some("refusal") {
        let category = message
            .get("stop_details")
            .and_then(|details| details.get("category"))
            .filter(|category| !matches!(category, Value::Null | Value::Bool(false)))
            .filter(|category| category.as_str() != Some(""))
            .map(pytext::py_str);
        return Err(Error::AnthropicRefusal { category });
    }
    let Some(blocks) = message.get("content").and_then(Value::as_array) else {
        return Err(Error::MalformedReply {
            detail: "the message has no content list".to_owned(),
        });
    };
    let text = blocks.iter().find_map(|block| block.get("text"));
    match text {
        Some(text) => Ok(pytext::strip(&pytext::py_str(text)).to_owned()),
        None => Err(Error::AnthropicNoText {
            stop_reason: stop_reason.map(pytext::py_str),
            max_tokens,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_shapes() {
        let thinking_then_text = r#"{"content": [{"type": "thinking", "thinking": "..."},
            {"type": "text", "text": " answer \n"}], "stop_reason": "end_turn"}"#;
        let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap();
        assert_eq!(
            message_text(&parse(thinking_then_text), 5).unwrap(),
            "answer"
        );
        let refused =
            r#"{"content": [], "stop_reason": "refusal", "stop_details": {"category": "cyber"}}"#;
        assert_eq!(
            message_text(&parse(refused), 5).unwrap_err().to_string(),
            "Anthropic declined the request (stop_reason=refusal, category=cyber) — the \
             model's safety classifiers refused this content"
        );
        let only_thinking =
            r#"{"content": [{"type": "thinking", "thinking": "."}], "stop_reason": "max_tokens"}"#;
        assert_eq!(
            message_text(&parse(only_thinking), 4096)
                .unwrap_err()
                .to_string(),
            "Anthropic response carried no text block (stop_reason=max_tokens, max_tokens=4096). \
             To fix: raise query.answer_max_tokens (llm purpose query_response)"
        );
    }

    #[test]
    fn redirect_targets() {
        assert_eq!(join_url("http://a:1/v1/messages", "/x"), "http://a:1/x");
        assert_eq!(
            join_url("http://a:1/v1/messages", "y?z"),
            "http://a:1/v1/y?z"
        );
        assert_eq!(join_url("https://a/v1", "//b/c"), "https://b/c");
        assert_eq!(join_url("https://a/v1", "http://c/d"), "http://c/d");
        assert_eq!(origin("HTTP://A:1/x"), origin("http://a:1/y"));
    }

    #[test]
    fn backoff_is_bounded() {
        let base = Duration::from_millis(500);
        assert!(backoff(base, 0) <= base && backoff(base, 0) >= base.mul_f64(0.75));
        assert!(backoff(base, 10) <= MAX_RETRY_DELAY);
    }
}
