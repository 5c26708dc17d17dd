//! The human loop, measured (docs/NOTIFICATIONS.md): per
//! day, how many payments people approved and rejected and how many
//! expired undecided; per channel, how long people took to decide and how
//! long it took to tell them. Read from the stored history (approvals,
//! proposals, the notification and Slack outboxes), so it covers every
//! instance and survives restarts; the admin page `/admin/loop` draws it.

use chrono::{DateTime, Duration, NaiveDate, Utc};

use crate::store::{self, Store};

/// How many days the page covers, today included.
pub const WINDOW_DAYS: i64 = 30;

/// One UTC day's counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Day {
    pub day: NaiveDate,
    pub approvals: u32,
    pub rejections: u32,
    pub expiries: u32,
    pub escalations: u32,
}

/// How long something took on one channel: the median and the 90th
/// percentile (nearest rank), in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    pub channel: String,
    pub count: u32,
    pub median_secs: f64,
    pub p90_secs: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HumanLoop {
    /// Oldest first, [`WINDOW_DAYS`] of them, today last.
    pub days: Vec<Day>,
    /// Proposal created → a person's decision, by channel (console, slack…).
    pub decisions: Vec<Spread>,
    /// Proposal created → its first notice delivered, by channel (email,
    /// push, slack).
    pub notices: Vec<Spread>,
}

/// The `q` quantile of sorted `values` by nearest rank (`None` when empty).
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

/// Groups (channel, seconds) samples into one [`Spread`] per channel, by name.
fn spreads(samples: Vec<(String, f64)>) -> Vec<Spread> {
    let mut by: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for (channel, secs) in samples {
        by.entry(channel).or_default().push(secs.max(0.0));
    }
    by.into_iter()
        .map(|(channel, mut secs)| {
            secs.sort_by(f64::total_cmp);
            Spread {
                channel,
                count: secs.len() as u32,
                median_secs: quantile(&secs, 0.5).unwrap_or_default(),
                p90_secs: quantile(&secs, 0.9).unwrap_or_default(),
            }
        })
        .collect()
}

fn seconds(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    (to - from).num_milliseconds() as f64 / 1000.0
}

/// The tenant's human loop over the last [`WINDOW_DAYS`] days to `now`.
pub async fn measure(state: &impl Store, tenant: &str, now: DateTime<Utc>) -> store::Result<HumanLoop> {
    let today = now.date_naive();
    let first = today - Duration::days(WINDOW_DAYS - 1);
    let since = first.and_hms_opt(0, 0, 0).expect("midnight").and_utc();
    let pool = &state.db().read;
    let decided = store::human_loop::decisions_since(pool, tenant, since).await?;
    let expired = store::human_loop::expiries_since(pool, tenant, since).await?;
    let escalated = store::human_loop::escalations_since(pool, tenant, since).await?;
    let noticed = store::human_loop::first_notices_since(pool, tenant, since).await?;

    let mut days: Vec<Day> = (0..WINDOW_DAYS)
        .map(|i| Day { day: first + Duration::days(i), approvals: 0, rejections: 0, expiries: 0, escalations: 0 })
        .collect();
    let slot = |at: DateTime<Utc>| usize::try_from((at.date_naive() - first).num_days()).ok();
    for d in &decided {
        if let Some(day) = slot(d.at).and_then(|i| days.get_mut(i)) {
            match d.decision.as_str() {
                "approve" => day.approvals += 1,
                _ => day.rejections += 1,
            }
        }
    }
    for at in &expired {
        if let Some(day) = slot(*at).and_then(|i| days.get_mut(i)) {
            day.expiries += 1;
        }
    }
    for at in &escalated {
        if let Some(day) = slot(*at).and_then(|i| days.get_mut(i)) {
            day.escalations += 1;
        }
    }
    Ok(HumanLoop {
        days,
        decisions: spreads(decided.into_iter().map(|d| (d.via, seconds(d.created_at, d.at))).collect()),
        notices: spreads(noticed.into_iter().map(|n| (n.channel, seconds(n.created_at, n.at))).collect()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_by_nearest_rank() {
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(quantile(&ten, 0.5), Some(5.0));
        assert_eq!(quantile(&ten, 0.9), Some(9.0));
        assert_eq!(quantile(&[7.0], 0.9), Some(7.0));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn samples_group_by_channel() {
        let got = spreads(vec![("slack".into(), 60.0), ("console".into(), 10.0), ("console".into(), 30.0)]);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].channel.as_str(), got[0].count, got[0].median_secs), ("console", 2, 10.0));
        assert_eq!((got[0].p90_secs, got[1].channel.as_str(), got[1].median_secs), (30.0, "slack", 60.0));
    }
}
