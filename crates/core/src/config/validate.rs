//! The settings' own checks, run by `Settings::load` after every source
//! is merged: each failure names its key.

use super::*;

impl Settings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError(format!("key `{key}`: {why}")));
        if !(self.public_url.starts_with("http://") || self.public_url.starts_with("https://")) {
            return bad("public_url", "must start with http:// or https://");
        }
        self.backend()?;
        if self.proposals.ttl_secs == 0 {
            return bad("proposals.ttl_secs", "must be greater than zero");
        }
        if self.proposals.expiry_sweep_secs == 0 {
            return bad("proposals.expiry_sweep_secs", "must be greater than zero");
        }
        if !(1..=900).contains(&self.approval.token_ttl_secs) {
            return bad("approval.token_ttl_secs", "must be between 1 and 900 seconds");
        }
        if self.console.idle_timeout_secs == 0 || self.console.absolute_timeout_secs == 0 {
            return bad("console", "session timeouts must be greater than zero");
        }
        if let Err(why) = crate::people::client_ip::TrustedProxies::parse(&self.console.trusted_proxies) {
            return bad("console.trusted_proxies", &why);
        }
        if self.idempotency.retention_hours <= 24 {
            return bad("idempotency.retention_hours", "must be more than 24 (the rail's key window)");
        }
        if self.currencies.is_empty() {
            return bad("currencies", "must allow at least one currency");
        }
        for code in &self.currencies {
            if Currency::parse(code).map(|c| c.code() != code).unwrap_or(true) {
                return bad("currencies", &format!("`{code}` is not an upper-case ISO 4217 code"));
            }
            if !self.currency_caps_minor.contains_key(code) {
                return bad(&format!("currency_caps_minor.{code}"), "is missing: every accepted currency needs a cap");
            }
        }
        for (code, cap) in &self.currency_caps_minor {
            if Currency::parse(code).map(|c| c.code() != code).unwrap_or(true) {
                return bad(&format!("currency_caps_minor.{code}"), "is not an upper-case ISO 4217 code");
            }
            if *cap == 0 {
                return bad(&format!("currency_caps_minor.{code}"), "must be greater than zero");
            }
        }
        if self.rail.connect_timeout_ms == 0 || self.rail.total_timeout_ms == 0 {
            return bad("rail", "timeouts must be greater than zero");
        }
        if self.rail.resubmit_window_secs >= 24 * 3600 {
            return bad("rail.resubmit_window_secs", "must be below the rail's 24 h idempotency key window");
        }
        if self.rail.reconcile_interval_secs == 0 {
            return bad("rail.reconcile_interval_secs", "must be greater than zero");
        }
        if !self.rail.simulator_listen.ip().is_loopback() {
            return bad("rail.simulator_listen", "the bundled simulator listens on loopback only");
        }
        self.validate_rails()?;
        if !(self.risk.unusual_amount_factor.is_finite() && self.risk.unusual_amount_factor > 1.0) {
            return bad("risk.unusual_amount_factor", "must be a number greater than 1");
        }
        if !(2..=1000).contains(&self.database.max_connections) {
            return bad("database.max_connections", "must be between 2 and 1000");
        }
        for check in [
            self.agent_api.check(),
            self.tracing.check(),
            self.reports.check(),
            self.notifications.check(),
            self.payables.check(),
        ] {
            if let Err((key, why)) = check {
                return bad(&key, why);
            }
        }
        if !(1..=65_536).contains(&self.mcp.max_in_flight) {
            return bad("mcp.max_in_flight", "must be between 1 and 65536");
        }
        if self.risk.recent_payee_days > 3650 {
            return bad("risk.recent_payee_days", "must be at most 3650");
        }
        for (account, label) in &self.console.source_account_labels {
            if label.trim().is_empty() || label.chars().count() > 80 || label.chars().any(char::is_control) {
                return bad(
                    &format!("console.source_account_labels.{}", crate::domain::mask_account(account)),
                    "a label is 1-80 characters, without control characters",
                );
            }
        }
        self.validate_slack()?;
        self.validate_teams()?;
        self.validate_oidc()?;
        self.policy.validate().map_err(|(key, why)| ConfigError(format!("key `policy.{key}`: {why}")))
    }

    /// The named rails, and each tenant's choice of one.
    pub(super) fn validate_rails(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError(format!("key `{key}`: {why}")));
        for (name, rail) in &self.rails {
            let name_ok = (1..=32).contains(&name.len())
                && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
            if !name_ok || name == rails::DEFAULT_RAIL {
                return bad(
                    &format!("rails.{name}"),
                    "a rail's name is 1 to 32 of a-z, 0-9, - and _, and not `default`",
                );
            }
            if let Err((key, why)) = rail.check() {
                return bad(&format!("rails.{name}.{key}"), &why);
            }
        }
        for (tenant, t) in &self.tenants {
            if let Some(rail) = &t.rail {
                if rail != rails::DEFAULT_RAIL && !self.rails.contains_key(rail) {
                    return bad(&format!("tenants.{tenant}.rail"), "names no rail: define it as [rails.NAME]");
                }
            }
        }
        for (name, rail) in &self.rails {
            if matches!(rail, rails::NamedRail::Iso20022(_)) && self.tenants_on(name).len() > 1 {
                return bad(
                    &format!("rails.{name}"),
                    "a bank-file rail is one debtor account: one tenant may use it, not several",
                );
            }
        }
        Ok(())
    }

    pub(super) fn validate_teams(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError(format!("key `{key}`: {why}")));
        let teams = &self.teams;
        if teams.timeout_ms == 0 || teams.max_backoff_secs == 0 {
            return bad("teams", "timeout_ms and max_backoff_secs must be greater than zero");
        }
        if teams.app_id.as_ref().is_some_and(|id| id.trim().is_empty()) {
            return bad("teams.app_id", "the bot's Microsoft App ID must not be empty");
        }
        if teams.allowed_hosts.iter().any(|h| h.trim().is_empty() || h.contains(['/', ':', '@'])) {
            return bad("teams.allowed_hosts", "each entry is a bare host name such as smba.trafficmanager.net");
        }
        let allow =
            crate::notify::outbound::Allowlist::named(&teams.allowed_hosts, "names a host not in teams.allowed_hosts");
        for (tenant, channel) in &teams.channels {
            if let Err(why) = allow.check(&channel.service_url) {
                return bad(&format!("teams.channels.{tenant}.service_url"), why);
            }
            if channel.conversation_id.trim().is_empty() {
                return bad(&format!("teams.channels.{tenant}.conversation_id"), "must not be empty");
            }
        }
        for (key, url) in
            [("teams.openid_metadata_url", &teams.openid_metadata_url), ("teams.token_url", &teams.token_url)]
        {
            let loopback_http = url.starts_with("http://127.0.0.1") || url.starts_with("http://localhost");
            if !(url.starts_with("https://") || loopback_http) || url::Url::parse(url).is_err() {
                return bad(key, "must be an https URL (plain http only to a loopback address)");
            }
        }
        for code in teams.max_direct_approve_minor.keys() {
            if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
                return bad(&format!("teams.max_direct_approve_minor.{code}"), "an upper-case ISO 4217 code");
            }
        }
        Ok(())
    }

    /// The tenants whose payments go to rail `name`.
    pub fn tenants_on(&self, name: &str) -> Vec<&str> {
        self.tenants.iter().filter(|(_, t)| t.rail.as_deref() == Some(name)).map(|(id, _)| id.as_str()).collect()
    }

    pub(super) fn validate_slack(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError(format!("key `{key}`: {why}")));
        let slack = &self.slack;
        if slack.timeout_ms == 0 || slack.max_backoff_secs == 0 {
            return bad("slack", "timeout_ms and max_backoff_secs must be greater than zero");
        }
        if slack.allowed_hosts.iter().any(|h| h.trim().is_empty() || h.contains(['/', ':', '@'])) {
            return bad("slack.allowed_hosts", "each entry is a bare host name such as hooks.slack.com");
        }
        let allow = crate::notify::outbound::Allowlist::new(&slack.allowed_hosts);
        let urls = slack.webhook_url.iter().map(|u| ("slack.webhook_url".to_owned(), u));
        let per_tenant = slack.webhook_urls.iter().map(|(t, u)| (format!("slack.webhook_urls.{t}"), u));
        for (key, url) in urls.chain(per_tenant) {
            // The reason names the rule, never the URL (it holds a secret).
            if let Err(why) = allow.check(url.expose_secret()) {
                return bad(&key, why);
            }
        }
        for (code, cap) in &slack.max_direct_approve_minor {
            if !self.currencies.contains(code) {
                return bad(&format!("slack.max_direct_approve_minor.{code}"), "is not an accepted currency");
            }
            if *cap == 0 {
                return bad(&format!("slack.max_direct_approve_minor.{code}"), "must be greater than zero");
            }
        }
        Ok(())
    }

    pub(super) fn validate_oidc(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError(format!("key `{key}`: {why}")));
        let mut issuers = BTreeMap::new();
        for (id, p) in &self.oidc.providers {
            let key = |field: &str| format!("oidc.providers.{id}.{field}");
            if id.is_empty()
                || id.len() > 32
                || !id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            {
                return bad(&format!("oidc.providers.{id}"), "a provider id is 1-32 of a-z, 0-9 and -");
            }
            if p.name.trim().is_empty() || p.name.chars().count() > 40 || p.name.chars().any(char::is_control) {
                return bad(&key("name"), "1-40 characters, without control characters");
            }
            if let Err(why) = check_url(&p.issuer, false) {
                return bad(&key("issuer"), why);
            }
            if let Some(other) = issuers.insert(p.issuer.as_str(), id) {
                return bad(&key("issuer"), &format!("provider `{other}` has the same issuer"));
            }
            if p.client_id.is_empty() || p.client_id.chars().any(char::is_control) {
                return bad(&key("client_id"), "must be given, without control characters");
            }
            if p.client_secret.as_ref().is_none_or(|s| s.expose_secret().is_empty()) {
                return bad(&key("client_secret"), "is missing (or give client_secret_file)");
            }
            let redirect = p.redirect_url(&self.public_url);
            if let Err(why) = check_url(&redirect, true) {
                return bad(&key("redirect_url"), why);
            }
            if url::Url::parse(&redirect).map(|u| u.path() != CALLBACK_PATH).unwrap_or(true) {
                return bad(&key("redirect_url"), &format!("must end in {CALLBACK_PATH}"));
            }
            if p.scopes
                .iter()
                .any(|s| s.is_empty() || !s.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\'))
            {
                return bad(&key("scopes"), "each scope is visible ASCII without quotes or backslashes");
            }
            if p.tenants.is_empty() {
                return bad(&key("tenants"), "must list the tenants whose users sign in through this provider");
            }
            for tenant in p.tenants.iter().chain(p.tenant_values.values()) {
                if crate::domain::RegistryId::parse(tenant).is_err() {
                    return bad(&key("tenants"), &format!("`{tenant}` is not a tenant id"));
                }
            }
            if let Some(unlisted) = p.tenant_values.values().find(|t| !p.tenants.contains(t)) {
                return bad(&key("tenant_values"), &format!("`{unlisted}` is not in this provider's tenants"));
            }
            if !p.tenant_values.is_empty() && p.tenant_claim.is_none() {
                return bad(&key("tenant_values"), "needs tenant_claim");
            }
            if let Some(role) = p.role_values.values().find(|r| crate::domain::Role::parse(r).is_none()) {
                return bad(&key("role_values"), &format!("`{role}` is not a role: viewer, approver or admin"));
            }
            if !p.role_values.is_empty() && p.roles_claim.is_none() {
                return bad(&key("role_values"), "needs roles_claim");
            }
            for (field, claim) in [("tenant_claim", &p.tenant_claim), ("roles_claim", &p.roles_claim)] {
                if claim.as_ref().is_some_and(|c| c.is_empty() || c.chars().any(char::is_control)) {
                    return bad(&key(field), "a claim name, without control characters");
                }
            }
        }
        for (tenant, t) in &self.tenants {
            if crate::domain::RegistryId::parse(tenant).is_err() {
                return bad(&format!("tenants.{tenant}"), "is not a tenant id");
            }
            if !t.local_passwords && !self.oidc.providers.values().any(|p| p.tenants.contains(tenant)) {
                return bad(
                    &format!("tenants.{tenant}.local_passwords"),
                    "no provider in oidc.providers lists this tenant: nobody could sign in",
                );
            }
            for (name, grant) in &t.idp_groups {
                if name.trim().is_empty() || name.chars().count() > 256 || name.chars().any(char::is_control) {
                    return bad(&format!("tenants.{tenant}.idp_groups"), "a group name is 1-256 characters");
                }
                if let Some(missing) = grant.approval_groups.iter().find(|g| !t.approval_groups.contains_key(*g)) {
                    return bad(
                        &format!("tenants.{tenant}.idp_groups.{name}.approval_groups"),
                        &format!("`{missing}` is not one of this tenant's approval_groups"),
                    );
                }
            }
            let granted: Vec<&str> =
                t.idp_groups.values().flat_map(|g| g.approval_groups.iter().map(String::as_str)).collect();
            if let Err((key, why)) = super::escalation::check(tenant, &t.approval_groups, &granted, &t.escalation)
                .and_then(|()| super::escalation::check_group_rules(tenant, &t.approval_groups, &t.group_approval))
            {
                return bad(&key, &why);
            }
        }
        Ok(())
    }
}

/// An http(s) URL: https, or plain http only to a loopback host (local
/// development and tests); no credentials, query or fragment for an issuer.
fn check_url(raw: &str, may_have_query: bool) -> Result<(), &'static str> {
    let url = url::Url::parse(raw).map_err(|_| "is not a URL")?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err("must name a host"),
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => return Err("must be https (plain http only to a loopback host)"),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry credentials");
    }
    if !may_have_query && (url.query().is_some() || url.fragment().is_some()) {
        return Err("must have no query or fragment");
    }
    Ok(())
}
