//! The memory projection's request (the reference's `MemoryProjectionRequest`
//! and the `DocManifest` it carries), read from JSON with pydantic's verdicts:
//! the same lax coercions, the same error types, and the same odd locations,
//! since the manifest's sections are validated by a before-validator of their
//! own (`_tag_sections`): a section's errors are reported under `manifest`
//! alone, and the first failing section stops the validation.

use serde_json::{json, Map, Value};

use super::{
    lax::{self, Failure},
    value_error, FieldError, Loc, RequestErrors,
};

/// `POST /memory/projection/{store}`'s body.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryProjectionRequest {
    /// The client's memory manifest.
    pub manifest: DocManifest,
    /// Render through this project's observer.
    pub observer_project: Option<String>,
    /// Drop candidates held only by sources with one of these tags.
    pub exclude_source_tags: Vec<String>,
    /// File URIs whose fold verdicts the client needs.
    pub fold_targets: Vec<String>,
}

/// An ordered projection of the store into one Markdown document.
#[derive(Debug, Clone, PartialEq)]
pub struct DocManifest {
    /// The manifest's name (`[a-z0-9][a-z0-9-]*`).
    pub name: String,
    /// The document budget in lines, enforced on bullet lines only.
    pub max_lines: Option<u64>,
    /// The document budget in UTF-8 bytes, likewise.
    pub max_bytes: Option<u64>,
    /// The sections, in order (at least one).
    pub sections: Vec<Section>,
}

/// One section of a manifest.
#[derive(Debug, Clone, PartialEq)]
pub enum Section {
    /// A section selected from the store.
    Derived(DerivedSection),
    /// A hand-authored fragment, named by a path on the client.
    Block(String),
}

/// How a derived section renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenderMode {
    /// Cited prose (without synthesis: the deterministic listing).
    Prose,
    /// One ranked bullet per belief.
    Bullets,
}

/// A section bound to the store by tags, subjects and a query.
#[derive(Debug, Clone, PartialEq)]
pub struct DerivedSection {
    /// Its heading.
    pub title: String,
    /// Candidate tags.
    pub tags: Vec<String>,
    /// Subjects by canonical name, each queried on its own.
    pub subjects: Vec<String>,
    /// The retrieval question (the title when absent).
    pub query: Option<String>,
    /// How many beliefs it keeps (1..=200).
    pub top_k: u32,
    /// The confidence floor.
    pub min_confidence: f64,
    /// The rank multiplier of docstring-extracted beliefs.
    pub code_symbol_rank_weight: f64,
    /// Pinned and refused ids.
    pub select: Select,
    /// Prose or bullets.
    pub render: RenderMode,
    /// The sentinel region it splices into.
    pub region: Option<String>,
}

impl DerivedSection {
    /// The question its selection asks: the query, else the title.
    pub fn topic_query(&self) -> &str {
        self.query.as_deref().unwrap_or(&self.title)
    }
}

/// A section's per-id overrides.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Select {
    /// Ids force-included (exempt from `top_k` and the budget).
    pub allow: Vec<String>,
    /// Ids force-excluded.
    pub deny: Vec<String>,
}

/// A pin with its `p-` / `p:` display prefix (and surrounding space) removed.
pub fn pin_body(pin: &str) -> &str {
    let body = particles_pytext::strip(pin);
    body.strip_prefix("p-")
        .or_else(|| body.strip_prefix("p:"))
        .unwrap_or(body)
}

