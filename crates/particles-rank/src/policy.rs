//! The per-query policy snapshot: extractor weights, source trust and decay, composed
//! from the store's rows and its adopted lenses exactly as the reference does.

use std::collections::HashMap;

use particles_model::{
    policy::{Lens, LensEntry, PolicyRows, SourceFacts},
    AssertionModality, CalibrationSource, Timestamp,
};
use particles_pyre::{PatternError, PyRegex};

use crate::{
    error::{Error, Result},
    lift::{more_skeptical, UtilityParams, UtilityPolicy, UtilitySettings},
    netloc::netloc,
    score::{py_max, py_min},
    settings::{ConformanceCap, RankSettings},
};

/// The extractor id a particle without an extractor ref is weighted as.
const DEFAULT_EXTRACTOR: &str = "general-extractor";

/// The domain label a source type's statements are filed under: the first
/// built-in extractor whose `MUST` clause lists the type claims it; only for a type
/// no extractor claims is `trust.source_type_domains` consulted (so configuration
/// cannot re-domain a claimed type).
pub fn infer_domain<'a>(
    source_type: &str,
    source_type_domains: &'a [(String, String)],
) -> Option<&'a str> {
    if let Some(domain) = claimed_domain(source_type) {
        return Some(domain);
    }
    source_type_domains
        .iter()
        .find(|(st, _)| st == source_type)
        .map(|(_, domain)| domain.as_str())
}

/// The built-in extractors' claims (query-path.md §5.2).
fn claimed_domain(source_type: &str) -> Option<&'static str> {
    Some(match source_type {
        "TAXONOMY_DEFINITION" => "taxonomy",
        "TRUST_LENS_DEFINITION" => "trust lens",
        "VOCABULARY_DOCUMENT" => "vocabulary",
        "NUMISTA_API_COIN" | "NUMISTA_API_ISSUER" | "NUMISTA_LISTING_HTML" | "NOMISMA_API" => {
            "numismatics"
        }
        "WIKIDATA_API" => "Wikidata",
        "RDF_GRAPH" => "linked data",
        "MCP_MEMORY_EXPORT" => "agent memory",
        "REDDIT_POST" => "social media",
        "HACKERNEWS_THREAD" => "Hacker News",
        "MASTODON_THREAD" => "Mastodon",
        "GITHUB_REPO" | "GITHUB_GIST" | "GITHUB_PAGES" => "software",
        "PYTHON_SOURCE" => "Python source code",
        "JOURNAL" => "personal journal / diary",
        _ => return None,
    })
}

/// Source-trust policy: statements first, then domain baselines and URL modifiers.
#[derive(Debug, Clone, Default)]
pub struct TrustPolicy {
    /// `trust.source_type_domains`.
    source_type_domains: Vec<(String, String)>,
    statements: HashMap<(String, String, String), f64>,
    domain_scores: HashMap<String, f64>,
    url_patterns: Vec<(PyRegex, f64)>,
}

impl TrustPolicy {
    /// Whether every asserted statement rank is at most 1 (they are used unclamped).
    pub fn statement_ranks_at_most_one(&self) -> bool {
        self.statements.values().all(|r| *r <= 1.0)
    }

    /// The trust rank of a source, or `None` when no rule speaks (the caller then
    /// uses 1.0).
    ///
    /// # Errors
    ///
    /// [`Error::BadUri`] where Python's `urlsplit` raises on the URI.
    pub fn evaluate(&self, source: &SourceFacts) -> Result<Option<f64>> {
        if let Some(domain) = infer_domain(&source.source_type, &self.source_type_domains) {
            let lookup = |kind: &str, value: &str| {
                self.statements
                    .get(&(domain.to_owned(), kind.to_owned(), value.to_owned()))
                    .copied()
            };
            if let Some(rank) = source
                .entry_id
                .as_deref()
                .and_then(|e| lookup("CORPUS_ENTRY", e))
            {
                return Ok(Some(rank));
            }
            if let Some(rank) = source
                .author_id
                .as_deref()
                .and_then(|a| lookup("AUTHOR", a))
            {
                return Ok(Some(rank));
            }
            if let Some(rank) = lookup("SOURCE_TYPE", &source.source_type) {
                return Ok(Some(rank));
            }
        }
        let Some(uri) = source.uri.as_deref() else {
            return Ok(None);
        };
        if uri.starts_with("file://") {
            return Ok(None);
        }
        let host = netloc(uri).map_err(|e| Error::BadUri {
            uri: uri.to_owned(),
            reason: e.0,
        })?;
        let host = if host.is_empty() { uri } else { host.as_str() };
        let base = self
            .domain_scores
            .get(host)
            .or_else(|| self.domain_scores.get("*"))
            .copied();
        let mut total = 0.0f64;
        let mut matched = false;
        for (pattern, modifier) in &self.url_patterns {
            if pattern.search(uri) {
                total += modifier;
                matched = true;
            }
        }
        if base.is_none() && !matched {
            return Ok(None);
        }
        Ok(Some(py_max(0.0, py_min(1.0, base.unwrap_or(1.0) + total))))
    }
}

