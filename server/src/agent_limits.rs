//! Per-agent request limits on the agent API (`[agent_api]`): a token bucket
//! per agent (the `governor` crate's GCRA), counted in this instance. An
//! agent past its limit is answered 429 `rate_limited` with `Retry-After`,
//! before its request touches the database beyond the key lookup; the
//! console and other agents keep their own capacity.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

use crate::config::{AgentApiSettings, AgentLimit};

/// An agent's bucket; `None`: the agent has no limit.
type Bucket = Option<Arc<DefaultDirectRateLimiter>>;

pub struct AgentLimits {
    settings: AgentApiSettings,
    clock: DefaultClock,
    /// One bucket per agent met so far, by tenant (agents are few: the
    /// registry's, never one per key tried). Read without allocating, under
    /// a read lock: every agent request takes from it.
    buckets: RwLock<HashMap<String, HashMap<String, Bucket>>>,
}

impl AgentLimits {
    pub fn new(settings: &AgentApiSettings) -> Self {
        AgentLimits { settings: settings.clone(), clock: DefaultClock::default(), buckets: RwLock::default() }
    }

    /// Takes one request from the agent's bucket, or says how long until
    /// one is free.
    pub fn take(&self, tenant: &str, agent: &str) -> Result<(), Duration> {
        let known = {
            let buckets = self.buckets.read().unwrap_or_else(|p| p.into_inner());
            buckets.get(tenant).and_then(|agents| agents.get(agent)).cloned()
        };
        let bucket = match known {
            Some(bucket) => bucket,
            None => {
                let mut buckets = self.buckets.write().unwrap_or_else(|p| p.into_inner());
                let agents = buckets.entry(tenant.to_owned()).or_default();
                agents.entry(agent.to_owned()).or_insert_with(|| bucket(self.settings.limit_of(tenant, agent))).clone()
            }
        };
        match bucket {
            None => Ok(()),
            Some(bucket) => bucket.check().map_err(|not_until| not_until.wait_time_from(self.clock.now())),
        }
    }
}

fn bucket(limit: AgentLimit) -> Bucket {
    let rate = NonZeroU32::new(limit.requests_per_second)?;
    let burst = NonZeroU32::new(limit.burst).unwrap_or(NonZeroU32::MIN);
    Some(Arc::new(RateLimiter::direct(Quota::per_second(rate).allow_burst(burst))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_has_its_own_bucket_and_zero_is_no_limit() {
        let mut s = AgentApiSettings { requests_per_second: 1, burst: 2, ..Default::default() };
        s.agents.insert("acme/free".into(), AgentLimit { requests_per_second: 0, burst: 0 });
        let limits = AgentLimits::new(&s);
        assert!(limits.take("acme", "bot").is_ok());
        assert!(limits.take("acme", "bot").is_ok());
        let wait = limits.take("acme", "bot").expect_err("the burst is spent");
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(1), "{wait:?}");
        assert!(limits.take("acme", "other").is_ok(), "another agent keeps its bucket");
        assert!(limits.take("globex", "bot").is_ok(), "the same name in another tenant is another agent");
        assert!((0..1000).all(|_| limits.take("acme", "free").is_ok()));
    }
}