impl MemoryProjectionRequest {
    /// Reads the body, with pydantic's errors (locations from the body's root).
    ///
    /// # Errors
    ///
    /// Every error pydantic reports for the same body, in its order.
    pub fn from_json(value: &Value) -> Result<MemoryProjectionRequest, RequestErrors> {
        let Value::Object(object) = value else {
            return Err(RequestErrors(vec![FieldError {
                kind: "model_attributes_type",
                loc: Vec::new(),
                msg: "Input should be a valid dictionary or object to extract fields from"
                    .to_owned(),
                input: value.clone(),
                ctx: None,
            }]));
        };
        let mut errors = Vec::new();
        let manifest = match object.get("manifest") {
            None => {
                errors.push(missing(vec![field("manifest")], value));
                None
            }
            Some(raw) => match DocManifest::read(raw) {
                Ok(manifest) => Some(manifest),
                Err(mut inner) => {
                    for error in &mut inner {
                        error.loc.insert(0, field("manifest"));
                    }
                    errors.extend(inner);
                    None
                }
            },
        };
        let observer_project = match object.get("observer_project") {
            None | Some(Value::Null) => None,
            Some(raw) => {
                match lax::string(raw)
                    .and_then(|s| lax::string_length(&s, Some(1), None).map(|()| s))
                {
                    Ok(project) => Some(project),
                    Err(failure) => {
                        errors.push(failure.at(vec![field("observer_project")], raw));
                        None
                    }
                }
            }
        };
        let exclude_source_tags = strings(object, "exclude_source_tags", &[], &mut errors);
        let fold_targets = strings(object, "fold_targets", &[], &mut errors);
        match manifest {
            Some(manifest) if errors.is_empty() => Ok(MemoryProjectionRequest {
                manifest,
                observer_project,
                exclude_source_tags,
                fold_targets,
            }),
            _ => Err(RequestErrors(errors)),
        }
    }
}

impl DocManifest {
    /// Reads a manifest (a parsed YAML or JSON mapping), with pydantic's errors
    /// located from the manifest's root.
    ///
    /// # Errors
    ///
    /// Pydantic's errors for the same mapping.
    pub fn from_json(value: &Value) -> Result<DocManifest, RequestErrors> {
        DocManifest::read(value).map_err(RequestErrors)
    }

