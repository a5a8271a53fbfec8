//! The window route: beliefs that held, or began, within a world-time window.
//!
//! Candidates are the dated rows (`valid_from` set) of every status. A retired claim
//! is admitted for the period it held: its close is the earliest of its own
//! `valid_until`, its successor's start (when that start has a closing basis) and
//! its retirement instant. How a claim reads against the window (`BEGAN`,
//! `IN_FORCE`, `HELD_AT`, `WITHIN`) depends on its kind and the basis of its
//! `valid_from`; an admitted retired claim whose successor is admitted too gives way
//! to it. With `as_of` as well, believed-at-T filters what the window selects. This
//! follows the reference's `operations/query/window.py` and `core/validity.py`.

use std::collections::HashMap;

use particles_candidates::{CandidateSet, Selection};
use particles_model::{
    response::{AsOfNote, CloseBasis, WindowCoverage, WindowHit, WindowReading},
    Particle, Status, TimeWindow, Timestamp, ValidKind,
};
use particles_store::{CandidateLoader, Store};

use crate::as_of::{evaluate as evaluate_as_of, RetirementIndex, Visibility};

const BASIS_KEY: &str = "extraction:valid_from_basis";
const GRANULARITY_KEY: &str = "extraction:valid_from_granularity";
/// The `valid_from` bases whose successor start closes a retired state.
const CLOSING_BASES: [&str; 5] = ["stated", "prose", "operator", "as-of", "session"];

fn utc(timestamp: Timestamp) -> Timestamp {
    if timestamp.is_aware() {
        timestamp
    } else {
        timestamp.with_utc_offset()
    }
}

/// The last second of the unit (year, month, else day) that `start` lies in, in
/// `start`'s own offset, keeping its microseconds (Python's `replace`).
fn coarse_end(start: Timestamp, granularity: Option<&str>) -> Timestamp {
    let start = utc(start);
    match granularity {
        Some("year") => start.with_last_day_of_year().with_time_of_day(23, 59, 59),
        Some("month") => start.with_last_day_of_month().with_time_of_day(23, 59, 59),
        _ => start.with_time_of_day(23, 59, 59),
    }
}

struct Facts<'a> {
    valid_from: Option<Timestamp>,
    valid_kind: Option<ValidKind>,
    valid_until: Option<Timestamp>,
    basis: Option<&'a str>,
    granularity: Option<&'a str>,
    closed_at: Option<Timestamp>,
}

/// The earliest instant; the first listed wins a tie (Python's `min`).
fn earliest(candidates: impl IntoIterator<Item = Timestamp>) -> Option<Timestamp> {
    candidates
        .into_iter()
        .fold(None, |best: Option<Timestamp>, t| match best {
            Some(b) if t.utc_micros() >= b.utc_micros() => Some(b),
            _ => Some(t),
        })
}

fn interval(facts: &Facts<'_>) -> Option<(Timestamp, Option<Timestamp>)> {
    let start = utc(facts.valid_from?);
    let coarse = facts.basis == Some("coarse");
    match facts.valid_kind {
        Some(ValidKind::Event) => Some((
            start,
            Some(if coarse {
                coarse_end(start, facts.granularity)
            } else {
                start
            }),
        )),
        None => None,
        Some(ValidKind::State) => {
            let mut ends: Vec<Timestamp> = [facts.valid_until, facts.closed_at]
                .into_iter()
                .flatten()
                .map(utc)
                .collect();
            if coarse {
                ends.push(coarse_end(start, facts.granularity));
            }
            Some((start, earliest(ends)))
        }
    }
}

fn read_window(facts: &Facts<'_>, window: &TimeWindow) -> Option<WindowReading> {
    let start = utc(facts.valid_from?);
    let window_start = window.start.map(utc);
    let window_end = window.end.map(utc);
    let unknown_start = facts.basis == Some("as-of");
    let coarse = facts.basis == Some("coarse");
    if window.is_point() {
        let at = window_start?;
        if facts.valid_kind == Some(ValidKind::Event) && !coarse {
            return (start.wall_date() == at.wall_date()).then_some(WindowReading::Began);
        }
        let (s, e) = interval(facts)?;
        let covers = s.utc_micros() <= at.utc_micros()
            && e.is_none_or(|e| at.utc_micros() <= e.utc_micros());
        if !covers {
            return None;
        }
        return Some(if unknown_start {
            WindowReading::HeldAt
        } else if coarse {
            WindowReading::Within
        } else if s.wall_date() == at.wall_date() {
            WindowReading::Began
        } else {
            WindowReading::InForce
        });
    }
    let in_window = window_start.is_none_or(|w| start.utc_micros() >= w.utc_micros())
        && window_end.is_none_or(|w| start.utc_micros() <= w.utc_micros());
    if in_window && !unknown_start && !coarse {
        return Some(WindowReading::Began);
    }
    if facts.valid_kind != Some(ValidKind::State) && !coarse {
        return None;
    }
    let (s, e) = interval(facts)?;
    if window_end.is_some_and(|w| s.utc_micros() > w.utc_micros()) {
        return None;
    }
    if let (Some(e), Some(w)) = (e, window_start) {
        if e.utc_micros() < w.utc_micros() {
            return None;
        }
    }
    Some(if unknown_start {
        WindowReading::HeldAt
    } else if coarse {
        WindowReading::Within
    } else {
        WindowReading::InForce
    })
}

