//! Failed sign-in throttling (docs/SECURITY.md, "Guessing passwords").
//!
//! Sliding windows of failures:
//!
//! - per (client address, username): a few failures lock this pair only;
//! - per username, from anywhere: a distributed guess at one account;
//! - per client address: many usernames from one place (password spraying);
//! - per known browser: a browser the user signed in from before (its
//!   `countersign_device` cookie, `store::devices`) is judged by its own
//!   failures only, so nobody elsewhere can lock a person out of their
//!   usual browser.
//!
//! Neither the username window nor the address window refuses a sign-in
//! by itself: both slow instead. Twenty wrong passwords for someone from
//! anywhere must not turn away their right one (docs/SECURITY.md,
//! "Guessing passwords"). Past the username's limit, sign-ins of that
//! username from unknown browsers are checked one at a time, each failure
//! holding the turn for a second ([`Admission::username_over_limit`]): a
//! distributed guess runs at one try a second, the person's own browser is
//! not slowed at all, and from a new browser they wait their turn.
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
    /// One turn at a time per username past its limit (unknown browsers).
    turns: Mutex<HashMap<String, std::sync::Arc<tokio::sync::Semaphore>>>,
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle::new(Limits::default())
    }
}

/// Why an attempt was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Too many failures for this username from this address (or from this
    /// known browser).
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
    /// The known browser this attempt comes from (the SHA-256 of its token).
    device: Option<String>,
    at: Instant,
    /// The address was past its failure limit when admitted: a failure
    /// should be slowed (see the module doc).
    pub address_over_limit: bool,
    /// The username was past its failure limit (from unknown browsers):
    /// the check waits its turn and a failure holds it (see the module doc).
    pub username_over_limit: bool,
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
fn device_key(device: &str) -> String {
    format!("d:{device}")
}

impl Throttle {
    pub fn new(limits: Limits) -> Self {
        Throttle { limits, inner: Mutex::new(Windows::default()), turns: Mutex::new(HashMap::new()) }
    }

