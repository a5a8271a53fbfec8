//! The per-row pass over the candidates: the filters, the cosine with the question
//! and each survivor's score bound, split across cores for large sets.

use particles_candidates::CandidateSet;
use particles_rank::{Policies, QueryVector};

use crate::{Error, Result};

/// Below this many candidates the scan runs on one thread: spawning costs more
/// than it saves.
const PARALLEL_SCAN_MIN: usize = 16_384;

/// What the scan keeps of each surviving candidate, in loader order.
pub(crate) struct Scanned {
    pub(crate) survivors: Vec<usize>,
    pub(crate) similarities: Option<Vec<f64>>,
    pub(crate) bounds: Vec<f64>,
}

/// One pass over the candidates, split across the available cores for large sets:
/// `keep` (the per-row filters, when they can run here), then the cosine with the
/// query and the score bound of each survivor. Every value is computed
/// independently and the parts are joined in row order, so the split changes no
/// bit; an error is the one of the first failing row, as in a sequential pass.
pub(crate) fn scan_candidates(
    set: &CandidateSet,
    rows: &[usize],
    query: Option<&QueryVector>,
    at_most_one: bool,
    policies: &Policies,
    keep: Option<&(dyn Fn(usize) -> Result<bool> + Sync)>,
) -> Result<Scanned> {
    /// One chunk's results, with its first filter error and first similarity
    /// error kept apart: the reference filters every candidate before it computes
    /// any similarity, so a filter error anywhere wins over a similarity error.
    struct Part {
        scanned: Scanned,
        filter_error: Option<Error>,
        similarity_error: Option<Error>,
    }
    let scan = |rows: &[usize]| -> Part {
        let mut part = Part {
            scanned: Scanned {
                survivors: Vec::with_capacity(rows.len()),
                similarities: query.map(|_| Vec::with_capacity(rows.len())),
                bounds: Vec::with_capacity(rows.len()),
            },
            filter_error: None,
            similarity_error: None,
        };
        for &row in rows {
            if let Some(keep) = keep {
                match keep(row) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        part.filter_error = Some(e);
                        break;
                    }
                }
            }
            if part.similarity_error.is_some() {
                // Only the filters still matter: they may fail further on.
                continue;
            }
            let similarity = match query.map(|query| particles_rank::similarity(set, row, query)) {
                None => None,
                Some(Ok(value)) => Some(value),
                Some(Err(e)) => {
                    part.similarity_error = Some(e.into());
                    continue;
                }
            };
            let out = &mut part.scanned;
            out.survivors.push(row);
            if let (Some(all), Some(value)) = (out.similarities.as_mut(), similarity) {
                all.push(value);
            }
            out.bounds.push(particles_rank::score_bound(
                set,
                row,
                similarity,
                at_most_one,
                policies,
            ));
        }
        part
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(8);
    let parts: Vec<Part> = if threads < 2 || rows.len() < PARALLEL_SCAN_MIN {
        vec![scan(rows)]
    } else {
        let chunk = rows.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = rows
                .chunks(chunk)
                .map(|part| scope.spawn(move || scan(part)))
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        })
    };
    let mut parts = parts;
    if let Some(at) = parts.iter().position(|p| p.filter_error.is_some()) {
        if let Some(error) = parts.swap_remove(at).filter_error {
            return Err(error);
        }
    }
    if let Some(at) = parts.iter().position(|p| p.similarity_error.is_some()) {
        if let Some(error) = parts.swap_remove(at).similarity_error {
            return Err(error);
        }
    }
    if parts.len() == 1 {
        if let Some(part) = parts.pop() {
            return Ok(part.scanned);
        }
    }
    let mut out = Scanned {
        survivors: Vec::with_capacity(rows.len()),
        similarities: query.map(|_| Vec::with_capacity(rows.len())),
        bounds: Vec::with_capacity(rows.len()),
    };
    for part in parts {
        let part = part.scanned;
        out.survivors.extend(part.survivors);
        if let (Some(all), Some(values)) = (out.similarities.as_mut(), part.similarities) {
            all.extend(values);
        }
        out.bounds.extend(part.bounds);
    }
    Ok(out)
}
