//! Times as people read them: a stored RFC 3339 UTC timestamp shown in the
//! reader's zone ("2026-12-01 10:41 UTC+1") and relative to now ("in 23 h",
//! "5 min ago"). Pure arithmetic, so the console's server render and its
//! WebAssembly agree, and the browser only supplies "now" and its offset.

/// Seconds since the Unix epoch of `YYYY-MM-DDTHH:MM:SS[.fff]Z` (the form
/// the store writes); None for anything else.
pub fn epoch_secs(rfc3339: &str) -> Option<i64> {
    let b = rfc3339.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !rfc3339.ends_with('Z') {
        return None;
    }
    let num = |from: usize, to: usize| rfc3339.get(from..to)?.parse::<i64>().ok();
    let (y, m, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hh, mm, ss) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    Some(days_from_civil(y, m, d) * 86_400 + hh * 3600 + mm * 60 + ss)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01: (year, month, day).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { yoe + era * 400 + 1 } else { yoe + era * 400 }, m, d)
}

/// `2026-12-01 10:41 UTC+1`: the instant `secs` at `offset_minutes` east of UTC.
pub fn local(secs: i64, offset_minutes: i64) -> String {
    let t = secs + offset_minutes * 60;
    let (y, m, d) = civil_from_days(t.div_euclid(86_400));
    let in_day = t.rem_euclid(86_400);
    let zone = match offset_minutes {
        0 => "UTC".to_owned(),
        o => {
            let sign = if o > 0 { '+' } else { '-' };
            let (h, min) = (o.abs() / 60, o.abs() % 60);
            if min == 0 {
                format!("UTC{sign}{h}")
            } else {
                format!("UTC{sign}{h}:{min:02}")
            }
        }
    };
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} {zone}", in_day / 3600, in_day % 3600 / 60)
}

/// "in 23 h", "5 min ago", "just now": `delta` seconds from now (future
/// when positive), rounded down to the largest whole unit.
pub fn relative(delta: i64) -> String {
    let ahead = delta >= 0;
    let s = delta.abs();
    let amount = match s {
        0..=44 => return "just now".to_owned(),
        45..=3599 => format!("{} min", (s / 60).max(1)),
        3600..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86_400),
    };
    if ahead {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn stored_timestamps_parse() {
        assert_eq!(epoch_secs("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(epoch_secs("2026-12-01T09:41:13.123Z"), Some(1_796_118_073));
        assert_eq!(epoch_secs("2000-02-29T12:00:00.000Z"), Some(951_825_600));
        for bad in ["", "2026-12-01", "2026-12-01T09:41:13+01:00", "2026-13-01T00:00:00Z", "x026-12-01T09:41:13Z"] {
            assert_eq!(epoch_secs(bad), None, "{bad}");
        }
    }

    #[test]
    fn local_time_names_its_zone() {
        let t = epoch_secs("2026-12-01T23:30:00Z").unwrap();
        assert_eq!(local(t, 0), "2026-12-01 23:30 UTC");
        assert_eq!(local(t, 60), "2026-12-02 00:30 UTC+1");
        assert_eq!(local(t, -300), "2026-12-01 18:30 UTC-5");
        assert_eq!(local(t, 330), "2026-12-02 05:00 UTC+5:30");
    }

    #[test]
    fn relative_times_round_down_to_a_whole_unit() {
        assert_eq!(relative(10), "just now");
        assert_eq!(relative(-10), "just now");
        assert_eq!(relative(300), "in 5 min");
        assert_eq!(relative(-300), "5 min ago");
        assert_eq!(relative(23 * 3600 + 59 * 60), "in 23 h");
        assert_eq!(relative(3 * 86_400), "in 3 days");
    }

    proptest! {
        #[test]
        fn days_round_trip(days in -1_000_000i64..1_000_000) {
            let (y, m, d) = civil_from_days(days);
            prop_assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