    /// Waits (at most `wait`) for the username's one turn: sign-ins of a
    /// username past its limit from unknown browsers are checked one at a
    /// time. `None` when the wait ran out.
    pub async fn turn(&self, username: &str, wait: Duration) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let gate = {
            let mut turns = self.turns.lock().expect("throttle turns");
            if turns.len() > 10_000 {
                turns.retain(|_, gate| std::sync::Arc::strong_count(gate) > 1);
            }
            turns
                .entry(username.trim().to_lowercase())
                .or_insert_with(|| std::sync::Arc::new(tokio::sync::Semaphore::new(1)))
                .clone()
        };
        tokio::time::timeout(wait, gate.acquire_owned()).await.ok()?.ok()
    }

    /// Admits an attempt (reserving its failure) or refuses it. `device`:
    /// the SHA-256 of the browser's device token when it is one this user
    /// signed in from before (then only its own failures count).
    pub fn admit(
        &self,
        username: &str,
        address: &str,
        device: Option<&str>,
        now: Instant,
    ) -> Result<Admission<'_>, Refusal> {
        let username = username.trim().to_lowercase();
        let l = &self.limits;
        let mut w = self.inner.lock().expect("throttle lock");
        if w.failures.len() > 100_000 {
            w.failures.retain(|_, times| times.iter().any(|t| now.duration_since(*t) < l.window));
        }
        if let Some(device) = device {
            let key = device_key(device);
            let times = w.failures.entry(key).or_default();
            times.retain(|t| now.duration_since(*t) < l.window);
            if times.len() >= l.per_pair {
                let oldest = times.first().copied().unwrap_or(now);
                return Err(Refusal::Throttled(
                    l.window.saturating_sub(now.duration_since(oldest)).max(Duration::from_secs(1)),
                ));
            }
            times.push(now);
            return Ok(Admission {
                throttle: self,
                username,
                address: address.to_owned(),
                device: Some(device.to_owned()),
                at: now,
                address_over_limit: false,
                username_over_limit: false,
            });
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
        if counts[0] >= l.per_pair {
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
        let username_over_limit = counts[1] >= l.per_username;
        Ok(Admission {
            throttle: self,
            username,
            address: address.to_owned(),
            device: None,
            at: now,
            address_over_limit,
            username_over_limit,
        })
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
        if let Some(device) = &self.device {
            w.failures.remove(&device_key(device));
            return;
        }
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
        if self.device.is_some() {
            return; // a known browser holds no place in the address's checks
        }
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
        let held: Vec<_> = (0..3).map(|_| t.admit("ana", "1.2.3.4", None, now).expect("admitted")).collect();
        assert!(matches!(t.admit("ana", "1.2.3.4", None, now), Err(Refusal::Throttled(_))));
        drop(held);
        assert!(matches!(t.admit("ana", "1.2.3.4", None, now), Err(Refusal::Throttled(_))), "dropped = failed");
    }

    #[test]
    fn limits_per_pair_and_per_username_without_locking_out_others() {
        let t = Throttle::new(limits());
        let now = Instant::now();
        for _ in 0..3 {
            drop(t.admit("ana", "1.2.3.4", None, now).unwrap());
        }
        assert!(t.admit("ana", "1.2.3.4", None, now).is_err(), "the pair is throttled");
        assert!(t.admit("ana", "5.6.7.8", None, now).is_ok(), "the same user from elsewhere is not (yet)");
        assert!(t.admit("ben", "1.2.3.4", None, now).is_ok(), "another user from the same place is not");
        drop(t.admit("ana", "9.9.9.9", None, now).unwrap());
        let slowed = t.admit("ana", "7.7.7.7", None, now).expect("five failures from anywhere slow, never refuse");
        assert!(slowed.username_over_limit);
        drop(slowed);
        assert!(
            t.admit("ANA ", "5.5.5.5", None, now).unwrap().username_over_limit,
            "usernames compare trimmed, case-insensitively"
        );
        assert!(!t.admit("ben", "5.5.5.5", None, now).unwrap().username_over_limit, "other usernames are untouched");
        assert!(t.admit("ana", "1.2.3.4", None, now + Duration::from_secs(61)).is_ok(), "the window slides");
    }

    #[test]
    fn an_address_over_its_limit_still_signs_in_correct_credentials_one_at_a_time() {
        let t = Throttle::new(limits());
        let now = Instant::now();
        for i in 0..4 {
            drop(t.admit(&format!("user{i}"), "9.9.9.9", None, now).unwrap());
        }
        let office = t.admit("ana", "9.9.9.9", None, now).expect("never refused on the address count alone");
        assert_eq!(t.admit("ben", "9.9.9.9", None, now).err(), Some(Refusal::AddressBusy), "one check at a time");
        office.succeeded();
        assert!(t.admit("ben", "9.9.9.9", None, now).is_ok());
        assert!(t.admit("someone", "8.8.8.8", None, now).is_ok(), "other addresses are untouched");
    }

    #[test]
    fn success_takes_back_its_reservation_and_forgives_the_pair() {
        let t = Throttle::new(limits());
        let now = Instant::now();
        drop(t.admit("ana", "a", None, now).unwrap());
        drop(t.admit("ana", "a", None, now).unwrap());
        t.admit("ana", "a", None, now).unwrap().succeeded();
        assert_eq!(t.count(&pair_key("ana", "a")), 0);
        assert_eq!(t.count(&user_key("ana")), 2, "earlier failures of the username stay");
        assert_eq!(t.count(&address_key("a")), 2);
    }

    #[test]
    fn a_known_browser_is_judged_by_its_own_failures_only() {
        let t = Throttle::new(limits());
        let now = Instant::now();
        // An attack on maya from everywhere: her username is over its limit.
        for i in 0..6 {
            drop(t.admit("maya", &format!("10.0.0.{i}"), None, now).unwrap());
        }
        let own = t.admit("maya", "10.0.0.1", Some("her-browser"), now).expect("her own browser gets in");
        assert!(!own.username_over_limit && !own.address_over_limit);
        own.succeeded();
        // A stolen device cookie gets that browser's few tries, no more.
        for _ in 0..3 {
            drop(t.admit("maya", "6.6.6.6", Some("her-browser"), now).unwrap());
        }
        assert!(matches!(t.admit("maya", "6.6.6.6", Some("her-browser"), now), Err(Refusal::Throttled(_))));
        assert!(t.admit("maya", "10.0.0.9", Some("her-laptop"), now).is_ok(), "another of her browsers is not");
    }

    #[tokio::test]
    async fn a_username_past_its_limit_takes_turns() {
        let t = Throttle::new(limits());
        let first = t.turn("maya", Duration::from_millis(50)).await.expect("the turn is free");
        assert!(t.turn("MAYA", Duration::from_millis(50)).await.is_none(), "one at a time, same username");
        assert!(t.turn("ben", Duration::from_millis(50)).await.is_some(), "others have their own");
        drop(first);
        assert!(t.turn("maya", Duration::from_millis(50)).await.is_some(), "the next waits its turn, then goes");
    }

    #[test]
    fn concurrency_per_address_is_bounded() {
        let t = Throttle::new(Limits { concurrent_per_address: 2, ..limits() });
        let now = Instant::now();
        let a = t.admit("u1", "1.1.1.1", None, now).unwrap();
        let _b = t.admit("u2", "1.1.1.1", None, now).unwrap();
        assert_eq!(t.admit("u3", "1.1.1.1", None, now).err(), Some(Refusal::AddressBusy));
        drop(a);
        assert!(t.admit("u3", "1.1.1.1", None, now).is_ok());
    }
}
