//! A seeded, grammar-aware generator of config documents for the differential
//! test: the keys particles-rs reads with values across and beyond their
//! ranges, numbers in YAML 1.1 spellings, odd booleans, nulls, duplicate and
//! unknown keys, anchors, aliases and merges (of sections, lists, inline
//! mappings, non-mappings, scalars), block and quoted scalars, and random fields
//! of every section from the schema.

use std::collections::BTreeMap;

/// SplitMix64: small, seeded, good enough to pick grammar branches.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A document under construction: a block mapping, or a scalar / flow text.
pub enum Gen {
    Text(String),
    Block(Vec<(String, Gen)>),
}

impl Gen {
    pub fn render(&self, indent: usize, out: &mut String) {
        let Gen::Block(entries) = self else { return };
        for (key, value) in entries {
            out.push_str(&" ".repeat(indent));
            out.push_str(key);
            out.push(':');
            match value {
                Gen::Text(text) if text.is_empty() => out.push('\n'),
                Gen::Text(text) => {
                    out.push(' ');
                    out.push_str(text);
                    out.push('\n');
                }
                Gen::Block(_) => {
                    out.push('\n');
                    value.render(indent + 2, out);
                }
            }
        }
    }
}

const FLOAT_FORMS: &[&str] = &[
    "0",
    "1",
    "-0.0",
    "1.",
    ".5",
    "-.5",
    "+.5",
    "1_0.0",
    "0.5e+0",
    "5e-1",
    "'0.7'",
    "1:30.5",
    "1:30",
    ".inf",
    "-.inf",
    ".nan",
    ".NaN",
    "NaN",
    "'inf'",
    "'-Infinity'",
    "yes",
    "no",
    "on",
    "off",
    "y",
    "true",
    "~",
    "",
    "null",
    "[1]",
    "{a: 1}",
    "abc",
    "2024-01-01",
    "1e400",
    "'1e400'",
    "0x10",
    "0o17",
    "017",
    "0b101",
    "1_000",
    "'1_000'",
    "'1__0'",
    "' 0.5 '",
    "'-_1'",
    "100000000000000000000000000000000000000000",
    "9223372036854775807",
    "!!str 0.5",
    "!!float '1'",
    "!!int '3'",
    "1.0e+3",
    "1.0e3",
    "0.25",
    "'0.25'",
    "\"1\"",
    "-1",
    "2",
    "'nan'",
    "1:60",
    "190:20:30.15",
    "-1:30.5",
    "+.inf",
    ".Inf",
    ".NAN",
    "-.nan",
    "1_000_",
    "1e+",
    "1e1_0",
    "'1e1_0'",
    "\u{0663}",
    "'\u{FF11}'",
    "!!float 0x10",
    "!!float 1:30",
    "!!float ~",
    "!!float '  .5'",
    "!!float .inf",
    "1E3",
    "1e+03",
    "+1",
    "+.5e-1",
    "1.5e+",
    "0.5 # comment",
    "\"\\x30.5\"",
    "\"0.\\x35\"",
    "|\n      0.5",
    ">-\n      0.25",
    "'\u{00A0}0.5'",
    "0:60:00",
    "1:2:3",
    "-0:30",
    "1_:30",
    "0.5_",
    "._5",
    "1e-400",
    "-1e-400",
    "2.2250738585072011e-308",
    "'0.30000000000000004'",
    "0.1000000000000000055511151231257827",
    "&f 0.75",
];

const INT_FORMS: &[&str] = &[
    "5",
    "'5'",
    "5.0",
    "'5.0'",
    "5.5",
    "-1",
    "0",
    "1",
    "1:30",
    "0x1F",
    "017",
    "08",
    "'08'",
    "'1_000'",
    "1_000",
    "' 2 '",
    "1e3",
    "'1e3'",
    "true",
    "off",
    "~",
    "",
    "99999999999999999999",
    "1.0e+19",
    "9.2e+18",
    "-3",
    "2.00000",
    "'2.00000'",
    "'2.'",
    "[]",
    "{}",
    "abc",
    "2024-01-01",
    "0b11",
    "'+_1'",
    "'1_0.0'",
    ".inf",
    ".nan",
    "4096",
    "16384",
    "200",
    "199",
    "'1 0'",
    "0x_1F",
    "0x-1",
    "+0x10",
    "-0b1",
    "0b",
    "0o",
    "0o8",
    "!!int 0o17",
    "!!int '0b11'",
    "!!int ' 12 '",
    "!!int 1.0",
    "012345678",
    "0_17",
    "1:2:3",
    "-1:-30",
    "+12",
    "'+12'",
    "'-0'",
    "1e0",
    "4.0000000000000001",
    "'4.0000000000000001'",
    "9223372036854775808",
    "-9223372036854775809",
    "'\u{0663}'",
    "\"\\x31\"",
    "|\n      7",
    "&i 12",
];

