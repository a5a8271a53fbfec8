//! What a query returns: the hits and everything that explains them, all read in
//! the ranking's snapshot. Every type here serialises to the JSON `particles-rs
//! query --json` prints.

use particles_model::{policy::SourceFacts, Particle};
use particles_rank::Factors;
use serde::Serialize;

use particles_model::response::{AsOfNote, ObserverScopeNote, WindowCoverage, WindowHit};

/// One ranked particle.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// 1 for the first hit.
    pub rank: usize,
    /// The particle id.
    pub id: String,
    /// In a federated query, the handle of the store it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// Cosine similarity (the effective confidence without a query vector).
    pub similarity: f64,
    /// Effective confidence (noisy-OR merged for a co-evidential representative).
    pub effective_confidence: f64,
    /// The rank score the sort used.
    pub score: f64,
    /// Its rowid in the store.
    pub rowid: i64,
    /// The factors of the effective confidence before any merge.
    pub factors: Factors,
    /// The first source's facts.
    pub source: SourceFacts,
    /// With `as_of`: why a hit retired now was believed at T.
    pub as_of_note: Option<AsOfNote>,
    /// With a window: how the hit sits in it.
    pub window_hit: Option<WindowHit>,
    /// The particle, fully hydrated, in the reference's JSON shape (shared with
    /// what the connection remembers of it).
    pub particle: std::sync::Arc<Particle>,
}

/// The claim filters' disclosure: how the filtered slice relates to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ClaimCoverage {
    /// ACTIVE particles in the store.
    pub active_total: u64,
    /// ACTIVE particles carrying a structured claim.
    pub with_claims: u64,
    /// Candidates whose claim matched.
    pub matched: usize,
    /// Candidates whose object could not be compared with a gt/lt bound
    /// (disclosed, never silently dropped).
    pub not_normalizable_excluded: usize,
}

/// The moment the scoring walk stopped: candidates are scored in descending
/// order of an upper bound of their score, and once `k` scores are held, a
/// candidate whose bound is below the k-th of them less the margin cannot
/// enter the top `k` (nor the truncation band the response counts), and
/// neither can any after it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ScanStop {
    /// The highest bound among the candidates left unscored.
    pub bound: f64,
    /// The k-th best score held when the walk stopped.
    pub kth_score: f64,
    /// The margin below the k-th score that was still scored.
    pub margin: f64,
    /// Candidates scored before the stop.
    pub scored: usize,
    /// Candidates left unscored by the walk.
    pub skipped: usize,
}

/// Counts that explain a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct QueryStats {
    /// Candidates the loader returned.
    pub candidates: usize,
    /// ACTIVE rows skipped because their vector is of another embedding model.
    pub skipped_other_model: usize,
    /// Candidates dropped by the filters (document-meta, polarity, stance, ...).
    pub filtered_out: usize,
    /// Candidates whose effective confidence was below `min_confidence`.
    pub below_min_confidence: usize,
    /// Hits dropped by the co-evidential collapse.
    pub collapsed: usize,
    /// Candidates never fully scored because their score bound could not reach the
    /// top k, nor (with the response's pruning margin) the truncation band below
    /// the last hit (their source facts were not even read).
    pub pruned: usize,
}

/// Where a query's time went, in seconds, named like the reference benchmark's
/// stages. `decode` is the loader's time outside SQLite and hydration (vector
/// parsing, the model check, a cache's selection). Time outside every stage (the
/// hits' particles read by id, call overhead) is the caller's residual.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct StageTimings {
    /// Schema guard and policy snapshot.
    pub setup: f64,
    /// Preparing the query vector (its norm); encoding happens before the query.
    pub embed: f64,
    /// Inside SQLite for the loader's statements.
    pub sql_fetch: f64,
    /// The rest of the loader: vector parsing, model check, cache selection.
    pub decode: f64,
    /// Rows turned into particles by the loader.
    pub hydrate: f64,
    /// The candidate filters.
    pub filters: f64,
    /// Source facts (chunked lookups).
    pub source_rows: f64,
    /// Stale-support discounts.
    pub support_discounts: f64,
    /// Cosine and effective confidence.
    pub scoring: f64,
    /// Sort and top-k cut.
    pub sort: f64,
    /// Co-evidential collapse.
    pub collapse: f64,
}

/// What a query touched, for the benchmark's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct WorkCounters {
    /// Candidates the loader returned.
    pub rows_read: usize,
    /// Bytes of embedding JSON the loader decoded.
    pub embedding_json_bytes: u64,
    /// Rows the loader hydrated into particles.
    pub models_hydrated: u64,
    /// Candidates scored (after the filters and the confidence floor).
    pub candidates_scored: usize,
    /// Distinct snapshot ids looked up for source facts.
    pub snapshot_ids_looked_up: usize,
    /// Distinct corpus-entry ids looked up for source facts.
    pub entry_ids_looked_up: usize,
    /// Truncation-band rows whose exact vector was read because their
    /// half-precision interval could not settle the warning (see `crate::band`).
    pub band_rows_read_exactly: usize,
}

