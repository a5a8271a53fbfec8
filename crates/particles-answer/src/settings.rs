//! Which provider answers, with what budget, under which egress posture; and the
//! provider keys, read from an environment the caller hands in.

use std::{collections::HashMap, time::Duration};

use crate::egress::EgressPosture;

/// `query.answer_max_tokens`'s default.
pub const DEFAULT_ANSWER_MAX_TOKENS: u32 = 4096;
/// `query.answer_retry_max_tokens`'s default (0 disables the retry).
pub const DEFAULT_ANSWER_RETRY_MAX_TOKENS: u32 = 16384;
/// The compiled default model (`llm.default`).
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-5-5";
/// Where the Anthropic SDK connects without `ANTHROPIC_BASE_URL`.
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The compiled-in `local` provider entry's base URL (an Ollama server).
pub const LOCAL_DEFAULT_BASE_URL: &str = "http://localhost:11434/v1";

/// Everything the answer step needs beyond its input.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerSettings {
    /// The provider `query_response` is routed to.
    pub provider: ProviderSettings,
    /// The first call's output cap (`query.answer_max_tokens`).
    pub answer_max_tokens: u32,
    /// The cap of the one retry after a reply with no text
    /// (`query.answer_retry_max_tokens`); no retry unless it exceeds the first.
    pub answer_retry_max_tokens: u32,
    /// `network.egress` and `network.allow`.
    pub egress: EgressPosture,
}

impl AnswerSettings {
    /// The reference's defaults (4096, then 16384; egress open) for a provider.
    pub fn new(provider: ProviderSettings) -> AnswerSettings {
        AnswerSettings {
            provider,
            answer_max_tokens: DEFAULT_ANSWER_MAX_TOKENS,
            answer_retry_max_tokens: DEFAULT_ANSWER_RETRY_MAX_TOKENS,
            egress: EgressPosture::Open,
        }
    }
}

/// One of the two wire protocols.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderSettings {
    /// The Anthropic messages API (provider `anthropic`).
    Anthropic(AnthropicSettings),
    /// A named OpenAI-compatible `llm.providers` entry.
    OpenAiCompatible(OpenAiCompatibleSettings),
}

impl ProviderSettings {
    /// `<provider>:<model>`, the disclosure key.
    pub fn provider_model(&self) -> String {
        match self {
            ProviderSettings::Anthropic(settings) => format!("anthropic:{}", settings.model),
            ProviderSettings::OpenAiCompatible(settings) => {
                format!("{}:{}", settings.name, settings.model)
            }
        }
    }
}

/// The Anthropic provider, with the SDK's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct AnthropicSettings {
    /// The model id.
    pub model: String,
    /// `ANTHROPIC_BASE_URL`, else [`ANTHROPIC_DEFAULT_BASE_URL`].
    pub base_url: String,
    /// `ANTHROPIC_API_KEY`; without it every call fails with the key-missing text.
    pub api_key: Option<String>,
    /// Retries after a connection error, a timeout, or status 408/409/429/5xx
    /// (SDK default 2).
    pub max_retries: u32,
    /// Connect timeout per attempt (SDK default 5 s).
    pub connect_timeout: Duration,
    /// Read and write timeout per attempt (SDK default 600 s).
    pub timeout: Duration,
    /// The first retry's delay before jitter; doubled per retry, at most 8 s
    /// (SDK default 0.5 s). A `retry-after` header overrides it.
    pub retry_base_delay: Duration,
}

impl AnthropicSettings {
    /// The SDK defaults for a model, with the key and base URL from `env`
    /// (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`; an empty value counts as unset).
    pub fn from_env(model: impl Into<String>, env: &HashMap<String, String>) -> AnthropicSettings {
        AnthropicSettings {
            model: model.into(),
            base_url: non_empty(env, "ANTHROPIC_BASE_URL")
                .unwrap_or_else(|| ANTHROPIC_DEFAULT_BASE_URL.to_owned()),
            api_key: non_empty(env, "ANTHROPIC_API_KEY"),
            max_retries: 2,
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(600),
            retry_base_delay: Duration::from_millis(500),
        }
    }
}

/// Which body member carries the output cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxTokensParam {
    /// `max_tokens` (the default; local runtimes).
    #[default]
    MaxTokens,
    /// `max_completion_tokens` (OpenAI reasoning models).
    MaxCompletionTokens,
}