/// A property as Python's `str()` would render it, or `None`.
fn property_text(particle: &Particle, key: &str) -> Option<String> {
    match particle.properties.as_ref()?.get(key)? {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Bool(b) => Some(if *b { "True" } else { "False" }.to_owned()),
        other => Some(other.to_string()),
    }
}

enum Verdict {
    // Boxed: a hit carries several timestamps, and most verdicts are misses.
    Hit(Box<WindowHit>),
    Miss,
    Undatable,
}

struct WindowView {
    window: TimeWindow,
    index: RetirementIndex,
    successor_starts: HashMap<String, Timestamp>,
}

impl WindowView {
    fn load(store: &Store, window: TimeWindow) -> particles_store::Result<WindowView> {
        let index = RetirementIndex::load(store)?;
        let successor_ids: Vec<&str> = index.successors.values().map(|s| s.id.as_str()).collect();
        let starts = particles_store::valid_from_by_ids(store, successor_ids)?;
        let successor_starts = starts
            .into_iter()
            .filter_map(|(id, (valid_from, basis))| {
                let closing = basis.as_deref().is_some_and(|b| CLOSING_BASES.contains(&b));
                valid_from.filter(|_| closing).map(|v| (id, utc(v)))
            })
            .collect();
        Ok(WindowView {
            window,
            index,
            successor_starts,
        })
    }

    /// The verdict on one candidate, and whether it is dated but unkinded.
    fn evaluate(
        &self,
        particle: &Particle,
        stored_retired_at: Option<Timestamp>,
    ) -> (Verdict, bool) {
        let Some(valid_from) = particle.valid_from else {
            return (Verdict::Miss, false);
        };
        if self.index.never_believed(particle) {
            return (Verdict::Miss, false);
        }
        let basis = property_text(particle, BASIS_KEY);
        let granularity = property_text(particle, GRANULARITY_KEY);
        let unkinded = particle.valid_kind.is_none();
        let mut closed_at = None;
        let mut close_basis = None;
        let mut retired = None;
        if particle.status != Status::Active {
            let Some((retired_at, basis_of_retirement)) =
                self.index.resolve(particle, stored_retired_at)
            else {
                return (Verdict::Undatable, false);
            };
            let successor = self.index.successors.get(&particle.id);
            let note = self.index.note(particle, retired_at, basis_of_retirement);
            let retired_at_ts = note.retired_at;
            retired = Some(note);
            if particle.valid_kind == Some(ValidKind::State) {
                let candidates = [
                    particle
                        .valid_until
                        .map(|t| (utc(t), CloseBasis::ValidUntil)),
                    successor
                        .and_then(|s| self.successor_starts.get(&s.id))
                        .map(|t| (*t, CloseBasis::Successor)),
                    Some((retired_at_ts, CloseBasis::RetiredAt)),
                ];
                let close = candidates.into_iter().flatten().fold(
                    None,
                    |best: Option<(Timestamp, CloseBasis)>, c| match best {
                        Some(b) if c.0.utc_micros() >= b.0.utc_micros() => Some(b),
                        _ => Some(c),
                    },
                );
                if let Some((at, why)) = close {
                    closed_at = Some(at);
                    close_basis = Some(why);
                }
            }
        }
        let facts = Facts {
            valid_from: Some(valid_from),
            valid_kind: particle.valid_kind,
            valid_until: particle.valid_until,
            basis: basis.as_deref(),
            granularity: granularity.as_deref(),
            closed_at,
        };
        match read_window(&facts, &self.window) {
            None => (Verdict::Miss, unkinded),
            Some(reading) => (
                Verdict::Hit(Box::new(WindowHit {
                    reading,
                    valid_from: utc(valid_from),
                    valid_kind: particle.valid_kind,
                    closed_at,
                    close_basis,
                    retired,
                    restates: None,
                })),
                unkinded,
            ),
        }
    }
}

/// What a window read collected beside its candidates (the reference's
/// `WindowGather` and the as-of outcome of `gather_window_candidates`).
#[derive(Debug, Clone, Default)]
pub struct WindowGathered {
    /// Positions of the admitted candidates in the loaded rows, in load order,
    /// without the retired originals a restatement stands in for.
    pub admitted: Vec<usize>,
    /// The readings of the admitted candidates, by id.
    pub hits: HashMap<String, WindowHit>,
    /// The coverage counts (`undated` store-wide).
    pub coverage: WindowCoverage,
    /// With `as_of`: notes of candidates retired since T, by id.
    pub as_of_notes: HashMap<String, AsOfNote>,
    /// With `as_of`: retired candidates left out as undatable.
    pub as_of_excluded_undatable: usize,
}

