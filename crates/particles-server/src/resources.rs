//! The MCP server's digest resources (the reference's `mcp/resources.py`):
//! `particles://digest/{store}` and `particles://digest/{store}/{project}`, and
//! one listed resource per store the configuration lists for recall. Each reads
//! the session digest's Markdown, as `GET /digest/{store}` renders it.

use rmcp::model::{ErrorCode, ReadResourceResult, Resource, ResourceContents, ResourceTemplate};

use crate::service::{Backend, DigestOutcome};

const MIME: &str = "text/markdown";
const PREFIX: &str = "particles://digest/";
const DESCRIPTION: &str = "Session-start memory digest: one line per ACTIVE belief, ranked by \
effective confidence, contested beliefs flagged. The MEMORY.md analog — load it at session \
start to recall this store's standing context.";
const PROJECT_DESCRIPTION: &str = " Read through one project's observer: global beliefs plus \
those observed in that project.";

/// The two templates, in the reference's order.
pub(crate) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("particles://digest/{store}", "memory-digest")
            .with_description(DESCRIPTION)
            .with_mime_type(MIME),
        ResourceTemplate::new(
            "particles://digest/{store}/{project}",
            "memory-digest-for-project",
        )
        .with_description(format!("{DESCRIPTION}{PROJECT_DESCRIPTION}"))
        .with_mime_type(MIME),
    ]
}

/// One resource per store the configuration lists (`mcp.write.enabled_stores`,
/// then `mcp.recall.digest_stores`).
pub(crate) fn listed(backend: &Backend) -> Vec<Resource> {
    backend
        .digest_listed
        .iter()
        .map(|handle| {
            Resource::new(
                format!("{PREFIX}{handle}"),
                format!("memory-digest:{handle}"),
            )
            .with_description(format!(
                "Session-start memory digest for the {} store.",
                particles_model::python_repr(handle)
            ))
            .with_mime_type(MIME)
        })
        .collect()
}

/// An error as the reference's MCP server words it (JSON-RPC code 0).
fn failure(message: String) -> rmcp::ErrorData {
    rmcp::ErrorData::new(ErrorCode(0), message, None)
}

/// Reads `uri`: a listed store exactly, else a template (each parameter one
/// path segment, not percent-decoded), through the server's bound `project`
/// unless the URI names one.
///
/// # Errors
///
/// The reference's messages: an unknown resource, an unknown store (wrapped
/// twice for a template, as FastMCP wraps it), a store that cannot be read.
pub(crate) fn read(
    backend: &Backend,
    bound_project: Option<&str>,
    uri: &str,
) -> Result<ReadResourceResult, rmcp::ErrorData> {
    let listed = backend
        .digest_listed
        .iter()
        .any(|h| format!("{PREFIX}{h}") == uri);
    let parts: Option<Vec<&str>> = uri
        .strip_prefix(PREFIX)
        .map(|rest| rest.split('/').collect());
    let (store, project) = match parts.as_deref() {
        _ if listed => (&uri[PREFIX.len()..], None),
        Some([store]) if !store.is_empty() => (*store, None),
        Some([store, project]) if !store.is_empty() && !project.is_empty() => {
            (*store, Some(*project))
        }
        _ => return Err(failure(format!("Unknown resource: {uri}"))),
    };
    let project = project.or(bound_project);
    match backend.digest(store, project) {
        DigestOutcome::Rendered(rendered) => Ok(ReadResourceResult::new(vec![
            ResourceContents::TextResourceContents {
                uri: uri.to_owned(),
                mime_type: Some(MIME.to_owned()),
                text: rendered.markdown,
                meta: None,
            },
        ])),
        DigestOutcome::UnknownStore => {
            let inner = particles_model::python_repr(&format!(
                "Unknown store {}",
                particles_model::python_repr(store)
            ));
            Err(failure(if listed {
                format!("Error reading resource {uri}: {inner}")
            } else {
                format!(
                    "Error creating resource from template: Error creating resource from \
                     template: {inner}"
                )
            }))
        }
        DigestOutcome::Failed(why) | DigestOutcome::Refused(why) => {
            Err(failure(format!("Error reading resource {uri}: {why}")))
        }
    }
}