/// Content-age decay: URL rules (from lenses) first, then source-type rules.
#[derive(Debug, Clone, Default)]
pub struct DecayPolicy {
    source_type_rules: HashMap<String, (f64, f64)>,
    url_rules: Vec<(PyRegex, f64, f64)>,
}

impl DecayPolicy {
    /// The `(half_life_days, floor)` that applies to a source, if any.
    pub fn resolve(&self, source_type: &str, uri: Option<&str>) -> Option<(f64, f64)> {
        if let Some(uri) = uri.filter(|u| !u.starts_with("file://")) {
            let mut best: Option<(f64, f64)> = None;
            for (pattern, half_life, floor) in &self.url_rules {
                if pattern.search(uri) {
                    best = Some(match best {
                        None => (*half_life, *floor),
                        Some((h, f)) => (py_min(h, *half_life), py_min(f, *floor)),
                    });
                }
            }
            if best.is_some() {
                return best;
            }
        }
        self.source_type_rules.get(source_type).copied()
    }

    /// Whether every floor is at most 1 (a floor above 1 makes a factor above 1,
    /// which only the final clamp caps).
    pub fn floors_at_most_one(&self) -> bool {
        self.source_type_rules
            .values()
            .all(|(_, floor)| *floor <= 1.0)
            && self.url_rules.iter().all(|(_, _, floor)| *floor <= 1.0)
    }

    /// The recency multiplier of a source at `now` (see [`recency_factor`]).
    ///
    /// # Errors
    ///
    /// As [`recency_factor`], for a degenerate configured half-life.
    pub fn factor(&self, source: &SourceFacts, now: Timestamp) -> Result<f64> {
        match self.resolve(&source.source_type, source.uri.as_deref()) {
            None => Ok(1.0),
            Some((half_life, floor)) => recency_factor(source.published_at, half_life, floor, now),
        }
    }
}

/// `max(floor, 0.5 ** (age_days / half_life_days))`, 1.0 without a date or for
/// content not older than `now`. The age is the exact microsecond difference
/// converted as Python's `timedelta.total_seconds() / 86400.0`.
///
/// # Errors
///
/// Where Python raises and the reference's query aborts: [`Error::DecayHalfLife`]
/// for a half-life of zero (`ZeroDivisionError`) and for a power that overflows
/// (`OverflowError`, from a negative half-life).
pub fn recency_factor(
    published_at: Option<Timestamp>,
    half_life_days: f64,
    floor: f64,
    now: Timestamp,
) -> Result<f64> {
    let Some(published_at) = published_at else {
        return Ok(1.0);
    };
    let age_days = age_days(published_at, now);
    if age_days <= 0.0 {
        return Ok(1.0);
    }
    if half_life_days == 0.0 {
        return Err(Error::DecayHalfLife {
            half_life_days,
            reason: "float division by zero",
        });
    }
    let power = 0.5f64.powf(age_days / half_life_days);
    if power.is_infinite() {
        return Err(Error::DecayHalfLife {
            half_life_days,
            reason: "math range error",
        });
    }
    Ok(py_max(floor, power))
}

/// The decay [`recency_factor`] gives at every `now` from `since` on, when it
/// is the same at all of them: 1.0 without a date, else once the content is
/// older than `since` and the power can no longer rise above the floor
/// (`floor`, with a NaN half-life the power is NaN and the floor is taken;
/// with an infinite one the power is 1). `None` while the decay still moves,
/// for content not yet published at `since`, and for a half-life that is zero
/// or negative (the factor fails, or rises with age).
///
/// Why it holds: past `since` the age only grows, so with a positive
/// half-life the exact power only falls. `powf`'s result is within an ulp or
/// so of the exact power, so the power at `since` is asked to be below the
/// floor by far more than that (a 2^-30 part): every later power then stays
/// at or below the floor, and `max(floor, power)` is the floor.
pub fn steady_decay(
    published_at: Option<Timestamp>,
    half_life_days: f64,
    floor: f64,
    since: Timestamp,
) -> Option<f64> {
    let Some(published_at) = published_at else {
        return Some(1.0);
    };
    let age_days = age_days(published_at, since);
    // An integer difference: never NaN. Content not older than `since` is
    // at 1 until it is, then decays.
    if age_days <= 0.0 {
        return None;
    }
    if half_life_days.is_nan() {
        return Some(py_max(floor, f64::NAN));
    }
    if half_life_days == f64::INFINITY {
        return Some(py_max(floor, 1.0));
    }
    if half_life_days <= 0.0 {
        return None;
    }
    let power = 0.5f64.powf(age_days / half_life_days);
    (power <= floor * (1.0 - 1.0 / f64::from(1u32 << 30))).then_some(floor)
}

