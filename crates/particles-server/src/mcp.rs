//! `particles-rs mcp`: the reference's MCP `query` tool on stdio, over rmcp.
//!
//! The tool takes the reference's parameters (`mcp/tools/query.py`), builds the
//! same `QueryRequest` (as-of and window dates read as `datetime.fromisoformat`
//! reads them, a date-only window end widened to the day's last microsecond),
//! spends a token of the per-process limiter (`mcp.rate_limit_per_minute`) for a
//! question, answers through the engine, fills each particle's `contested` from
//! the contested map, and returns the response's JSON, or its `summary` form.
//! A failure is a tool error carrying the exception's text.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Instant,
};

use particles_model::{QueryRequest, TimeWindow, Timestamp};
use rmcp::{
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
        ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
    ErrorData as McpError, RoleServer, ServerHandler, ServiceExt,
};
use serde_json::{json, Map, Value};

use crate::{service::Backend, Error, Result};

/// How the MCP server runs.
#[derive(Debug, Clone, Default)]
pub struct McpOptions {
    /// `--project-observer cwd`: the directory whose project binds the server.
    pub project_observer: Option<PathBuf>,
}

/// The project a server started in `cwd` binds (the reference's
/// `server_project_key`): its repository's root (a linked worktree resolves to
/// the main checkout), else the directory itself, as Claude Code's project
/// slug; `None` at the filesystem root.
pub(crate) fn project_key(cwd: &Path) -> Option<String> {
    let root = repository_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    root.parent()?;
    Some(
        root.to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect(),
    )
}

fn repository_root(cwd: &Path) -> Option<PathBuf> {
    for candidate in cwd.ancestors() {
        let git = candidate.join(".git");
        if git.is_dir() {
            return Some(candidate.to_path_buf());
        }
        if git.is_file() {
            let text = std::fs::read_to_string(&git).ok()?;
            let gitdir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
            let gitdir = candidate.join(gitdir);
            return match std::fs::read_to_string(gitdir.join("commondir")) {
                Ok(common) => gitdir
                    .join(common.trim())
                    .components()
                    .collect::<PathBuf>()
                    .parent()
                    .map(Path::to_path_buf),
                Err(_) => Some(candidate.to_path_buf()),
            };
        }
    }
    None
}

/// The per-process limiter: `(tokens, last refill)`.
struct Limiter {
    state: Mutex<Option<(f64, f64)>>,
    clock: Instant,
}

impl Limiter {
    /// The reference's `admit`: spends a token, or the refusal text.
    fn admit(&self, tool: &str, rate: i64) -> std::result::Result<(), String> {
        if rate <= 0 {
            return Ok(());
        }
        let now = self.clock.elapsed().as_secs_f64();
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (tokens, last) = state.unwrap_or((rate as f64, now));
        let tokens = (rate as f64).min(tokens + (now - last) * rate as f64 / 60.0);
        if tokens < 1.0 {
            *state = Some((tokens, now));
            return Err(format!(
                "Rate limit reached: {tool} can drive a paid model call, and this server allows \
                 {rate} such calls a minute (mcp.rate_limit_per_minute). Retry after a short wait."
            ));
        }
        *state = Some((tokens - 1.0, now));
        Ok(())
    }
}

/// The `query` tool's arguments after type checks.
struct Arguments<'a> {
    raw: &'a Map<String, Value>,
}

impl<'a> Arguments<'a> {
    fn present(&self, name: &str) -> Option<&'a Value> {
        self.raw.get(name).filter(|v| !v.is_null())
    }

    fn string(&self, name: &str) -> std::result::Result<Option<&'a str>, String> {
        match self.present(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!(
                "{name}: Input should be a valid string, got {other}"
            )),
        }
    }

    fn boolean(&self, name: &str) -> std::result::Result<Option<bool>, String> {
        match self.present(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s))
                if matches!(
                    crate::pytext::lower(s).as_str(),
                    "true" | "1" | "yes" | "on"
                ) =>
            {
                Ok(Some(true))
            }
            Some(Value::String(s))
                if matches!(
                    crate::pytext::lower(s).as_str(),
                    "false" | "0" | "no" | "off"
                ) =>
            {
                Ok(Some(false))
            }
            Some(other) => Err(format!(
                "{name}: Input should be a valid boolean, got {other}"
            )),
        }
    }
}