const BOOL_FORMS: &[&str] = &[
    "yes",
    "no",
    "on",
    "off",
    "y",
    "n",
    "Y",
    "N",
    "true",
    "True",
    "TRUE",
    "false",
    "'t'",
    "'f'",
    "'yes'",
    "'oN'",
    "1",
    "0",
    "2",
    "1.0",
    "0.0",
    "0.5",
    "'ON '",
    "~",
    "",
    "'1'",
    "'0'",
    "[]",
    "'tRuE'",
    "-1",
    "'no'",
    "yEs",
    "2.0",
    "'On'",
    "'oFf'",
    "'y'",
    "'N'",
    "'true '",
    "!!bool yes",
    "!!bool 'on'",
    "!!bool 1",
    "!!str true",
    "'ture'",
    "TrUe",
    "ON",
    "Off",
    "\"\\x79es\"",
    "&b yes",
];

const STR_FORMS: &[&str] = &[
    "plain",
    "'quoted'",
    "\"dq\"",
    "123",
    "1.5",
    "yes",
    "~",
    "",
    "2024-01-01",
    "'2024-01-01'",
    "[a]",
    "{a: b}",
    "'  '",
    "sqlite+aiosqlite:///./x.db",
    "http://h:8000",
    "'0x10'",
    "null",
    "2024-01-01 10:00:00",
    "'with # hash'",
    "!!str 12",
    "\"esc\\tape\"",
    "'it''s'",
    "\"\\u00e9\"",
    "|\n      block\n      text",
    ">\n      folded\n      text",
    "!!binary aGk=",
    "\"\\0\"",
    "'\u{1F600}'",
    "&s anchored",
    "? complex",
];

const URL_FORMS: &[&str] = &[
    "sqlite+aiosqlite:///./p.db",
    "sqlite+aiosqlite:////abs/p.db",
    "sqlite+aiosqlite://",
    "sqlite:///x.db",
    "postgresql+asyncpg://u@h/db",
    "''",
    "~",
    "12",
    "'sqlite+aiosqlite:///q.db'",
];

fn float_text(rng: &mut Rng) -> String {
    if rng.chance(45) {
        let value = rng.unit() * 2.0 - 0.5;
        return match rng.below(6) {
            0 => format!("{value:.3}"),
            1 => format!("{value:.1}"),
            2 => format!("{value}"),
            3 => format!("'{value}'"),
            4 => format!("{value:e}"),
            _ => format!("{value:.2e}"),
        };
    }
    (*rng.pick(FLOAT_FORMS)).to_owned()
}

fn int_text(rng: &mut Rng) -> String {
    if rng.chance(30) {
        return format!("{}", rng.below(20_000) as i64 - 100);
    }
    (*rng.pick(INT_FORMS)).to_owned()
}