/// The age of content published at `published_at`, at `now`, in days: the
/// exact microsecond difference converted as Python's
/// `timedelta.total_seconds() / 86400.0`.
fn age_days(published_at: Timestamp, now: Timestamp) -> f64 {
    micros_to_seconds(now.utc_micros() - published_at.utc_micros()) / 86_400.0
}

/// `micros / 10**6` correctly rounded, as Python's int true division. Exact through
/// f64 while `micros` fits in 53 bits (ages under 285 years); beyond that the
/// quotient is rounded from an exact integer part and remainder.
pub(crate) fn micros_to_seconds(micros: i64) -> f64 {
    const EXACT: i64 = 1 << 53;
    if (-EXACT..=EXACT).contains(&micros) {
        micros as f64 / 1e6
    } else {
        let whole = micros / 1_000_000;
        let rest = micros % 1_000_000;
        whole as f64 + rest as f64 / 1e6
    }
}

/// Everything scoring needs from the store's policy tables and the configuration,
/// composed once per query.
#[derive(Debug, Clone, Default)]
pub struct Policies {
    /// The configuration keys that enter ranking.
    pub settings: RankSettings,
    weights: HashMap<String, f64>,
    /// Source-trust policy.
    pub trust: TrustPolicy,
    /// Decay policy.
    pub decay: DecayPolicy,
    /// The usefulness policy of the recall lifts; `None` when `utility.enabled`
    /// is off (no lift).
    pub utility: Option<UtilityPolicy>,
}

impl Policies {
    /// Composes the policy rows: local rules win, adopted lenses fill what local
    /// policy does not say with their most skeptical value.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidLens`] when an adopted lens breaks a rule of the lens model,
    /// [`Error::BadPattern`] when a URL rule's pattern makes Python's `re.compile`
    /// raise something other than `re.error`; the reference aborts the query then
    /// too.
    pub fn compile(rows: &PolicyRows, settings: &RankSettings) -> Result<Policies> {
        let lenses = rows
            .lenses
            .iter()
            .map(ParsedLens::parse)
            .collect::<Result<Vec<_>>>()?;
        let mut trust = compose_trust(rows, &lenses)?;
        trust.source_type_domains = settings.source_type_domains.clone();
        let decay = compose_decay(&lenses, settings)?;
        let utility = compose_utility(&lenses, &settings.utility)?;
        Ok(Policies {
            settings: settings.clone(),
            weights: compose_weights(rows, &lenses, settings.conformance_cap.as_ref()),
            trust,
            decay,
            utility,
        })
    }

    /// The stored confidence as scoring reads it: capped by
    /// `confidence.uncalibrated_cap` when that is enabled and lists the particle's
    /// calibration source (Python `min`, so a NaN value stays).
    pub fn capped_confidence(&self, value: f64, source: CalibrationSource) -> f64 {
        match &self.settings.uncalibrated_cap {
            Some(cap) if cap.sources.contains(&source) => py_min(value, cap.cap_value),
            _ => value,
        }
    }

    /// The rank score with the configured weights (see [`crate::rank_score`]).
    #[inline]
    pub fn rank_score(&self, narrative: bool, similarity: f64, effective: f64) -> f64 {
        crate::score::rank_score(&self.settings, narrative, similarity, effective)
    }

    /// Whether every factor of effective confidence is at most 1: extractor weights
    /// and asserted trust ranks (URL ranks are clamped, decay never exceeds 1, the
    /// discount is at most 1). Then effective confidence never exceeds the stored
    /// confidence, which is what score bounds rely on.
    pub fn factors_at_most_one(&self) -> bool {
        self.weights.values().all(|w| *w <= 1.0)
            && self.trust.statement_ranks_at_most_one()
            && self.decay.floors_at_most_one()
            && self.settings.stale_support_discount <= 1.0
    }

    /// The trust weight of an extractor: its registered (lens-capped) weight, 1.0
    /// for an unregistered one; a particle without an extractor ref (`None`) is
    /// weighted as `general-extractor`.
    pub fn extractor_weight(&self, extractor: Option<&str>) -> f64 {
        let key = extractor.unwrap_or(DEFAULT_EXTRACTOR);
        self.weights.get(key).copied().unwrap_or(1.0)
    }
}