impl MaxTokensParam {
    /// The member's name.
    pub fn as_str(self) -> &'static str {
        match self {
            MaxTokensParam::MaxTokens => "max_tokens",
            MaxTokensParam::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// One named OpenAI-compatible provider entry (`llm.providers.<name>`).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiCompatibleSettings {
    /// The entry's name; with the model it forms the disclosure key.
    pub name: String,
    /// The base URL; `/chat/completions` is appended.
    pub base_url: String,
    /// The model id.
    pub model: String,
    /// The bearer key, if any (see [`provider_api_key`]).
    pub api_key: Option<String>,
    /// The body member carrying the cap.
    pub max_tokens_param: MaxTokensParam,
    /// Sent as `reasoning_effort` when set.
    pub reasoning_effort: Option<String>,
    /// Retries after a transport error or status 429/500/502/503/504 (default 2).
    pub max_retries: u32,
    /// Backoff base: the wait before retry `n` (0-based) is this times 2^n (default 1 s).
    pub retry_backoff: Duration,
    /// Connect, read and write timeout per attempt (default 120 s).
    pub timeout: Duration,
    /// Send the key over cleartext HTTP to a non-loopback host anyway.
    pub allow_plaintext_key: bool,
}

impl OpenAiCompatibleSettings {
    /// An entry with the reference's defaults and no key.
    pub fn new(
        name: impl Into<String>,
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> OpenAiCompatibleSettings {
        OpenAiCompatibleSettings {
            name: name.into(),
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            max_tokens_param: MaxTokensParam::MaxTokens,
            reasoning_effort: None,
            max_retries: 2,
            retry_backoff: Duration::from_secs(1),
            timeout: Duration::from_secs(120),
            allow_plaintext_key: false,
        }
    }

    /// The same entry with its key read from `env` by [`provider_api_key`].
    pub fn with_key_from_env(mut self, env: &HashMap<String, String>) -> OpenAiCompatibleSettings {
        self.api_key = provider_api_key(&self.name, env);
        self
    }
}

/// The key of a named OpenAI-compatible provider: `PARTICLES_LLM_API_KEY_<NAME>`,
/// the name upper-cased with every non-alphanumeric character turned into `_`;
/// for `local` also the legacy `PARTICLES_LOCAL_LLM_API_KEY`. Empty values count
/// as unset.
pub fn provider_api_key(name: &str, env: &HashMap<String, String>) -> Option<String> {
    let suffix: String = name
        .chars()
        .map(|ch| if crate::pytext::is_alnum(ch) { ch } else { '_' })
        .collect();
    // `str.upper()`: full mappings (`ß` is `SS`), Python 3.11's Unicode.
    let suffix = crate::pytext::upper(&suffix);
    non_empty(env, &format!("PARTICLES_LLM_API_KEY_{suffix}")).or_else(|| {
        (name == "local")
            .then(|| non_empty(env, "PARTICLES_LOCAL_LLM_API_KEY"))
            .flatten()
    })
}

fn non_empty(env: &HashMap<String, String>, key: &str) -> Option<String> {
    env.get(key).filter(|value| !value.is_empty()).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn provider_keys() {
        let vars = env(&[
            ("PARTICLES_LLM_API_KEY_MY_GATEWAY_2", "k1"),
            ("PARTICLES_LOCAL_LLM_API_KEY", "legacy"),
            ("PARTICLES_LLM_API_KEY_EMPTY", ""),
        ]);
        assert_eq!(
            provider_api_key("my-gateway.2", &vars).as_deref(),
            Some("k1")
        );
        assert_eq!(provider_api_key("local", &vars).as_deref(), Some("legacy"));
        assert_eq!(provider_api_key("empty", &vars), None);
        assert_eq!(provider_api_key("other", &vars), None);
        let vars = env(&[
            ("PARTICLES_LLM_API_KEY_LOCAL", "new"),
            ("PARTICLES_LOCAL_LLM_API_KEY", "old"),
        ]);
        assert_eq!(provider_api_key("local", &vars).as_deref(), Some("new"));
    }

    #[test]
    fn anthropic_from_env() {
        let settings = AnthropicSettings::from_env("m", &env(&[("ANTHROPIC_BASE_URL", "")]));
        assert_eq!(settings.base_url, ANTHROPIC_DEFAULT_BASE_URL);
        assert_eq!(settings.api_key, None);
        let settings = AnthropicSettings::from_env(
            "m",
            &env(&[
                ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
                ("ANTHROPIC_API_KEY", "sk"),
            ]),
        );
        assert_eq!(settings.base_url, "http://127.0.0.1:9");
        assert_eq!(settings.api_key.as_deref(), Some("sk"));
    }
}