/// A value for a schema type (`kind` and friends from schema.json).
fn value_for(
    rng: &mut Rng,
    ty: &serde_json::Value,
    schema: &serde_json::Value,
    depth: usize,
) -> Gen {
    let kind = ty["kind"].as_str().unwrap_or("str");
    let text = |s: &str| Gen::Text(s.to_owned());
    let pick = |rng: &mut Rng, items: &[&str]| -> String { (*rng.pick(items)).to_owned() };
    if rng.chance(4) {
        return text(&pick(rng, &["~", "[]", "{}", "x", "1"]));
    }
    match kind {
        "bool" => text(&pick(rng, BOOL_FORMS)),
        "int" => Gen::Text(int_text(rng)),
        "float" => Gen::Text(float_text(rng)),
        "str" => text(&pick(rng, STR_FORMS)),
        "literal" => {
            let values = ty["values"].as_array().cloned().unwrap_or_default();
            let chosen = &values[rng
                .below(values.len().max(1))
                .min(values.len().saturating_sub(1))];
            match chosen {
                serde_json::Value::String(s) => match rng.below(6) {
                    0 => Gen::Text(format!("'{s}'")),
                    1 => Gen::Text(s.to_uppercase()),
                    2 => text("bogus"),
                    _ => Gen::Text(s.clone()),
                },
                other => match rng.below(4) {
                    0 => Gen::Text(format!("'{other}'")),
                    1 => Gen::Text(format!("{other}.0")),
                    _ => Gen::Text(other.to_string()),
                },
            }
        }
        "optional" => {
            if rng.chance(25) {
                text(&pick(rng, &["~", "", "null"]))
            } else {
                value_for(rng, &ty["inner"], schema, depth)
            }
        }
        "list" => {
            let n = rng.below(4);
            let items: Vec<String> = (0..n)
                .map(|_| match value_for(rng, &ty["item"], schema, depth + 1) {
                    Gen::Text(t) if !t.is_empty() && !t.starts_with('!') => t,
                    _ => "x".to_owned(),
                })
                .collect();
            match rng.below(8) {
                0 => text("x"),
                1 => text("{a: 1}"),
                _ => Gen::Text(format!("[{}]", items.join(", "))),
            }
        }
        "dict" => {
            if rng.chance(15) {
                return text(&pick(rng, &["[x]", "x", "{}"]));
            }
            let n = 1 + rng.below(3);
            let mut entries = Vec::new();
            for _ in 0..n {
                let key =
                    (*rng.pick(&["A", "B", "REDDIT_POST", "local", "1", "yes", "'k'", "null"]))
                        .to_owned();
                entries.push((key, value_for(rng, &ty["value"], schema, depth + 1)));
            }
            Gen::Block(entries)
        }
        "model" => {
            let name = ty["model"].as_str().unwrap_or("");
            if depth > 3 {
                return text("{}");
            }
            let n = 1 + rng.below(3);
            model_block(rng, schema, name, depth + 1, n)
        }
        _ => text("x"),
    }
}

fn model_block(
    rng: &mut Rng,
    schema: &serde_json::Value,
    model: &str,
    depth: usize,
    n: usize,
) -> Gen {
    let fields = schema["models"][model]["fields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if fields.is_empty() {
        return Gen::Text("{}".to_owned());
    }
    let mut entries = Vec::new();
    for _ in 0..n {
        let field = &fields[rng.below(fields.len())];
        let name = field["name"].as_str().unwrap_or("x").to_owned();
        entries.push((name, value_for(rng, &field["type"], schema, depth)));
    }
    // A required field (TokenPrice, SourceDecayConfig) is often left out on purpose.
    Gen::Block(entries)
}

/// The float keys particles-rs reads, `(section, key)`.
const FLOAT_KEYS: &[(&str, &str)] = &[
    ("query", "similarity_weight"),
    ("query", "confidence_weight"),
    ("query", "narrative_rank_weight"),
    ("query", "equivalence_threshold"),
    ("query", "relevance_floor"),
    ("query", "truncation_min_gap"),
    ("query", "truncation_near_margin"),
    ("query", "default_min_confidence"),
    ("contestedness", "callout_threshold"),
    ("source_passage", "locate_min_overlap"),
    ("engine", "timeout_seconds"),
    ("cli", "heartbeat_seconds"),
    ("subjects", "wikidata_link_suppress_threshold"),
];

/// The integer keys particles-rs reads.
const INT_KEYS: &[(&str, &str)] = &[
    ("query", "truncation_near_count"),
    ("query", "answer_max_tokens"),
    ("query", "answer_retry_max_tokens"),
    ("query", "default_top_k"),
    ("query", "candidate_cache_freeze_rows"),
    ("source_passage", "max_passage_chars"),
    ("source_passage", "query_show_limit"),
    ("api", "rate_limit_per_minute"),
    ("api", "max_request_body_bytes"),
    ("mcp", "rate_limit_per_minute"),
    ("storage", "max_page_size"),
    ("embeddings", "dim"),
];

/// The boolean keys particles-rs reads.
const BOOL_KEYS: &[(&str, &str)] = &[
    ("query", "grounded_answers"),
    ("query", "candidate_cache"),
    ("contestedness", "badge_enabled"),
    ("api", "require_auth_for_reads"),
    ("cli", "warn_unused_config"),
    ("embeddings", "progress_bars"),
    ("engine", "allow_plaintext_token"),
];

/// The string keys particles-rs reads.
const STR_KEYS: &[(&str, &str)] = &[
    ("engine", "base_url"),
    ("api", "bind_host"),
    ("embeddings", "normalization"),
    ("build", "date"),
];