/// One member of the viewer's contestedness policy set: the store's local policy
/// alone (`local`), or one adopted lens alone. Unlike [`Policies`], nothing is
/// composed across members, because composition would hide the spread being
/// measured.
#[derive(Debug, Clone)]
pub struct MemberPolicy {
    /// `local`, or the lens's name.
    pub name: String,
    /// The member's standalone source-trust policy.
    pub trust: TrustPolicy,
    /// Its extractor weights: the registered weights as stored (no lens minimum,
    /// no conformance cap) for `local`, the lens's own overrides for a lens.
    weights: HashMap<String, f64>,
}

impl MemberPolicy {
    /// The member's weight for an extractor (`None`: `general-extractor`), 1.0 when
    /// it names none.
    pub fn extractor_weight(&self, extractor: Option<&str>) -> f64 {
        let key = extractor.unwrap_or(DEFAULT_EXTRACTOR);
        self.weights.get(key).copied().unwrap_or(1.0)
    }
}

/// The viewer's policy set: the local policy first, then each adopted lens in the
/// order of `rows.lenses` (the caller puts them in adoption order).
///
/// # Errors
///
/// [`Error::InvalidLens`] and [`Error::BadPattern`] as [`Policies::compile`].
pub fn member_policies(rows: &PolicyRows, settings: &RankSettings) -> Result<Vec<MemberPolicy>> {
    let local_rows = PolicyRows {
        lenses: Vec::new(),
        ..rows.clone()
    };
    let mut local_trust = compose_trust(&local_rows, &[])?;
    local_trust.source_type_domains = settings.source_type_domains.clone();
    let mut members = vec![MemberPolicy {
        name: "local".to_owned(),
        trust: local_trust,
        weights: rows
            .extractors
            .iter()
            .map(|r| (r.extractor_id.clone(), r.trust_weight))
            .collect(),
    }];
    for lens in &rows.lenses {
        let parsed = ParsedLens::parse(lens)?;
        let weights = parsed.extractor_weights.iter().cloned().collect();
        let mut trust = compose_trust(&PolicyRows::default(), std::slice::from_ref(&parsed))?;
        trust.source_type_domains = settings.source_type_domains.clone();
        members.push(MemberPolicy {
            name: lens.name.clone(),
            trust,
            weights,
        });
    }
    Ok(members)
}

/// One adopted lens reduced to the rules ranking uses, after the pre-check (rows
/// missing their kind's fields are ignored) and validation (bad values abort).
struct ParsedLens {
    statements: Vec<(String, String, f64)>,
    /// `(scope, pattern, score, modifier)` in entry order.
    url_rules: Vec<(String, String, Option<f64>, Option<f64>)>,
    /// Last write wins within a lens, first-seen order kept.
    extractor_weights: Vec<(String, f64)>,
    /// `(is_url_scope, pattern, half_life_days, floor)`.
    decay_rules: Vec<(bool, String, f64, f64)>,
    /// `(entry_kind, pattern, (half_life_uses_days, rank_lift))` in entry order.
    utility_rules: Vec<(String, Option<String>, UtilityParams)>,
}

/// A lens's utility rule (`entry_kind`, pattern, parameters), `None` for a row
/// of the legacy multiplier vocabulary (no `rank_lift`), which the reference
/// skips; an error names what the lens model refuses.
fn utility_rule(
    kind: &str,
    entry: &LensEntry,
) -> std::result::Result<Option<(String, Option<String>, UtilityParams)>, String> {
    let (Some(half_life), Some(lift)) = (entry.half_life_uses_days, entry.rank_lift) else {
        return Ok(None);
    };
    if half_life.is_nan() || half_life <= 0.0 {
        return Err(format!("half_life_uses_days {half_life} is not above 0"));
    }
    if lift.is_nan() || lift < 0.0 {
        return Err(format!("rank_lift {lift} is below 0"));
    }
    let pattern = match (kind, entry.pattern.as_deref()) {
        ("utility_default", None) => None,
        ("utility_default", Some(_)) => return Err("a default rule takes no pattern".into()),
        (_, Some(pattern)) if !pattern.is_empty() => Some(pattern.to_owned()),
        _ => return Err("the rule needs a pattern".into()),
    };
    Ok(Some((kind.to_owned(), pattern, (half_life, lift))))
}

fn non_empty(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|s| !s.is_empty())
}

