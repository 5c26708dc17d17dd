//! Settings for running Countersign: the agent API's request limits,
//! traces out over OTLP, and the nightly reconciliation report.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `[agent_api]`: how many requests each agent may make, counted per
/// instance (`http::agent_limits`). Past its limit an agent is answered 429
/// `rate_limited` with `Retry-After`; other agents and the console are not
/// slowed by it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentApiSettings {
    /// Sustained requests per second of each agent (0: no limit).
    pub requests_per_second: u32,
    /// Requests an agent may make at once above the sustained rate.
    pub burst: u32,
    /// Limits of single agents, by `"<tenant>/<agent>"`.
    pub agents: BTreeMap<String, AgentLimit>,
}

impl Default for AgentApiSettings {
    fn default() -> Self {
        AgentApiSettings { requests_per_second: 100, burst: 200, agents: BTreeMap::new() }
    }
}

/// One agent's own limit (`[agent_api.agents."acme/payout-bot"]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentLimit {
    /// 0: no limit for this agent.
    pub requests_per_second: u32,
    pub burst: u32,
}

impl AgentApiSettings {
    /// The limit of `tenant`'s `agent`: its own, else the default.
    pub fn limit_of(&self, tenant: &str, agent: &str) -> AgentLimit {
        self.agents
            .get(&format!("{tenant}/{agent}"))
            .copied()
            .unwrap_or(AgentLimit { requests_per_second: self.requests_per_second, burst: self.burst })
    }

    pub(super) fn check(&self) -> Result<(), (String, &'static str)> {
        let one = |key: String, limit: AgentLimit| {
            if limit.requests_per_second > 0 && limit.burst == 0 {
                return Err((key, "burst must be at least 1 when requests_per_second is set"));
            }
            Ok(())
        };
        one("agent_api".into(), AgentLimit { requests_per_second: self.requests_per_second, burst: self.burst })?;
        for (name, limit) in &self.agents {
            let key = format!("agent_api.agents.\"{name}\"");
            match name.split_once('/') {
                Some((t, a)) if !t.is_empty() && !a.is_empty() && !a.contains('/') => one(key, *limit)?,
                _ => return Err((key, "name the agent as \"<tenant>/<agent>\"")),
            }
        }
        Ok(())
    }
}

/// `[tracing]`: OpenTelemetry traces over OTLP/HTTP (protobuf). Off unless
/// `otlp_endpoint` is set.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TracingSettings {
    /// The collector's traces URL, e.g. `http://otel-collector:4318/v1/traces`.
    pub otlp_endpoint: Option<String>,
    /// `service.name` of the resource (default `countersign`).
    pub service_name: Option<String>,
}

impl TracingSettings {
    pub(super) fn check(&self) -> Result<(), (String, &'static str)> {
        match &self.otlp_endpoint {
            Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                Err(("tracing.otlp_endpoint".into(), "must start with http:// or https://"))
            }
            _ => Ok(()),
        }
    }
}

/// `[reports]`: the nightly reconciliation report (`countersign report
/// reconciliation` writes one on demand).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReportSettings {
    /// The UTC hour (0–23) the nightly report is written at.
    pub reconciliation_hour_utc: u8,
    /// Where reports are written (default: `reports/` in `data_dir`).
    pub dir: Option<PathBuf>,
}

impl Default for ReportSettings {
    fn default() -> Self {
        ReportSettings { reconciliation_hour_utc: 2, dir: None }
    }
}

impl ReportSettings {
    pub(super) fn check(&self) -> Result<(), (String, &'static str)> {
        if self.reconciliation_hour_utc > 23 {
            return Err(("reports.reconciliation_hour_utc".into(), "must be between 0 and 23"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_has_its_own_limit_or_the_default() {
        let mut s = AgentApiSettings::default();
        s.agents.insert("acme/bot".into(), AgentLimit { requests_per_second: 2, burst: 3 });
        assert_eq!(s.limit_of("acme", "bot"), AgentLimit { requests_per_second: 2, burst: 3 });
        assert_eq!(s.limit_of("acme", "other"), AgentLimit { requests_per_second: 100, burst: 200 });
        assert_eq!(s.limit_of("globex", "bot").requests_per_second, 100);
    }

    #[test]
    fn bad_limits_and_names_are_refused_with_their_key() {
        let mut s = AgentApiSettings { burst: 0, ..Default::default() };
        assert_eq!(s.check().unwrap_err().0, "agent_api");
        s.burst = 1;
        s.agents.insert("bot".into(), AgentLimit { requests_per_second: 1, burst: 1 });
        assert_eq!(s.check().unwrap_err().0, "agent_api.agents.\"bot\"");
        s.agents.clear();
        s.agents.insert("acme/bot".into(), AgentLimit { requests_per_second: 0, burst: 0 });
        assert!(s.check().is_ok(), "0 is no limit");
        let t = TracingSettings { otlp_endpoint: Some("collector:4318".into()), service_name: None };
        assert_eq!(t.check().unwrap_err().0, "tracing.otlp_endpoint");
        let r = ReportSettings { reconciliation_hour_utc: 24, dir: None };
        assert_eq!(r.check().unwrap_err().0, "reports.reconciliation_hour_utc");
    }
}
