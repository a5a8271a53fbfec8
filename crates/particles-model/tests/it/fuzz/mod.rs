//! The model's decoders against their Python counterparts, through
//! `particles_testkit::fuzz` (one oracle process per decoder, batched verdicts,
//! shrunk disagreements). Each submodule is one decoder: its grammar-aware
//! strategy, its comparison and its committed regressions in
//! `tests/fuzz-regressions/<decoder>.jsonl`.
//!
//! - `timestamp`: `Timestamp::parse` against Python 3.11 `datetime.fromisoformat`.
//! - `datetime`: the request's datetime fields (`as_of`, a window's ends)
//!   against pydantic's `TypeAdapter(datetime)`.
//! - `request`: `QueryRequest::from_json` against `QueryRequest.model_validate`,
//!   errors as FastAPI's 422 detail and valid requests as `model_dump(mode="json")`.

mod datetime;
mod request;
mod timestamp;