/// Keys with rules of their own, each with the forms to try.
const SPECIAL_KEYS: &[(&str, &str, &[&str])] = &[
    ("storage", "database_url", URL_FORMS),
    (
        "network",
        "egress",
        &["open", "none", "allowlist", "OPEN", "1", "~", "'none'"],
    ),
    (
        "network",
        "allow",
        &[
            "[]",
            "[{host: example.org}]",
            "[{host: ' Ex.ORG ', port: 443}]",
            "[{host: '10.0.0.0/8'}]",
            "[{host: 'a b'}]",
            "[{host: '*.x'}]",
            "[{port: 1}]",
            "[{host: '[::1]'}]",
            "[{host: 'h', port: 0}]",
            "[{host: '10.0.0.0/40'}]",
            "[x]",
        ],
    ),
    (
        "api",
        "trusted_proxies",
        &[
            "['10.0.0.0/8']",
            "['127.0.0.1']",
            "['0.0.0.0/0']",
            "[x]",
            "['10.0.0.5/8']",
            "['::1']",
            "['10.0.0.0/255.0.0.0']",
            "['fd00::/8']",
        ],
    ),
    (
        "api",
        "allowed_hosts",
        &[
            "[engine.example.org]",
            "['*.tailnet.example']",
            "['a:1']",
            "['*']",
            "[' UP.case ']",
            "['[::1]']",
        ],
    ),
    (
        "api",
        "allowed_origins",
        &[
            "['https://notes.example.org']",
            "[x]",
            "['https://a/']",
            "['https://a/p']",
            "['http://[::1')]",
            "['https://a?q']",
            "['https://*.a']",
            "['http://[::1]:8']",
        ],
    ),
    (
        "storage",
        "stores",
        &[
            "{a: 'sqlite+aiosqlite:////a.db'}",
            "{1: x}",
            "{a: ~}",
            "[x]",
            "{default: 'sqlite:///d.db', b: y}",
            "{}",
        ],
    ),
    (
        "content_age_decay",
        "sources",
        &[
            "{}",
            "{X: {half_life_days: 1}}",
            "{X: {}}",
            "{X: {floor: '0.5', half_life_days: '2'}}",
            "{X: {half_life_days: yes}}",
            "{X: 5}",
            "[]",
        ],
    ),
    (
        "trust",
        "source_type_domains",
        &["{}", "{WEB_PAGE: web}", "{A: 1}", "{A: ''}", "[]"],
    ),
];

/// Keys one or two levels down, `(section, key, field)` (no field: the key itself), each with the forms to try.
const NESTED_KEYS: &[(&str, &str, &str, &[&str])] = &[
    (
        "confidence",
        "uncalibrated_cap",
        "sources",
        &[
            "[EXTRACTOR_DIRECT]",
            "[DERIVED]",
            "[HUMAN_REVIEW, IMPORTED]",
            "[]",
            "x",
        ],
    ),
    ("confidence", "uncalibrated_cap", "cap_value", FLOAT_FORMS),
    ("conformance", "trust_cap", "cap_value", FLOAT_FORMS),
    ("conformance", "trust_cap", "exempt", &["[a]", "[]", "[1]"]),
    (
        "consolidation",
        "abstraction",
        "stale_support_discount",
        FLOAT_FORMS,
    ),
    ("llm", "default", "provider", &["anthropic", "local", "foo"]),
    ("llm", "query_response", "model", &["m", "1"]),
    ("llm", "providers", "anthropic", &["{}"]),
    (
        "llm",
        "providers",
        "openai",
        &[
            "{base_url: 'https://api', max_retries: '3'}",
            "{max_tokens_param: bad}",
            "~",
        ],
    ),
    ("storage", "write_lock", "enabled", BOOL_FORMS),
    ("extraction", "query_max_tokens", "", &["100", "x", "~"]),
    ("mcp", "write", "enabled_stores", &["[a]", "[]"]),
    (
        "reconciliation",
        "per_store",
        "a",
        &["single", "multi", "x"],
    ),
    (
        "subjects",
        "external_link_abstain_threshold",
        "",
        FLOAT_FORMS,
    ),
];