impl ParsedLens {
    fn parse(lens: &Lens) -> Result<ParsedLens> {
        let invalid = |entry_kind: &str, reason: String| Error::InvalidLens {
            lens: lens.name.clone(),
            entry_kind: entry_kind.to_owned(),
            reason,
        };
        if lens.name.is_empty() {
            return Err(invalid("lens", "the lens name is empty".into()));
        }
        if lens.version < 1 {
            return Err(invalid(
                "lens",
                format!("version {} is below 1", lens.version),
            ));
        }
        let unit = |kind: &str, field: &str, value: f64| -> Result<()> {
            if (0.0..=1.0).contains(&value) {
                Ok(())
            } else {
                Err(invalid(kind, format!("{field} {value} is outside 0..=1")))
            }
        };
        let mut parsed = ParsedLens {
            statements: Vec::new(),
            url_rules: Vec::new(),
            extractor_weights: Vec::new(),
            decay_rules: Vec::new(),
            utility_rules: Vec::new(),
        };
        for entry in &lens.entries {
            let LensEntry { entry_kind, .. } = entry;
            let kind = entry_kind.as_str();
            match kind {
                "statement" => {
                    let (Some(domain), Some(source_type), Some(rank)) = (
                        non_empty(&entry.domain),
                        non_empty(&entry.source_type),
                        entry.trust_rank,
                    ) else {
                        continue;
                    };
                    unit(kind, "trust_rank", rank)?;
                    parsed
                        .statements
                        .push((domain.to_owned(), source_type.to_owned(), rank));
                }
                "domain" | "url_pattern" => {
                    let Some(pattern) = non_empty(&entry.pattern) else {
                        continue;
                    };
                    if kind == "domain" {
                        match (entry.score, entry.modifier) {
                            (Some(score), None) => unit(kind, "score", score)?,
                            (None, _) => {
                                return Err(invalid(
                                    kind,
                                    format!("domain rule {pattern:?} has no score"),
                                ))
                            }
                            (Some(_), Some(_)) => {
                                return Err(invalid(
                                    kind,
                                    format!("domain rule {pattern:?} has a modifier"),
                                ))
                            }
                        }
                    } else if entry.modifier.is_none() || entry.score.is_some() {
                        return Err(invalid(
                            kind,
                            format!("url_pattern rule {pattern:?} needs a modifier and no score"),
                        ));
                    }
                    parsed.url_rules.push((
                        kind.to_owned(),
                        pattern.to_owned(),
                        entry.score,
                        entry.modifier,
                    ));
                }
                "extractor_weight" => {
                    let (Some(id), Some(weight)) = (non_empty(&entry.extractor_id), entry.weight)
                    else {
                        continue;
                    };
                    unit(kind, "weight", weight)?;
                    match parsed.extractor_weights.iter_mut().find(|(k, _)| k == id) {
                        Some(slot) => slot.1 = weight,
                        None => parsed.extractor_weights.push((id.to_owned(), weight)),
                    }
                }
                "decay_source_type" | "decay_url_pattern" => {
                    let (Some(pattern), Some(half_life), Some(floor)) =
                        (non_empty(&entry.pattern), entry.half_life_days, entry.floor)
                    else {
                        continue;
                    };
                    if half_life.is_nan() || half_life <= 0.0 {
                        return Err(invalid(
                            kind,
                            format!("half_life_days {half_life} is not above 0"),
                        ));
                    }
                    unit(kind, "floor", floor)?;
                    parsed.decay_rules.push((
                        kind == "decay_url_pattern",
                        pattern.to_owned(),
                        half_life,
                        floor,
                    ));
                }
                "utility_default" | "utility_source_type" | "utility_url_pattern" => {
                    if let Some(rule) = utility_rule(kind, entry).map_err(|r| invalid(kind, r))? {
                        parsed.utility_rules.push(rule);
                    }
                }
                _ if kind.starts_with("modality_") => {
                    let (Some(_), Some(modality)) =
                        (non_empty(&entry.pattern), non_empty(&entry.modality))
                    else {
                        continue;
                    };
                    modality
                        .parse::<AssertionModality>()
                        .map_err(|e| invalid(kind, e.to_string()))?;
                    if let Some(when) = non_empty(&entry.modality_when) {
                        when.parse::<AssertionModality>()
                            .map_err(|e| invalid(kind, e.to_string()))?;
                    }
                }
                _ => {}
            }
        }
        Ok(parsed)
    }
}

