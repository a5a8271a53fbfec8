//! `query` flags read as the reference's `particles query` reads them
//! (`api/cli/query.py`; spec: config-and-stores §6): `--subject` resolved by id,
//! id prefix, name or alias; `--assertion-modality` trimmed and upper-cased;
//! `--audience` case-sensitive. The messages are the reference's.

use anyhow::{Context, Result};
use particles_model::{python_repr, AssertionModality, Audience};
use particles_store::{Store, SubjectResolution};

use crate::UsageError;

/// What a user of the reference's `particles query` finds here (`query --help`).
/// A test compares the flag names with the reference's own `--help`.
pub(crate) const REFERENCE_FLAGS: &str = "\
Coming from the reference's `particles query`:
  taken as it takes them: QUESTION, --min-confidence, --top-k, --subject (an id, id
    prefix, name or alias, resolved in the default store), --tag,
    --include-ancestors, --include-document-meta, --include-non-asserted,
    --assertion-modality (trimmed, upper-cased), --audience, --store (handles,
    repeatable; store files too), --predicate, --object-eq, --object-gt,
    --object-lt, --object-contains, --during, --on, --as-of, --count, --group-by,
    --min-effective-confidence, --predicates, --vocabulary, --format, --grounded,
    --ungrounded, --contestedness, --show-particles, --show-source (the last three
    print the reference's layout: hit table, answer, footers, passages)
  accepted, not applied: (none)
  not yet: (none)
  this engine's own: --config, --vector-file, --no-embedding, --model-dir, --now,
    --json, --response-json, --subject-id, --include-agreement, --observer-project,
    --uncertainty-nature, --recency-window-days, --sidecar-dir, --no-sidecar,
    --apply-utility, --apply-owner, --exclude-source-tag, --code-symbol-rank-weight
    (the reference's retrieve_ranked keywords its memory projection passes)";

/// `--assertion-modality` as the reference's CLI reads it: `strip()`, `upper()`,
/// then one of the four values, else its message (a usage error here).
pub(crate) fn assertion_modality(text: Option<&str>) -> Result<Option<AssertionModality>> {
    let Some(text) = text else {
        return Ok(None);
    };
    particles_pytext::upper(particles_pytext::strip(text)).parse().map(Some).map_err(|_| {
        UsageError(format!(
            "Unknown assertion modality {}. Valid: FALSIFIABLE, EVALUATIVE, EXPERIENTIAL, CONSTITUTIVE.",
            python_repr(text)
        ))
        .into()
    })
}

/// `--audience`, exact as the reference's `AudienceHint(value)` takes it; its
/// refusal is the reference's `Invalid query request` line (a usage error here).
pub(crate) fn audience(text: &str) -> Result<Audience> {
    match text {
        "GENERAL" => Ok(Audience::General),
        "EXPERT" => Ok(Audience::Expert),
        "REGULATORY" => Ok(Audience::Regulatory),
        other => Err(UsageError(format!(
            "Invalid query request: {} is not a valid AudienceHint",
            python_repr(other)
        ))
        .into()),
    }
}

/// `--subject` resolved as the reference's CLI resolves it (§6.3): in the default
/// store whatever `--store` names, except when every `--store` is a store file (a
/// query the reference cannot express), then in the first of them. No match or
/// several matches fail with the reference's message (exit code 1).
pub(crate) fn subject(
    typed: Option<&str>,
    stores: &[String],
    config: &crate::config_cmd::Configured,
) -> Result<Option<String>> {
    let Some(typed) = typed else {
        return Ok(None);
    };
    let selection = config.stores(stores)?;
    let only_files = !stores.is_empty() && selection.targets.iter().all(|t| t.handle.is_none());
    let target = if only_files {
        selection.targets[0].clone()
    } else {
        config.stores(&[])?.targets[0].clone()
    };
    let store = Store::open_read_only(&target.path)?;
    let resolution = store
        .read_snapshot(|store| particles_store::resolve_subject(store, typed))
        .with_context(|| format!("cannot resolve --subject in {}", target.path.display()))?;
    match resolution {
        SubjectResolution::Found(id) => Ok(Some(id)),
        refused => Err(anyhow::anyhow!(refused
            .refusal(typed)
            .unwrap_or_else(|| format!("--subject {typed:?} was refused")))),
    }
}

/// A note on stderr when the configuration puts the reference's CLI in remote mode
/// (a non-empty `engine.base_url`): this engine reads the local stores all the same.
pub(crate) fn note_remote_mode(config: &crate::config_cmd::Configured) {
    if let Some(url) = config.loaded.config().engine.base_url.as_deref() {
        if !url.is_empty() {
            eprintln!(
                "note: engine.base_url is set ({url}): the reference's `particles query` would ask \
                 that engine; particles-rs reads the local stores"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modality_is_trimmed_and_upper_cased() {
        assert_eq!(
            assertion_modality(Some(" evaluative\u{1f}")).unwrap(),
            Some(AssertionModality::Evaluative)
        );
        let error = assertion_modality(Some("maybe ")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Unknown assertion modality 'maybe '. Valid: FALSIFIABLE, EVALUATIVE, EXPERIENTIAL, CONSTITUTIVE."
        );
    }

    #[test]
    fn audience_is_case_sensitive() {
        assert_eq!(audience("EXPERT").unwrap(), Audience::Expert);
        assert_eq!(
            audience("expert").unwrap_err().to_string(),
            "Invalid query request: 'expert' is not a valid AudienceHint"
        );
    }
}
