//! `query --response-json`: the reference's whole `QueryResponse` (the semantic
//! path's response, answer text left empty) as one JSON object on stdout.

use std::io::Write;

use anyhow::Result;
use particles_model::{Timestamp, ValidRequest};
use particles_query::{run_semantic, QueryInput, ResponseSettings};
use particles_store::{CandidateLoader, Store};

use crate::{query::check_vector, UsageError};

/// Ranks `request` through `loader`, builds its response in the same snapshot and
/// prints it as one line of JSON. The outcome is returned for the warnings.
pub(crate) fn print_response(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    request: &ValidRequest,
    vector: Option<&[f32]>,
    now: Option<Timestamp>,
) -> Result<particles_query::QueryOutcome> {
    if let Some(vector) = vector {
        check_vector(vector)?;
    }
    let now = now.unwrap_or_else(Timestamp::now);
    let input = QueryInput::new(request, vector, now);
    let (outcome, response) = run_semantic(store, loader, &input, &ResponseSettings::default())
        .map_err(|error| match error {
            particles_query::Error::UnsupportedMode { .. } => {
                anyhow::Error::new(UsageError(error.to_string()))
            }
            error => anyhow::Error::new(error)
                .context(format!("query on {} failed", store.path().display())),
        })?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    serde_json::to_writer(&mut out, &response)?;
    writeln!(out)?;
    out.flush()?;
    Ok(outcome)
}
