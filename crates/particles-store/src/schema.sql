-- The Particles store schema of linkedparticles 1.214.1 at its migration head (alembic
-- revision 059): every table and index `particles db init` creates, statement for
-- statement as its sqlite_master holds them (column order and defaults included, as
-- the migrations left them), so that a store created here is one the reference's
-- every entry point opens. Regenerate from a store the reference creates:
--   DATABASE_URL=sqlite+aiosqlite:////tmp/ref.db particles db init
--   sqlite3 /tmp/ref.db "SELECT sql || ';' FROM sqlite_master WHERE sql IS NOT NULL
--     AND type IN ('table', 'index') ORDER BY rowid"
-- The change-journal triggers are installed by journal::install_journal and the
-- version stamp is written by store::create_store. Rows the migrations seed (eight
-- source-trust rules) are not: a store created here ranks as a store the reference
-- creates with `create_all` (its tests' and benchmark generator's stores) does.
CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);
CREATE TABLE corpus_entries (
	entry_id VARCHAR NOT NULL, 
	uri_r VARCHAR, 
	source_type VARCHAR NOT NULL, 
	mutability VARCHAR NOT NULL, 
	fetch_policy VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	deposited_by VARCHAR NOT NULL, 
	tags_json TEXT NOT NULL, contributors_json TEXT, document_supersession_json TEXT, 
	PRIMARY KEY (entry_id)
);
CREATE INDEX ix_corpus_entries_uri_r ON corpus_entries (uri_r);
CREATE TABLE particle_provenance_edges (
	particle_id VARCHAR NOT NULL, 
	corpus_entry_id VARCHAR NOT NULL, 
	snapshot_id VARCHAR, chunk_hash VARCHAR, 
	PRIMARY KEY (particle_id, corpus_entry_id)
);
CREATE INDEX ix_prov_edges_entry ON particle_provenance_edges (corpus_entry_id);
CREATE TABLE trust_statements (
	statement_id VARCHAR NOT NULL, 
	domain VARCHAR NOT NULL, 
	source_ref_type VARCHAR NOT NULL, 
	source_ref_value VARCHAR NOT NULL, 
	trust_rank FLOAT NOT NULL, 
	policy_provenance VARCHAR NOT NULL, 
	asserted_by VARCHAR NOT NULL, 
	asserted_at DATETIME NOT NULL, 
	basis TEXT, 
	review_id VARCHAR, 
	PRIMARY KEY (statement_id)
);
CREATE INDEX ix_trust_domain ON trust_statements (domain);
CREATE INDEX ix_trust_domain_ref ON trust_statements (domain, source_ref_type, source_ref_value);
CREATE TABLE subjects (
	id VARCHAR NOT NULL, 
	canonical_name TEXT NOT NULL, 
	description TEXT, 
	aliases_json TEXT NOT NULL, 
	external_ids_json TEXT NOT NULL, 
	created_at DATETIME NOT NULL, 
	asserted_by VARCHAR NOT NULL, subject_class VARCHAR, contributors_json TEXT, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_subjects_canonical_name ON subjects (canonical_name);
CREATE TABLE particle_subjects (
	particle_id VARCHAR NOT NULL, 
	subject_id VARCHAR NOT NULL, 
	PRIMARY KEY (particle_id, subject_id)
);
CREATE INDEX ix_particle_subjects_subject_id ON particle_subjects (subject_id);
CREATE TABLE wikidata_label_cache (
	qid VARCHAR NOT NULL, 
	label TEXT NOT NULL, 
	cached_at DATETIME NOT NULL, 
	PRIMARY KEY (qid)
);
CREATE TABLE source_trust (
	id VARCHAR NOT NULL, 
	scope VARCHAR NOT NULL, 
	pattern VARCHAR NOT NULL, 
	score FLOAT, 
	modifier FLOAT, 
	rationale TEXT, 
	created_at DATETIME NOT NULL, 
	asserted_by VARCHAR NOT NULL, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_source_trust_pattern ON source_trust (pattern);
CREATE INDEX ix_prov_edges_chunk ON particle_provenance_edges (corpus_entry_id, chunk_hash);
CREATE TABLE particle_relations (
	particle_a VARCHAR NOT NULL, 
	particle_b VARCHAR NOT NULL, 
	relation_type VARCHAR NOT NULL, 
	created_by VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	confidence FLOAT DEFAULT '1.0' NOT NULL, 
	PRIMARY KEY (particle_a, particle_b, relation_type), 
	CONSTRAINT uq_particle_relations_pair_type UNIQUE (particle_a, particle_b, relation_type)
);
CREATE INDEX ix_particle_relations_a ON particle_relations (particle_a, relation_type);
CREATE INDEX ix_particle_relations_b ON particle_relations (particle_b, relation_type);
CREATE TABLE taxonomies (
	taxonomy_id VARCHAR NOT NULL, 
	name TEXT NOT NULL, 
	version VARCHAR NOT NULL, 
	author VARCHAR NOT NULL, 
	domain VARCHAR, 
	corpus_entry_id VARCHAR, 
	published_at DATETIME NOT NULL, 
	PRIMARY KEY (taxonomy_id)
);
CREATE TABLE tag_nodes (
	taxonomy_id VARCHAR NOT NULL, 
	tag TEXT NOT NULL, 
	parent TEXT, 
	aliases_json TEXT DEFAULT '[]' NOT NULL, 
	description TEXT, 
	PRIMARY KEY (taxonomy_id, tag)
);
CREATE INDEX ix_tag_nodes_taxonomy_parent ON tag_nodes (taxonomy_id, parent);
CREATE TABLE particle_tag_edges (
	particle_id VARCHAR NOT NULL, 
	tag TEXT NOT NULL, 
	PRIMARY KEY (particle_id, tag)
);
CREATE INDEX ix_particle_tag_edges_tag ON particle_tag_edges (tag);
CREATE TABLE corpus_follow_edges (
	via_entry_id VARCHAR NOT NULL, 
	target_entry_id VARCHAR NOT NULL, 
	link_type VARCHAR NOT NULL, 
	discovered_at DATETIME NOT NULL, 
	PRIMARY KEY (via_entry_id, target_entry_id, link_type)
);
CREATE INDEX ix_corpus_follow_edges_target ON corpus_follow_edges (target_entry_id);
CREATE TABLE synthesis_cache (
	subject_id VARCHAR NOT NULL, 
	input_hash VARCHAR NOT NULL, 
	prompt_version VARCHAR NOT NULL, 
	article_body TEXT NOT NULL, 
	generated_at DATETIME NOT NULL, 
	layer_b_verdict VARCHAR, 
	quality_notes TEXT NOT NULL, 
	PRIMARY KEY (subject_id, input_hash, prompt_version)
);
CREATE TABLE operator_events (
	event_id VARCHAR NOT NULL, 
	occurred_at DATETIME NOT NULL, 
	actor VARCHAR NOT NULL, 
	event_type VARCHAR NOT NULL, 
	reason TEXT, 
	payload JSON, 
	PRIMARY KEY (event_id)
);
CREATE INDEX ix_operator_events_type ON operator_events (event_type);
CREATE INDEX ix_operator_events_occurred ON operator_events (occurred_at);
CREATE TABLE operator_event_refs (
	event_id VARCHAR NOT NULL, 
	ref_kind VARCHAR NOT NULL, 
	ref_id VARCHAR NOT NULL, 
	PRIMARY KEY (event_id, ref_kind, ref_id)
);
CREATE INDEX ix_event_refs_record ON operator_event_refs (ref_kind, ref_id);
CREATE TABLE trust_lenses (
	lens_id VARCHAR NOT NULL, 
	name VARCHAR NOT NULL, 
	version INTEGER NOT NULL, 
	publisher VARCHAR, 
	description TEXT, 
	corpus_entry_id VARCHAR, 
	materialised_at DATETIME NOT NULL, 
	PRIMARY KEY (lens_id)
);
CREATE UNIQUE INDEX ix_trust_lenses_name ON trust_lenses (name);
CREATE TABLE trust_lens_adoptions (
	lens_name VARCHAR NOT NULL, 
	adopted_at DATETIME NOT NULL, 
	adopted_by VARCHAR NOT NULL, 
	PRIMARY KEY (lens_name)
);
CREATE TABLE url_mentions (
	source_entry_id VARCHAR NOT NULL, 
	canonical_url VARCHAR NOT NULL, 
	discovered_at DATETIME NOT NULL, 
	target_entry_id VARCHAR, 
	PRIMARY KEY (source_entry_id, canonical_url)
);
CREATE INDEX ix_url_mentions_canonical ON url_mentions (canonical_url);
CREATE INDEX ix_url_mentions_target ON url_mentions (target_entry_id);
CREATE TABLE url_suggestion_state (
	canonical_url VARCHAR NOT NULL, 
	suppressed_until DATETIME NOT NULL, 
	PRIMARY KEY (canonical_url)
);
CREATE TABLE extractor_calibrations (
	extractor_id VARCHAR NOT NULL, 
	provider_model VARCHAR NOT NULL, 
	calibration_json TEXT NOT NULL, 
	PRIMARY KEY (extractor_id, provider_model)
);
CREATE TABLE "extractor_records" (
	extractor_id VARCHAR NOT NULL, 
	name TEXT NOT NULL, 
	version TEXT NOT NULL, 
	applicability_json TEXT DEFAULT '[]' NOT NULL, 
	trust_weight FLOAT DEFAULT '0.7' NOT NULL, 
	registered_by TEXT NOT NULL, 
	registered_at VARCHAR NOT NULL, conformance_required_failure BOOLEAN, 
	PRIMARY KEY (extractor_id)
);
CREATE TABLE "trust_lens_entries" (
	id VARCHAR NOT NULL, 
	rank_lift FLOAT, 
	lens_id VARCHAR NOT NULL, 
	entry_kind VARCHAR NOT NULL, 
	domain VARCHAR, 
	source_type VARCHAR, 
	trust_rank FLOAT, 
	basis TEXT, 
	pattern VARCHAR, 
	score FLOAT, 
	modifier FLOAT, 
	extractor_id VARCHAR, 
	weight FLOAT, 
	half_life_days FLOAT, 
	floor FLOAT, 
	half_life_uses_days FLOAT, modality VARCHAR, modality_when VARCHAR, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_trust_lens_entries_lens_id ON trust_lens_entries (lens_id);
CREATE TABLE "utility_events" (
	id VARCHAR NOT NULL, 
	particle_id VARCHAR NOT NULL, 
	session_id VARCHAR NOT NULL, 
	observed_at DATETIME NOT NULL, 
	match_basis VARCHAR, 
	source VARCHAR DEFAULT 'mined' NOT NULL, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_utility_events_session_id ON utility_events (session_id);
CREATE INDEX ix_utility_events_particle_id ON utility_events (particle_id);
CREATE UNIQUE INDEX uq_utility_events_particle_session ON utility_events (particle_id, session_id);
CREATE TABLE curation_snapshots (
	snapshot_id VARCHAR NOT NULL, 
	built_at DATETIME NOT NULL, 
	scope VARCHAR NOT NULL, 
	semantic BOOLEAN DEFAULT 0 NOT NULL, 
	semantic_degraded BOOLEAN DEFAULT 0 NOT NULL, 
	per_kind_scope_json TEXT DEFAULT '{}' NOT NULL, 
	cards_json TEXT NOT NULL, 
	card_count INTEGER DEFAULT '0' NOT NULL, 
	PRIMARY KEY (snapshot_id)
);
CREATE INDEX ix_curation_snapshots_built_at ON curation_snapshots (built_at);
CREATE TABLE observer_scope_statements (
	target_kind VARCHAR NOT NULL, 
	target_id VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	created_by VARCHAR NOT NULL, 
	PRIMARY KEY (target_kind, target_id)
);
CREATE TABLE "particles" (
	id VARCHAR NOT NULL, 
	content TEXT NOT NULL, 
	confidence_value FLOAT NOT NULL, 
	confidence_variance FLOAT, 
	confidence_calibration_source VARCHAR NOT NULL, 
	confidence_calibration_method VARCHAR, 
	confidence_calibration_ref VARCHAR, 
	uncertainty_nature VARCHAR NOT NULL, 
	asserted_by VARCHAR NOT NULL, 
	asserted_at DATETIME NOT NULL, 
	status VARCHAR NOT NULL, 
	status_reason VARCHAR, 
	schema_version VARCHAR NOT NULL, 
	particle_type VARCHAR NOT NULL, 
	valid_until DATETIME, 
	supersedes VARCHAR, 
	provenance_json TEXT NOT NULL, 
	extractor_ref_json TEXT, 
	embedding_json TEXT, 
	subject_ids_json TEXT DEFAULT '[]' NOT NULL, 
	properties_json TEXT, 
	domain_hint TEXT, 
	context_fingerprint VARCHAR(64), 
	tags_json TEXT, 
	contributors_json TEXT, 
	embedding_model_id TEXT, 
	assertion_modality VARCHAR DEFAULT 'FALSIFIABLE' NOT NULL, 
	retired_at DATETIME, 
	content_norm_hash VARCHAR(64), 
	structured_claim_json TEXT, 
	structurizer_id TEXT, 
	structurizer_version TEXT, 
	structured_claim_generated_at DATETIME, 
	canonical_form VARCHAR DEFAULT 'PROSE' NOT NULL, 
	extraction_provider_model TEXT, 
	born_retired BOOLEAN DEFAULT 0 NOT NULL, modality_classifier TEXT, modality_classifier_model TEXT, modality_classified_at DATETIME, valid_from DATETIME, valid_kind VARCHAR, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_particles_status_confidence ON particles (status, confidence_value);
CREATE INDEX ix_particles_status_content_hash ON particles (status, content_norm_hash);
CREATE INDEX ix_particles_status_domain_hint ON particles (status, domain_hint);
CREATE INDEX ix_particles_status ON particles (status);
CREATE INDEX ix_particles_status_provider_model ON particles (status, extraction_provider_model);
CREATE INDEX ix_particles_confidence_value ON particles (confidence_value);
CREATE TABLE "snapshots" (
	snapshot_id VARCHAR NOT NULL, 
	entry_id VARCHAR NOT NULL, 
	captured_at DATETIME NOT NULL, 
	content_hash VARCHAR NOT NULL, 
	etag VARCHAR, 
	last_modified_at DATETIME, 
	warc_record_type VARCHAR NOT NULL, 
	archive_path VARCHAR, 
	refers_to VARCHAR, 
	extraction_status VARCHAR NOT NULL, 
	author_id VARCHAR, 
	author_role VARCHAR, 
	content_published_at DATETIME, 
	extraction_started_at DATETIME, 
	superseded_by_snapshot_id VARCHAR, 
	extraction_attempts INTEGER DEFAULT '0' NOT NULL, 
	extracted_through INTEGER, 
	extraction_components_json TEXT, 
	resume_whole BOOLEAN DEFAULT 0 NOT NULL, 
	PRIMARY KEY (snapshot_id)
);
CREATE INDEX ix_snapshots_content_hash ON snapshots (content_hash);
CREATE INDEX ix_snapshots_entry_id ON snapshots (entry_id);
CREATE INDEX ix_snapshots_entry_extraction ON snapshots (entry_id, extraction_status);
CREATE INDEX ix_snapshots_extraction_status ON snapshots (extraction_status);
CREATE TABLE vocabulary_versions (
	id VARCHAR NOT NULL, 
	name VARCHAR NOT NULL, 
	version INTEGER NOT NULL, 
	prefix VARCHAR NOT NULL, 
	namespace VARCHAR NOT NULL, 
	publisher VARCHAR, 
	term_count INTEGER NOT NULL, 
	document_json TEXT NOT NULL, 
	corpus_entry_id VARCHAR, 
	materialised_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_vocabulary_name_version UNIQUE (name, version)
);
CREATE INDEX ix_vocabulary_versions_name ON vocabulary_versions (name);
CREATE TABLE vocabulary_adoptions (
	vocabulary_name VARCHAR NOT NULL, 
	lens_name VARCHAR NOT NULL, 
	adopted_at DATETIME NOT NULL, 
	adopted_by VARCHAR NOT NULL, 
	PRIMARY KEY (vocabulary_name, lens_name)
);
CREATE INDEX ix_particles_status_modality_classifier ON particles (status, modality_classifier);
CREATE TABLE session_exposures (
	id INTEGER NOT NULL, 
	session_id VARCHAR NOT NULL, 
	recorded_at DATETIME NOT NULL, 
	source VARCHAR(16) NOT NULL, 
	action VARCHAR(8) NOT NULL, 
	project_key VARCHAR NOT NULL, 
	observer_scope_applied BOOLEAN NOT NULL, 
	beliefs TEXT NOT NULL, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_session_exposures_session ON session_exposures (session_id, recorded_at);
CREATE INDEX ix_particles_status_valid_from ON particles (status, valid_from);
CREATE TABLE "probe_verdicts" (
	id INTEGER NOT NULL, 
	probe_kind VARCHAR(32) NOT NULL, 
	prompt_hash VARCHAR(64) NOT NULL, 
	hash_a VARCHAR(64) NOT NULL, 
	hash_b VARCHAR(64) NOT NULL, 
	verdict BOOLEAN NOT NULL, 
	model VARCHAR NOT NULL, 
	recorded_at DATETIME NOT NULL, 
	answer TEXT, 
	rung VARCHAR(96), 
	rung_verdict VARCHAR(16), 
	shadow BOOLEAN DEFAULT 0 NOT NULL, temperature VARCHAR(16), 
	PRIMARY KEY (id)
);
CREATE INDEX ix_probe_verdicts_key ON probe_verdicts (probe_kind, prompt_hash, hash_a, hash_b);
CREATE TABLE particle_changes (
	seq INTEGER NOT NULL, 
	particle_id VARCHAR NOT NULL, 
	token BLOB NOT NULL, 
	PRIMARY KEY (seq)
);
CREATE INDEX ix_particles_status_schema_version ON particles (status, schema_version);
CREATE TABLE extraction_refusals (
	content_hash VARCHAR NOT NULL, 
	purpose VARCHAR NOT NULL, 
	provider_model VARCHAR NOT NULL, 
	snapshot_id VARCHAR NOT NULL, 
	entry_id VARCHAR NOT NULL, 
	category VARCHAR, 
	first_refused_at DATETIME NOT NULL, 
	last_refused_at DATETIME NOT NULL, 
	refusals INTEGER NOT NULL, 
	PRIMARY KEY (content_hash, purpose, provider_model)
);
CREATE TABLE subject_aliases (
	subject_id VARCHAR NOT NULL, 
	alias_key TEXT NOT NULL, 
	alias TEXT NOT NULL, 
	PRIMARY KEY (subject_id, alias_key)
);
CREATE INDEX ix_subject_aliases_alias_key ON subject_aliases (alias_key);
CREATE TABLE rule_source_roots (
	path VARCHAR NOT NULL, 
	recorded_at DATETIME NOT NULL, 
	recorded_by VARCHAR NOT NULL, 
	PRIMARY KEY (path)
);