/// A query's answer, every part of it read in one snapshot of the store.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryOutcome {
    /// The hits in rank order (at most `top_k`).
    pub hits: Vec<Hit>,
    /// With `as_of`: retired candidates left out because no rung dated their
    /// retirement (the lens fails closed and says so).
    pub as_of_excluded_undatable: usize,
    /// With a window: what the window route saw.
    pub window_coverage: Option<WindowCoverage>,
    /// With claim filters: how the filtered slice relates to the store.
    pub claim_coverage: Option<ClaimCoverage>,
    /// With `observer_project`: what the project observer did.
    pub observer_scope: Option<ObserverScopeNote>,
    /// Requested tags that no taxonomy defines and no particle carries (the
    /// reference keeps them literally, so they match nothing).
    pub unknown_tags: Vec<String>,
    /// With `subject_id`: whether any particle is linked to that subject.
    pub subject_linked: Option<bool>,
    /// With `subject_id`: its ACTIVE CLAIM particles as the loader left them
    /// (counted in the set, the rest to settle in this snapshot), for the
    /// subject coverage gap.
    #[serde(skip)]
    pub subject_claims: Option<std::sync::Arc<particles_candidates::SubjectClaims>>,
    /// Request fields this engine accepted and validated but does not act on yet.
    pub not_applied: Vec<&'static str>,
    /// Counts that explain the hits.
    pub stats: QueryStats,
    /// The change journal's head (`particle_changes.seq`) in the snapshot the
    /// answer read, when the store has a journal: names the store state the answer
    /// is exact at (a committed write moves it; a rolled-back one does not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal_seq: Option<i64>,
    /// The rank scores of scored candidates after the cut at `top_k`: the
    /// truncation warning's input ([`BeyondCut`]).
    #[serde(skip)]
    pub beyond_cut: BeyondCut,
    /// Where the bound-ordered scoring stopped, when it stopped before the
    /// last candidate: why the rest were never scored.
    #[serde(skip)]
    pub scan_stop: Option<ScanStop>,
    /// Where the time went.
    #[serde(skip)]
    pub timings: StageTimings,
    /// What was touched.
    #[serde(skip)]
    pub work: WorkCounters,
}

impl QueryOutcome {
    /// An outcome with no hits and nothing counted, for `request`.
    pub(crate) fn empty(request: &particles_model::ValidRequest) -> QueryOutcome {
        QueryOutcome {
            hits: Vec::new(),
            as_of_excluded_undatable: 0,
            window_coverage: None,
            claim_coverage: None,
            observer_scope: None,
            unknown_tags: Vec::new(),
            subject_linked: None,
            subject_claims: None,
            not_applied: crate::not_applied(request),
            stats: QueryStats::default(),
            journal_seq: None,
            beyond_cut: BeyondCut::default(),
            scan_stop: None,
            timings: StageTimings::default(),
            work: WorkCounters::default(),
        }
    }
}

/// The scores of the candidates beyond the cut at `top_k`, as the truncation
/// warning reads them: how many score at least its floor, and the best.
///
/// With a pruning margin, every candidate beyond the cut scoring within the
/// margin of the last hit is here; others may be absent (pruned). With
/// [`crate::QueryInput::near_margin`], the band after the cut counts the
/// candidates that score at least the warning's floor (`last − near_margin`)
/// without listing their scores ([`Counted`]): at 1M that is a third of the
/// store, for each question. After a half-precision scan, a candidate the band
/// settled by its interval is counted by a lower bound of its score, or absent
/// when wholly below the floor: the warning's count and best score are those of
/// the exact scores.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BeyondCut {
    /// Scores listed one by one, in no particular order.
    pub scores: Vec<f64>,
    /// Candidates counted at or above a floor, not in `scores`.
    pub counted: Counted,
}

/// Candidates beyond the cut counted at or above `floor` without their scores.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counted {
    /// The floor they were counted at: the query's `last − near_margin`.
    pub floor: f64,
    /// How many.
    pub count: usize,
    /// The best of their scores (of the lower bounds they were counted by,
    /// where not read exactly): `-inf` when none.
    pub best: f64,
}

impl Default for Counted {
    fn default() -> Counted {
        Counted {
            floor: f64::INFINITY,
            count: 0,
            best: f64::NEG_INFINITY,
        }
    }
}

impl From<Vec<f64>> for BeyondCut {
    fn from(scores: Vec<f64>) -> BeyondCut {
        BeyondCut {
            scores,
            counted: Counted::default(),
        }
    }
}

impl BeyondCut {
    /// How many candidates beyond the cut there are (scored or counted).
    pub fn len(&self) -> usize {
        self.scores.len() + self.counted.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many score at least `floor`. Exact for a floor at or below the
    /// one the counted candidates were counted at, or above their best: the
    /// query's own (the warning asks with the settings the query was given).
    /// Between the two, every counted candidate is counted.
    pub fn near(&self, floor: f64) -> usize {
        let listed = self.scores.iter().filter(|s| **s >= floor).count();
        let counted = &self.counted;
        debug_assert!(
            counted.count == 0 || floor <= counted.floor || floor > counted.best,
            "a count at {floor} asked of candidates counted at {}",
            counted.floor
        );
        let counted = if counted.count > 0 && counted.best >= floor {
            counted.count
        } else {
            0
        };
        listed + counted
    }

    /// The best score, as the first of a descending sort gives it (NaN first,
    /// as the ranking's order puts it); `None` when there are none.
    pub fn best(&self) -> Option<f64> {
        let listed = self.scores.iter().copied().reduce(|best, score| {
            if best.is_nan() || (!score.is_nan() && best >= score) {
                best
            } else {
                score
            }
        });
        let counted = (self.counted.count > 0).then_some(self.counted.best);
        match (listed, counted) {
            (Some(listed), Some(counted)) if !listed.is_nan() && counted > listed => Some(counted),
            (Some(listed), _) => Some(listed),
            (None, counted) => counted,
        }
    }
}
