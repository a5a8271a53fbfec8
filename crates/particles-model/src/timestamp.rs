//! Timestamps as the reference stores and compares them.
//!
//! The reference writes DATETIME columns as naive text (`YYYY-MM-DD HH:MM:SS.ffffff`)
//! and reads them back with Python 3.11 `datetime.fromisoformat`, so a value either
//! carries an offset (aware) or not (naive). Every comparison on the query path treats
//! a naive value as UTC, but a hydrated particle keeps the value as written, and its
//! JSON shows it that way. [`Timestamp`] keeps both facts: the wall-clock fields and
//! the optional offset.

use std::fmt;

/// Microseconds in one second.
const MICROS_PER_SECOND: i64 = 1_000_000;

/// A date and time with microsecond precision and an optional UTC offset.
///
/// Equality is field-wise (a naive and an aware value are different timestamps even
/// when they name the same instant), as Python's `datetime` equality is for the
/// values the model stores. Use [`Timestamp::utc_micros`] to compare instants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Timestamp {
    year: u16,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
    second: u8,
    micro: u32,
    /// Offset east of UTC in microseconds (Python's offsets may carry them);
    /// `None` for a naive value.
    offset_micros: Option<i64>,
}

/// Why a text did not parse as a timestamp.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid isoformat string: {text:?}")]
pub struct TimestampParseError {
    text: String,
}

impl Timestamp {
    /// A naive timestamp from its fields, or `None` when a field is out of range.
    pub fn from_fields(
        year: u16,
        month: u8,
        day: u8,
        hour: u8,
        minute: u8,
        second: u8,
        micro: u32,
    ) -> Option<Timestamp> {
        let valid = (1..=9999).contains(&year)
            && (1..=12).contains(&month)
            && day >= 1
            && day <= days_in_month(year, month)
            && hour < 24
            && minute < 60
            && second < 60
            && micro < 1_000_000;
        valid.then_some(Timestamp {
            year,
            month,
            day,
            hour,
            minute,
            second,
            micro,
            offset_micros: None,
        })
    }

    /// The naive UTC wall-clock fields of an instant given in microseconds since the
    /// Unix epoch, or `None` outside years 1..=9999.
    pub fn from_utc_micros(micros: i64) -> Option<Timestamp> {
        let days = micros.div_euclid(86_400 * MICROS_PER_SECOND);
        let in_day = micros.rem_euclid(86_400 * MICROS_PER_SECOND);
        let (year, month, day) = civil_from_days(days);
        let year = u16::try_from(year).ok()?;
        let seconds = in_day / MICROS_PER_SECOND;
        Timestamp::from_fields(
            year,
            month,
            day,
            (seconds / 3600) as u8,
            ((seconds / 60) % 60) as u8,
            (seconds % 60) as u8,
            (in_day % MICROS_PER_SECOND) as u32,
        )
    }

    /// The same wall-clock fields with this offset east of UTC, in seconds.
    pub fn with_offset_seconds(self, offset_seconds: i32) -> Timestamp {
        Timestamp {
            offset_micros: Some(i64::from(offset_seconds) * MICROS_PER_SECOND),
            ..self
        }
    }