    fn read(value: &Value) -> Result<DocManifest, Vec<FieldError>> {
        let Value::Object(object) = value else {
            return Err(vec![FieldError {
                kind: "model_type",
                loc: Vec::new(),
                msg: "Input should be a valid dictionary or instance of DocManifest".to_owned(),
                input: value.clone(),
                ctx: Some(json!({"class_name": "DocManifest"})),
            }]);
        };
        // `_tag_sections` validates each dict section before the manifest's own
        // fields: the first section that fails ends the validation, its errors
        // located from the section's root under `manifest`.
        let mut tagged: Option<Vec<Result<Section, Value>>> = None;
        if let Some(Value::Array(raw)) = object.get("sections") {
            let mut sections = Vec::with_capacity(raw.len());
            for item in raw {
                match item {
                    Value::Object(section) if section.contains_key("block") => {
                        sections.push(Ok(read_block(section)?));
                    }
                    Value::Object(section) => {
                        sections.push(Ok(Section::Derived(read_derived(section, item)?)));
                    }
                    other => sections.push(Err(other.clone())),
                }
            }
            tagged = Some(sections);
        }
        let mut errors = Vec::new();
        let name = match object.get("name") {
            None => {
                errors.push(missing(vec![field("name")], value));
                String::new()
            }
            Some(raw) => match lax::string(raw)
                .and_then(|s| lax::string_length(&s, Some(1), None).map(|()| s))
                .and_then(|s| slug(&s).map(|()| s))
            {
                Ok(name) => name,
                Err(failure) => {
                    errors.push(failure.at(vec![field("name")], raw));
                    String::new()
                }
            },
        };
        optional_string(object, "output", &mut errors);
        optional_string(object, "framing", &mut errors);
        let max_lines = positive(object, "max_lines", &mut errors);
        let max_bytes = positive(object, "max_bytes", &mut errors);
        let mut sections = Vec::new();
        match (object.get("sections"), tagged) {
            (None, _) => errors.push(missing(vec![field("sections")], value)),
            (Some(_), Some(tagged)) => {
                for (at, section) in tagged.into_iter().enumerate() {
                    match section {
                        Ok(section) => sections.push(section),
                        Err(raw) => {
                            // The union's two members each refuse a non-object.
                            for (member, class) in [
                                (
                                    "function-after[_require_a_binding(), DerivedSection]",
                                    "DerivedSection",
                                ),
                                ("MechanicalBlock", "MechanicalBlock"),
                            ] {
                                errors.push(FieldError {
                                    kind: "model_type",
                                    loc: vec![field("sections"), Loc::Index(at), field(member)],
                                    msg: format!(
                                        "Input should be a valid dictionary or instance of {class}"
                                    ),
                                    input: raw.clone(),
                                    ctx: Some(json!({ "class_name": class })),
                                });
                            }
                        }
                    }
                }
                let raw = object.get("sections").cloned().unwrap_or_default();
                if raw.as_array().is_some_and(Vec::is_empty) {
                    errors.push(FieldError {
                        kind: "too_short",
                        loc: vec![field("sections")],
                        msg: "List should have at least 1 item after validation, not 0".to_owned(),
                        input: raw,
                        ctx: Some(
                            json!({"field_type": "List", "min_length": 1, "actual_length": 0}),
                        ),
                    });
                }
            }
            (Some(raw), None) => errors.push(Failure::list_type().at(vec![field("sections")], raw)),
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        // `_unique_regions`: one section per sentinel region.
        let mut seen = std::collections::HashSet::new();
        for section in &sections {
            if let Section::Derived(DerivedSection {
                region: Some(region),
                ..
            }) = section
            {
                if !seen.insert(region.as_str()) {
                    return Err(vec![value_error(
                        Vec::new(),
                        &format!(
                            "region {} is declared by more than one section; a sentinel region \
                             maps to exactly one section ",
                            super::python_repr(region)
                        ),
                        value.clone(),
                    )]);
                }
            }
        }
        Ok(DocManifest {
            name,
            max_lines,
            max_bytes,
            sections,
        })
    }
}

fn read_block(object: &Map<String, Value>) -> Result<Section, Vec<FieldError>> {
    let raw = &object["block"];
    match lax::string(raw).and_then(|s| lax::string_length(&s, Some(1), None).map(|()| s)) {
        Ok(path) => Ok(Section::Block(path)),
        Err(failure) => Err(vec![failure.at(vec![field("block")], raw)]),
    }
}

fn read_derived(
    object: &Map<String, Value>,
    value: &Value,
) -> Result<DerivedSection, Vec<FieldError>> {
    let mut errors = Vec::new();
    let title = match object.get("title") {
        None => {
            errors.push(missing(vec![field("title")], value));
            String::new()
        }
        Some(raw) => {
            match lax::string(raw).and_then(|s| lax::string_length(&s, Some(1), None).map(|()| s)) {
                Ok(title) => title,
                Err(failure) => {
                    errors.push(failure.at(vec![field("title")], raw));
                    String::new()
                }
            }
        }
    };
    let tags = strings(object, "tags", &[], &mut errors);
    let subjects = strings(object, "subjects", &[], &mut errors);
    let query = optional_string(object, "query", &mut errors);
    let top_k = match object.get("top_k") {
        None => 12,
        Some(raw) => match lax::int(raw).and_then(|k| lax::int_within(k, 1, 200).map(|()| k)) {
            Ok(k) => k as u32,
            Err(failure) => {
                errors.push(failure.at(vec![field("top_k")], raw));
                12
            }
        },
    };
    let unit = |name: &str, errors: &mut Vec<FieldError>| match object.get(name) {
        None => None,
        Some(raw) => match lax::float(raw).and_then(|v| lax::float_within(v, 0.0, 1.0).map(|()| v))
        {
            Ok(v) => Some(v),
            Err(failure) => {
                errors.push(failure.at(vec![field(name)], raw));
                None
            }
        },
    };
    let min_confidence = unit("min_confidence", &mut errors).unwrap_or(0.0);
    let code_symbol_rank_weight = unit("code_symbol_rank_weight", &mut errors).unwrap_or(1.0);
    optional_string(object, "direction", &mut errors);
    if let Some(raw) = object.get("flowing") {
        if let Err(failure) = lax::boolean(raw) {
            errors.push(failure.at(vec![field("flowing")], raw));
        }
    }
    let select = match object.get("select") {
        None => Select::default(),
        Some(raw) => match read_select(raw) {
            Ok(select) => select,
            Err(inner) => {
                errors.extend(inner.into_iter().map(|mut error| {
                    error.loc.insert(0, field("select"));
                    error
                }));
                Select::default()
            }
        },
    };
    let render = match object.get("render") {
        None => RenderMode::Prose,
        Some(raw) => match raw.as_str() {
            Some("prose") => RenderMode::Prose,
            Some("bullets") => RenderMode::Bullets,
            _ => {
                errors.push(FieldError {
                    kind: "literal_error",
                    loc: vec![field("render")],
                    msg: "Input should be 'prose' or 'bullets'".to_owned(),
                    input: raw.clone(),
                    ctx: Some(json!({"expected": "'prose' or 'bullets'"})),
                });
                RenderMode::Prose
            }
        },
    };
    let region = match object.get("region") {
        None | Some(Value::Null) => None,
        Some(raw) => match lax::string(raw).and_then(|s| slug(&s).map(|()| s)) {
            Ok(region) => Some(region),
            Err(failure) => {
                errors.push(failure.at(vec![field("region")], raw));
                None
            }
        },
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    if render != RenderMode::Bullets && tags.is_empty() && subjects.is_empty() && query.is_none() {
        return Err(vec![value_error(
            Vec::new(),
            &format!(
                "derived section {} needs at least one of tags / subjects / query to bind its \
                 candidate particles",
                super::python_repr(&title)
            ),
            value.clone(),
        )]);
    }
    Ok(DerivedSection {
        title,
        tags,
        subjects,
        query,
        top_k,
        min_confidence,
        code_symbol_rank_weight,
        select,
        render,
        region,
    })
}

fn read_select(value: &Value) -> Result<Select, Vec<FieldError>> {
    let Value::Object(object) = value else {
        return Err(vec![FieldError {
            kind: "model_type",
            loc: Vec::new(),
            msg: "Input should be a valid dictionary or instance of Select".to_owned(),
            input: value.clone(),
            ctx: Some(json!({"class_name": "Select"})),
        }]);
    };
    let mut errors = Vec::new();
    let allow = strings(object, "allow", &[], &mut errors);
    let deny = strings(object, "deny", &[], &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    for (label, ids) in [("allow", &allow), ("deny", &deny)] {
        for pin in ids {
            if !well_formed_pin(pin_body(pin)) {
                return Err(vec![value_error(
                    Vec::new(),
                    &format!(
                        "select.{label} id {} is not a well-formed particle id (expected a full \
                         id or the 'p-<shortid>' form)",
                        super::python_repr(pin)
                    ),
                    value.clone(),
                )]);
            }
        }
    }
    let mut overlap: Vec<&String> = allow.iter().filter(|id| deny.contains(id)).collect();
    overlap.sort();
    overlap.dedup();
    if !overlap.is_empty() {
        let listed: Vec<String> = overlap.iter().map(|id| super::python_repr(id)).collect();
        return Err(vec![value_error(
            Vec::new(),
            &format!(
                "select.allow and select.deny must be disjoint; [{}] appears in both — the \
                 intent is undefined",
                listed.join(", ")
            ),
            value.clone(),
        )]);
    }
    Ok(Select { allow, deny })
}

/// `^[0-9A-Za-z][0-9A-Za-z._-]*$` (the body is already stripped, so Python's
/// `$` before a final newline cannot matter).
fn well_formed_pin(body: &str) -> bool {
    let mut chars = body.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// pydantic's `pattern=r"^[a-z0-9][a-z0-9-]*$"` (the Rust regex engine: `$` is
/// the end of the text).
fn slug(text: &str) -> Result<(), Failure> {
    let mut chars = text.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        return Ok(());
    }
    let pattern = "^[a-z0-9][a-z0-9-]*$";
    Err(Failure {
        kind: "string_pattern_mismatch",
        msg: format!("String should match pattern '{pattern}'"),
        ctx: Some(json!({ "pattern": pattern })),
    })
}

fn field(name: &str) -> Loc {
    Loc::Field(name.to_owned())
}

fn missing(loc: Vec<Loc>, input: &Value) -> FieldError {
    FieldError {
        kind: "missing",
        loc,
        msg: "Field required".to_owned(),
        input: input.clone(),
        ctx: None,
    }
}

fn optional_string(
    object: &Map<String, Value>,
    name: &str,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    match object.get(name) {
        None | Some(Value::Null) => None,
        Some(raw) => match lax::string(raw) {
            Ok(text) => Some(text),
            Err(failure) => {
                errors.push(failure.at(vec![field(name)], raw));
                None
            }
        },
    }
}

fn positive(object: &Map<String, Value>, name: &str, errors: &mut Vec<FieldError>) -> Option<u64> {
    match object.get(name) {
        None | Some(Value::Null) => None,
        Some(raw) => {
            match lax::int(raw).and_then(|v| lax::int_within(v, 1, i64::MAX).map(|()| v)) {
                Ok(v) => Some(v as u64),
                Err(failure) => {
                    errors.push(failure.at(vec![field(name)], raw));
                    None
                }
            }
        }
    }
}

/// A `list[str]` field: each element's error at its index.
fn strings(
    object: &Map<String, Value>,
    name: &str,
    default: &[String],
    errors: &mut Vec<FieldError>,
) -> Vec<String> {
    match object.get(name) {
        None => default.to_vec(),
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (at, item) in items.iter().enumerate() {
                match lax::string(item) {
                    Ok(text) => out.push(text),
                    Err(failure) => {
                        errors.push(failure.at(vec![field(name), Loc::Index(at)], item));
                    }
                }
            }
            out
        }
        Some(raw) => {
            errors.push(Failure::list_type().at(vec![field(name)], raw));
            default.to_vec()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(body: Value) -> Value {
        serde_json::to_value(MemoryProjectionRequest::from_json(&body).unwrap_err()).unwrap()
    }

    #[test]
    fn a_section_error_is_located_under_the_manifest_alone() {
        let got = errors(json!({"manifest": {"name": "m", "sections": [{"title": "t"}]}}));
        assert_eq!(got[0]["type"], "value_error");
        assert_eq!(got[0]["loc"], json!(["manifest"]));
        assert_eq!(
            got[0]["msg"],
            "Value error, derived section 't' needs at least one of tags / subjects / query to \
             bind its candidate particles"
        );
        let got = errors(json!({"manifest": {"name": "m", "max_lines": 0,
            "sections": [{"title": "t", "render": "bullets", "top_k": 0}]}}));
        assert_eq!(
            got.as_array().unwrap().len(),
            1,
            "the first failing section ends it"
        );
        assert_eq!(got[0]["loc"], json!(["manifest", "top_k"]));
    }

    #[test]
    fn pins_and_regions_are_checked() {
        let got = errors(json!({"manifest": {"name": "m", "sections": [{"title": "t",
            "render": "bullets", "select": {"allow": ["p-x", "  "], "deny": ["p-x"]}}]}}));
        assert_eq!(got[0]["loc"], json!(["manifest", "select"]));
        assert!(got[0]["msg"]
            .as_str()
            .unwrap()
            .contains("select.allow id '  '"));
        let got = errors(json!({"manifest": {"name": "m", "sections": [
            {"title": "t", "render": "bullets", "region": "a"},
            {"title": "u", "render": "bullets", "region": "a"}]}}));
        assert_eq!(got[0]["loc"], json!(["manifest"]));
        let ok = MemoryProjectionRequest::from_json(&json!({"manifest": {"name": "memory-index",
            "max_lines": 120, "sections": [{"title": "Memory", "render": "bullets",
            "select": {"allow": ["p-0123abcd"]}}]}, "exclude_source_tags": ["rule-file"]}))
        .unwrap();
        assert_eq!(ok.manifest.max_lines, Some(120));
        assert_eq!(pin_body(" p-0123abcd "), "0123abcd");
    }

    #[test]
    fn a_non_object_section_fails_both_union_members() {
        let got = errors(json!({"manifest": {"name": "Bad Name", "sections": [5]}}));
        let types: Vec<&str> = got
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            ["string_pattern_mismatch", "model_type", "model_type"]
        );
    }
}