fn parse_iso(text: &str) -> Option<Timestamp> {
    Timestamp::parse(text).ok()
}

/// A datetime as the request's JSON carries it.
fn iso(timestamp: Timestamp) -> Value {
    serde_json::to_value(timestamp).unwrap_or(Value::Null)
}

/// `window_for_day`: the point window at 00:00 UTC of the day.
fn window_for_day(day: Timestamp) -> TimeWindow {
    let day = if day.is_aware() {
        day
    } else {
        day.with_utc_offset()
    };
    let midnight = day.start_of_day();
    TimeWindow {
        start: Some(midnight),
        end: Some(midnight),
    }
}

/// `window_end_of_day`: a midnight end becomes the day's last microsecond.
fn window_end_of_day(end: Timestamp) -> Timestamp {
    let end = if end.is_aware() {
        end
    } else {
        end.with_utc_offset()
    };
    if end.is_midnight() {
        Timestamp::from_utc_micros(end.utc_micros() + 86_400_000_000 - 1)
            .map_or(end, Timestamp::with_utc_offset)
    } else {
        end
    }
}

fn repr(text: &str) -> String {
    particles_model::python_repr(text)
}

/// The request the reference's tool builds from its arguments, or the text of
/// the exception it raises.
fn build_request(
    args: &Arguments<'_>,
    observer_project: Option<&str>,
) -> std::result::Result<(Map<String, Value>, bool), String> {
    let mut body = Map::new();
    let as_of = match args.string("as_of")? {
        None => None,
        Some(text) => Some(parse_iso(text).ok_or_else(|| {
            format!(
                "Invalid as_of value {}: expected an ISO-8601 date or datetime (e.g. 2000-01-01 \
                 or 2006-08-24T12:00:00+00:00).",
                repr(text)
            )
        })?),
    };
    let group_by = match args.string("group_by")? {
        None => None,
        Some(text) => {
            let axis = crate::pytext::lower(crate::pytext::strip(text));
            if !matches!(axis.as_str(), "subject" | "predicate" | "object") {
                return Err(format!(
                    "Unknown group_by axis {}. Valid: subject, predicate, object.",
                    repr(text)
                ));
            }
            Some(axis)
        }
    };
    let on = args.string("on")?;
    let during_start = args.string("during_start")?;
    let during_end = args.string("during_end")?;
    if on.is_some() && (during_start.is_some() || during_end.is_some()) {
        return Err("on and during_start / during_end are alternatives; pass one form.".to_owned());
    }
    let invalid_window = |text: &str| {
        format!(
            "Invalid window: Invalid isoformat string: {}. Expected ISO-8601 dates (e.g. 2026-10-10).",
            repr(text)
        )
    };
    let window = if let Some(on) = on {
        Some(window_for_day(
            parse_iso(on).ok_or_else(|| invalid_window(on))?,
        ))
    } else if during_start.is_some() || during_end.is_some() {
        let start = during_start
            .map(|s| parse_iso(s).ok_or_else(|| invalid_window(s)))
            .transpose()?;
        let end = during_end
            .map(|s| {
                parse_iso(s)
                    .map(window_end_of_day)
                    .ok_or_else(|| invalid_window(s))
            })
            .transpose()?;
        Some(TimeWindow { start, end })
    } else {
        None
    };
    let audience = args.string("audience")?.unwrap_or("GENERAL");
    if !matches!(audience, "GENERAL" | "EXPERT" | "REGULATORY") {
        return Err(format!("{} is not a valid AudienceHint", repr(audience)));
    }
    let question = args.string("question")?;
    body.insert("question".into(), json!(question));
    let tags = match args.present("tags") {
        None => json!([]),
        Some(tags) => tags.clone(),
    };
    body.insert("tags".into(), tags);
    body.insert("subject_id".into(), json!(args.string("subject_id")?));
    body.insert(
        "min_confidence".into(),
        args.present("min_confidence")
            .cloned()
            .unwrap_or(json!(0.0)),
    );
    body.insert(
        "top_k".into(),
        args.present("top_k").cloned().unwrap_or(json!(40)),
    );
    body.insert("audience".into(), json!(audience));
    body.insert("as_of".into(), as_of.map_or(Value::Null, iso));
    body.insert(
        "window".into(),
        window.map_or(Value::Null, |w| {
            json!({"start": w.start.map_or(Value::Null, iso), "end": w.end.map_or(Value::Null, iso)})
        }),
    );
    for name in [
        "predicate",
        "object_eq",
        "object_gt",
        "object_lt",
        "object_contains",
    ] {
        body.insert(name.into(), json!(args.string(name)?));
    }
    body.insert(
        "count".into(),
        json!(args.boolean("count")?.unwrap_or(false)),
    );
    body.insert("group_by".into(), json!(group_by));
    body.insert(
        "min_effective_confidence".into(),
        args.present("min_effective_confidence")
            .cloned()
            .unwrap_or(Value::Null),
    );
    body.insert(
        "list_predicates".into(),
        json!(args.boolean("list_predicates")?.unwrap_or(false)),
    );
    body.insert("observer_project".into(), json!(observer_project));
    body.insert("grounded".into(), json!(args.boolean("grounded")?));
    let asks = question.is_some_and(|q| !q.is_empty());
    Ok((body, asks))
}