/// The usefulness policy: the local default made stricter by the lenses'
/// defaults, and the lenses' source-type and URL rules composed among lenses
/// (a URL pattern Python's `re` refuses is dropped, as the reference suppresses
/// `re.error`).
fn compose_utility(
    lenses: &[ParsedLens],
    settings: &UtilitySettings,
) -> Result<Option<UtilityPolicy>> {
    if !settings.enabled {
        return Ok(None);
    }
    let mut default = (settings.half_life_uses_days, settings.rank_lift);
    let mut lens_default: Option<UtilityParams> = None;
    let mut source_type_rules: HashMap<String, UtilityParams> = HashMap::new();
    let mut lens_url: Vec<(String, UtilityParams)> = Vec::new();
    for lens in lenses {
        for (kind, pattern, params) in &lens.utility_rules {
            match (kind.as_str(), pattern) {
                ("utility_default", _) => {
                    lens_default =
                        Some(lens_default.map_or(*params, |d| more_skeptical(d, *params)));
                }
                ("utility_source_type", Some(pattern)) => {
                    let slot = source_type_rules.entry(pattern.clone()).or_insert(*params);
                    *slot = more_skeptical(*slot, *params);
                }
                (_, Some(pattern)) => match lens_url.iter_mut().find(|(p, _)| p == pattern) {
                    Some(slot) => slot.1 = more_skeptical(slot.1, *params),
                    None => lens_url.push((pattern.clone(), *params)),
                },
                _ => {}
            }
        }
    }
    if let Some(lens_default) = lens_default {
        default = more_skeptical(default, lens_default);
    }
    let mut url_rules = Vec::with_capacity(lens_url.len());
    for (pattern, params) in lens_url {
        if let Some(regex) = compile_pattern(&pattern)? {
            url_rules.push((regex, params));
        }
    }
    Ok(Some(UtilityPolicy {
        default,
        source_type_rules,
        url_rules,
        explicit_weight: settings.explicit_weight,
    }))
}

fn compose_weights(
    rows: &PolicyRows,
    lenses: &[ParsedLens],
    cap: Option<&ConformanceCap>,
) -> HashMap<String, f64> {
    let mut weights: HashMap<String, f64> = rows
        .extractors
        .iter()
        .map(|r| (r.extractor_id.clone(), r.trust_weight))
        .collect();
    let mut lens_min: Vec<(String, f64)> = Vec::new();
    for lens in lenses {
        for (id, weight) in &lens.extractor_weights {
            match lens_min.iter_mut().find(|(k, _)| k == id) {
                Some(slot) => slot.1 = py_min(slot.1, *weight),
                None => lens_min.push((id.clone(), *weight)),
            }
        }
    }
    for (id, weight) in lens_min {
        let composed = match weights.get(&id) {
            None => weight,
            Some(current) => py_min(*current, weight),
        };
        weights.insert(id, composed);
    }
    // The conformance cap binds registered extractors only; lens-only ids are
    // never capped.
    if let Some(cap) = cap {
        for record in &rows.extractors {
            if record.conformance_required_failure == Some(true)
                && !cap.exempt.contains(&record.extractor_id)
            {
                if let Some(weight) = weights.get_mut(&record.extractor_id) {
                    *weight = py_min(*weight, cap.cap_value);
                }
            }
        }
    }
    weights
}

fn compose_trust(rows: &PolicyRows, lenses: &[ParsedLens]) -> Result<TrustPolicy> {
    let mut statements = HashMap::new();
    for s in &rows.statements {
        statements.insert(
            (
                s.domain.clone(),
                s.source_ref_type.clone(),
                s.source_ref_value.clone(),
            ),
            s.trust_rank,
        );
    }
    let mut domain_scores = HashMap::new();
    let mut url_patterns = Vec::new();
    let mut local_patterns = std::collections::HashSet::new();
    for rule in &rows.source_trust {
        match (rule.scope.as_str(), rule.score, rule.modifier) {
            ("domain", Some(score), _) => {
                domain_scores.insert(rule.pattern.clone(), score);
            }
            ("url_pattern", _, Some(modifier)) => {
                if let Some(regex) = compile_pattern(&rule.pattern)? {
                    url_patterns.push((regex, modifier));
                    local_patterns.insert(rule.pattern.clone());
                }
            }
            _ => {}
        }
    }
    if !lenses.is_empty() {
        let mut lens_statements: Vec<((String, String, String), f64)> = Vec::new();
        let mut lens_domains: Vec<(String, f64)> = Vec::new();
        let mut lens_sums: Vec<(String, f64)> = Vec::new();
        for lens in lenses {
            for (domain, source_type, rank) in &lens.statements {
                let key = (
                    domain.clone(),
                    "SOURCE_TYPE".to_owned(),
                    source_type.clone(),
                );
                upsert_min(&mut lens_statements, key, *rank);
            }
            let mut per_lens: Vec<(String, f64)> = Vec::new();
            for (scope, pattern, score, modifier) in &lens.url_rules {
                match (scope.as_str(), score, modifier) {
                    ("domain", Some(score), _) => {
                        upsert_min(&mut lens_domains, pattern.clone(), *score)
                    }
                    ("url_pattern", _, Some(modifier)) => {
                        match per_lens.iter_mut().find(|(p, _)| p == pattern) {
                            Some(slot) => slot.1 += modifier,
                            None => per_lens.push((pattern.clone(), 0.0 + modifier)),
                        }
                    }
                    _ => {}
                }
            }
            for (pattern, total) in per_lens {
                upsert_min(&mut lens_sums, pattern, total);
            }
        }
        for (key, rank) in lens_statements {
            statements.entry(key).or_insert(rank);
        }
        for (pattern, score) in lens_domains {
            domain_scores.entry(pattern).or_insert(score);
        }
        for (pattern, total) in lens_sums {
            if !local_patterns.contains(&pattern) {
                if let Some(regex) = compile_pattern(&pattern)? {
                    url_patterns.push((regex, total));
                }
            }
        }
    }
    Ok(TrustPolicy {
        source_type_domains: Vec::new(),
        statements,
        domain_scores,
        url_patterns,
    })
}