/// Typed keys particles-rs reads, with the generator for each.
fn typed_entry(rng: &mut Rng) -> (String, String, Gen) {
    match rng.below(10) {
        0..=3 => {
            let (s, k) = *rng.pick(FLOAT_KEYS);
            (s.to_owned(), k.to_owned(), Gen::Text(float_text(rng)))
        }
        4..=5 => {
            let (s, k) = *rng.pick(INT_KEYS);
            (s.to_owned(), k.to_owned(), Gen::Text(int_text(rng)))
        }
        6 => {
            let (s, k) = *rng.pick(BOOL_KEYS);
            (
                s.to_owned(),
                k.to_owned(),
                Gen::Text((*rng.pick(BOOL_FORMS)).to_owned()),
            )
        }
        7 => {
            let (s, k) = *rng.pick(STR_KEYS);
            (
                s.to_owned(),
                k.to_owned(),
                Gen::Text((*rng.pick(STR_FORMS)).to_owned()),
            )
        }
        8 => {
            let (s, k, forms) = *rng.pick(SPECIAL_KEYS);
            (
                s.to_owned(),
                k.to_owned(),
                Gen::Text((*rng.pick(forms)).to_owned()),
            )
        }
        _ => {
            let (s, k, f, forms) = *rng.pick(NESTED_KEYS);
            let leaf = Gen::Text((*rng.pick(forms)).to_owned());
            if f.is_empty() {
                (s.to_owned(), k.to_owned(), leaf)
            } else {
                (
                    s.to_owned(),
                    k.to_owned(),
                    Gen::Block(vec![(f.to_owned(), leaf)]),
                )
            }
        }
    }
}

/// One case: YAML text and environment variables.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Case {
    pub yaml: String,
    pub env: BTreeMap<String, String>,
}

impl Case {
    /// A document with no environment variables.
    pub fn new(yaml: String) -> Case {
        Case {
            yaml,
            env: BTreeMap::new(),
        }
    }
}

