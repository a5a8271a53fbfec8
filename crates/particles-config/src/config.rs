//! Typed access to the keys particles-rs acts on.
//!
//! `Config::default()` is the reference's compiled defaults (a test compares it
//! with the defaults `schema.json` recorded from the reference). Values are
//! built from a validated tree, so every conversion here is total: integers
//! beyond `i64` (which Python allows) saturate. Every other key of the model is
//! still validated and reachable through `Loaded::entries`.

use std::collections::BTreeMap;

use crate::{value::Value, yaml::Int};

/// The configuration keys particles-rs reads, with the reference's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `storage.*`: which stores exist.
    pub storage: StorageConfig,
    /// `network.*`: the egress posture.
    pub network: NetworkConfig,
    /// `api.*`: the HTTP surface's limits.
    pub api: ApiConfig,
    /// `build.*`.
    pub build: BuildConfig,
    /// `engine.*`: remote mode.
    pub engine: EngineConfig,
    /// `embeddings.*` (reported, never read by queries).
    pub embeddings: EmbeddingsConfig,
    /// `cli.*`.
    pub cli: CliConfig,
    /// `mcp.*`.
    pub mcp: McpConfig,
    /// `llm.*`: completion providers.
    pub llm: LlmConfig,
    /// `query.*`: ranking and response knobs.
    pub query: QueryConfig,
    /// `contestedness.*`.
    pub contestedness: ContestednessConfig,
    /// `source_passage.*`.
    pub source_passage: SourcePassageConfig,
    /// `content_age_decay.sources`: decay rules by source type.
    pub content_age_decay: BTreeMap<String, SourceDecay>,
    /// `trust.source_type_domains`: source type -> domain label.
    pub trust_source_type_domains: BTreeMap<String, String>,
    /// `consolidation.abstraction.stale_support_discount`.
    pub stale_support_discount: f64,
    /// `consolidation.abstraction.source_demotion`: `suppress_in_projection`
    /// leaves an ACTIVE abstraction's premises out of a projection.
    pub source_demotion: String,
    /// `confidence.uncalibrated_cap.*`.
    pub uncalibrated_cap: UncalibratedCap,
    /// `conformance.trust_cap.*`.
    pub conformance_trust_cap: ConformanceTrustCap,
    /// `subjects.wikidata_link_suppress_threshold`.
    pub wikidata_link_suppress_threshold: f64,
    /// `document_precedence.*` (acts in `retrieve_ranked` only).
    pub document_precedence: DocumentPrecedence,
    /// `owner_lens.*` (acts in `retrieve_ranked` only).
    pub owner_lens: OwnerLens,
    /// `utility.*` (the usefulness lift of the digest and the projection).
    pub utility: UtilityConfig,
    /// `agent_memory.projection.exclude_source_tags`.
    pub memory_exclude_source_tags: Vec<String>,
    /// `extraction.refusal_retry_days`: how long a declined source is held.
    pub refusal_retry_days: f64,
    /// `observer_scope.harness_tags`.
    pub observer_harness_tags: Vec<String>,
    /// `extraction_scope.exempt_source_tags`.
    pub extraction_exempt_source_tags: Vec<String>,
}

/// `storage.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct StorageConfig {
    /// The `default` store's URL (`DATABASE_URL` overrides it).
    pub database_url: String,
    /// Named stores: handle -> URL.
    pub stores: BTreeMap<String, String>,
    /// `storage.blob_dir`.
    pub blob_dir: String,
    /// `storage.max_page_size`.
    pub max_page_size: i64,
    /// `storage.write_lock.enabled`.
    pub write_lock_enabled: bool,
    /// `storage.write_lock.timeout_seconds`.
    pub write_lock_timeout_seconds: f64,
    /// `storage.write_lock.path`.
    pub write_lock_path: Option<String>,
}

/// `network.egress`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Egress {
    /// No check (the default).
    Open,
    /// Every outbound connection refused.
    None,
    /// Only `network.allow` destinations.
    Allowlist,
}

