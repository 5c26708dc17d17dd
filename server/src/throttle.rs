//! Failed sign-in throttling: a sliding window of failures per username and
//! per client address. Over the limit, sign-in is refused (429) for that key
//! only, so one attacked account does not lock out anyone else. The clock is
//! passed in, so tests need no sleeps.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct Throttle {
    window: Duration,
    per_username: usize,
    per_address: usize,
    failures: Mutex<HashMap<String, Vec<Instant>>>,
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle::new(Duration::from_secs(15 * 60), 5, 20)
    }
}

impl Throttle {
    pub fn new(window: Duration, per_username: usize, per_address: usize) -> Self {
        Throttle { window, per_username, per_address, failures: Mutex::new(HashMap::new()) }
    }

    fn keys(username: &str, address: &str) -> [(String, bool); 2] {
        [(format!("u:{}", username.to_lowercase()), true), (format!("a:{address}"), false)]
    }

    /// `Some(retry_after)` when either the username or the address is over its limit.
    pub fn check(&self, username: &str, address: &str, now: Instant) -> Option<Duration> {
        let mut map = self.failures.lock().expect("throttle lock");
        let mut wait = None;
        for (key, is_user) in Self::keys(username, address) {
            let limit = if is_user { self.per_username } else { self.per_address };
            if let Some(times) = map.get_mut(&key) {
                times.retain(|t| now.duration_since(*t) < self.window);
                if times.len() >= limit {
                    let oldest = times[0];
                    let retry = self.window.saturating_sub(now.duration_since(oldest));
                    wait = Some(wait.map_or(retry, |w: Duration| w.max(retry)));
                }
            }
        }
        if map.len() > 100_000 {
            map.retain(|_, times| times.iter().any(|t| now.duration_since(*t) < self.window));
        }
        wait
    }

    pub fn record_failure(&self, username: &str, address: &str, now: Instant) {
        let mut map = self.failures.lock().expect("throttle lock");
        for (key, _) in Self::keys(username, address) {
            map.entry(key).or_default().push(now);
        }
    }

    /// A successful sign-in clears the username's failures (not the address's).
    pub fn record_success(&self, username: &str) {
        self.failures.lock().expect("throttle lock").remove(&format!("u:{}", username.to_lowercase()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_per_username_without_locking_out_others() {
        let t = Throttle::new(Duration::from_secs(60), 3, 10);
        let now = Instant::now();
        for _ in 0..3 {
            assert!(t.check("ana", "1.2.3.4", now).is_none());
            t.record_failure("ana", "1.2.3.4", now);
        }
        assert!(t.check("ana", "1.2.3.4", now).is_some());
        assert!(t.check("ana", "5.6.7.8", now).is_some(), "the username is throttled from anywhere");
        assert!(t.check("ben", "1.2.3.4", now).is_none(), "other users are not locked out");
        assert!(t.check("ana", "1.2.3.4", now + Duration::from_secs(61)).is_none(), "the window slides");
    }

    #[test]
    fn limits_per_address() {
        let t = Throttle::new(Duration::from_secs(60), 100, 4);
        let now = Instant::now();
        for i in 0..4 {
            t.record_failure(&format!("user{i}"), "9.9.9.9", now);
        }
        assert!(t.check("someone", "9.9.9.9", now).is_some());
        assert!(t.check("someone", "8.8.8.8", now).is_none());
    }

    #[test]
    fn success_resets_the_username() {
        let t = Throttle::new(Duration::from_secs(60), 2, 10);
        let now = Instant::now();
        t.record_failure("ana", "a", now);
        t.record_success("ana");
        t.record_failure("ana", "a", now);
        assert!(t.check("ana", "a", now).is_none());
    }
}
