//! Gathering: the candidates of one store filtered, scanned and scored, in final
//! order, before any cut. A single-store query cuts and collapses what this
//! returns; a federated query merges what each store returns.

use std::{
    collections::{hash_map::Entry, HashMap, HashSet},
    sync::Arc,
    time::Instant,
};

use particles_candidates::{CandidateSet, Selection};
use particles_model::policy::SourceFacts;
use particles_model::{Timestamp, ValidRequest};
use particles_rank::{ClaimFilters, ClaimMatch, Factors, Policies, QueryVector};
use particles_store::Store;

use crate::{
    collect::{BoundOrder, Scored, TopK},
    scan::{exact_similarity, scan_candidates, Scanned, Similarities},
    Error, QueryStats, Result, StageTimings, WorkCounters,
};

/// What the claim filters did to the candidates.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClaimCounts {
    pub(crate) matched: usize,
    pub(crate) not_comparable: usize,
}

/// What the filters that read the store did.
#[derive(Default)]
pub(crate) struct StoreFiltered {
    survivors: Vec<usize>,
    claims: Option<ClaimCounts>,
    observer: Option<particles_model::response::ObserverScopeNote>,
}

/// A store's scored candidates and what explains them.
pub(crate) struct Gathered {
    /// Every fully scored candidate, in final order (score descending, loader
    /// order among equals). Candidates whose bound could not reach the k-th score
    /// (less the prune margin) are absent.
    pub(crate) scored: Vec<Scored>,
    /// With [`Gather::scores_only_beyond_cut`], the scores of the candidates
    /// scored below the k-th best of their moment (never in the cut), unordered.
    pub(crate) beyond: Vec<f64>,
    /// Counts, without `collapsed` (the caller's).
    pub(crate) stats: QueryStats,
    /// With claim filters, their counts.
    pub(crate) claims: Option<ClaimCounts>,
    /// With a project observer, its note.
    pub(crate) observer: Option<particles_model::response::ObserverScopeNote>,
    /// The scanned survivors (rows of the selection's set), in loader order: what a
    /// federation looks a pruned candidate up in. Shared with the other
    /// requests of a pass that kept the same rows.
    pub(crate) survivors: std::sync::Arc<particles_candidates::scratch::Recycled<usize>>,
    /// The similarities of the survivors (parallel), with a query vector: exact,
    /// or intervals read from the half copy.
    pub(crate) similarities: Option<Similarities>,
    /// The score bounds of the survivors (parallel): what the truncation band is
    /// picked by (`crate::band`).
    pub(crate) bounds: particles_candidates::scratch::Recycled<f64>,
    /// The instant decay was evaluated at.
    pub(crate) now: Timestamp,
    /// Where the scoring walk stopped, when it stopped early.
    pub(crate) stop: Option<crate::ScanStop>,
}

/// Everything one gather reads: the store's snapshot, the request, the policies
/// (the viewer's, in a federation) and the query vector.
pub(crate) struct Gather<'a> {
    pub(crate) store: &'a Store,
    pub(crate) request: &'a ValidRequest,
    pub(crate) selection: &'a Selection,
    pub(crate) policies: &'a Policies,
    pub(crate) query: Option<&'a QueryVector>,
    pub(crate) now: Timestamp,
    pub(crate) exhaustive: bool,
    /// Keep every scored candidate whole, not only the best `top_k` (the recall
    /// options re-rank them all).
    pub(crate) keep_all: bool,
    /// Candidates are skipped only when their bound is below the k-th score less
    /// this margin, so the truncation warning sees every score it counts.
    pub(crate) prune_margin: f64,
    /// Keep only the score of a candidate that cannot enter the cut (a single
    /// store's query, which reads nothing else of it); a federation keeps every
    /// scored candidate whole (it decides which store owns an id by them).
    pub(crate) scores_only_beyond_cut: bool,
    /// `observer_scope.harness_tags`.
    pub(crate) harness_tags: &'a [String],
    pub(crate) timings: &'a mut StageTimings,
    pub(crate) work: &'a mut WorkCounters,
}