/// `re.compile` inside the reference's `contextlib.suppress(re.error)`: `None`
/// for a pattern that raises `re.error` (the rule is skipped), an error where
/// Python raises something else (the reference's query fails).
fn compile_pattern(pattern: &str) -> Result<Option<PyRegex>> {
    match PyRegex::compile(pattern) {
        Ok(regex) => Ok(Some(regex)),
        Err(PatternError::Invalid(_) | PatternError::Unsupported(_)) => Ok(None),
        Err(PatternError::Fatal(reason)) => Err(Error::BadPattern {
            pattern: pattern.to_owned(),
            reason,
        }),
    }
}

fn compose_decay(lenses: &[ParsedLens], settings: &RankSettings) -> Result<DecayPolicy> {
    let mut source_type_rules: HashMap<String, (f64, f64)> = settings
        .decay_sources
        .iter()
        .map(|(st, rule)| (st.clone(), (rule.half_life_days, rule.floor)))
        .collect();
    let mut lens_source_type: Vec<(String, (f64, f64))> = Vec::new();
    let mut lens_url: Vec<(String, (f64, f64))> = Vec::new();
    for lens in lenses {
        for (is_url, pattern, half_life, floor) in &lens.decay_rules {
            let target = if *is_url {
                &mut lens_url
            } else {
                &mut lens_source_type
            };
            match target.iter_mut().find(|(p, _)| p == pattern) {
                Some(slot) => slot.1 = (py_min(slot.1 .0, *half_life), py_min(slot.1 .1, *floor)),
                None => target.push((pattern.clone(), (*half_life, *floor))),
            }
        }
    }
    for (source_type, params) in lens_source_type {
        source_type_rules.entry(source_type).or_insert(params);
    }
    let mut url_rules = Vec::new();
    for (pattern, (half_life, floor)) in lens_url {
        if let Some(regex) = compile_pattern(&pattern)? {
            url_rules.push((regex, half_life, floor));
        }
    }
    Ok(DecayPolicy {
        source_type_rules,
        url_rules,
    })
}

