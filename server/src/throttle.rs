//! Failed sign-in throttling (docs/SECURITY.md, "Guessing passwords").
//!
//! Three sliding windows of failures:
//!
//! - per (client address, username): a few failures lock this pair only;
//! - per username, from anywhere: a distributed guess at one account;
//! - per client address: many usernames from one place (password spraying).
//!
//! An attempt is **reserved before the password is checked**: [`Throttle::admit`]
//! counts it as a failure under the lock, and a success takes it back. So
//! 30 concurrent wrong passwords cannot all run argon2 before the first
//! failure is counted: only as many as the window has room for are admitted.
//!
//! The address window never refuses a sign-in by itself: behind a NAT or a
//! misconfigured proxy one address is a whole office, and correct
//! credentials must still work. Past its limit the address is slowed
//! instead: one password check at a time (others are told to retry in a
//! second), and the caller holds each failure for a second before
//! answering ([`Admission::address_over_limit`]), so spraying from one
//! place runs at one guess a second while a right password gets in at once.
//!
//! The clock is passed in, so tests need no sleeps.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub window: Duration,
    /// Failures of one username from one address.
    pub per_pair: usize,
    /// Failures of one username from all addresses.
    pub per_username: usize,
    /// Failures from one address, all usernames (never refuses on its own).
    pub per_address: usize,
    /// Password checks in flight from one address at a time.
    pub concurrent_per_address: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            window: Duration::from_secs(15 * 60),
            per_pair: 5,
            per_username: 20,
            per_address: 50,
            concurrent_per_address: 4,
        }
    }
}

#[derive(Default)]
struct Windows {
    failures: HashMap<String, Vec<Instant>>,
    in_flight: HashMap<String, usize>,
}

pub struct Throttle {
    limits: Limits,
    inner: Mutex<Windows>,
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle::new(Limits::default())
    }
}

/// Why an attempt was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Too many failures for this username (from this address, or anywhere).
    Throttled(Duration),
    /// Too many password checks from this address at once.
    AddressBusy,
}

/// An admitted attempt: its failure is already counted. Call
/// [`Admission::succeeded`] when the password was right; dropping it any
/// other way leaves the failure counted (a crash or error is not a free try).
pub struct Admission<'a> {
    throttle: &'a Throttle,
    username: String,
    address: String,
    at: Instant,
    /// The address was past its failure limit when admitted: a failure
    /// should be slowed (see the module doc).
    pub address_over_limit: bool,
}

fn pair_key(username: &str, address: &str) -> String {
    format!("p:{address}\u{0}{username}")
}
fn user_key(username: &str) -> String {
    format!("u:{username}")
}
fn address_key(address: &str) -> String {
    format!("a:{address}")
}

impl Throttle {
    pub fn new(limits: Limits) -> Self {
        Throttle { limits, inner: Mutex::new(Windows::default()) }
    }

    /// Admits an attempt (reserving its failure) or refuses it.
    pub fn admit(&self, username: &str, address: &str, now: Instant) -> Result<Admission<'_>, Refusal> {
        let username = username.trim().to_lowercase();
        let l = &self.limits;
        let mut w = self.inner.lock().expect("throttle lock");
        if w.failures.len() > 100_000 {
            w.failures.retain(|_, times| times.iter().any(|t| now.duration_since(*t) < l.window));
        }
        let keys = [pair_key(&username, address), user_key(&username), address_key(address)];
        let mut counts = [0usize; 3];
        let mut retry = Duration::ZERO;
        for (i, key) in keys.iter().enumerate() {
            if let Some(times) = w.failures.get_mut(key) {
                times.retain(|t| now.duration_since(*t) < l.window);
                counts[i] = times.len();
                if let Some(oldest) = times.first() {
                    retry = retry.max(l.window.saturating_sub(now.duration_since(*oldest)));
                }
            }
        }
        if counts[0] >= l.per_pair || counts[1] >= l.per_username {
            return Err(Refusal::Throttled(retry.max(Duration::from_secs(1))));
        }
        let concurrency = if counts[2] >= l.per_address { 1 } else { l.concurrent_per_address };
        let in_flight = w.in_flight.entry(keys[2].clone()).or_default();
        if *in_flight >= concurrency {
            return Err(Refusal::AddressBusy);
        }
        *in_flight += 1;
        for key in keys {
            w.failures.entry(key).or_default().push(now);
        }
        let address_over_limit = counts[2] >= l.per_address;
        Ok(Admission { throttle: self, username, address: address.to_owned(), at: now, address_over_limit })
    }

    /// Failures counted in the window for `key` (tests).
    #[cfg(test)]
    fn count(&self, key: &str) -> usize {
        self.inner.lock().unwrap().failures.get(key).map_or(0, Vec::len)
    }
}