impl Gather<'_> {
    /// Filters, scans and scores the selection.
    pub(crate) fn run(mut self) -> Result<Gathered> {
        let mut stats = QueryStats {
            candidates: self.selection.rows.len(),
            skipped_other_model: self.selection.skipped_other_model,
            ..QueryStats::default()
        };
        let (scanned, filtered) = self.scan(&mut stats)?;
        let (scored, beyond, stop) = self.collect(&scanned, &mut stats)?;
        Ok(Gathered {
            stop,
            scored,
            beyond,
            stats,
            claims: filtered.claims,
            observer: filtered.observer,
            survivors: scanned.survivors,
            similarities: scanned.similarities,
            bounds: scanned.bounds,
            now: self.now,
        })
    }

    /// Scores what a shared pass ([`crate::scan::scan_lanes`]) scanned for this
    /// request: the collector part of [`Gather::run`]. Only for requests whose
    /// filters all run in the scan (no tag or claim filter).
    pub(crate) fn collect_scanned(mut self, scanned: Scanned) -> Result<Gathered> {
        let mut stats = QueryStats {
            candidates: self.selection.rows.len(),
            skipped_other_model: self.selection.skipped_other_model,
            filtered_out: self.selection.rows.len() - scanned.survivors.len(),
            ..QueryStats::default()
        };
        let (scored, beyond, stop) = self.collect(&scanned, &mut stats)?;
        Ok(Gathered {
            stop,
            scored,
            beyond,
            stats,
            claims: None,
            observer: None,
            survivors: scanned.survivors,
            similarities: scanned.similarities,
            bounds: scanned.bounds,
            now: self.now,
        })
    }

    /// Scores the given survivors (positions into `gathered.survivors`) whatever
    /// their bound: the federation's look at a candidate another store pruned.
    /// `None` for one below `min_confidence`.
    pub(crate) fn score_positions(
        self,
        gathered: &Gathered,
        positions: &[usize],
    ) -> Result<Vec<Option<Scored>>> {
        let set = self.selection.set.as_ref();
        let rows: Vec<usize> = positions.iter().map(|&p| gathered.survivors[p]).collect();
        let mut lookups = FactLookups::default();
        let facts = lookups.read(self.store, set, &rows, self.policies, self.timings)?;
        let mut out = Vec::with_capacity(rows.len());
        for ((&position, &row), (source, discount)) in positions.iter().zip(&rows).zip(facts) {
            let factors =
                particles_rank::factors(set, row, &source, discount, self.policies, self.now)?;
            let similarity = exact_similarity(
                gathered.similarities.as_ref(),
                position,
                set,
                row,
                self.query,
            )?;
            self.work.candidates_scored += 1;
            out.push(
                particles_rank::score_with_similarity(
                    set,
                    row,
                    &factors,
                    similarity,
                    self.request.min_confidence,
                    self.policies,
                )
                .map(|ranked| Scored {
                    position,
                    ranked,
                    factors,
                    source,
                }),
            );
        }
        Ok(out)
    }

    /// Filters, cosine and bounds in one pass. Without tag or claim filters (which
    /// read the store) the per-row filters run inside the parallel scan; their
    /// time is then reported under `scoring`.
    fn scan(&mut self, stats: &mut QueryStats) -> Result<(Scanned, StoreFiltered)> {
        let set = self.selection.set.as_ref();
        let rows = &self.selection.rows;
        let request = self.request;
        let now = self.now;
        let at_most_one = self.policies.factors_at_most_one();
        let started = Instant::now();
        let store_filters = !request.tags.is_empty()
            || request.has_claim_filters()
            || request.observer_project.is_some();
        if store_filters {
            let filtered = self.filter_in_store(set, rows)?;
            stats.filtered_out = rows.len() - filtered.survivors.len();
            self.timings.filters = started.elapsed().as_secs_f64();
            let started = Instant::now();
            let scanned = scan_candidates(
                set,
                &filtered.survivors,
                self.query,
                at_most_one,
                self.policies,
                None,
            )?;
            self.timings.scoring += started.elapsed().as_secs_f64();
            Ok((scanned, filtered))
        } else {
            let filter = particles_candidates::RowFilter::new(request, now);
            let columns = set.row_columns();
            let keep = |row: usize| -> Result<bool> {
                Ok(filter.passes_in(&columns, set, row, request, now)?)
            };
            let scanned = scan_candidates(
                set,
                rows,
                self.query,
                at_most_one,
                self.policies,
                Some(&keep),
            )?;
            stats.filtered_out = rows.len() - scanned.survivors.len();
            self.timings.scoring += started.elapsed().as_secs_f64();
            Ok((scanned, StoreFiltered::default()))
        }
    }

    /// The filters in the reference's order when some read the store: properties,
    /// tags, structured claims, the recency window, the project observer. Returns
    /// the survivors, with claim filters their counts, with an observer its note.
    fn filter_in_store(&self, set: &CandidateSet, rows: &[usize]) -> Result<StoreFiltered> {
        let request = self.request;
        let mut survivors = Vec::with_capacity(rows.len());
        for &row in rows {
            if particles_candidates::passes_filters(set, row, request)? {
                survivors.push(row);
            }
        }
        if !request.tags.is_empty() {
            let expanded =
                particles_store::expand_tags(self.store, &request.tags, request.include_ancestors)?;
            let tagged = particles_store::particle_ids_for_tags(self.store, &expanded)?;
            survivors.retain(|&row| tagged.contains(set.id(row)));
        }
        let mut claims = None;
        let filters = ClaimFilters::new(request);
        if filters.is_active() {
            if !set.claims_intact() {
                return Err(Error::DamagedClaims);
            }
            let mut not_comparable = 0;
            survivors.retain(|&row| match set.structured_claim(row) {
                None => false,
                Some(claim) => match particles_rank::match_claim(claim, &filters) {
                    ClaimMatch::Matched => true,
                    ClaimMatch::Unmatched => false,
                    ClaimMatch::NotComparable => {
                        not_comparable += 1;
                        false
                    }
                },
            });
            claims = Some(ClaimCounts {
                matched: survivors.len(),
                not_comparable,
            });
        }
        survivors.retain(|&row| {
            particles_candidates::within_recency_window(set, row, request, self.now)
        });
        // The observer sees every other filter's survivors, before scoring and the
        // effective min-confidence drop, so a project is never starved by beliefs
        // it cannot see.
        let mut observer = None;
        if let Some(project) = &request.observer_project {
            let ids: Vec<&str> = survivors.iter().map(|&row| set.id(row)).collect();
            let filter = crate::observer::observer_filter(
                self.store,
                project,
                request.as_of,
                &ids,
                self.harness_tags,
            )?;
            survivors.retain(|&row| filter.visible.contains(set.id(row)));
            observer = Some(filter.note);
        }
        Ok(StoreFiltered {
            survivors,
            claims,
            observer,
        })
    }

    /// Scores candidates in bound order, batch by batch, into the collector, until
    /// no remaining bound can reach the k-th score. Returns the scored candidates
    /// kept whole in final order, and the scores kept alone (see
    /// [`Gather::scores_only_beyond_cut`]).
    fn collect(
        &mut self,
        scanned: &Scanned,
        stats: &mut QueryStats,
    ) -> Result<(Vec<Scored>, Vec<f64>, Option<crate::ScanStop>)> {
        let set = self.selection.set.as_ref();
        let top_k = if self.keep_all {
            scanned.survivors.len().max(1)
        } else {
            self.request.top_k as usize
        };
        let mut order = BoundOrder::new(&scanned.bounds, (top_k * 4).max(256));
        let mut top = if self.scores_only_beyond_cut {
            TopK::keeping_only_scores_beyond(top_k)
        } else {
            TopK::new(top_k)
        };
        let batch = top_k.max(64);
        let mut lookups = FactLookups::default();
        let mut scoring = 0.0;
        let mut next = 0;
        let mut stop = None;
        while next < order.len() {
            let sort_started = Instant::now();
            let bound = order.bound_at(next);
            scoring += sort_started.elapsed().as_secs_f64();
            if !self.exhaustive && bound.is_some_and(|bound| top.can_skip(bound, self.prune_margin))
            {
                stop = bound
                    .zip(top.kth_score())
                    .map(|(bound, kth_score)| crate::ScanStop {
                        bound,
                        kth_score,
                        margin: self.prune_margin,
                        scored: next,
                        skipped: order.len() - next,
                    });
                break;
            }
            let chunk = order.batch(next, batch).to_vec();
            next += chunk.len();
            let rows: Vec<usize> = chunk.iter().map(|&p| scanned.survivors[p]).collect();
            let keyed = lookups.read_keyed(self.store, set, &rows, self.policies, self.timings)?;
            let scoring_started = Instant::now();
            for ((&position, &row), (key, discount)) in chunk.iter().zip(&rows).zip(keyed) {
                // Trust and decay depend on the source alone: once per source.
                let (source_trust, decay) = lookups.source_factors(key, self.policies, self.now)?;
                let factors = Factors {
                    extractor_weight: particles_rank::extractor_weight(set, row, self.policies),
                    source_trust,
                    decay,
                    discount,
                };
                let similarity = exact_similarity(
                    scanned.similarities.as_ref(),
                    position,
                    set,
                    row,
                    self.query,
                )?;
                self.work.candidates_scored += 1;
                match particles_rank::score_with_similarity(
                    set,
                    row,
                    &factors,
                    similarity,
                    self.request.min_confidence,
                    self.policies,
                ) {
                    // The facts are copied only for a candidate kept whole.
                    Some(ranked) => top.push_with(ranked.score, || Scored {
                        position,
                        ranked,
                        factors,
                        source: lookups.facts(key).clone(),
                    }),
                    None => stats.below_min_confidence += 1,
                }
            }
            scoring += scoring_started.elapsed().as_secs_f64();
        }
        stats.pruned = order.len() - next;
        self.work.snapshot_ids_looked_up = lookups.snapshots.len();
        self.work.entry_ids_looked_up = lookups.entries.len();
        self.timings.scoring += scoring;
        let (scored, beyond) = top.into_ranked();
        Ok((scored, beyond, stop))
    }
}