/// Window-filters loaded candidates, `(particle, stored retired_at)` in load
/// order, as the reference's `gather_window_candidates`: with `as_of`, the as-of
/// visibility first; then the window verdict (counting the unkinded), then the
/// stand-in rule. The window route of the semantic path and the structural
/// modes' window gather both read through it.
///
/// # Errors
///
/// Whatever the store's reads fail with.
pub fn gather_window<'p>(
    store: &Store,
    window: TimeWindow,
    as_of: Option<Timestamp>,
    rows: impl ExactSizeIterator<Item = (&'p Particle, Option<Timestamp>)>,
) -> particles_store::Result<WindowGathered> {
    let view = WindowView::load(store, window)?;
    let mut gathered = WindowGathered {
        coverage: WindowCoverage {
            candidates: rows.len() as u64,
            undated: particles_store::count_active_undated(store)?,
            ..WindowCoverage::default()
        },
        ..WindowGathered::default()
    };
    let mut order = Vec::new();
    for (position, (particle, retired_at)) in rows.enumerate() {
        if let Some(as_of) = as_of {
            match evaluate_as_of(&view.index, particle, retired_at, as_of.utc_micros()) {
                Visibility::Hidden => continue,
                Visibility::Undatable => {
                    gathered.as_of_excluded_undatable += 1;
                    continue;
                }
                Visibility::Visible(note) => {
                    if let Some(note) = note {
                        gathered.as_of_notes.insert(particle.id.clone(), note);
                    }
                }
            }
        }
        let (verdict, unkinded) = view.evaluate(particle, retired_at);
        if unkinded {
            gathered.coverage.unkinded += 1;
        }
        let Verdict::Hit(hit) = verdict else { continue };
        gathered.coverage.admitted += 1;
        if hit.retired.is_some() {
            gathered.coverage.retired_admitted += 1;
        }
        order.push((position, particle.id.clone()));
        gathered.hits.insert(particle.id.clone(), *hit);
    }
    // The stand-in rule: a restatement stands in for the retired original it
    // supersedes when both are admitted.
    let mut dropped = std::collections::HashSet::new();
    for (_, id) in &order {
        let Some(hit) = gathered.hits.get(id) else {
            continue;
        };
        if hit.retired.is_none() {
            continue;
        }
        let Some(successor) = view.index.successors.get(id) else {
            continue;
        };
        if let Some(successor_hit) = gathered.hits.get_mut(&successor.id) {
            successor_hit.restates = Some(id.clone());
            dropped.insert(id.clone());
        }
    }
    for id in &dropped {
        gathered.hits.remove(id);
    }
    gathered.coverage.restated += dropped.len() as u64;
    gathered.coverage.retired_admitted -= dropped.len() as u64;
    gathered.admitted = order
        .into_iter()
        .filter(|(_, id)| !dropped.contains(id))
        .map(|(position, _)| position)
        .collect();
    Ok(gathered)
}

/// The window loader, with an optional as-of instant composed inside it.
pub(crate) struct WindowLoader {
    window: TimeWindow,
    as_of: Option<Timestamp>,
    gathered: WindowGathered,
}

impl WindowLoader {
    /// A loader for `window`, believed at `as_of` when given.
    pub fn new(window: TimeWindow, as_of: Option<Timestamp>) -> WindowLoader {
        WindowLoader {
            window,
            as_of,
            gathered: WindowGathered::default(),
        }
    }

    /// The readings of the admitted candidates, by id.
    pub fn hits(&self) -> &HashMap<String, WindowHit> {
        &self.gathered.hits
    }

    /// The coverage of the last load.
    pub fn coverage(&self) -> WindowCoverage {
        self.gathered.coverage
    }

    /// With `as_of`: notes of hits retired now, by id.
    pub fn as_of_notes(&self) -> &HashMap<String, AsOfNote> {
        &self.gathered.as_of_notes
    }

    /// With `as_of`: retired candidates left out as undatable.
    pub fn as_of_excluded_undatable(&self) -> usize {
        self.gathered.as_of_excluded_undatable
    }
}

impl CandidateLoader for WindowLoader {
    fn select(
        &mut self,
        store: &Store,
        min_confidence: f64,
        subject_id: Option<&str>,
    ) -> particles_store::Result<Selection> {
        let (rows, skipped) = particles_store::load_window(store, min_confidence, subject_id)?;
        self.gathered = gather_window(
            store,
            self.window,
            self.as_of,
            rows.iter().map(|row| (&row.particle, row.retired_at)),
        )?;
        let mut set = CandidateSet::new();
        for &position in &self.gathered.admitted {
            let row = &rows[position];
            set.push(row.rowid, &row.particle, &row.vector, None);
        }
        Ok(Selection::all(set, skipped))
    }
}