impl Admission<'_> {
    /// The password was right: the reserved failure is taken back and the
    /// pair's earlier failures are forgiven. (The username's and address's
    /// earlier failures stay: a success elsewhere must not reset an attack.)
    pub fn succeeded(self) {
        let mut w = self.throttle.inner.lock().expect("throttle lock");
        w.failures.remove(&pair_key(&self.username, &self.address));
        for key in [user_key(&self.username), address_key(&self.address)] {
            if let Some(times) = w.failures.get_mut(&key) {
                if let Some(i) = times.iter().rposition(|t| *t == self.at) {
                    times.remove(i);
                }
            }
        }
    }
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        if let Ok(mut w) = self.throttle.inner.lock() {
            let key = address_key(&self.address);
            if let Some(n) = w.in_flight.get_mut(&key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    w.in_flight.remove(&key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            window: Duration::from_secs(60),
            per_pair: 3,
            per_username: 5,
            per_address: 4,
            concurrent_per_address: 100,
        }
    }

    #[test]
    fn attempts_are_reserved_before_the_password_is_checked() {
        let t = Throttle::new(limits());
        let now = Instant::now();
        // Three concurrent attempts in flight: the fourth is refused before
        // any of them has finished.
        let held: Vec<_> = (0..3).map(|_| t.admit("ana", "1.2.3.4", now).expect("admitted")).collect();
        assert!(matches!(t.admit("ana", "1.2.3.4", now), Err(Refusal::Throttled(_))));
        drop(held);
        assert!(matches!(t.admit("ana", "1.2.3.4", now), Err(Refusal::Throttled(_))), "dropped = failed");
    }

    #[test]
    fn limits_per_pair_and_per_username_without_locking_out_others() {
        let t = Throttle::new(limits());
        let now = Instant::now();
        for _ in 0..3 {
            drop(t.admit("ana", "1.2.3.4", now).unwrap());
        }
        assert!(t.admit("ana", "1.2.3.4", now).is_err(), "the pair is throttled");
        assert!(t.admit("ana", "5.6.7.8", now).is_ok(), "the same user from elsewhere is not (yet)");
        assert!(t.admit("ben", "1.2.3.4", now).is_ok(), "another user from the same place is not");
        drop(t.admit("ana", "9.9.9.9", now).unwrap());
        assert!(t.admit("ana", "7.7.7.7", now).is_err(), "five failures from anywhere throttle the username");
        assert!(t.admit("ANA ", "5.5.5.5", now).is_err(), "usernames compare trimmed, case-insensitively");
        assert!(t.admit("ana", "1.2.3.4", now + Duration::from_secs(61)).is_ok(), "the window slides");
    }

    #[test]
    fn an_address_over_its_limit_still_signs_in_correct_credentials_one_at_a_time() {
        let t = Throttle::new(limits());
        let now = Instant::now();
        for i in 0..4 {
            drop(t.admit(&format!("user{i}"), "9.9.9.9", now).unwrap());
        }
        let office = t.admit("ana", "9.9.9.9", now).expect("never refused on the address count alone");
        assert_eq!(t.admit("ben", "9.9.9.9", now).err(), Some(Refusal::AddressBusy), "one check at a time");
        office.succeeded();
        assert!(t.admit("ben", "9.9.9.9", now).is_ok());
        assert!(t.admit("someone", "8.8.8.8", now).is_ok(), "other addresses are untouched");
    }

    #[test]
    fn success_takes_back_its_reservation_and_forgives_the_pair() {
        let t = Throttle::new(limits());
        let now = Instant::now();
        drop(t.admit("ana", "a", now).unwrap());
        drop(t.admit("ana", "a", now).unwrap());
        t.admit("ana", "a", now).unwrap().succeeded();
        assert_eq!(t.count(&pair_key("ana", "a")), 0);
        assert_eq!(t.count(&user_key("ana")), 2, "earlier failures of the username stay");
        assert_eq!(t.count(&address_key("a")), 2);
    }

    #[test]
    fn concurrency_per_address_is_bounded() {
        let t = Throttle::new(Limits { concurrent_per_address: 2, ..limits() });
        let now = Instant::now();
        let a = t.admit("u1", "1.1.1.1", now).unwrap();
        let _b = t.admit("u2", "1.1.1.1", now).unwrap();
        assert_eq!(t.admit("u3", "1.1.1.1", now).err(), Some(Refusal::AddressBusy));
        drop(a);
        assert!(t.admit("u3", "1.1.1.1", now).is_ok());
    }
}