pub fn case(rng: &mut Rng, schema: &serde_json::Value) -> Case {
    let mut sections: Vec<(String, Gen)> = Vec::new();
    let add = |sections: &mut Vec<(String, Gen)>, section: String, key: String, value: Gen| {
        match sections.iter_mut().find(|(name, _)| *name == section) {
            Some((_, Gen::Block(entries))) => entries.push((key, value)),
            _ => sections.push((section, Gen::Block(vec![(key, value)]))),
        }
    };
    let merge = rng.chance(8);
    if merge {
        sections.push((
            "x-anchors".to_owned(),
            Gen::Text("&base {similarity_weight: 0.9, confidence_weight: '0.2'}".to_owned()),
        ));
    }
    for _ in 0..1 + rng.below(5) {
        let (section, key, value) = typed_entry(rng);
        add(&mut sections, section, key, value);
    }
    if merge {
        add(
            &mut sections,
            "query".to_owned(),
            "<<".to_owned(),
            Gen::Text("*base".to_owned()),
        );
    }
    // Random fields anywhere in the model, from the schema; a third of the
    // documents stay on the typed keys, so that more of them validate.
    let root = schema["models"]["ParticlesConfig"]["fields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let n_random = if rng.chance(33) { 0 } else { rng.below(4) };
    for _ in 0..n_random {
        let field = &root[rng.below(root.len())];
        let name = field["name"].as_str().unwrap_or("x").to_owned();
        let value = value_for(rng, &field["type"], schema, 0);
        sections.push((name, value));
    }
    if rng.chance(10) {
        let (key, value) = *rng.pick(&[
            ("bogus_section", "1"),
            ("Query", "{similarity_weight: -5}"),
            ("yes", "1"),
            ("1", "x"),
            ("storage", ""),
            ("query", "[]"),
            ("query", "5"),
            ("network", "~"),
        ]);
        sections.push((key.to_owned(), Gen::Text(value.to_owned())));
    }
    if rng.chance(20) {
        yaml_structure(rng, &mut sections);
    }
    if rng.chance(10) {
        if let Some((_, Gen::Block(entries))) = sections.iter_mut().find(|(n, _)| n == "query") {
            entries.push(("Similarity_Weight".to_owned(), Gen::Text("7".to_owned())));
        }
    }
    let mut yaml = String::new();
    match rng.below(40) {
        0 => yaml.push_str("[1, 2]\n"),
        1 => yaml.push_str("just a string\n"),
        2 => yaml.push_str("# only a comment\n"),
        3 => yaml.push_str("~\n"),
        _ => Gen::Block(sections).render(0, &mut yaml),
    }
    let mut env = BTreeMap::new();
    if rng.chance(25) {
        let vars: &[(&str, &[&str])] = &[
            ("DATABASE_URL", &["", "sqlite+aiosqlite:////tmp/x.db"]),
            ("PARTICLES_ENGINE_BASE_URL", &["http://e:1", ""]),
            (
                "PARTICLES_API_RATE_LIMIT_PER_MINUTE",
                &["5", "x", "", " 7 ", "1.0"],
            ),
            ("PARTICLES_WRITE_LOCK_ENABLED", &["no", "maybe", "1"]),
            ("PARTICLES_EMBEDDINGS_DIM", &["12", "1.5"]),
            ("PARTICLES_BUILD_DATE", &["", " ", "2024-01-01"]),
            ("PARTICLES_OBSERVABILITY_SAMPLE_RATIO", &["0.5", "2"]),
            ("RECONCILIATION_STORE_MODE", &["multi", "bad"]),
            ("PARTICLES_MAX_PAGE_SIZE", &["0", "10"]),
            ("TRUST_DIFFERENTIAL_THRESHOLD", &["0.1", "x"]),
        ];
        for _ in 0..1 + rng.below(3) {
            let (var, values) = *rng.pick(vars);
            env.insert(var.to_owned(), (*rng.pick(values)).to_owned());
        }
    }
    Case { yaml, env }
}

/// Anchors, aliases and merge keys around the typed keys: whole sections
/// aliased, merges of one mapping, of a list, inline, of a non-mapping, at the
/// root; scalar aliases (of the `&f`, `&i`, `&b`, `&s` anchors the forms above
/// carry, or of nothing); keys before and after a merge.
fn yaml_structure(rng: &mut Rng, sections: &mut Vec<(String, Gen)>) {
    const ANCHORED: &[&str] = &[
        "&a {similarity_weight: 0.3, default_top_k: '5'}",
        "&a {similarity_weight: 0.3, grounded_answers: yes, <<: {confidence_weight: 0.6}}",
        "&a {}",
        "&a [1, 2]",
        "&a 0.5",
        "&a {similarity_weight: &f 0.9}",
    ];
    const SECOND: &[&str] = &[
        "&b {similarity_weight: 0.2, confidence_weight: 0.7}",
        "&b {default_top_k: 7}",
        "&b {similarity_weight: x}",
        "&b ~",
    ];
    const MERGES: &[&str] = &[
        "*a",
        "[*a, *b]",
        "[*b, *a]",
        "[*a, *a]",
        "{similarity_weight: 0.4}",
        "[{similarity_weight: 0.1}, *b]",
        "5",
        "~",
        "[1]",
        "[*a, 5]",
        "x",
        "*nope",
        "[]",
        "{}",
    ];
    const SCALAR_ALIASES: &[(&str, &str, &str)] = &[
        ("query", "relevance_floor", "*f"),
        ("query", "default_top_k", "*i"),
        ("query", "grounded_answers", "*b"),
        ("engine", "base_url", "*s"),
        ("query", "similarity_weight", "*f"),
        ("query", "confidence_weight", "*missing"),
        ("cli", "heartbeat_seconds", "*a"),
    ];
    sections.insert(
        0,
        (
            "x-a".to_owned(),
            Gen::Text((*rng.pick(ANCHORED)).to_owned()),
        ),
    );
    if rng.chance(60) {
        sections.insert(
            1,
            ("x-b".to_owned(), Gen::Text((*rng.pick(SECOND)).to_owned())),
        );
    }
    let merge = (*rng.pick(MERGES)).to_owned();
    match rng.below(5) {
        0 => sections.push(("query".to_owned(), Gen::Text("*a".to_owned()))),
        1 => sections.push((
            "<<".to_owned(),
            Gen::Text("{query: {similarity_weight: 0.7}}".to_owned()),
        )),
        _ => {
            let block = Gen::Block(if rng.chance(50) {
                vec![
                    ("<<".to_owned(), Gen::Text(merge)),
                    ("similarity_weight".to_owned(), Gen::Text(float_text(rng))),
                ]
            } else {
                vec![
                    ("similarity_weight".to_owned(), Gen::Text(float_text(rng))),
                    ("<<".to_owned(), Gen::Text(merge)),
                ]
            });
            sections.push(("query".to_owned(), block));
        }
    }
    if rng.chance(50) {
        let (section, key, alias) = *rng.pick(SCALAR_ALIASES);
        sections.push((
            section.to_owned(),
            Gen::Block(vec![(key.to_owned(), Gen::Text(alias.to_owned()))]),
        ));
    }
}

/// Scalars whose YAML 1.1 reading is the point: each is tried in a float, an
/// int, a bool and a str field.
pub const TRICKY_SCALARS: &[&str] = &[
    "y",
    "Y",
    "n",
    "yes",
    "Yes",
    "YES",
    "yEs",
    "On",
    "oFF",
    "NO",
    "True",
    "tRUE",
    "~",
    "Null",
    "NULL",
    "nULL",
    "null",
    "0b1_0",
    "0b_",
    "0x_",
    "0o17",
    "017",
    "0_7",
    "09",
    "00",
    "+0",
    "-0",
    "0.",
    "1_000",
    "1__0",
    "1e3",
    "1.0e+3",
    "1.0e3",
    "12e3",
    ".5",
    "-.5",
    "+.5",
    ".inf",
    "-.Inf",
    "+.INF",
    ".NaN",
    "+.nan",
    "1.",
    "1._",
    "._1",
    "1:30",
    "1:30.5",
    "-1:30",
    "0:0",
    "1:60",
    "100:59",
    "1_2:3_0",
    "190:20:30.15",
    "-0x1F",
    "0xFF",
    "0b102",
    "2024-01-01",
    "2024-1-1 1:00:00",
    "2024-01-01T10:00:00Z",
    "2024-01-01 10:00:00 +05:30",
    "2024-13-01",
    "2024-02-30",
    "2024-02-29",
    "2023-02-29",
    "'1'",
    "\"0x10\"",
    "!!str 1",
    "!!int '12'",
    "!!float '1'",
    "!!bool yes",
    "!!bool 'y'",
    "!!int 1.5",
    "!!null x",
    "!!str",
    "!foo x",
    "!!python/tuple [1]",
    "=",
    "<<",
    "'<<'",
    "!!timestamp 2024-01-01",
    "&a 5",
    "0.1e1",
    "1e-3",
    "-1e-3",
    "1_0.5_5",
    "3.14159265358979323846",
    "1.7976931348623157e+308",
    "1.8e+308",
    "4.9e-324",
    "-0.0",
    "123456789012345678901234567890",
    "0b1111111111111111111111111111111111111111111111111111111111111111",
    "!!float 1_0",
    "!!float '1:30'",
    "!!int '1:30'",
    "!!int '0x1f'",
    "!!float ' 2 '",
    "!!int ' 3 '",
];

/// Whole documents whose YAML structure is the point: anchors, merges, tags,
/// repeated keys, several documents, odd keys.
pub const TRICKY_DOCUMENTS: &[&str] = &[
    "x: &A {similarity_weight: 0.9}\nquery: *A\n",
    "x: &A {similarity_weight: 0.9}\nquery:\n  <<: *A\n  similarity_weight: 0.1\n",
    "x: &A {similarity_weight: 0.9}\nquery:\n  similarity_weight: 0.1\n  <<: *A\n",
    "a: &A {similarity_weight: 0.9}\nb: &B {similarity_weight: 0.2, confidence_weight: 0.3}\nquery:\n  <<: [*A, *B]\n",
    "query:\n  <<: 5\n",
    "query:\n  <<: [5]\n",
    "query:\n  similarity_weight: *missing\n",
    "query: {similarity_weight: 0.1, similarity_weight: 0.2}\n",
    "query: {similarity_weight: -1}\nquery: {similarity_weight: 0.3}\n",
    "---\nquery: {}\n---\nquery: {}\n",
    "---\nquery: {similarity_weight: 0.5}\n...\n",
    "%YAML 1.1\n---\nquery: {similarity_weight: 0.5}\n",
    "? [a]\n: 1\n",
    "? {a: 1}\n: 1\n",
    "storage:\n  stores: {1: a, true: b, 1.0: c}\n",
    "storage:\n  stores: {a: x, b: y, a: z}\n",
    "storage:\n  stores: !!map {a: x}\n",
    "storage:\n  stores: !!seq [a]\n",
    "storage: !!str x\n",
    "query: !!python/object:collections.OrderedDict {}\n",
    "query:\n  similarity_weight: 0.5 # comment\n",
    "query:\n  similarity_weight: |\n    0.5\n",
    "query:\n  similarity_weight: >\n    0.5\n",
    "query:\n  similarity_weight: '0.5'\n  grounded_answers: \"yes\"\n",
    "query:\n\tsimilarity_weight: 0.5\n",
    "query:\n  similarity_weight:\n    - 1\n",
    "query:\n  - similarity_weight: 1\n",
    "=: 1\nquery: {=: 2}\n",
    "<<: {query: {similarity_weight: 0.7}}\n",
    "query: {similarity_weight: 0.7}\n<<: {query: {similarity_weight: 0.2}, cli: {heartbeat_seconds: 1}}\n",
    "storage:\n  database_url: sqlite+aiosqlite:///a: b\n",
    "storage:\n  database_url: 'sqlite+aiosqlite:///a: b'\n",
    "storage:\n  stores:\n    a: sqlite+aiosqlite:////x.db\n    default: sqlite+aiosqlite:////y.db\n",
    "extraction:\n  query_max_tokens: 100\n",
    "extraction:\n  query_max_tokens: 100\nquery:\n  answer_max_tokens: 7\n",
    "extraction:\n  query_max_tokens: 0\n",
    "extraction:\n  query_max_tokens: ~\n",
    "extraction:\n  query_max_tokens: 5\nquery: ~\n",
    "extraction:\n  model: m1\nwiki:\n  model: m2\n",
    "extraction:\n  model: 5\n",
    "extraction:\n  model: m\nllm: ~\n",
    "lint:\n  co_evidential_candidate_threshold: 0.3\n",
    "benchmark_memory:\n  price_per_mtok: {m: {input: 1, output: 2}}\n  batch_discount: 0.25\n",
    "benchmark_memory:\n  price_per_mtok: {m: {input: 1, output: 2}}\nllm:\n  price_per_mtok: {m: {input: 3, output: 4}, n: {input: -1, output: 1}}\n",
    "audit:\n  estimate_output_tokens_per_extraction_call_by_model: {m: 3500, n: true, o: x}\n  estimate_seconds_per_extraction_call: 3\n",
    "claude_code:\n  agent_extraction: true\n",
    "llm:\n  local: {base_url: 'http://x'}\n",
    "llm:\n  local: {base_url: 'http://x'}\n  providers: {local: {base_url: 'http://y'}}\n",
    "llm:\n  providers: {anthropic: {}}\n",
    "llm:\n  default: {provider: local}\n  extraction: {provider: nope}\n",
    "llm:\n  cache_read_price_multiplier_by_model: {m: -1}\n",
    "llm:\n  cache_read_price_multiplier_by_model: {m: 0.5}\n  price_per_mtok: {}\n",
    "mcp:\n  write: {enabled_stores: [a, b]}\nreconciliation:\n  per_store: {b: single}\n",
    "subjects:\n  wikidata_link_suppress_threshold: 0.1\n  external_link_abstain_threshold: 0.2\n",
    "benchmark_rot:\n  checkpoints: [1, 1]\n",
    "benchmark_relevance_floor:\n  floors: [0.1, 1.5]\n",
    "benchmark_memory:\n  chars_per_token_by_model: {x: 0}\n",
    "network:\n  egress: none\n  allow: [{host: a}]\n",
    "network:\n  egress: allowlist\n  allow: [{host: ' A.example '}, {host: '10.0.0.0/8', port: '443'}, {host: '[::1]'}]\n",
    "api:\n  allowed_hosts: [' Engine.Example.ORG ', '*.tailnet.example', '[::1]']\n  allowed_origins: ['https://a.example', 'http://b:8/']\n  trusted_proxies: ['10.0.0.5/8', 'fd00::/8']\n",
    "build:\n  date: '   '\n",
    "build:\n  date: 2024-01-01\n",
    "curation:\n  operator_identity: ''\n",
    "storage:\n  write_lock: ~\n",
    "query: {}\nQuery: {similarity_weight: 5}\nunknown_section: {a: 1}\nyes: 1\n",
    "content_age_decay:\n  sources: {X: {half_life_days: 1, extra: 2}}\n",
    "storage:\n  database_url: &x a\n  blob_dir: &x b\n  stores: {k: *x}\n",
    "storage:\n  database_url: !!binary aGk=\n",
    "api:\n  trusted_proxies: !!set {10.0.0.1}\n",
    "storage:\n  database_url: \"\\/x\\N\"\n",
    "storage:\n  database_url: b\n...\n",
    "api:\n  allowed_hosts: [a,]\nstorage:\n  stores: {b: c,}\n",
    "storage:\n  database_url: @x\n",
    "storage:\n  database_url: `x\n",
    "storage:\n  database_url: |-\n    x\n    y\n",
    "storage:\n  database_url: x\n    y\n",
    "storage:\n  database_url: - 1\n",
    "- a\nb: 1\n",
    "storage:\n  database_url: \"x\n    y\"\n",
    "storage:\n  database_url: b: c\n",
    "storage:\n  database_url: \"\\x4\"\n",
    "\u{feff}storage:\n  database_url: x\n",
    "storage:\n  database_url: \u{85}\n",
    "storage:\n  database_url: 'a''b'\n  blob_dir: \"\\u00e9\\t\"\n",
    "storage:\n  database_url: x # c\n  # full-line comment\n  blob_dir: y#z\n",
    "storage: {database_url: x, blob_dir: y}\nstorage: {max_page_size: 3}\n",
];
