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
    /// Offset east of UTC in seconds; `None` for a naive value.
    offset_seconds: Option<i32>,
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
            offset_seconds: None,
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
            offset_seconds: Some(offset_seconds),
            ..self
        }
    }

    /// Python's `datetime.isoformat()`: `YYYY-MM-DDTHH:MM:SS[.ffffff][±HH:MM]`, the
    /// fraction only when non-zero, UTC as `+00:00` (never `Z`). The reference's
    /// sentences print instants this way; its JSON uses [`Display`](fmt::Display).
    pub fn python_isoformat(&self) -> String {
        let mut text = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        );
        if self.micro != 0 {
            text.push_str(&format!(".{:06}", self.micro));
        }
        if let Some(offset) = self.offset_seconds {
            let sign = if offset < 0 { '-' } else { '+' };
            let seconds = offset.unsigned_abs();
            text.push_str(&format!(
                "{sign}{:02}:{:02}",
                seconds / 3600,
                (seconds / 60) % 60
            ));
            if seconds % 60 != 0 {
                text.push_str(&format!(":{:02}", seconds % 60));
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
                offset_seconds: Some(0),
            })
    }

    /// The same wall-clock fields, marked as UTC (offset zero).
    pub fn with_utc_offset(self) -> Timestamp {
        Timestamp {
            offset_seconds: Some(0),
            ..self
        }
    }

    /// Parses text as Python 3.11 `datetime.fromisoformat` does: extended or basic
    /// dates (also ISO week dates), any one separator character, `HH[:MM[:SS[.f]]]`
    /// in extended or basic form with `.` or `,` before 1 or more fraction digits
    /// (digits past the sixth are dropped), and `Z` or `±HH[:MM[:SS[.f]]]` offsets.
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
        self.offset_seconds.is_some()
    }

    /// The offset east of UTC in seconds, `None` for a naive value.
    pub fn offset_seconds(&self) -> Option<i32> {
        self.offset_seconds
    }

    /// The instant in microseconds since the Unix epoch; a naive value is read as
    /// UTC (the reference's `ensure_utc`).
    pub fn utc_micros(&self) -> i64 {
        let days = days_from_civil(i64::from(self.year), self.month, self.day);
        let seconds = days * 86_400
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second)
            - i64::from(self.offset_seconds.unwrap_or(0));
        seconds * MICROS_PER_SECOND + i64::from(self.micro)
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
/// when non-zero, `Z` for a zero offset, offset seconds dropped.
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
        match self.offset_seconds {
            None => Ok(()),
            Some(0) => f.write_str("Z"),
            Some(offset) => {
                let sign = if offset < 0 { '-' } else { '+' };
                let minutes = offset.unsigned_abs() / 60;
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
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
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

/// The inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, u8, u8) {
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

/// A cursor over ASCII digits for the parser below.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn digits(&mut self, count: usize) -> Option<u32> {
        let end = self.pos.checked_add(count)?;
        let slice = self.bytes.get(self.pos..end)?;
        let mut value = 0u32;
        for &byte in slice {
            if !byte.is_ascii_digit() {
                return None;
            }
            value = value * 10 + u32::from(byte - b'0');
        }
        self.pos = end;
        Some(value)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }
}

fn parse_isoformat(text: &str) -> Option<Timestamp> {
    // Python works on code points; a non-ASCII character can only be the separator,
    // so handle that case by splitting on characters first.
    let bytes = text.as_bytes();
    let (date_len, (year, month, day)) = parse_date(bytes)?;
    let mut ts = Timestamp::from_fields(year, month, day, 0, 0, 0, 0)?;
    if date_len == bytes.len() {
        return Some(ts);
    }
    // Exactly one separator character (any code point) follows the date.
    let rest = text.get(date_len..)?;
    let separator_len = rest.chars().next()?.len_utf8();
    let time_text = rest.get(separator_len..)?;
    if time_text.is_empty() {
        return None;
    }
    let (hour, minute, second, micro, offset) = parse_time(time_text.as_bytes())?;
    ts = Timestamp::from_fields(year, month, day, hour, minute, second, micro)?;
    ts.offset_seconds = offset;
    Some(ts)
}