/// One `network.allow` entry (host normalised as the reference does: trimmed,
/// lower case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressAllow {
    /// An IP literal, a CIDR block or an exact host name.
    pub host: String,
    /// `None` permits any port.
    pub port: Option<u16>,
}

/// `network.*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkConfig {
    /// The posture.
    pub egress: Egress,
    /// The destinations `allowlist` permits.
    pub allow: Vec<EgressAllow>,
}

/// `api.*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiConfig {
    /// Inbound body cap; 0 disables it.
    pub max_request_body_bytes: i64,
    /// The interface the API binds.
    pub bind_host: String,
    /// Per-client cap on model-driving endpoints; `<= 0` disables it.
    pub rate_limit_per_minute: i64,
    /// Require the bearer on read routes too.
    pub require_auth_for_reads: bool,
    /// Proxies whose `X-Forwarded-For` is honoured.
    pub trusted_proxies: Vec<String>,
    /// `Host` names served besides loopback (normalised to lower case).
    pub allowed_hosts: Vec<String>,
    /// Browser origins served without a bearer.
    pub allowed_origins: Vec<String>,
}

/// `build.*`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BuildConfig {
    /// The image's build stamp; blank reads as unset.
    pub date: Option<String>,
}

/// `engine.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineConfig {
    /// Remote mode when set.
    pub base_url: Option<String>,
    /// HTTP timeout.
    pub timeout_seconds: f64,
    /// Send the bearer over non-loopback `http://`.
    pub allow_plaintext_token: bool,
}

/// `embeddings.*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingsConfig {
    /// tqdm bars on stderr.
    pub progress_bars: bool,
    /// Recorded profile dimension (inert for queries).
    pub dim: i64,
    /// Recorded normalisation (inert for queries).
    pub normalization: String,
}

/// `cli.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct CliConfig {
    /// Liveness line threshold; 0 disables it.
    pub heartbeat_seconds: f64,
    /// Warn about an unread nearby `config.yaml`.
    pub warn_unused_config: bool,
}

/// `mcp.*` (the part particles-rs reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpConfig {
    /// Model-driving tool calls per minute; 0 disables the cap.
    pub rate_limit_per_minute: i64,
    /// `mcp.recall.digest_max_beliefs`: the digest's line cap (0: none).
    pub digest_max_beliefs: i64,
    /// The stores whose digest the MCP server lists as resources:
    /// `mcp.write.enabled_stores`, then `mcp.recall.digest_stores`, each once.
    pub digest_listed_stores: Vec<String>,
}

/// A `(provider, model)` pairing for one completion purpose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderSelection {
    /// `anthropic` or a key of `llm.providers`.
    pub provider: String,
    /// The model id.
    pub model: String,
}

/// `structured_output` of a provider entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StructuredOutput {
    /// Strict-dialect JSON schema.
    Strict,
    /// JSON schema when supplied, retried without on refusal.
    Auto,
    /// No enforcement.
    Off,
}

/// `max_tokens_param` of a provider entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxTokensParam {
    /// `max_tokens`.
    MaxTokens,
    /// `max_completion_tokens`.
    MaxCompletionTokens,
}

/// One OpenAI-compatible `llm.providers` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    /// Base URL; `/chat/completions` is appended.
    pub base_url: String,
    /// Send the key over non-loopback `http://`.
    pub allow_plaintext_key: bool,
    /// Per-request timeout.
    pub timeout_seconds: f64,
    /// Retries on transient failures.
    pub max_retries: i64,
    /// Backoff base: `backoff * 2**attempt`.
    pub retry_backoff_seconds: f64,
    /// Structured-output enforcement.
    pub structured_output: StructuredOutput,
    /// Which body member carries the length cap.
    pub max_tokens_param: MaxTokensParam,
    /// Whether `temperature` is sent.
    pub send_temperature: bool,
    /// Sent as `reasoning_effort` when set.
    pub reasoning_effort: Option<String>,
    /// The adapter kind.
    pub adapter: String,
}