/// Insert-or-minimum into an insertion-ordered list (a Python dict's behaviour).
fn upsert_min<K: PartialEq>(list: &mut Vec<(K, f64)>, key: K, value: f64) {
    match list.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = py_min(slot.1, value),
        None => list.push((key, value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use particles_model::policy::SourceTrustRule;

    fn seeded() -> PolicyRows {
        let domain = |pattern: &str, score: f64| SourceTrustRule {
            scope: "domain".into(),
            pattern: pattern.into(),
            score: Some(score),
            modifier: None,
        };
        let url = |pattern: &str, modifier: f64| SourceTrustRule {
            scope: "url_pattern".into(),
            pattern: pattern.into(),
            score: None,
            modifier: Some(modifier),
        };
        PolicyRows {
            source_trust: vec![
                domain("api.numista.com", 0.9),
                domain("www.wikidata.org", 0.85),
                domain("en.wikipedia.org", 0.7),
                domain("en.numista.com", 0.65),
                domain("*", 0.5),
                url(
                    r"en\.numista\.com/(?:catalogue/pieces\d+\.html|\d+/?$)",
                    0.1,
                ),
                url(r"en\.numista\.com/catalogue/index\.php", -0.15),
                url(r"en\.wikipedia\.org/wiki/Special:", -0.2),
            ],
            ..PolicyRows::default()
        }
    }

    fn rank(policies: &Policies, uri: &str) -> Option<f64> {
        let source = SourceFacts {
            uri: Some(uri.into()),
            ..SourceFacts::default()
        };
        policies.trust.evaluate(&source).unwrap()
    }

    #[test]
    fn seeded_store_worked_values() {
        let policies = Policies::compile(&seeded(), &RankSettings::default()).unwrap();
        assert_eq!(
            rank(&policies, "https://en.wikipedia.org/wiki/Special:Foo"),
            Some(0.49999999999999994)
        );
        assert_eq!(
            rank(&policies, "https://en.numista.com/catalogue/pieces123.html"),
            Some(0.75)
        );
        assert_eq!(rank(&policies, "https://blog.example.com/p"), Some(0.5));
        assert_eq!(rank(&policies, "file:///x"), None);
    }

    #[test]
    fn conformance_recency_vectors() {
        let now = Timestamp::parse("2024-07-01T00:00:00").unwrap();
        let days_ago =
            |days: i64| Timestamp::from_utc_micros(now.utc_micros() - days * 86_400_000_000);
        assert_eq!(recency_factor(days_ago(60), 60.0, 0.1, now).unwrap(), 0.5);
        assert_eq!(recency_factor(days_ago(600), 60.0, 0.1, now).unwrap(), 0.1);
        assert_eq!(recency_factor(days_ago(0), 60.0, 0.1, now).unwrap(), 1.0);
        assert_eq!(recency_factor(days_ago(365), 365.0, 0.4, now).unwrap(), 0.5);
        assert_eq!(recency_factor(days_ago(-3), 60.0, 0.1, now).unwrap(), 1.0);
        assert_eq!(recency_factor(None, 60.0, 0.1, now).unwrap(), 1.0);
    }
}

#[cfg(test)]
mod steady_tests {
    use particles_model::Timestamp;
    use proptest::prelude::*;

    use super::{recency_factor, steady_decay};

    const DAY: i64 = 86_400_000_000;

    proptest! {
        /// A steady decay is the decay at `since` and at every later `now`,
        /// bit for bit, and never a failure.
        #[test]
        fn a_steady_decay_is_the_decay_from_then_on(
            published_day in -2_000i64..2_000,
            since_micros in -(3_000 * DAY)..(3_000 * DAY),
            later in proptest::collection::vec(0i64..(40_000 * DAY), 1..8),
            half_life in prop_oneof![
                0.01f64..2_000.0,
                Just(f64::NAN),
                Just(f64::INFINITY),
                Just(0.0),
                -100.0f64..0.0,
                1e-300f64..1e-290,
            ],
            floor in prop_oneof![0.0f64..1.0, Just(0.0), Just(1.0), Just(f64::NAN), 1.0f64..2.0],
            dated in any::<bool>(),
        ) {
            let base = 1_780_000_000 * 1_000_000i64;
            let published = dated.then(|| Timestamp::from_utc_micros(base + published_day * DAY).unwrap());
            let since = Timestamp::from_utc_micros(base + since_micros).unwrap();
            if let Some(decay) = steady_decay(published, half_life, floor, since) {
                for extra in later.iter().copied().chain([0, 1]) {
                    let now = Timestamp::from_utc_micros(base + since_micros + extra).unwrap();
                    let at = recency_factor(published, half_life, floor, now);
                    prop_assert!(at.is_ok(), "{at:?}");
                    prop_assert_eq!(at.unwrap().to_bits(), decay.to_bits());
                }
            }
        }
    }

    #[test]
    fn steadiness_needs_age_and_a_power_below_the_floor() {
        let day = |d: i64| Timestamp::from_utc_micros(1_780_000_000 * 1_000_000 + d * DAY).unwrap();
        // Undated: always 1.
        assert_eq!(steady_decay(None, 60.0, 0.1, day(0)), Some(1.0));
        // Not yet published, or still above the floor: it moves.
        assert_eq!(steady_decay(Some(day(5)), 60.0, 0.1, day(0)), None);
        assert_eq!(steady_decay(Some(day(-30)), 60.0, 0.1, day(0)), None);
        // Ten half-lives on, the power (1/1024) is under the floor.
        assert_eq!(steady_decay(Some(day(-600)), 60.0, 0.1, day(0)), Some(0.1));
        // A half-life that fails or grows the factor is never steady.
        assert_eq!(steady_decay(Some(day(-600)), 0.0, 0.1, day(0)), None);
        assert_eq!(steady_decay(Some(day(-600)), -5.0, 0.1, day(0)), None);
    }
}