    /// Python's `datetime.isoformat()`: `YYYY-MM-DDTHH:MM:SS[.ffffff][±HH:MM[:SS[.ffffff]]]`,
    /// each fraction and the offset's seconds only when non-zero, UTC as `+00:00`
    /// (never `Z`). The reference's
    /// sentences print instants this way; its JSON uses [`Display`](fmt::Display).
    pub fn python_isoformat(&self) -> String {
        let mut text = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        );
        if self.micro != 0 {
            text.push_str(&format!(".{:06}", self.micro));
        }
        if let Some(offset) = self.offset_micros {
            let sign = if offset < 0 { '-' } else { '+' };
            let micros = offset.unsigned_abs();
            let seconds = micros / MICROS_PER_SECOND as u64;
            text.push_str(&format!(
                "{sign}{:02}:{:02}",
                seconds / 3600,
                (seconds / 60) % 60
            ));
            if micros % 60_000_000 != 0 {
                text.push_str(&format!(":{:02}", seconds % 60));
            }
            if micros % MICROS_PER_SECOND as u64 != 0 {
                text.push_str(&format!(".{:06}", micros % MICROS_PER_SECOND as u64));
            }
        }
        text
    }

    /// The wall clock now, as an aware UTC timestamp. The query path never calls
    /// this itself: callers read the clock once and pass `now` in.
    pub fn now() -> Timestamp {
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_micros());
        let micros = i64::try_from(micros).unwrap_or(i64::MAX);
        Timestamp::from_utc_micros(micros)
            .map(Timestamp::with_utc_offset)
            .unwrap_or(Timestamp {
                year: 9999,
                month: 12,
                day: 31,
                hour: 23,
                minute: 59,
                second: 59,
                micro: 999_999,
                offset_micros: Some(0),
            })
    }

    /// The same wall-clock fields, marked as UTC (offset zero).
    pub fn with_utc_offset(self) -> Timestamp {
        Timestamp {
            offset_micros: Some(0),
            ..self
        }
    }

    /// Parses text as Python 3.11 `datetime.fromisoformat` does, by a port of
    /// CPython 3.11's C parser: extended or basic dates (also ISO week dates), any
    /// one separator character, `HH[:MM[:SS[.f]]]` in extended or basic form with
    /// `.` or `,` (or a third `:`) before the fraction (digits past the sixth are
    /// dropped), and `Z` or `±HH[:MM[:SS[.f]]]` offsets whose components are not
    /// range-checked (`+00:60` is an hour) as long as the total is within a day.
    /// The C parser's quirks are kept, because the reference reads stored
    /// instants and claim bounds through it: an empty fraction before an offset
    /// is accepted, a NUL after `Z` ends the text, a zero offset in whole seconds
    /// is UTC whatever its microseconds. The differential fuzz
    /// (`tests/it/fuzz/timestamp.rs`) holds the two to the same verdicts.
    ///
    /// # Errors
    ///
    /// A [`TimestampParseError`] naming the text when Python would raise.
    pub fn parse(text: &str) -> Result<Timestamp, TimestampParseError> {
        parse_isoformat(text).ok_or_else(|| TimestampParseError {
            text: text.to_owned(),
        })
    }

    /// Whether the value carries an offset.
    pub fn is_aware(&self) -> bool {
        self.offset_micros.is_some()
    }

    /// The offset east of UTC in whole seconds (a fraction of a second is
    /// dropped, toward zero), `None` for a naive value.
    pub fn offset_seconds(&self) -> Option<i32> {
        self.offset_micros
            .map(|micros| (micros / MICROS_PER_SECOND) as i32)
    }

    /// The offset east of UTC in microseconds, `None` for a naive value.
    pub fn offset_micros(&self) -> Option<i64> {
        self.offset_micros
    }

    /// The instant in microseconds since the Unix epoch; a naive value is read as
    /// UTC (the reference's `ensure_utc`).
    pub fn utc_micros(&self) -> i64 {
        let days = days_from_civil(i64::from(self.year), self.month, self.day);
        let seconds = days * 86_400
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second);
        seconds * MICROS_PER_SECOND + i64::from(self.micro) - self.offset_micros.unwrap_or(0)
    }

    /// The text the reference's writer stores: the wall-clock fields with six
    /// fraction digits and no offset (the writer drops an aware value's offset).
    pub fn to_store_text(&self) -> String {
        format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.micro
        )
    }

    /// The wall-clock date `(year, month, day)`, in the value's own offset (Python's
    /// `datetime.date()`).
    pub fn wall_date(&self) -> (u16, u8, u8) {
        (self.year, self.month, self.day)
    }

    /// The same date and offset at another wall-clock time of day, keeping the
    /// microseconds (Python's `replace(hour=, minute=, second=)`).
    pub fn with_time_of_day(self, hour: u8, minute: u8, second: u8) -> Timestamp {
        Timestamp {
            hour,
            minute,
            second,
            ..self
        }
    }

    /// Midnight of this value's date, same offset.
    pub fn start_of_day(self) -> Timestamp {
        Timestamp {
            hour: 0,
            minute: 0,
            second: 0,
            micro: 0,
            ..self
        }
    }

    /// The last day of this value's month, same time and offset.
    pub fn with_last_day_of_month(self) -> Timestamp {
        Timestamp {
            day: days_in_month(self.year, self.month),
            ..self
        }
    }

    /// December 31st of this value's year, same time and offset.
    pub fn with_last_day_of_year(self) -> Timestamp {
        Timestamp {
            month: 12,
            day: 31,
            ..self
        }
    }

    /// Whether all time-of-day fields are zero.
    pub fn is_midnight(&self) -> bool {
        self.hour == 0 && self.minute == 0 && self.second == 0 && self.micro == 0
    }

    /// The date part as `YYYY-MM-DD`.
    pub fn date_text(&self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// Pydantic's JSON form: `YYYY-MM-DDTHH:MM:SS[.ffffff][Z|±HH:MM]`, the fraction only
/// when non-zero, `Z` for a zero offset, the offset's seconds dropped (pydantic
/// never parses an offset finer than a minute).
impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )?;
        if self.micro != 0 {
            write!(f, ".{:06}", self.micro)?;
        }
        match self.offset_micros {
            None => Ok(()),
            Some(0) => f.write_str("Z"),
            Some(offset) => {
                let sign = if offset < 0 { '-' } else { '+' };
                let minutes = offset.unsigned_abs() / 60_000_000;
                write!(f, "{sign}{:02}:{:02}", minutes / 60, minutes % 60)
            }
        }
    }
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Timestamp::parse(&text).map_err(serde::de::Error::custom)
    }
}