/// A candidate's first source as the set names it: `(entry, snapshot)` interned
/// ids, `None` without a `SOURCE` ref.
pub(crate) type SourceKey = Option<(u32, Option<u32>)>;

/// One source's facts and, once asked for, the factors they decide.
struct Source {
    facts: Arc<SourceFacts>,
    factors: Option<(f64, f64)>,
}

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The per-batch store reads scoring needs: each candidate's first-source facts
/// and, for derived candidates, their premises' statuses (chunked lookups).
///
/// Sources are remembered for the whole gather, by the set's interned string
/// ids: candidates share sources (on the generator's 100k store ~48k candidates
/// scored inside the truncation margin name ~3k snapshots and ~1.2k entries), so
/// each source's facts are fetched once per query and its trust and decay
/// computed once. The facts come from [`particles_store::shared_source_facts`],
/// which a read-only connection remembers across queries while the file is
/// unchanged. Every read happens in the query's one read transaction, so a
/// remembered fact is the fact of the ranking's snapshot.
#[derive(Default)]
pub struct FactLookups {
    /// Distinct snapshot ids met (non-empty), for the work counters.
    snapshots: HashSet<u32, foldhash::fast::RandomState>,
    /// Distinct entry ids met (non-empty), for the work counters.
    entries: HashSet<u32, foldhash::fast::RandomState>,
    /// Each source met, assembled.
    sources: FastMap<SourceKey, Source>,
}