/// Runs the tool: the response's JSON, or the exception's text.
fn run_query(
    backend: &Backend,
    limiter: &Limiter,
    project: Option<&str>,
    raw: &Map<String, Value>,
) -> std::result::Result<Value, String> {
    let args = Arguments { raw };
    let all_projects = args.boolean("all_projects")?.unwrap_or(false);
    let summary = args.boolean("summary")?.unwrap_or(false);
    let observer = if all_projects { None } else { project };
    let (mut body, asks) = build_request(&args, observer)?;
    // Ours beside the reference's parameters: a vector, or no_embedding, may
    // stand in for the question.
    for name in ["vector", "no_embedding"] {
        if let Some(value) = args.present(name) {
            body.insert(name.into(), value.clone());
        }
    }
    let body = Value::Object(body);
    let envelope = backend
        .envelope_from(&body)
        .map_err(|errors| errors.to_string())?;
    let request = QueryRequest::from_json_with(&body, Timestamp::now(), &envelope)
        .map_err(|errors| errors.to_string())?;
    if asks || envelope.vector.is_some() {
        limiter.admit("query", backend.mcp_rate_limit_per_minute)?;
    }
    let response = backend
        .engine
        .query(&request, &envelope)
        .map_err(|e| e.to_string())?;
    let contested: std::collections::HashMap<String, String> = backend
        .contested()
        .map_err(|e| e.to_string())?
        .into_iter()
        .collect();
    let mut out = serde_json::to_value(&response).map_err(|e| e.to_string())?;
    let disclosure = project.map(|p| json!({"project": p, "all_projects": all_projects}));
    let particles = out
        .get_mut("particles")
        .and_then(Value::as_array_mut)
        .map(std::mem::take)
        .unwrap_or_default();
    let mut particles: Vec<Value> = particles
        .into_iter()
        .map(|mut particle| {
            let mark = particle
                .get("id")
                .and_then(Value::as_str)
                .and_then(|id| contested.get(id))
                .map_or(Value::Null, |record| json!(record));
            if let Some(object) = particle.as_object_mut() {
                object.insert("contested".into(), mark);
            }
            particle
        })
        .collect();
    if summary {
        let effective = out["effective_confidences"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if effective.len() != particles.len() {
            return Err(format!(
                "zip() argument 2 is {} than argument 1",
                if effective.len() < particles.len() {
                    "shorter"
                } else {
                    "longer"
                }
            ));
        }
        let badges = out["contested"].as_array().cloned().unwrap_or_default();
        let parallel = badges.len() == particles.len();
        particles = particles
            .iter()
            .zip(&effective)
            .enumerate()
            .map(|(i, (particle, eff))| {
                let mut hit = json!({
                    "id": particle["id"],
                    "content": particle["content"],
                    "confidence": particle["confidence"]["value"],
                    "effective_confidence": eff,
                    "subject_ids": particle["subject_ids"],
                    "contested": particle["contested"],
                });
                if parallel && !badges.is_empty() {
                    hit["contested_bases"] = match &badges[i] {
                        Value::Null => Value::Null,
                        badge => badge["bases"].clone(),
                    };
                }
                hit
            })
            .collect();
    }
    out["particles"] = Value::Array(particles);
    if let Some(disclosure) = disclosure {
        out["observer"] = disclosure;
    }
    Ok(out)
}

/// The `query` tool's input schema: the reference's parameters, names, types
/// and defaults (as FastMCP derives them from its signature).
fn query_schema() -> Map<String, Value> {
    let optional = |kind: &str, title: &str| json!({"anyOf": [{"type": kind}, {"type": "null"}], "default": null, "title": title});
    let plain = |kind: &str, default: Value, title: &str| json!({"default": default, "title": title, "type": kind});
    let properties = json!({
        "question": optional("string", "Question"),
        "tags": {"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}], "default": null, "title": "Tags"},
        "subject_id": optional("string", "Subject Id"),
        "min_confidence": plain("number", json!(0.0), "Min Confidence"),
        "top_k": plain("integer", json!(40), "Top K"),
        "audience": plain("string", json!("GENERAL"), "Audience"),
        "summary": plain("boolean", json!(false), "Summary"),
        "as_of": optional("string", "As Of"),
        "during_start": optional("string", "During Start"),
        "during_end": optional("string", "During End"),
        "on": optional("string", "On"),
        "predicate": optional("string", "Predicate"),
        "object_eq": optional("string", "Object Eq"),
        "object_gt": optional("string", "Object Gt"),
        "object_lt": optional("string", "Object Lt"),
        "object_contains": optional("string", "Object Contains"),
        "count": plain("boolean", json!(false), "Count"),
        "group_by": optional("string", "Group By"),
        "min_effective_confidence": optional("number", "Min Effective Confidence"),
        "list_predicates": plain("boolean", json!(false), "List Predicates"),
        "all_projects": plain("boolean", json!(false), "All Projects"),
        "grounded": optional("boolean", "Grounded"),
        // Ours (the reference has neither): the query vector, standing in for
        // the question, or a ranking by effective confidence without one.
        "vector": {"anyOf": [{"items": {"type": "number"}, "type": "array"}, {"type": "null"}], "default": null, "title": "Vector"},
        "no_embedding": plain("boolean", json!(false), "No Embedding"),
    });
    let mut schema = Map::new();
    schema.insert("properties".into(), properties);
    schema.insert("title".into(), json!("queryArguments"));
    schema.insert("type".into(), json!("object"));
    schema
}

const QUERY_DESCRIPTION: &str = "Ask the belief store a question (or, without one, list \
claims by structural filters: predicate, object bounds, counts, groups, the predicate \
vocabulary). Returns the reference's QueryResponse as JSON: the answer, the ranked \
particles with their effective confidences, coverage and truncation disclosures; each \
particle's `contested` names an open INCONSISTENCY that references it. `summary=true` \
slims each particle to id, content, confidence, effective_confidence, subject_ids and \
contested. Dates (as_of, during_start/during_end, on) are ISO-8601. `vector` (one embedding: 384 numbers for MiniLM) \
or `no_embedding=true` may stand in for the question (particles-rs only).";

/// The MCP server: one tool, `query`.
struct ParticlesMcp {
    backend: Arc<Backend>,
    project: Option<String>,
    limiter: Arc<Limiter>,
}

impl ServerHandler for ParticlesMcp {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        );
        info.server_info = Implementation::new("particles", crate::VERSION);
        info.instructions = Some(
            "particles-rs: read-only query access to a Particles belief store. Use `query` \
             for natural-language questions with optional tag, subject, date and claim filters."
                .to_owned(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, McpError> {
        let mut tool = Tool::default();
        tool.name = "query".into();
        tool.description = Some(QUERY_DESCRIPTION.into());
        tool.input_schema = Arc::new(query_schema());
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(
            crate::resources::listed(&self.backend),
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(
            crate::resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, McpError> {
        let backend = self.backend.clone();
        let project = self.project.clone();
        tokio::task::spawn_blocking(move || {
            crate::resources::read(&backend, project.as_deref(), &request.uri)
        })
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), None))?
        .map(Into::into)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, McpError> {
        if request.name != "query" {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "Unknown tool: {}",
                request.name
            ))])
            .into());
        }
        let arguments = request.arguments.clone().unwrap_or_default();
        let backend = self.backend.clone();
        let limiter = self.limiter.clone();
        let project = self.project.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            run_query(&backend, &limiter, project.as_deref(), &arguments)
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
        Ok(match outcome {
            Ok(value) => {
                let text = serde_json::to_string_pretty(&value).unwrap_or_default();
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(value);
                result
            }
            Err(text) => CallToolResult::error(vec![ContentBlock::text(format!(
                "Error executing tool query: {text}"
            ))]),
        }
        .into())
    }
}