impl ProviderConfig {
    /// The variable the reference reads this entry's API key from:
    /// `PARTICLES_LLM_API_KEY_<NAME>`, the name upper-cased with every
    /// non-alphanumeric character replaced by `_` (for `local`, the reference
    /// also falls back to `PARTICLES_LOCAL_LLM_API_KEY`).
    pub fn api_key_env_var(name: &str) -> String {
        use particles_pytext::{is_alnum, upper};
        // `"".join(c if c.isalnum() else "_" for c in name).upper()`, Python 3.11's
        // Unicode.
        let suffix: String = name
            .chars()
            .map(|c| if is_alnum(c) { c } else { '_' })
            .collect();
        format!("PARTICLES_LLM_API_KEY_{}", upper(&suffix))
    }
}

/// `llm.*` (the part particles-rs reads).
#[derive(Debug, Clone, PartialEq)]
pub struct LlmConfig {
    /// The fallback selection.
    pub default: ProviderSelection,
    /// The answer call's selection; `None` falls back to `default`.
    pub query_response: Option<ProviderSelection>,
    /// The extraction call's selection; `None` falls back to `default`.
    pub extraction: Option<ProviderSelection>,
    /// Named providers; always holds `local`.
    pub providers: BTreeMap<String, ProviderConfig>,
}

impl LlmConfig {
    /// The selection the answer call uses.
    pub fn for_query_response(&self) -> &ProviderSelection {
        self.query_response.as_ref().unwrap_or(&self.default)
    }

    /// The selection extraction uses (which pairs an extraction refusal with
    /// the model that refused).
    pub fn for_extraction(&self) -> &ProviderSelection {
        self.extraction.as_ref().unwrap_or(&self.default)
    }
}

/// `query.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryConfig {
    /// Never read by `query` (40).
    pub default_top_k: i64,
    /// Never read by `query` (0.0).
    pub default_min_confidence: f64,
    /// Co-evidential edges below it are not collapsed.
    pub equivalence_threshold: f64,
    /// `sw` in `score = sw*sim + cw*eff`.
    pub similarity_weight: f64,
    /// `cw` in `score = sw*sim + cw*eff`.
    pub confidence_weight: f64,
    /// Score multiplier for NARRATIVE particles.
    pub narrative_rank_weight: f64,
    /// Truncation warning: gap.
    pub truncation_min_gap: f64,
    /// Truncation warning: margin.
    pub truncation_near_margin: f64,
    /// Truncation warning: count.
    pub truncation_near_count: i64,
    /// Below it (max raw sim) no answer call is made.
    pub relevance_floor: f64,
    /// Answer-call budget.
    pub answer_max_tokens: i64,
    /// Retry budget after an empty completion; 0 disables it.
    pub answer_retry_max_tokens: i64,
    /// Grounded answers when the request leaves it unset.
    pub grounded_answers: bool,
    /// The reference's candidate cache switch.
    pub candidate_cache: bool,
    /// The reference's `gc.freeze` threshold.
    pub candidate_cache_freeze_rows: i64,
}

/// `contestedness.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct ContestednessConfig {
    /// The badge's divergence basis fires at spread >= this.
    pub callout_threshold: f64,
    /// Whether badges are computed.
    pub badge_enabled: bool,
}

/// `source_passage.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct SourcePassageConfig {
    /// Share of terms for a "located" passage.
    pub locate_min_overlap: f64,
    /// Passage truncation.
    pub max_passage_chars: i64,
    /// Hits hydrated by `--show-source`.
    pub query_show_limit: i64,
}

/// One `content_age_decay.sources` rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceDecay {
    /// Half-life in days (no bounds: 0 and negatives are the query's problem).
    pub half_life_days: f64,
    /// The factor never goes below it.
    pub floor: f64,
}

/// `confidence.uncalibrated_cap.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct UncalibratedCap {
    /// Off by default.
    pub enabled: bool,
    /// The cap.
    pub cap_value: f64,
    /// Calibration sources capped.
    pub sources: Vec<String>,
}

/// `conformance.trust_cap.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConformanceTrustCap {
    /// Off by default.
    pub enabled: bool,
    /// The cap.
    pub cap_value: f64,
    /// Extractor ids never capped.
    pub exempt: Vec<String>,
}

