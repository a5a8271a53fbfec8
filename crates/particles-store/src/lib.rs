//! Reads a Particles SQLite store the way the reference (`linkedparticles` 1.214.1)
//! does, so the ranking built on top sees the same rows in the same order.
//!
//! [`Store::open_read_only`] opens a store without any chance of writing it. The
//! [`load_active`] loader returns the ACTIVE candidates ordered by
//! `(confidence_value, rowid)`, the order every tie in the final ranking falls back
//! on. The remaining functions read what scoring needs once per query: the policy
//! rows, each candidate's source facts, premise statuses and co-evidential edges,
//! every `IN (...)` lookup cut into chunks of [`ID_CHUNK`] ids by one helper.
//!
//! This crate owns every SQL statement on a store: other crates read and write
//! through typed functions ([`Writer`] and [`WriteTransaction`] for writes, the
//! row structs of the tables beside `particles` such as [`SubjectRow`]), never
//! through a connection.
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
#![forbid(unsafe_code)]
#![warn(clippy::unwrap_used)]

mod chunked;
mod claims;
mod contested;
mod corpus;
mod embedding;
mod error;
mod fault;
mod guard;
mod history;
mod journal;
mod loader;
mod memo;
mod observer;
mod policy;
mod profile;
mod pyjson;
mod recall;
pub mod replica;
mod response;
mod row;
mod rowjson;
mod scans;
mod sources;
mod store;
mod subjects;
mod tables;
mod vocabulary;
mod writer;

pub use crate::{
    chunked::ID_CHUNK,
    claims::{load_active_claims, load_claims_as_of, load_window_scope, ScopeRow},
    contested::inconsistency_backrefs,
    corpus::{
        corpus_entry, resolve_snapshot, snapshot_by_id, CorpusEntryRecord, SnapshotRecord,
        SnapshotResolution,
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
        active_ids_spread, count_active, load_active, load_cacheable, load_cacheable_by_ids,
        particles_at_rowids, particles_by_ids, subject_ids_of, CandidateLoader, Loaded,
        UncachedLoader,
    },
    policy::load_policy_rows,
    profile::LoadCounters,
    pyjson::{dumps as python_json_dumps, dumps_vector as python_json_vector},
    recall::{
        active_derived_particles, active_particle_by_id_or_prefix, held_snapshot_tags,
        newest_snapshot_beliefs, particles_with_status, run_events, subject_by_name, subject_names,
        use_events, RunEvent, UseEvent,
    },
    scans::{
        active_embedding_json_length, embedding_texts, existing_particle_ids,
        particle_ids_in_rowid_order, sqlite_version,
    },
    sources::{
        assemble_source_facts, claim_coverage_counts, co_evidential_edges, co_evidential_edges_of,
        expand_tags, particle_ids_for_tags, premise_statuses, shared_source_facts,
        shared_source_facts_by_slot, snapshot_source_facts, source_facts, subject_is_known,
        subject_particle_ids, tag_is_known, SnapshotFacts,
    },
    store::{create_store, Store, ALEMBIC_HEAD},
    subjects::{resolve_subject, MatchedBy, SubjectCandidate, SubjectResolution},
    tables::{CorpusEntryRow, OnConflict, RelationRow, SnapshotRow, SubjectRow},
    vocabulary::{
        adopted_vocabularies, count_events_by_type, subject_classes, subject_headers, ExternalLink,
        SubjectHeader, VocabularyDocument, VocabularyTerm,
    },
    writer::{content_hash, WriteTransaction, Writer},
};
pub use crate::{
    observer::{
        any_widening, co_evidential_neighbours, entry_currency, observer_scope_rescoped,
        stored_provenance, widened_ids, EntryCurrency, StoredRef, WideningTarget,
    },
    response::{
        active_claim_count, adopted_lens_names, coverage_gap_entries, entry_source_facts,
        find_subject, incoming_relations, inconsistency_records, operator_pinned_ids,
        outgoing_relations, settle_subject_claims, SubjectMatch, SubjectRecord,
    },
};
