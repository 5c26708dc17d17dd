//! The rails besides the default one (`[rails.NAME]`) and their checks.
//! Which tenant pays through which: `tenants.ID.rail = "NAME"`
//! (docs/DEPLOY.md, "Choosing a tenant's rail").

use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The name of the `[rail]` section's rail.
pub const DEFAULT_RAIL: &str = "default";

/// The Stripe API version the connector pins (`Stripe-Version`) and whose
/// published OpenAPI description its tests check it against
/// (e2e/rails/stripe/).
pub const STRIPE_API_VERSION: &str = "2019-11-05";

/// A named rail: `kind = "simulator" | "stripe" | "iso20022"` and that
/// kind's settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NamedRail {
    /// A rail speaking the bundled simulator's API (SPEC §12) at `url`.
    Simulator(HttpRail),
    /// Stripe (docs/DEPLOY.md, "Paying through Stripe").
    Stripe(StripeRail),
    /// Bank files in ISO 20022 (docs/DEPLOY.md, "Paying with bank files").
    Iso20022(BankFileRail),
}

/// A rail reached over HTTP with the simulator's API.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpRail {
    pub url: String,
    #[serde(default, skip_serializing)]
    pub api_key: Option<SecretString>,
    #[serde(default = "default_connect_ms")]
    pub connect_timeout_ms: u64,
    #[serde(default = "default_total_ms")]
    pub total_timeout_ms: u64,
    /// Below the rail's 24 h key window.
    #[serde(default = "default_resubmit_secs")]
    pub resubmit_window_secs: u64,
}

/// Stripe: Transfers to connected accounts (`acct_…` payees), Payouts to
/// bank accounts and debit cards (`ba_…`, `card_…` payees).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StripeRail {
    /// `https://api.stripe.com` (plain http only to loopback, for tests).
    #[serde(default = "default_stripe_url")]
    pub url: String,
    /// The secret key (`sk_live_…`, `sk_test_…`, or a restricted `rk_…`
    /// with Transfers and Payouts write access). Required.
    #[serde(default, skip_serializing)]
    pub api_key: Option<SecretString>,
    /// Sent as `Stripe-Version` on every request.
    #[serde(default = "default_stripe_version")]
    pub api_version: String,
    /// The connected account whose balance payouts leave (`Stripe-Account`),
    /// when the key is a platform's acting for this tenant's account.
    /// Transfers are always the platform's own.
    #[serde(default)]
    pub account: Option<String>,
    #[serde(default = "default_connect_ms")]
    pub connect_timeout_ms: u64,
    #[serde(default = "default_total_ms")]
    pub total_timeout_ms: u64,
    /// Below Stripe's 24 h idempotency key window.
    #[serde(default = "default_resubmit_secs")]
    pub resubmit_window_secs: u64,
}

/// Bank files: `pain.001.001.09` written to `outbox`, the bank's
/// `pain.002` status reports and `camt.053`/`camt.054` statements read
/// from `inbox`. The folders are what an operator's file transfer (SFTP,
/// EBICS client) syncs with the bank.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BankFileRail {
    pub outbox: PathBuf,
    pub inbox: PathBuf,
    /// The paying company as the bank knows it.
    pub debtor_name: String,
    pub debtor_iban: String,
    /// The debtor's bank (BIC); omitted from the file when unset.
    #[serde(default)]
    pub debtor_bic: Option<String>,
    /// A TOML file of the payees' bank details (`[[beneficiary]] id, name,
    /// iban, bic`): the only place their full account numbers are kept.
    pub beneficiaries: PathBuf,
    /// How often the due payments are written as one file (one batch);
    /// 0 writes them at every reconciliation pass.
    #[serde(default = "default_cut_secs")]
    pub cut_every_secs: u64,
}

fn default_connect_ms() -> u64 {
    2_000
}
fn default_total_ms() -> u64 {
    10_000
}
fn default_resubmit_secs() -> u64 {
    23 * 3600
}
fn default_stripe_url() -> String {
    "https://api.stripe.com".into()
}
fn default_stripe_version() -> String {
    STRIPE_API_VERSION.into()
}
fn default_cut_secs() -> u64 {
    60
}