/// Serves the MCP `query` tool on standard input and output until the client
/// closes them.
///
/// # Errors
///
/// [`Error::Mcp`] when the transport fails.
pub fn run_mcp_stdio(backend: Arc<Backend>, options: McpOptions) -> Result<()> {
    let project = options.project_observer.as_deref().and_then(project_key);
    let server = ParticlesMcp {
        backend,
        project,
        limiter: Arc::new(Limiter {
            state: Mutex::new(None),
            clock: Instant::now(),
        }),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Mcp(e.to_string()))?;
    runtime.block_on(async move {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| Error::Mcp(e.to_string()))?;
        service
            .waiting()
            .await
            .map_err(|e| Error::Mcp(e.to_string()))?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_keys_are_claude_slugs() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let repo = dir.path().join("my repo");
        std::fs::create_dir_all(repo.join(".git")).expect("mkdir");
        std::fs::create_dir_all(repo.join("src/deep")).expect("mkdir");
        let key = project_key(&repo.join("src/deep")).expect("a key");
        assert!(key.ends_with("-my-repo"), "{key}");
        assert_eq!(project_key(Path::new("/")), None);
    }

    #[test]
    fn the_limiter_spends_a_token_per_question() {
        let limiter = Limiter {
            state: Mutex::new(None),
            clock: Instant::now(),
        };
        assert!(limiter.admit("query", 1).is_ok());
        let refusal = limiter.admit("query", 1).expect_err("the bucket is empty");
        assert!(
            refusal.starts_with("Rate limit reached: query can drive"),
            "{refusal}"
        );
        assert!(limiter.admit("query", 0).is_ok(), "0 disables it");
    }

    #[test]
    fn windows_and_dates_as_the_reference_builds_them() {
        let raw: Map<String, Value> = serde_json::from_value(json!({
            "question": "q", "during_start": "2020-01-01", "during_end": "2020-12-31",
            "group_by": " Subject ", "tags": null,
        }))
        .expect("an object");
        let (body, asks) = build_request(&Arguments { raw: &raw }, None).expect("valid");
        assert!(asks);
        assert_eq!(body["window"]["end"], json!("2020-12-31T23:59:59.999999Z"));
        assert_eq!(body["window"]["start"], json!("2020-01-01T00:00:00"));
        assert_eq!(body["group_by"], json!("subject"));
        assert_eq!(body["tags"], json!([]));
        let raw: Map<String, Value> =
            serde_json::from_value(json!({"on": "2020-01-01", "during_end": "2020-02-01"}))
                .expect("an object");
        let error = build_request(&Arguments { raw: &raw }, None).expect_err("both forms");
        assert!(error.starts_with("on and during_start"), "{error}");
        let raw: Map<String, Value> =
            serde_json::from_value(json!({"audience": "general"})).expect("an object");
        let error = build_request(&Arguments { raw: &raw }, None).expect_err("exact enum");
        assert_eq!(error, "'general' is not a valid AudienceHint");
    }
}
