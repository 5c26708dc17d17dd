//! Which policy decides for a tenant: the TOML rules (`[policy]`, the
//! default) or a Cedar policy, enforced; and, beside it, a candidate that
//! is only observed (docs/POLICY.md, "Observe mode").
//!
//! Where a tenant's Cedar policy comes from: the file its config names
//! (`[tenants.<id>] policy = "…"`, `observe = "…"`), read and validated at
//! start; or, once a four-eyes policy change was confirmed, the database
//! (`store::policies`), which then wins over the file. The book is read on
//! every decision and replaced whole when a change is confirmed.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, RwLock};

use super::cedar::{CedarError, CedarPolicy};
use super::{evaluate, Decision, PolicyConfig, PolicyInput};

/// What decides.
#[derive(Debug, Clone)]
pub enum Engine {
    /// The TOML rules of `[policy]` (`super::evaluate`).
    Rules,
    Cedar(Arc<CedarPolicy>),
}

impl Engine {
    pub fn evaluate(&self, rules: &PolicyConfig, input: &PolicyInput<'_>) -> Decision {
        match self {
            Engine::Rules => evaluate(rules, input),
            Engine::Cedar(policy) => policy.evaluate(input),
        }
    }

    /// "the TOML rules" or "Cedar policy sha256:0123abcd…".
    pub fn label(&self) -> String {
        match self {
            Engine::Rules => "the TOML rules ([policy])".into(),
            Engine::Cedar(p) => format!("Cedar policy {}", short(p.digest())),
        }
    }

    /// The policy's digest (`rules` for the TOML rules).
    pub fn digest(&self) -> String {
        match self {
            Engine::Rules => "rules".into(),
            Engine::Cedar(p) => p.digest().to_owned(),
        }
    }

    pub fn is_cedar(&self) -> bool {
        matches!(self, Engine::Cedar(_))
    }

    /// A Cedar policy from a file: Cedar's errors name the file, line and column.
    pub fn from_file(path: &Path) -> Result<Engine, PolicyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| PolicyError::Unreadable(format!("cannot read {}: {}", path.display(), e.kind())))?;
        Engine::from_text(&path.display().to_string(), &text)
    }

    pub fn from_text(origin: &str, text: &str) -> Result<Engine, PolicyError> {
        Ok(Engine::Cedar(Arc::new(CedarPolicy::parse(origin, text).map_err(PolicyError::Invalid)?)))
    }
}

/// `sha256:0123abcd…`: enough to tell two policies apart on a page.
pub fn short(digest: &str) -> String {
    format!("{}…", &digest[..digest.len().min(19)])
}

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("{0}")]
    Unreadable(String),
    #[error("{0}")]
    Invalid(CedarError),
}

/// A tenant's enforced policy and its observed candidate.
#[derive(Debug, Clone)]
pub struct TenantPolicy {
    pub enforced: Engine,
    pub observed: Option<Engine>,
}

impl Default for TenantPolicy {
    fn default() -> Self {
        TenantPolicy { enforced: Engine::Rules, observed: None }
    }
}

impl TenantPolicy {
    /// Whether either policy reads risk signals (Cedar's may: they are
    /// computed for it).
    pub fn reads_risk_signals(&self) -> bool {
        self.enforced.is_cedar() || self.observed.as_ref().is_some_and(Engine::is_cedar)
    }
}

/// Every tenant's policies; tenants not named use the TOML rules. Two
/// layers: what the config's files say (fixed at start) and, over it, the
/// policies confirmed changes stored (`apply_confirmed`, at start and
/// whenever the store's list changes).
#[derive(Clone, Default)]
pub struct PolicyBook(Arc<RwLock<Layers>>);

#[derive(Default)]
struct Layers {
    files: HashMap<String, TenantPolicy>,
    current: HashMap<String, Arc<TenantPolicy>>,
    /// The ids of the confirmed rows the current layer was built from.
    confirmed: Vec<String>,
}

impl std::fmt::Debug for PolicyBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let book = self.0.read().unwrap_or_else(|e| e.into_inner());
        f.debug_map().entries(book.current.iter().map(|(t, p)| (t, p.enforced.label()))).finish()
    }
}

static RULES: std::sync::LazyLock<Arc<TenantPolicy>> = std::sync::LazyLock::new(|| Arc::new(TenantPolicy::default()));

impl PolicyBook {
    pub fn for_tenant(&self, tenant: &str) -> Arc<TenantPolicy> {
        let book = self.0.read().unwrap_or_else(|e| e.into_inner());
        book.current.get(tenant).cloned().unwrap_or_else(|| RULES.clone())
    }

    /// The policy the config's files give `tenant` (before any change).
    pub fn set(&self, tenant: &str, policy: TenantPolicy) {
        let mut book = self.0.write().unwrap_or_else(|e| e.into_inner());
        book.files.insert(tenant.to_owned(), policy.clone());
        book.current.insert(tenant.to_owned(), Arc::new(policy));
    }

    /// Lays the confirmed policies (the newest of each tenant and mode)
    /// over the files'. An empty text means the file's (or the rules).
    /// A stored text that no longer validates (a newer schema) keeps the
    /// file's and is logged. Cheap when nothing changed.
    pub fn apply_confirmed(&self, rows: &[Confirmed]) {
        let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
        if self.0.read().unwrap_or_else(|e| e.into_inner()).confirmed == ids {
            return;
        }
        let mut book = self.0.write().unwrap_or_else(|e| e.into_inner());
        let mut current: HashMap<String, TenantPolicy> = book.files.clone();
        for row in rows {
            let entry = current.entry(row.tenant_id.clone()).or_default();
            let from_file = book.files.get(&row.tenant_id);
            let engine = if row.text.is_empty() {
                match row.mode.as_str() {
                    MODE_ENFORCE => Some(from_file.map_or(Engine::Rules, |f| f.enforced.clone())),
                    _ => from_file.and_then(|f| f.observed.clone()),
                }
            } else {
                match Engine::from_text(&format!("policy change {}", row.change_id), &row.text) {
                    Ok(engine) => Some(engine),
                    Err(error) => {
                        tracing::error!(tenant = %row.tenant_id, change = %row.change_id, %error,
                            "a confirmed policy no longer validates; the config's own decides");
                        continue;
                    }
                }
            };
            match row.mode.as_str() {
                MODE_ENFORCE => entry.enforced = engine.unwrap_or(Engine::Rules),
                _ => entry.observed = engine,
            }
        }
        book.current = current.into_iter().map(|(t, p)| (t, Arc::new(p))).collect();
        book.confirmed = ids;
    }
}

/// The two modes a policy change sets.
pub const MODE_ENFORCE: &str = "enforce";
pub const MODE_OBSERVE: &str = "observe";

/// How often every instance reads the confirmed policies again
/// (`store::policies::refresh`).
pub const REFRESH_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// A policy a confirmed change set (`store::policies` keeps them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmed {
    pub id: String,
    pub tenant_id: String,
    /// [`MODE_ENFORCE`] or [`MODE_OBSERVE`].
    pub mode: String,
    /// Empty: the config's own.
    pub text: String,
    pub change_id: String,
}