fn is_leap(year: u16) -> bool {
    (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400)
}

fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm,
/// <https://howardhinnant.github.io/date_algorithms.html#days_from_civil>).
fn days_from_civil(year: i64, month: u8, day: u8) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The inverse of [`days_from_civil`]: days since 1970-01-01 to a proleptic
/// Gregorian date (year 0 included).
pub(crate) fn civil_from_days(days: i64) -> (i64, u8, u8) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The text's UTF-8 bytes as CPython's C parser reads them: a NUL past the end
/// (the parser stops at NULs, embedded ones included, where it tests for the end).
struct CText<'a>(&'a [u8]);

impl CText<'_> {
    fn at(&self, at: usize) -> u8 {
        self.0.get(at).copied().unwrap_or(0)
    }

    /// `parse_digits`: `count` ASCII digits at `*at` (the cursor moves past them).
    fn digits(&self, at: &mut usize, count: usize) -> Option<i64> {
        let mut value = 0i64;
        for _ in 0..count {
            let byte = self.at(*at);
            if !byte.is_ascii_digit() {
                return None;
            }
            value = value * 10 + i64::from(byte - b'0');
            *at += 1;
        }
        Some(value)
    }
}

/// Python 3.11's `datetime.fromisoformat`, ported from CPython 3.11's C parser
/// (`datetime_fromisoformat` in `_datetimemodule.c`) with its quirks, because the
/// reference reads every stored instant and every claim bound through it: the
/// separator is found by looking at bytes 4, 5, 8 and 10 (and, for `YYYYWww`, the
/// length of the digit run), may be any one character, and the time runs to the
/// end; its components are not range-checked until the datetime is built.
fn parse_isoformat(text: &str) -> Option<Timestamp> {
    // `_sanitize_isoformat_str`: fewer than 7 characters is never valid.
    if text.chars().count() < 7 {
        return None;
    }
    let bytes = text.as_bytes();
    let len = bytes.len();
    let c = CText(bytes);
    let separator = find_separator(&c, len)?;
    let (year, month, day) = parse_date(&c, separator)?;
    let mut clock = (0, 0, 0, 0);
    let mut offset = None;
    if len > separator {
        // The separator is one character: its first byte says how many bytes.
        let lead = c.at(separator);
        let width = if lead & 0x80 == 0 {
            1
        } else {
            match lead & 0xF0 {
                0xE0 => 3,
                0xF0 => 4,
                _ => 2,
            }
        };
        (clock, offset) = parse_time(&c, (separator + width).min(len), len)?;
    }
    let (hour, minute, second, micro) = clock;
    let field = |value: i64, max: i64| (0..=max).contains(&value).then_some(value);
    let mut ts = Timestamp::from_fields(
        u16::try_from(year).ok()?,
        u8::try_from(month).ok()?,
        u8::try_from(day).ok()?,
        field(hour, 23)? as u8,
        field(minute, 59)? as u8,
        field(second, 59)? as u8,
        field(micro, 999_999)? as u32,
    )?;
    ts.offset_micros = offset;
    Some(ts)
}

/// `_find_isoformat_datetime_separator`: the byte index where the date ends.
fn find_separator(c: &CText<'_>, len: usize) -> Option<usize> {
    if len == 7 {
        return Some(7);
    }
    if c.at(4) == b'-' {
        if c.at(5) != b'W' {
            return Some(10);
        }
        if len < 8 {
            return None;
        }
        if len > 8 && c.at(8) == b'-' {
            if len == 9 {
                return None;
            }
            // `YYYY-Www-##`: the hyphen at 8 is taken for the separator.
            return Some(if len > 10 && c.at(10).is_ascii_digit() {
                8
            } else {
                10
            });
        }
        return Some(8);
    }
    if c.at(4) != b'W' {
        return Some(8);
    }
    // `YYYYWww` or `YYYYWwwd`: the parity of the digit run decides.
    let mut idx = 7;
    while idx < len && c.at(idx).is_ascii_digit() {
        idx += 1;
    }
    Some(if idx < 9 {
        idx
    } else if idx % 2 == 0 {
        7
    } else {
        8
    })
}