impl NamedRail {
    pub fn kind(&self) -> &'static str {
        match self {
            NamedRail::Simulator(_) => "simulator",
            NamedRail::Stripe(_) => "stripe",
            NamedRail::Iso20022(_) => "iso20022",
        }
    }

    /// The rail's own checks: `(key under rails.NAME, why)`.
    pub(super) fn check(&self) -> Result<(), (&'static str, String)> {
        let http = |url: &str, key: Option<&SecretString>, connect: u64, total: u64, window: u64| {
            if connect == 0 || total == 0 {
                return Err(("total_timeout_ms", "timeouts must be greater than zero".to_owned()));
            }
            if window >= 24 * 3600 {
                return Err(("resubmit_window_secs", "must be below the rail's 24 h idempotency key window".into()));
            }
            let parsed = url::Url::parse(url).map_err(|_| ("url", "is not a URL".to_owned()))?;
            match parsed.scheme() {
                "https" => Ok(()),
                "http" if is_loopback(&parsed) || key.is_none() => Ok(()),
                "http" => {
                    Err(("url", "a rail with an API key is reached over https (plain http only on loopback)".into()))
                }
                _ => Err(("url", "must be an http(s) URL".into())),
            }
        };
        match self {
            NamedRail::Simulator(r) => {
                http(&r.url, r.api_key.as_ref(), r.connect_timeout_ms, r.total_timeout_ms, r.resubmit_window_secs)
            }
            NamedRail::Stripe(r) => {
                if r.api_key.is_none() {
                    return Err(("api_key", "is required (a secret or restricted key; from the environment)".into()));
                }
                if !api_version_ok(&r.api_version) {
                    return Err(("api_version", "must be a Stripe API version such as 2019-11-05".into()));
                }
                if let Some(account) = &r.account {
                    let id = account.strip_prefix("acct_").unwrap_or("");
                    if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
                        return Err(("account", "must be a connected account id (acct_…)".into()));
                    }
                }
                http(&r.url, r.api_key.as_ref(), r.connect_timeout_ms, r.total_timeout_ms, r.resubmit_window_secs)
            }
            NamedRail::Iso20022(r) => {
                use crate::domain::bank as iso;
                if !iso::name_ok(&r.debtor_name) {
                    return Err(("debtor_name", "must be 1 to 140 characters the bank's character set allows".into()));
                }
                if !iso::iban_ok(&r.debtor_iban) {
                    return Err(("debtor_iban", "is not a valid IBAN (country, check digits, length)".into()));
                }
                if r.debtor_bic.as_deref().is_some_and(|b| !iso::bic_ok(b)) {
                    return Err(("debtor_bic", "is not a BIC (8 or 11 characters)".into()));
                }
                if r.outbox == r.inbox {
                    return Err(("inbox", "must be another folder than the outbox".into()));
                }
                Ok(())
            }
        }
    }
}

impl super::Settings {
    /// The longest whole-request timeout of any rail: one rail call's claim
    /// on an operation covers it (`operations::rail_call_lease`).
    pub fn rail_timeout_ms(&self) -> u64 {
        self.rails
            .values()
            .map(|r| match r {
                NamedRail::Simulator(h) => h.total_timeout_ms,
                NamedRail::Stripe(s) => s.total_timeout_ms,
                NamedRail::Iso20022(_) => 0,
            })
            .fold(self.rail.total_timeout_ms, u64::max)
    }
}

fn api_version_ok(v: &str) -> bool {
    let date = v.split_once('.').map_or(v, |(d, _)| d);
    let b = date.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
        && v.len() <= 64
        && v.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'))
}

fn is_loopback(url: &url::Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripe_api_versions() {
        for ok in [STRIPE_API_VERSION, "2024-06-20", "2025-03-31.basil"] {
            assert!(api_version_ok(ok), "{ok}");
        }
        for bad in ["", "2024-6-20", "latest", "2024-06-20\n", "2024/06/20"] {
            assert!(!api_version_ok(bad), "{bad:?}");
        }
    }
}
