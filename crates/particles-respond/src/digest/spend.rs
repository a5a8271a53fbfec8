//! The digest's closing spend line (the reference's `operations/llm_spend.py`
//! `store_llm_spend` and its core's `llm/usage.py` `render_store_spend_line`):
//! what the store's consolidation and extraction runs recorded spending.

use particles_model::Timestamp;
use particles_store::Store;
use serde_json::Value;

use crate::{Error, Result};

/// The recorded spend: its total over priced runs, the runs counted, the
/// earliest run and how many runs used an unpriced model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoreSpend {
    cost_usd: f64,
    runs: u64,
    since: Timestamp,
    unpriced_runs: u64,
}

/// The store's recorded spend, `None` when no run recorded a model call.
///
/// A run counts when its payload's `llm_usage` is an object whose `rows` hold an
/// object with truthy `calls`; its `cost_usd` adds when it is a number (or a
/// boolean, as Python's `isinstance(_, int)` admits), else the run is unpriced.
///
/// # Errors
///
/// [`Error::Spend`] on a payload Python fails on (not an object, `rows` a
/// number), [`Error::Store`] when the store cannot be read.
pub(crate) fn store_spend(store: &Store) -> Result<Option<StoreSpend>> {
    let mut total = 0.0f64;
    let (mut runs, mut unpriced) = (0u64, 0u64);
    let mut since: Option<Timestamp> = None;
    for event in particles_store::run_events(store)? {
        let payload = match event.payload.as_deref() {
            None => Value::Null,
            Some(text) => serde_json::from_str(text)
                .map_err(|e| Error::Spend(format!("a run's payload is not JSON: {e}")))?,
        };
        let usage = match &payload {
            Value::Object(map) => map.get("llm_usage"),
            Value::Null => None,
            v if !truthy(v) => None,
            _ => return Err(Error::Spend("a run's payload is not a JSON object".into())),
        };
        let Some(Value::Object(usage)) = usage else {
            continue;
        };
        let called = match usage.get("rows") {
            Some(Value::Array(rows)) => rows.iter().any(|row| {
                matches!(row, Value::Object(fields) if fields.get("calls").is_some_and(truthy))
            }),
            Some(v @ (Value::Number(_) | Value::Bool(true))) if truthy(v) => {
                return Err(Error::Spend("a run's llm_usage.rows is a number".into()))
            }
            _ => false,
        };
        if !called {
            continue;
        }
        runs += 1;
        match usage.get("cost_usd") {
            Some(Value::Number(n)) => total += n.as_f64().unwrap_or(f64::NAN),
            Some(Value::Bool(b)) => total += f64::from(u8::from(*b)),
            _ => unpriced += 1,
        }
        let at = Timestamp::parse(&event.occurred_at)
            .map_err(|e| Error::Spend(format!("a run's occurred_at: {e}")))?;
        if since.is_none_or(|s| at.utc_micros() < s.utc_micros()) {
            since = Some(at);
        }
    }
    Ok(since.map(|since| StoreSpend {
        cost_usd: total,
        runs,
        since,
        unpriced_runs: unpriced,
    }))
}

/// Python truthiness of a JSON value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

impl StoreSpend {
    /// The closing line.
    pub(crate) fn line(&self) -> String {
        let mut line = format!(
            "LLM spend recorded for this store: US{} across {} since {}",
            usd(self.cost_usd),
            plural(self.runs, "run"),
            self.since.date_text()
        );
        if self.unpriced_runs != 0 {
            line.push_str(&format!(
                " ({} used a model with no llm.price_per_mtok entry and {} not in the total)",
                plural(self.unpriced_runs, "run"),
                if self.unpriced_runs == 1 { "is" } else { "are" }
            ));
        }
        line.push('.');
        line
    }
}

fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Dollars as the reference prints them: `$0.00` under half a cent, cents
/// under ten dollars, whole dollars above, thousands separated by commas.
fn usd(value: f64) -> String {
    if value < 0.005 {
        return "$0.00".to_owned();
    }
    let digits = if value < 10.0 { 2 } else { 0 };
    let text = super::render::fixed(value, digits);
    let (whole, fraction) = text.split_at(text.find('.').unwrap_or(text.len()));
    if !whole.bytes().all(|b| b.is_ascii_digit()) {
        return format!("${text}");
    }
    let mut grouped = String::new();
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    format!("${grouped}{fraction}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_round_and_group_as_python_formats_them() {
        assert_eq!(usd(0.004), "$0.00");
        assert_eq!(usd(-3.0), "$0.00");
        assert_eq!(usd(2.0), "$2.00");
        assert_eq!(usd(9.999), "$10.00");
        assert_eq!(usd(1234.5), "$1,234");
        assert_eq!(usd(1_234_567.0), "$1,234,567");
        assert_eq!(usd(f64::NAN), "$nan");
        assert_eq!(usd(f64::INFINITY), "$inf");
    }

    #[test]
    fn the_line_names_unpriced_runs() {
        let spend = StoreSpend {
            cost_usd: 1234.0,
            runs: 2,
            since: Timestamp::parse("2024-12-31 23:00:00").expect("an instant"),
            unpriced_runs: 1,
        };
        assert_eq!(
            spend.line(),
            "LLM spend recorded for this store: US$1,234 across 2 runs since 2024-12-31 \
             (1 run used a model with no llm.price_per_mtok entry and is not in the total)."
        );
    }
}