/// `parse_isoformat_date` over the first `len` bytes: the year, month and day as
/// read (not range-checked, except through the ISO week conversion).
fn parse_date(c: &CText<'_>, len: usize) -> Option<(i64, i64, i64)> {
    let mut at = 0;
    let year = c.digits(&mut at, 4)?;
    let uses_separator = c.at(at) == b'-';
    if uses_separator {
        at += 1;
    }
    if c.at(at) == b'W' {
        at += 1;
        let week = c.digits(&mut at, 2)?;
        let mut weekday = 1;
        if at < len {
            if uses_separator {
                if c.at(at) != b'-' {
                    return None;
                }
                at += 1;
            }
            weekday = c.digits(&mut at, 1)?;
        }
        return iso_week_date(year, week, weekday);
    }
    let month = c.digits(&mut at, 2)?;
    if uses_separator {
        if c.at(at) != b'-' {
            return None;
        }
        at += 1;
    }
    let day = c.digits(&mut at, 2)?;
    Some((year, month, day))
}

/// `iso_to_ymd`: week 1..=52 (53 in a year that starts on a Thursday, or on a
/// Wednesday in a leap year), day 1..=7. CPython does not check the year here;
/// year 0 always lands on a date its constructor refuses, and so does it here.
fn iso_week_date(year: i64, week: i64, weekday: i64) -> Option<(i64, i64, i64)> {
    if !(1..=9999).contains(&year) {
        return None;
    }
    let jan1 = days_from_civil(year, 1, 1);
    // 1970-01-01 was a Thursday; Monday = 0.
    let jan1_weekday = (jan1 + 3).rem_euclid(7);
    if !(1..=52).contains(&week) {
        let long_year =
            jan1_weekday == 3 || (jan1_weekday == 2 && is_leap(u16::try_from(year).ok()?));
        if !(week == 53 && long_year) {
            return None;
        }
    }
    if !(1..=7).contains(&weekday) {
        return None;
    }
    let mut week1_monday = jan1 - jan1_weekday;
    if jan1_weekday > 3 {
        week1_monday += 7;
    }
    let (y, m, d) = civil_from_days(week1_monday + (week - 1) * 7 + weekday - 1);
    Some((y, i64::from(m), i64::from(d)))
}

type Clock = (i64, i64, i64, i64);

/// `parse_isoformat_time` over `start..end`: the clock and the offset in
/// microseconds, if any.
fn parse_time(c: &CText<'_>, start: usize, end: usize) -> Option<(Clock, Option<i64>)> {
    // The offset starts at the first `Z`, `+` or `-` (the first byte is looked
    // at even when the time is empty).
    let mut tz = start;
    while !matches!(c.at(tz), b'Z' | b'+' | b'-') {
        tz += 1;
        if tz >= end {
            break;
        }
    }
    let (more, clock) = hh_mm_ss_ff(c, start, tz)?;
    if tz == end {
        // No offset: anything after the clock is an error.
        return (!more).then_some((clock, None));
    }
    if c.at(tz) == b'Z' {
        // Only a NUL may follow, which is how an embedded NUL ends the text.
        return (c.at(tz + 1) == 0).then_some((clock, Some(0)));
    }
    let sign = if c.at(tz) == b'-' { -1 } else { 1 };
    let (more, (hours, minutes, seconds, micros)) = hh_mm_ss_ff(c, tz + 1, end)?;
    if more {
        return None;
    }
    let whole = hours * 3600 + minutes * 60 + seconds;
    // A zero offset in whole seconds is UTC, its microseconds dropped
    // (`tzinfo_from_isoformat_results`).
    let offset = if whole == 0 {
        0
    } else {
        sign * (whole * MICROS_PER_SECOND + micros)
    };
    // `timezone` wants strictly less than a day either way.
    (offset.abs() < 86_400 * MICROS_PER_SECOND).then_some((clock, Some(offset)))
}