/// Returns the length of the date part and the date.
fn parse_date(bytes: &[u8]) -> Option<(usize, (u16, u8, u8))> {
    let mut cursor = Cursor { bytes, pos: 0 };
    let year = cursor.digits(4)? as u16;
    let extended = cursor.eat(b'-');
    if cursor.eat(b'W') {
        let week = cursor.digits(2)?;
        let mut weekday = 1;
        let has_day = if extended {
            cursor.eat(b'-')
        } else {
            cursor.peek().is_some_and(|b| b.is_ascii_digit())
        };
        if has_day {
            weekday = cursor.digits(1)?;
        }
        let date = iso_week_date(year, week, weekday)?;
        return Some((cursor.pos, date));
    }
    let month = cursor.digits(2)? as u8;
    if extended && !cursor.eat(b'-') {
        return None;
    }
    let day = cursor.digits(2)? as u8;
    Some((cursor.pos, (year, month, day)))
}

fn iso_week_date(year: u16, week: u32, weekday: u32) -> Option<(u16, u8, u8)> {
    if !(1..=7).contains(&weekday) || week == 0 {
        return None;
    }
    let jan4 = days_from_civil(i64::from(year), 1, 4);
    // 1970-01-01 was a Thursday; Monday = 0.
    let jan4_weekday = (jan4 + 3).rem_euclid(7);
    let week1_monday = jan4 - jan4_weekday;
    let max_week = {
        let dec28 = days_from_civil(i64::from(year), 12, 28);
        (dec28 - week1_monday) / 7 + 1
    };
    if i64::from(week) > max_week {
        return None;
    }
    let days = week1_monday + (i64::from(week) - 1) * 7 + i64::from(weekday) - 1;
    let (y, m, d) = civil_from_days(days);
    Some((u16::try_from(y).ok()?, m, d))
}

type TimeFields = (u8, u8, u8, u32, Option<i32>);

fn parse_time(bytes: &[u8]) -> Option<TimeFields> {
    // The offset starts at the first `+`, `-` or `Z`.
    let tz_at = bytes.iter().position(|b| matches!(b, b'+' | b'-' | b'Z'));
    let (clock, tz) = match tz_at {
        Some(at) => (&bytes[..at], Some(&bytes[at..])),
        None => (bytes, None),
    };
    let (hour, minute, second, micro) = parse_clock(clock)?;
    let offset = match tz {
        None => None,
        Some(b"Z") => Some(0),
        Some(tz) => {
            let sign: i64 = if tz[0] == b'-' { -1 } else { 1 };
            let (h, m, s, us) = parse_clock(&tz[1..])?;
            let total_micros = (i64::from(h) * 3600 + i64::from(m) * 60 + i64::from(s))
                * MICROS_PER_SECOND
                + i64::from(us);
            // Sub-second offsets exist in Python but not in any store; refuse them
            // rather than round.
            if total_micros % MICROS_PER_SECOND != 0 {
                return None;
            }
            Some((sign * total_micros / MICROS_PER_SECOND) as i32)
        }
    };
    Some((hour, minute, second, micro, offset))
}

/// `HH[:MM[:SS]]` in extended or basic form, with a fraction after any component
/// (as CPython 3.11's `parse_hh_mm_ss_ff`: `10:10,5` is 10:10:00.5).
fn parse_clock(bytes: &[u8]) -> Option<(u8, u8, u8, u32)> {
    let mut cursor = Cursor { bytes, pos: 0 };
    let mut fields = [0u8; 3];
    let mut extended = false;
    let mut fraction_at = None;
    for (i, field) in fields.iter_mut().enumerate() {
        *field = cursor.digits(2)? as u8;
        if cursor.at_end() {
            break;
        }
        if i == 0 {
            extended = cursor.peek() == Some(b':');
        }
        if extended && cursor.eat(b':') {
            if cursor.at_end() {
                return None;
            }
            continue;
        }
        if cursor.eat(b'.') || cursor.eat(b',') {
            fraction_at = Some(cursor.pos);
            break;
        }
        if extended || i == 2 {
            return None;
        }
    }
    let mut micro = 0;
    if let Some(at) = fraction_at {
        let fraction = &bytes[at..];
        if fraction.is_empty() || !fraction.iter().all(u8::is_ascii_digit) {
            return None;
        }
        for i in 0..6 {
            micro = micro * 10 + fraction.get(i).map_or(0, |d| u32::from(d - b'0'));
        }
    } else if !cursor.at_end() {
        return None;
    }
    let [hour, minute, second] = fields;
    (hour < 24 && minute < 60 && second < 60).then_some((hour, minute, second, micro))
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