/// `document_precedence.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentPrecedence {
    /// On by default.
    pub enabled: bool,
    /// The recency-loser's score multiplier.
    pub rank_penalty: f64,
}

/// `utility.*` (the part the ranking reads).
#[derive(Debug, Clone, PartialEq)]
pub struct UtilityConfig {
    /// On by default.
    pub enabled: bool,
    /// `utility.default.half_life_uses_days`.
    pub half_life_uses_days: f64,
    /// `utility.default.rank_lift` (λ).
    pub rank_lift: f64,
    /// `utility.explicit_weight`.
    pub explicit_weight: f64,
}

/// `owner_lens.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnerLens {
    /// On by default.
    pub enabled: bool,
    /// Owner subjects.
    pub subjects: Vec<String>,
    /// The lift ω.
    pub rank_lift: f64,
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

impl Default for ProviderConfig {
    fn default() -> Self {
        ProviderConfig {
            base_url: "http://localhost:11434/v1".to_owned(),
            allow_plaintext_key: false,
            timeout_seconds: 120.0,
            max_retries: 2,
            retry_backoff_seconds: 1.0,
            structured_output: StructuredOutput::Auto,
            max_tokens_param: MaxTokensParam::MaxTokens,
            send_temperature: true,
            reasoning_effort: None,
            adapter: "openai_compat".to_owned(),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        let decay = |half_life_days, floor| SourceDecay {
            half_life_days,
            floor,
        };
        Config {
            storage: StorageConfig {
                database_url: "sqlite+aiosqlite:///./particles.db".to_owned(),
                stores: BTreeMap::new(),
                blob_dir: "./corpus_blobs".to_owned(),
                max_page_size: 1000,
                write_lock_enabled: true,
                write_lock_timeout_seconds: 30.0,
                write_lock_path: None,
            },
            network: NetworkConfig {
                egress: Egress::Open,
                allow: Vec::new(),
            },
            api: ApiConfig {
                max_request_body_bytes: 25 * 1024 * 1024,
                bind_host: "127.0.0.1".to_owned(),
                rate_limit_per_minute: 60,
                require_auth_for_reads: false,
                trusted_proxies: Vec::new(),
                allowed_hosts: Vec::new(),
                allowed_origins: Vec::new(),
            },
            build: BuildConfig { date: None },
            engine: EngineConfig {
                base_url: None,
                timeout_seconds: 60.0,
                allow_plaintext_token: false,
            },
            embeddings: EmbeddingsConfig {
                progress_bars: false,
                dim: 384,
                normalization: "l2".to_owned(),
            },
            cli: CliConfig {
                heartbeat_seconds: 20.0,
                warn_unused_config: true,
            },
            mcp: McpConfig {
                rate_limit_per_minute: 60,
                digest_max_beliefs: 200,
                digest_listed_stores: Vec::new(),
            },
            llm: LlmConfig {
                default: ProviderSelection {
                    provider: "anthropic".to_owned(),
                    model: "claude-sonnet-5-5".to_owned(),
                },
                query_response: None,
                extraction: None,
                providers: BTreeMap::from([("local".to_owned(), ProviderConfig::default())]),
            },
            query: QueryConfig {
                default_top_k: 40,
                default_min_confidence: 0.0,
                equivalence_threshold: 0.0,
                similarity_weight: 0.6,
                confidence_weight: 0.4,
                narrative_rank_weight: 0.6,
                truncation_min_gap: 0.05,
                truncation_near_margin: 0.15,
                truncation_near_count: 5,
                relevance_floor: 0.25,
                answer_max_tokens: 4096,
                answer_retry_max_tokens: 16384,
                grounded_answers: false,
                candidate_cache: true,
                candidate_cache_freeze_rows: 10_000,
            },
            contestedness: ContestednessConfig {
                callout_threshold: 0.2,
                badge_enabled: true,
            },
            source_passage: SourcePassageConfig {
                locate_min_overlap: 0.5,
                max_passage_chars: 6000,
                query_show_limit: 5,
            },
            content_age_decay: BTreeMap::from([
                ("REDDIT_POST".to_owned(), decay(60.0, 0.1)),
                ("GITHUB_REPO".to_owned(), decay(365.0, 0.4)),
                ("GITHUB_GIST".to_owned(), decay(180.0, 0.2)),
                ("GITHUB_PAGES".to_owned(), decay(365.0, 0.25)),
            ]),
            trust_source_type_domains: BTreeMap::from([(
                "CONVERSATION".to_owned(),
                "agent-memory".to_owned(),
            )]),
            stale_support_discount: 0.5,
            source_demotion: "suppress_in_projection".to_owned(),
            uncalibrated_cap: UncalibratedCap {
                enabled: false,
                cap_value: 0.7,
                sources: strings(&["EXTRACTOR_DIRECT"]),
            },
            conformance_trust_cap: ConformanceTrustCap {
                enabled: false,
                cap_value: 0.5,
                exempt: Vec::new(),
            },
            wikidata_link_suppress_threshold: 0.25,
            document_precedence: DocumentPrecedence {
                enabled: true,
                rank_penalty: 0.6,
            },
            owner_lens: OwnerLens {
                enabled: true,
                subjects: Vec::new(),
                rank_lift: 0.0,
            },
            utility: UtilityConfig {
                enabled: true,
                half_life_uses_days: 30.0,
                rank_lift: 0.015,
                explicit_weight: 25.0,
            },
            memory_exclude_source_tags: strings(&["rule-file"]),
            refusal_retry_days: 30.0,
            observer_harness_tags: strings(&["claude-code"]),
            extraction_exempt_source_tags: strings(&["rule-file"]),
        }
    }
}

/// Reads typed values out of a validated tree.
struct Reader<'a>(&'a Value);