/// `parse_hh_mm_ss_ff` over `start..end`: `HH[:?MM[:?SS]]` with a fraction after
/// `.` or `,` (or after a third `:`, or straight after the seconds in the basic
/// form), digits past the sixth dropped; `true` when something other than the
/// end of the text follows. `None` for CPython's negative codes.
fn hh_mm_ss_ff(c: &CText<'_>, start: usize, end: usize) -> Option<(bool, Clock)> {
    let mut fields = [0i64; 3];
    let mut at = start;
    let mut has_separator = true;
    for (i, field) in fields.iter_mut().enumerate() {
        *field = c.digits(&mut at, 2)?;
        let next = c.at(at);
        at += 1;
        if i == 0 {
            has_separator = next == b':';
        }
        if at >= end {
            let [hour, minute, second] = fields;
            return Some((next != 0, (hour, minute, second, 0)));
        } else if has_separator && next == b':' {
            continue;
        } else if next == b'.' || next == b',' {
            break;
        } else if !has_separator {
            at -= 1;
        } else {
            return None;
        }
    }
    let to_parse = (end - at).min(6);
    let mut micro = c.digits(&mut at, to_parse)?;
    for _ in to_parse..6 {
        micro *= 10;
    }
    while c.at(at).is_ascii_digit() {
        at += 1;
    }
    let [hour, minute, second] = fields;
    Some((c.at(at) != 0, (hour, minute, second, micro)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> String {
        Timestamp::parse(text).map_or_else(|e| e.to_string(), |t| t.to_string())
    }

    #[test]
    fn parses_what_python_311_parses() {
        assert_eq!(
            parsed("2024-09-21 01:49:04.286310"),
            "2024-09-21T01:49:04.286310"
        );
        assert_eq!(parsed("2024-01-01"), "2024-01-01T00:00:00");
        assert_eq!(
            parsed("20240101T1010,5+0130"),
            "2024-01-01T10:10:00.500000+01:30"
        );
        assert_eq!(parsed("2024W012"), "2024-01-02T00:00:00");
        assert_eq!(parsed("2024-01-01x10"), "2024-01-01T10:00:00");
        assert_eq!(
            parsed("2024-01-01 00:00:00.1234567"),
            "2024-01-01T00:00:00.123456"
        );
        assert_eq!(parsed("2024-01-01T00:00:00Z"), "2024-01-01T00:00:00Z");
        assert_eq!(
            parsed("2024-01-01T01:02:03-05:30"),
            "2024-01-01T01:02:03-05:30"
        );
    }

    #[test]
    fn rejects_what_python_rejects() {
        for bad in [
            "",
            "2024",
            "2024-13-01",
            "2023-02-29",
            "2024-01-01 25:00",
            "2024-01-01T",
            "yesterday",
            "2024-01-01 10:00:60",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cpython_quirks() {
        let iso = |text: &str| Timestamp::parse(text).map(|t| t.python_isoformat());
        assert_eq!(
            iso("2024-01-01T00:00:00+01:30:00.5").unwrap(),
            "2024-01-01T00:00:00+01:30:00.500000"
        );
        assert_eq!(
            iso("2024-01-01T10:00-01:00:00.25").unwrap(),
            "2024-01-01T10:00:00-01:00:00.250000"
        );
        assert_eq!(
            iso("2024-01-01T10:00-00:00:00.5").unwrap(),
            "2024-01-01T10:00:00+00:00"
        );
        assert_eq!(
            iso("2024-01-01T10:00:00.+00:60").unwrap(),
            "2024-01-01T10:00:00+01:00"
        );
        assert_eq!(
            iso("2024-01-01T10:00:00:5").unwrap(),
            "2024-01-01T10:00:00.500000"
        );
        assert_eq!(
            iso("2024-01-01T10:00Z\0abc").unwrap(),
            "2024-01-01T10:00:00+00:00"
        );
        assert_eq!(iso("0001-W01-0000").unwrap(), "0001-01-01T00:00:00");
        for bad in [
            "2024-01-01T1000005",
            "2024-01-01T10:00+24:00:00.000001",
            "0000-W52-7",
            "9999-W52-6",
            "2024-01-01T10:00:00.",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn naive_reads_as_utc() {
        let naive = Timestamp::parse("1970-01-02 00:00:00").unwrap();
        let aware = Timestamp::parse("1970-01-02T01:00:00+01:00").unwrap();
        assert_eq!(naive.utc_micros(), 86_400_000_000);
        assert_eq!(aware.utc_micros(), naive.utc_micros());
        assert_ne!(naive, aware);
    }

    #[test]
    fn utc_micros_round_trips() {
        for micros in [0, -1, 1_700_000_000_123_456, -62_135_596_800_000_000] {
            let ts = Timestamp::from_utc_micros(micros).unwrap();
            assert_eq!(ts.utc_micros(), micros);
        }
    }
}
