//! Reads a Particles SQLite store the way the reference (`linkedparticles` 1.214.1)
//! does, so the ranking built on top sees the same rows in the same order.
//!
//! [`Store::open_read_only`] opens a store without any chance of writing it. The
//! [`load_active`] loader returns the ACTIVE candidates ordered by
//! `(confidence_value, rowid)`, the order every tie in the final ranking falls back
//! on. The remaining functions read what scoring needs once per query: the policy
//! rows, each candidate's source facts, premise statuses and co-evidential edges,
//! every `IN (...)` lookup cut into chunks of [`ID_CHUNK`] ids.
//!
//! ```no_run
//! use particles_store::{load_active, Store};
//! let store = Store::open_read_only("beliefs.db".as_ref())?;
//! particles_store::check_schema_version(&store)?;
//! let candidates = load_active(&store, 0.0, None)?;
//! println!("{} candidates", candidates.rows.len());
//! # Ok::<(), particles_store::Error>(())
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

mod contested;
mod corpus;
mod embedding;
mod error;
mod guard;
mod history;
mod journal;
mod loader;
mod policy;
mod profile;
mod pyjson;
mod row;
mod sources;
mod store;
mod writer;

pub use crate::{
    contested::inconsistency_backrefs,
    corpus::{
        corpus_entry, resolve_snapshot, snapshot_by_id, CorpusEntryRow, SnapshotResolution,
        SnapshotRow,
    },
    embedding::{decode_embedding, EmbeddingError},
    error::{Error, Result},
    guard::{check_schema_version, SchemaMismatch},
    history::{
        born_retired_ids, count_active_undated, load_as_of, load_window, retirement_events,
        successor_rows, valid_from_by_ids, HistoricalRow, SuccessorRow,
    },
    journal::{
        changed_since, install_journal, journal_installed, read_head, token_at, InstallReport,
        JournalHead, JOURNAL_RETENTION, TRIGGER_NAMES,
    },
    loader::{
        count_active, load_active, load_cacheable, load_cacheable_by_ids, particles_by_ids,
        CandidateLoader, Loaded, UncachedLoader, ID_CHUNK,
    },
    policy::load_policy_rows,
    profile::LoadCounters,
    pyjson::{dumps as python_json_dumps, dumps_vector as python_json_vector},
    sources::{
        claim_coverage_counts, co_evidential_edges, expand_tags, particle_ids_for_tags,
        premise_statuses, source_facts, subject_is_known, subject_particle_ids, tag_is_known,
    },
    store::{create_store, Store},
    writer::{content_hash, WriteTransaction, Writer},
};