impl FactLookups {
    /// Facts and stale-support discount of each of `rows`, in order.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Store`] when the store cannot be read or holds a
    /// malformed source or premise.
    pub fn read(
        &mut self,
        store: &Store,
        set: &CandidateSet,
        rows: &[usize],
        policies: &Policies,
        timings: &mut StageTimings,
    ) -> Result<Vec<(SourceFacts, f64)>> {
        let keyed = self.read_keyed(store, set, rows, policies, timings)?;
        Ok(keyed
            .into_iter()
            .map(|(key, discount)| (self.facts(key).clone(), discount))
            .collect())
    }

    /// The source of each of `rows` (its facts then in [`FactLookups::facts`]) and
    /// its stale-support discount, in order.
    pub(crate) fn read_keyed(
        &mut self,
        store: &Store,
        set: &CandidateSet,
        rows: &[usize],
        policies: &Policies,
        timings: &mut StageTimings,
    ) -> Result<Vec<(SourceKey, f64)>> {
        let keys: Vec<SourceKey> = rows.iter().map(|&row| set.traits(row).source).collect();
        self.read_sources(store, set, &keys, timings)?;
        let started = Instant::now();
        let premises = particles_store::premise_statuses(
            store,
            rows.iter()
                .flat_map(|&row| set.premises(row).iter().map(String::as_str)),
        )?;
        timings.support_discounts += started.elapsed().as_secs_f64();
        Ok(keys
            .into_iter()
            .zip(rows)
            .map(|(key, &row)| {
                let discount =
                    particles_rank::stale_support_discount(set, row, &premises, policies);
                (key, discount)
            })
            .collect())
    }