impl<'a> Reader<'a> {
    fn at(&self, key: &str) -> &'a Value {
        self.0
            .at(key)
            .expect("the validated tree holds every field of the schema")
    }

    fn sub(&self, key: &str) -> Reader<'a> {
        Reader(self.at(key))
    }

    fn f64(&self, key: &str) -> f64 {
        self.at(key).as_f64().unwrap_or(f64::NAN)
    }

    fn i64(&self, key: &str) -> i64 {
        int_to_i64(self.at(key))
    }

    fn bool(&self, key: &str) -> bool {
        matches!(self.at(key), Value::Bool(true))
    }

    fn string(&self, key: &str) -> String {
        self.at(key).as_str().unwrap_or_default().to_owned()
    }

    fn opt_string(&self, key: &str) -> Option<String> {
        self.at(key).as_str().map(str::to_owned)
    }

    fn strings(&self, key: &str) -> Vec<String> {
        match self.at(key) {
            Value::List(items) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    }

    fn map(&self, key: &str) -> Vec<(&'a String, &'a Value)> {
        match self.at(key) {
            Value::Map(entries) => entries.iter().map(|(k, v)| (k, v)).collect(),
            _ => Vec::new(),
        }
    }
}

fn int_to_i64(value: &Value) -> i64 {
    match value {
        Value::Int(Int::Small(value)) => {
            i64::try_from(*value).unwrap_or(if *value < 0 { i64::MIN } else { i64::MAX })
        }
        Value::Int(big) => {
            if big.is_negative() {
                i64::MIN
            } else {
                i64::MAX
            }
        }
        _ => 0,
    }
}

fn selection(value: &Value) -> Option<ProviderSelection> {
    let reader = Reader(value);
    matches!(value, Value::Map(_)).then(|| ProviderSelection {
        provider: reader.string("provider"),
        model: reader.string("model"),
    })
}

fn provider(value: &Value) -> ProviderConfig {
    let reader = Reader(value);
    ProviderConfig {
        base_url: reader.string("base_url"),
        allow_plaintext_key: reader.bool("allow_plaintext_key"),
        timeout_seconds: reader.f64("timeout_seconds"),
        max_retries: reader.i64("max_retries"),
        retry_backoff_seconds: reader.f64("retry_backoff_seconds"),
        structured_output: match reader.string("structured_output").as_str() {
            "strict" => StructuredOutput::Strict,
            "off" => StructuredOutput::Off,
            _ => StructuredOutput::Auto,
        },
        max_tokens_param: match reader.string("max_tokens_param").as_str() {
            "max_completion_tokens" => MaxTokensParam::MaxCompletionTokens,
            _ => MaxTokensParam::MaxTokens,
        },
        send_temperature: reader.bool("send_temperature"),
        reasoning_effort: reader.opt_string("reasoning_effort"),
        adapter: reader.string("adapter"),
    }
}

