//! Quiet hours: a person's "22:00-07:00" in their own IANA
//! time zone, during which reminders and arrival notices are not sent to
//! them by push or email. Only an escalation goes through.

use chrono::{DateTime, Utc};

/// A daily window, as minutes after midnight; `from > until` spans midnight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    from: u16,
    until: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadQuietHours {
    #[error("is not a time zone name such as Europe/Paris")]
    TimeZone,
    #[error("must be two times such as 22:00-07:00, not the same")]
    Hours,
}

fn minutes(hhmm: &str) -> Option<u16> {
    let (h, m) = hhmm.trim().split_once(':')?;
    if h.len() != 2 || m.len() != 2 {
        return None;
    }
    let (h, m): (u16, u16) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

impl QuietHours {
    /// "22:00-07:00".
    pub fn parse(s: &str) -> Result<QuietHours, BadQuietHours> {
        let (from, until) = s.split_once('-').ok_or(BadQuietHours::Hours)?;
        let (from, until) = (minutes(from).ok_or(BadQuietHours::Hours)?, minutes(until).ok_or(BadQuietHours::Hours)?);
        if from == until {
            return Err(BadQuietHours::Hours);
        }
        Ok(QuietHours { from, until })
    }

    fn contains(self, minute: u16) -> bool {
        if self.from < self.until {
            (self.from..self.until).contains(&minute)
        } else {
            minute >= self.from || minute < self.until
        }
    }
}

impl std::fmt::Display for QuietHours {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hm = |m: u16| format!("{:02}:{:02}", m / 60, m % 60);
        write!(f, "{}-{}", hm(self.from), hm(self.until))
    }
}

/// The zone, when `name` is one the compiled-in database knows.
pub fn check_zone(name: &str) -> Result<(), BadQuietHours> {
    jiff::tz::TimeZone::get(name).map(drop).map_err(|_| BadQuietHours::TimeZone)
}

/// Whether `now` falls in `hours` in `zone`. An unknown zone or window
/// (stored before a database change) is never quiet: a notice too many
/// beats a missed payment.
pub fn is_quiet(zone: &str, hours: &str, now: DateTime<Utc>) -> bool {
    let (Ok(tz), Ok(hours)) = (jiff::tz::TimeZone::get(zone), QuietHours::parse(hours)) else {
        return false;
    };
    let Ok(at) = jiff::Timestamp::from_second(now.timestamp()) else {
        return false;
    };
    let local = tz.to_datetime(at);
    hours.contains(local.hour() as u16 * 60 + local.minute() as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn windows_parse_and_span_midnight() {
        assert_eq!(QuietHours::parse("22:00-07:30").unwrap().to_string(), "22:00-07:30");
        for bad in ["", "22:00", "22-07", "24:00-07:00", "22:00-22:00", "2:00-07:00", "22:60-07:00"] {
            assert_eq!(QuietHours::parse(bad), Err(BadQuietHours::Hours), "{bad}");
        }
        let night = QuietHours::parse("22:00-07:00").unwrap();
        assert!(night.contains(23 * 60) && night.contains(0) && night.contains(6 * 60 + 59));
        assert!(!night.contains(7 * 60) && !night.contains(12 * 60) && !night.contains(21 * 60 + 59));
        let lunch = QuietHours::parse("12:00-13:00").unwrap();
        assert!(lunch.contains(12 * 60 + 30) && !lunch.contains(13 * 60));
    }

    #[test]
    fn quiet_is_read_in_the_persons_zone_across_daylight_saving() {
        // 21:30 UTC on a winter day is 22:30 in Paris (UTC+1), 16:30 in New York.
        let winter = Utc.with_ymd_and_hms(2026, 12, 3, 21, 30, 0).unwrap();
        assert!(is_quiet("Europe/Paris", "22:00-07:00", winter));
        assert!(!is_quiet("America/New_York", "22:00-07:00", winter));
        // The same UTC time in summer is 23:30 in Paris (UTC+2).
        let summer = Utc.with_ymd_and_hms(2026, 7, 3, 21, 30, 0).unwrap();
        assert!(is_quiet("Europe/Paris", "22:00-07:00", summer));
        // 20:30 UTC: 21:30 in Paris in winter (not quiet), 22:30 in summer (quiet).
        let (w, s) = (winter - chrono::Duration::hours(1), summer - chrono::Duration::hours(1));
        assert!(!is_quiet("Europe/Paris", "22:00-07:00", w));
        assert!(is_quiet("Europe/Paris", "22:00-07:00", s));
        assert!(!is_quiet("Mars/Olympus", "22:00-07:00", winter));
        assert_eq!(check_zone("Mars/Olympus"), Err(BadQuietHours::TimeZone));
        assert!(check_zone("Asia/Ho_Chi_Minh").is_ok());
    }
}