    /// Fetches the facts of each of `keys` not met before, then
    /// [`FactLookups::facts`] has them.
    pub(crate) fn read_sources(
        &mut self,
        store: &Store,
        set: &CandidateSet,
        keys: &[SourceKey],
        timings: &mut StageTimings,
    ) -> Result<()> {
        let started = Instant::now();
        let mut new: Vec<(u32, Option<u32>)> = Vec::new();
        for &key in keys {
            let Entry::Vacant(vacant) = self.sources.entry(key) else {
                continue;
            };
            // The default facts: final for a candidate without a `SOURCE` ref,
            // replaced below for the others once the new sources are read.
            vacant.insert(Source {
                facts: Arc::default(),
                factors: None,
            });
            let Some((entry, snapshot)) = key else {
                continue;
            };
            new.push((entry, snapshot));
            if !set.string(entry).is_empty() {
                self.entries.insert(entry);
            }
            if let Some(snapshot) = snapshot.filter(|s| !set.string(*s).is_empty()) {
                self.snapshots.insert(snapshot);
            }
        }
        if !new.is_empty() {
            let refs: Vec<(&str, Option<&str>)> = new
                .iter()
                .map(|&(entry, snapshot)| (set.string(entry), snapshot.map(|s| set.string(s))))
                .collect();
            let facts = particles_store::shared_source_facts(store, &refs)?;
            for (&(entry, snapshot), facts) in new.iter().zip(facts) {
                if let Some(source) = self.sources.get_mut(&Some((entry, snapshot))) {
                    source.facts = facts;
                }
            }
        }
        timings.source_rows += started.elapsed().as_secs_f64();
        Ok(())
    }

    /// The facts of a source [`FactLookups::read_keyed`] returned.
    pub(crate) fn facts(&self, key: SourceKey) -> &SourceFacts {
        static NONE: SourceFacts = SourceFacts {
            entry_id: None,
            source_type: String::new(),
            uri: None,
            published_at: None,
            author_id: None,
        };
        self.sources
            .get(&key)
            .map_or(&NONE, |source| &*source.facts)
    }

    /// `(source trust, decay)` of a source [`FactLookups::read_keyed`] returned,
    /// computed on first use ([`particles_rank::source_factors`]).
    pub(crate) fn source_factors(
        &mut self,
        key: SourceKey,
        policies: &Policies,
        now: Timestamp,
    ) -> Result<(f64, f64)> {
        let Some(source) = self.sources.get_mut(&key) else {
            return Ok(particles_rank::source_factors(
                &SourceFacts::default(),
                policies,
                now,
            )?);
        };
        if let Some(factors) = source.factors {
            return Ok(factors);
        }
        let factors = particles_rank::source_factors(&source.facts, policies, now)?;
        source.factors = Some(factors);
        Ok(factors)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use particles_rank::Policies;
    use particles_store::{CandidateLoader, Store, UncachedLoader};

    use super::*;

    /// Read batch by batch, with sources met again in later batches, the memoised
    /// facts are the facts a direct read of each row gives, and each distinct
    /// source is asked for once.
    #[test]
    fn remembered_facts_equal_a_direct_read() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/stores/coins-a.db");
        let store = Store::open_read_only(&path).unwrap();
        let selection = UncachedLoader.select(&store, 0.0, None).unwrap();
        let set = selection.set.as_ref();
        let policies = Policies::compile(
            &particles_store::load_policy_rows(&store).unwrap(),
            &particles_rank::RankSettings::default(),
        )
        .unwrap();
        let rows = &selection.rows;
        assert!(rows.len() >= 4, "the fixture has a few candidates");
        // Overlapping batches, the second in reverse: every source is met twice.
        let half = rows.len() / 2 + 1;
        let mut batches: Vec<Vec<usize>> = vec![rows[..half].to_vec(), rows.to_vec()];
        batches[1].reverse();
        let mut lookups = FactLookups::default();
        let mut timings = StageTimings::default();
        // Outside a transaction (read directly), then twice inside one read
        // transaction each (the connection's memo filled, then answering).
        for pass in 0..3 {
            let mut fresh = FactLookups::default();
            let lookups = if pass == 0 { &mut lookups } else { &mut fresh };
            for batch in &batches {
                let remembered = if pass == 0 {
                    lookups
                        .read(&store, set, batch, &policies, &mut timings)
                        .unwrap()
                } else {
                    store
                        .read_snapshot(|s| {
                            Ok(lookups
                                .read(s, set, batch, &policies, &mut timings)
                                .unwrap())
                        })
                        .unwrap()
                };
                let direct = particles_store::source_facts(
                    &store,
                    batch.iter().map(|&row| {
                        set.traits(row).source.map(|(entry, snapshot)| {
                            (set.string(entry), snapshot.map(|s| set.string(s)))
                        })
                    }),
                )
                .unwrap();
                let remembered: Vec<_> = remembered.into_iter().map(|(facts, _)| facts).collect();
                assert_eq!(remembered, direct, "pass {pass}");
            }
        }
        let distinct_snapshots: std::collections::HashSet<u32> = rows
            .iter()
            .filter_map(|&row| set.traits(row).source.and_then(|(_, s)| s))
            .filter(|&s| !set.string(s).is_empty())
            .collect();
        assert_eq!(lookups.snapshots.len(), distinct_snapshots.len());
    }
}