impl Config {
    /// Builds the typed view of a validated tree.
    pub(crate) fn from_value(root: &Value) -> Config {
        let r = Reader(root);
        let api = r.sub("api");
        let engine = r.sub("engine");
        Config {
            storage: storage_config(r.sub("storage")),
            network: network_config(r.sub("network")),
            api: ApiConfig {
                max_request_body_bytes: api.i64("max_request_body_bytes"),
                bind_host: api.string("bind_host"),
                rate_limit_per_minute: api.i64("rate_limit_per_minute"),
                require_auth_for_reads: api.bool("require_auth_for_reads"),
                trusted_proxies: api.strings("trusted_proxies"),
                allowed_hosts: api.strings("allowed_hosts"),
                allowed_origins: api.strings("allowed_origins"),
            },
            build: BuildConfig {
                date: r.opt_string("build.date"),
            },
            engine: EngineConfig {
                base_url: engine.opt_string("base_url"),
                timeout_seconds: engine.f64("timeout_seconds"),
                allow_plaintext_token: engine.bool("allow_plaintext_token"),
            },
            embeddings: EmbeddingsConfig {
                progress_bars: r.bool("embeddings.progress_bars"),
                dim: r.i64("embeddings.dim"),
                normalization: r.string("embeddings.normalization"),
            },
            cli: CliConfig {
                heartbeat_seconds: r.f64("cli.heartbeat_seconds"),
                warn_unused_config: r.bool("cli.warn_unused_config"),
            },
            mcp: McpConfig {
                rate_limit_per_minute: r.i64("mcp.rate_limit_per_minute"),
                digest_max_beliefs: r.i64("mcp.recall.digest_max_beliefs"),
                digest_listed_stores: {
                    let mut listed: Vec<String> = Vec::new();
                    for handle in r
                        .strings("mcp.write.enabled_stores")
                        .into_iter()
                        .chain(r.strings("mcp.recall.digest_stores"))
                    {
                        if !listed.contains(&handle) {
                            listed.push(handle);
                        }
                    }
                    listed
                },
            },
            llm: llm_config(r.sub("llm")),
            query: query_config(r.sub("query")),
            contestedness: ContestednessConfig {
                callout_threshold: r.f64("contestedness.callout_threshold"),
                badge_enabled: r.bool("contestedness.badge_enabled"),
            },
            source_passage: SourcePassageConfig {
                locate_min_overlap: r.f64("source_passage.locate_min_overlap"),
                max_passage_chars: r.i64("source_passage.max_passage_chars"),
                query_show_limit: r.i64("source_passage.query_show_limit"),
            },
            content_age_decay: content_age_decay(&r),
            trust_source_type_domains: r
                .map("trust.source_type_domains")
                .into_iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect(),
            stale_support_discount: r.f64("consolidation.abstraction.stale_support_discount"),
            source_demotion: r.string("consolidation.abstraction.source_demotion"),
            uncalibrated_cap: UncalibratedCap {
                enabled: r.bool("confidence.uncalibrated_cap.enabled"),
                cap_value: r.f64("confidence.uncalibrated_cap.cap_value"),
                sources: r.strings("confidence.uncalibrated_cap.sources"),
            },
            conformance_trust_cap: ConformanceTrustCap {
                enabled: r.bool("conformance.trust_cap.enabled"),
                cap_value: r.f64("conformance.trust_cap.cap_value"),
                exempt: r.strings("conformance.trust_cap.exempt"),
            },
            wikidata_link_suppress_threshold: r.f64("subjects.wikidata_link_suppress_threshold"),
            document_precedence: DocumentPrecedence {
                enabled: r.bool("document_precedence.enabled"),
                rank_penalty: r.f64("document_precedence.rank_penalty"),
            },
            owner_lens: OwnerLens {
                enabled: r.bool("owner_lens.enabled"),
                subjects: r.strings("owner_lens.subjects"),
                rank_lift: r.f64("owner_lens.rank_lift"),
            },
            utility: UtilityConfig {
                enabled: r.bool("utility.enabled"),
                half_life_uses_days: r.f64("utility.default.half_life_uses_days"),
                rank_lift: r.f64("utility.default.rank_lift"),
                explicit_weight: r.f64("utility.explicit_weight"),
            },
            memory_exclude_source_tags: r.strings("agent_memory.projection.exclude_source_tags"),
            refusal_retry_days: r.f64("extraction.refusal_retry_days"),
            observer_harness_tags: r.strings("observer_scope.harness_tags"),
            extraction_exempt_source_tags: r.strings("extraction_scope.exempt_source_tags"),
        }
    }
}

/// The `storage` section.
fn storage_config(storage: Reader<'_>) -> StorageConfig {
    StorageConfig {
        database_url: storage.string("database_url"),
        stores: storage
            .map("stores")
            .into_iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect(),
        blob_dir: storage.string("blob_dir"),
        max_page_size: storage.i64("max_page_size"),
        write_lock_enabled: storage.bool("write_lock.enabled"),
        write_lock_timeout_seconds: storage.f64("write_lock.timeout_seconds"),
        write_lock_path: storage.opt_string("write_lock.path"),
    }
}

/// The `network` section.
fn network_config(network: Reader<'_>) -> NetworkConfig {
    NetworkConfig {
        egress: match network.string("egress").as_str() {
            "none" => Egress::None,
            "allowlist" => Egress::Allowlist,
            _ => Egress::Open,
        },
        allow: match network.at("allow") {
            Value::List(items) => items
                .iter()
                .map(|item| {
                    let entry = Reader(item);
                    EgressAllow {
                        host: entry.string("host"),
                        port: u16::try_from(int_to_i64(entry.at("port")))
                            .ok()
                            .filter(|_| !matches!(entry.at("port"), Value::Null)),
                    }
                })
                .collect(),
            _ => Vec::new(),
        },
    }
}

/// The `llm` section.
fn llm_config(llm: Reader<'_>) -> LlmConfig {
    LlmConfig {
        default: selection(llm.at("default")).unwrap_or_else(|| Config::default().llm.default),
        query_response: selection(llm.at("query_response")),
        extraction: selection(llm.at("extraction")),
        providers: llm
            .map("providers")
            .into_iter()
            .map(|(name, value)| (name.clone(), provider(value)))
            .collect(),
    }
}

/// The `query` section.
fn query_config(query: Reader<'_>) -> QueryConfig {
    QueryConfig {
        default_top_k: query.i64("default_top_k"),
        default_min_confidence: query.f64("default_min_confidence"),
        equivalence_threshold: query.f64("equivalence_threshold"),
        similarity_weight: query.f64("similarity_weight"),
        confidence_weight: query.f64("confidence_weight"),
        narrative_rank_weight: query.f64("narrative_rank_weight"),
        truncation_min_gap: query.f64("truncation_min_gap"),
        truncation_near_margin: query.f64("truncation_near_margin"),
        truncation_near_count: query.i64("truncation_near_count"),
        relevance_floor: query.f64("relevance_floor"),
        answer_max_tokens: query.i64("answer_max_tokens"),
        answer_retry_max_tokens: query.i64("answer_retry_max_tokens"),
        grounded_answers: query.bool("grounded_answers"),
        candidate_cache: query.bool("candidate_cache"),
        candidate_cache_freeze_rows: query.i64("candidate_cache_freeze_rows"),
    }
}

/// `content_age_decay.sources`: each source type's decay.
fn content_age_decay(r: &Reader<'_>) -> BTreeMap<String, SourceDecay> {
    r.map("content_age_decay.sources")
        .into_iter()
        .map(|(name, rule)| {
            let rule = Reader(rule);
            let decay = SourceDecay {
                half_life_days: rule.f64("half_life_days"),
                floor: rule.f64("floor"),
            };
            (name.clone(), decay)
        })
        .collect()
}
