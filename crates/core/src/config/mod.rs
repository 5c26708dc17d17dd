//! Typed settings: built-in defaults, then a TOML file, then `COUNTERSIGN_*`
//! environment variables (nested keys joined by `__`, e.g.
//! `COUNTERSIGN_PROPOSALS__TTL_SECS=600`), then command-line flags.
//! Secrets are `SecretString`s: they never print, not even in `Debug`.

use figment::{
    providers::{Env, Format, Serialized, Toml},
    Figment,
};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::decision::policy::PolicyConfig;
use crate::domain::{Currency, CurrencyRules};

pub mod escalation;
mod operations;
pub mod payables;
pub mod rails;
mod reach;
mod validate;

pub use escalation::EscalationRule;
pub use operations::{AgentApiSettings, AgentLimit, ReportSettings, TracingSettings};
pub use reach::{EmailSettings, NotifySettings, PushSettings};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Address the console and API listen on.
    pub listen: SocketAddr,
    /// Where the database, signing keys and other state live (mode 0700).
    pub data_dir: PathBuf,
    pub database: DatabaseSettings,
    /// The console's public URL: token issuer, links in messages, cookie `Secure` flag.
    pub public_url: String,
    /// Where the built console assets (`pkg/`) are served from.
    pub site_root: PathBuf,
    /// `text` or `json` log lines.
    pub log_format: LogFormat,
    pub proposals: ProposalSettings,
    pub idempotency: IdempotencySettings,
    pub approval: ApprovalSettings,
    pub console: ConsoleSettings,
    /// The currencies this deployment accepts (ISO 4217, upper case).
    pub currencies: Vec<String>,
    /// The hard cap of each accepted currency, in minor units.
    pub currency_caps_minor: BTreeMap<String, u64>,
    pub policy: PolicyConfig,
    pub slack: SlackSettings,
    /// Microsoft Teams approvals through a Bot Framework bot (`crate::notify::teams`).
    pub teams: TeamsSettings,
    /// The default rail: the bundled simulator, or a rail speaking its API.
    pub rail: RailSettings,
    /// More rails, by name (`[rails.NAME]`: Stripe, bank files…), which
    /// tenants choose with `tenants.ID.rail`.
    pub rails: BTreeMap<String, rails::NamedRail>,
    pub metrics: MetricsSettings,
    pub webhooks: WebhookSettings,
    pub risk: RiskSettings,
    /// Invoices, split payments, bank-account changes, batches (`crate::payables`).
    pub payables: payables::PayablesSettings,
    pub mcp: McpSettings,
    /// Single sign-on with OpenID Connect (`crate::sso`).
    pub oidc: OidcSettings,
    /// Passkeys (`crate::people::passkeys`).
    pub passkeys: PasskeySettings,
    /// Per-tenant settings (`[tenants.<id>]`).
    pub tenants: BTreeMap<String, TenantSettings>,
    /// Per-agent request limits on the agent API.
    pub agent_api: AgentApiSettings,
    /// Traces out over OTLP (off by default).
    pub tracing: TracingSettings,
    /// The nightly reconciliation report.
    pub reports: ReportSettings,
    /// Email and Web Push to approvers (`crate::notify`).
    pub notifications: NotifySettings,
    /// Every tenant's loaded policies (`tenants.<id>.policy` and
    /// `.observe`, then the confirmed policy changes): not a key of the
    /// file, filled in by `load` and at start.
    #[serde(skip)]
    pub policies: crate::decision::policy::PolicyBook,
}

/// `[passkeys]`: who must hold a passkey, and when a new one counts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PasskeySettings {
    /// A user holding any of these roles cannot approve until they have
    /// registered a passkey (they can still sign in, and register one).
    pub required_roles: Vec<crate::domain::Role>,
    /// How long a newly registered passkey cannot approve payments, unless
    /// an admin other than its holder confirms it first (0: at once).
    pub cool_off_secs: u64,
    /// How long a one-time enrolment code stays valid.
    pub enrolment_code_ttl_secs: u64,
}

impl Default for PasskeySettings {
    fn default() -> Self {
        PasskeySettings { required_roles: Vec::new(), cool_off_secs: 24 * 3600, enrolment_code_ttl_secs: 72 * 3600 }
    }
}

/// `[database]`: where the data is kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseSettings {
    /// Unset: the embedded SQLite database, `countersign.db` in `data_dir`.
    /// `postgres://…` or `postgresql://…`: a PostgreSQL server, which
    /// several instances may share (docs/DEPLOY.md). A secret: the URL may
    /// hold a password.
    #[serde(skip_serializing)]
    pub url: Option<SecretString>,
    /// PostgreSQL: how many connections this process keeps at most (its
    /// pool; N instances keep up to N times this). SQLite ignores it: one
    /// writer connection and its readers.
    pub max_connections: u32,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        DatabaseSettings { url: None, max_connections: crate::store::PG_CONNECTIONS }
    }
}

/// `/mcp`: the MCP tools over streamable HTTP (`http::mcp`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpSettings {
    /// How many MCP requests may be in flight at once (a `wait_for_decision`
    /// holds its request up to 10 minutes); past it, 429 `rate_limited`.
    pub max_in_flight: usize,
}

impl Default for McpSettings {
    fn default() -> Self {
        McpSettings { max_in_flight: 512 }
    }
}

/// Single sign-on: the OpenID providers console users may sign in through.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OidcSettings {
    /// By id (`[oidc.providers.<id>]`; the id is in the sign-in link).
    pub providers: BTreeMap<String, OidcProvider>,
}

/// One OpenID provider (an IdP: Keycloak, Entra ID, Okta, …) and this
/// server's registration there (docs/CONFIG.md, "Single sign-on").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcProvider {
    /// The button's label: "Sign in with <name>".
    pub name: String,
    /// The issuer, exactly as the provider's ID tokens carry it in `iss`
    /// (its discovery document is read from
    /// `<issuer>/.well-known/openid-configuration`).
    pub issuer: String,
    pub client_id: String,
    /// Secret. Or `client_secret_file`: a file holding it.
    #[serde(default, skip_serializing)]
    pub client_secret: Option<SecretString>,
    #[serde(default)]
    pub client_secret_file: Option<PathBuf>,
    /// Where the provider sends the browser back; default
    /// `<public_url>/auth/oidc/callback`.
    #[serde(default)]
    pub redirect_url: Option<String>,
    /// Scopes asked for besides `openid`.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The tenants whose users may sign in through this provider.
    pub tenants: Vec<String>,
    /// A claim of the ID token naming the user's tenant; when set, it must
    /// name the linked user's tenant.
    #[serde(default)]
    pub tenant_claim: Option<String>,
    /// The tenant claim's values, mapped to tenant ids (a value not listed
    /// must be the tenant id itself).
    #[serde(default)]
    pub tenant_values: BTreeMap<String, String>,
    /// A claim of the ID token listing roles (a string or an array of
    /// strings); when set, the session has only the registry's roles that
    /// it also lists: it narrows, never grants.
    #[serde(default)]
    pub roles_claim: Option<String>,
    /// The roles claim's values, mapped to roles (a value not listed must
    /// be a role name itself: viewer, approver, admin).
    #[serde(default)]
    pub role_values: BTreeMap<String, String>,
    /// A claim of the ID token listing the user's groups at the provider
    /// (a string or an array of strings); when set, each sign-in records
    /// them and the tenant's `idp_groups` setting says what they grant,
    /// exactly as for groups pushed by SCIM (docs/PEOPLE.md).
    #[serde(default)]
    pub groups_claim: Option<String>,
}

impl OidcProvider {
    /// The redirect URL registered at the provider.
    pub fn redirect_url(&self, public_url: &str) -> String {
        self.redirect_url.clone().unwrap_or_else(|| format!("{}{}", public_url.trim_end_matches('/'), CALLBACK_PATH))
    }
}

/// The path the providers send browsers back to.
pub const CALLBACK_PATH: &str = "/auth/oidc/callback";

/// Settings of one tenant.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TenantSettings {
    /// `false`: the tenant's users sign in only through single sign-on;
    /// a password sign-in is refused (after the password was checked, so
    /// the refusal tells nothing to someone who does not know it).
    pub local_passwords: bool,
    /// Named groups of the tenant's users, by username (`escalate_to`).
    pub approval_groups: BTreeMap<String, Vec<String>>,
    /// When to remind and to escalate, per amount band (`escalation`).
    pub escalation: Vec<EscalationRule>,
    /// Approvals required from named groups, per amount band.
    pub group_approval: Vec<escalation::GroupRule>,
    /// The rail the tenant's payments go to (`[rails.NAME]`); unset: the
    /// default rail (`[rail]`). Open payments stay on the rail they were
    /// submitted to.
    pub rail: Option<String>,
    /// What membership of an identity provider's group grants (the group's
    /// SCIM `displayName`, exactly): roles and approval groups, never an
    /// approval limit (docs/PEOPLE.md).
    pub idp_groups: BTreeMap<String, IdpGroupGrant>,
    /// A Cedar policy file that decides instead of the TOML rules
    /// (`[policy]`); relative to the config file. docs/POLICY.md, "Cedar".
    pub policy: Option<PathBuf>,
    /// A candidate Cedar policy observed beside the enforced one: its
    /// differences are recorded, never enforced. docs/POLICY.md, "Observe mode".
    pub observe: Option<PathBuf>,
}

/// What being in one identity provider's group grants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IdpGroupGrant {
    pub roles: Vec<crate::domain::Role>,
    /// Names of the tenant's `approval_groups`.
    pub approval_groups: Vec<String>,
}

impl Default for TenantSettings {
    fn default() -> Self {
        TenantSettings {
            local_passwords: true,
            approval_groups: BTreeMap::new(),
            escalation: Vec::new(),
            group_approval: Vec::new(),
            rail: None,
            idp_groups: BTreeMap::new(),
            policy: None,
            observe: None,
        }
    }
}

/// Agent webhooks (`countersign agent webhook set`, `crate::notify::webhooks`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebhookSettings {
    /// Hosts a webhook URL may name: exact names, or `*.example.com` for
    /// any subdomain. Empty: no webhook can be set.
    pub allowed_hosts: Vec<String>,
    /// Also accept `http://` URLs to a loopback address (local development).
    pub allow_http_loopback: bool,
    /// How long one delivery may take.
    pub timeout_ms: u64,
    /// Failed attempts at one event before it is logged `abandoned`.
    pub max_attempts: u32,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings { allowed_hosts: Vec::new(), allow_http_loopback: false, timeout_ms: 10_000, max_attempts: 12 }
    }
}

/// The risk signals shown on every proposal (`crate::intake::risk`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RiskSettings {
    /// A payee added, or whose details changed, this many days before the
    /// proposal is flagged.
    pub recent_payee_days: u32,
    /// An amount more than this many times the payee's median (of its last
    /// 50 payments in the currency, at least 3 of them) is flagged.
    pub unusual_amount_factor: f64,
    /// Whether a proposal with any signal needs one more approval than
    /// policy asks (at most 3), decided when the approvals are counted.
    pub extra_approval: bool,
}

impl Default for RiskSettings {
    fn default() -> Self {
        RiskSettings { recent_payee_days: 7, unusual_amount_factor: 3.0, extra_approval: false }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsSettings {
    /// A scraper presents this as `Authorization: Bearer …` to read
    /// `GET /metrics`. Unset: the endpoint does not exist.
    #[serde(skip_serializing)]
    pub bearer_token: Option<SecretString>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProposalSettings {
    /// How long a proposal may wait for a decision before it expires.
    pub ttl_secs: u64,
    /// How often the expiry sweep runs.
    pub expiry_sweep_secs: u64,
}

impl Default for ProposalSettings {
    fn default() -> Self {
        ProposalSettings { ttl_secs: 24 * 3600, expiry_sweep_secs: 5 }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IdempotencySettings {
    /// How long `Idempotency-Key`s are remembered; always longer than the
    /// rail's own 24 h key window.
    pub retention_hours: u64,
}

impl Default for IdempotencySettings {
    fn default() -> Self {
        IdempotencySettings { retention_hours: 7 * 24 }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalSettings {
    /// Lifetime of an approval token: default 300 s, at most 900 s.
    pub token_ttl_secs: u64,
}

impl Default for ApprovalSettings {
    fn default() -> Self {
        ApprovalSettings { token_ttl_secs: 300 }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsoleSettings {
    /// A console session ends after this long without a request.
    pub idle_timeout_secs: u64,
    /// ... and this long after sign-in, whatever happens.
    pub absolute_timeout_secs: u64,
    /// The reverse proxies in front of the console (addresses or CIDR
    /// ranges). Only when the connection comes from one of them is the
    /// client address taken from `X-Forwarded-For` / `Forwarded` (for
    /// sign-in throttling). Empty: the connection's peer is the client.
    pub trusted_proxies: Vec<String>,
    /// What reviewers call each source account (full account id → label,
    /// e.g. "Operating account (USD)"); shown beside the masked account.
    pub source_account_labels: BTreeMap<String, String>,
}

impl Default for ConsoleSettings {
    fn default() -> Self {
        ConsoleSettings {
            idle_timeout_secs: 30 * 60,
            absolute_timeout_secs: 12 * 3600,
            trusted_proxies: Vec::new(),
            source_account_labels: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlackSettings {
    /// The incoming-webhook URL new pending proposals are posted to, for every
    /// tenant without an entry in `webhook_urls`. Unset: no messages.
    #[serde(skip_serializing)]
    pub webhook_url: Option<SecretString>,
    /// Per-tenant incoming-webhook URLs (tenant id → URL), so one tenant's
    /// payments never reach another tenant's channel.
    #[serde(skip_serializing)]
    pub webhook_urls: BTreeMap<String, SecretString>,
    /// Signing secrets; a request signed with any of them is accepted (list
    /// the new secret beside the old one while rotating). Empty: every
    /// button press is refused.
    #[serde(skip_serializing)]
    pub signing_secrets: Vec<SecretString>,
    /// The only hosts outbound requests (webhook, `response_url`) may go to.
    pub allowed_hosts: Vec<String>,
    /// Per currency: above this amount (minor units) the Approve button only
    /// links to the console, and an approve press is refused. Currencies not
    /// listed have no such cap.
    pub max_direct_approve_minor: BTreeMap<String, u64>,
    /// One outbound request, connect to last byte.
    pub timeout_ms: u64,
    /// The longest wait between two delivery attempts (backoff doubles up to it).
    pub max_backoff_secs: u64,
}

impl Default for SlackSettings {
    fn default() -> Self {
        SlackSettings {
            webhook_url: None,
            webhook_urls: BTreeMap::new(),
            signing_secrets: Vec::new(),
            allowed_hosts: vec!["hooks.slack.com".into()],
            max_direct_approve_minor: BTreeMap::new(),
            timeout_ms: 5_000,
            max_backoff_secs: 300,
        }
    }
}

impl SlackSettings {
    /// The webhook URL messages about `tenant`'s proposals go to, if any.
    pub fn webhook_for(&self, tenant: &str) -> Option<&SecretString> {
        self.webhook_urls.get(tenant).or(self.webhook_url.as_ref())
    }
}

/// `[teams]`: approvals from Microsoft Teams through a Bot Framework bot
/// (docs/NOTIFICATIONS.md, "Approving from Microsoft Teams").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TeamsSettings {
    /// The bot's Microsoft App ID: the audience of the Bot Framework's
    /// tokens, and the client id the bot gets its own token with. Unset:
    /// every inbound activity is refused and nothing is posted.
    pub app_id: Option<String>,
    /// The App ID's client secret (Entra ID), for the bot's own token.
    #[serde(skip_serializing)]
    pub app_password: Option<SecretString>,
    /// The Bot Framework's OpenID metadata document; its `jwks_uri` names
    /// the keys inbound tokens are signed with.
    pub openid_metadata_url: String,
    /// The `iss` of inbound tokens.
    pub issuer: String,
    /// Where the bot gets its own token (client credentials).
    pub token_url: String,
    /// The scope of the bot's own token.
    pub token_scope: String,
    /// The only hosts cards are sent to (a conversation's `serviceUrl`):
    /// exact names, or with a leading `.` any subdomain.
    pub allowed_hosts: Vec<String>,
    /// Per tenant, the conversation (a channel) its waiting payments are
    /// posted to.
    pub channels: BTreeMap<String, TeamsChannel>,
    /// Per currency: above this amount (minor units) Approve only links to
    /// the console, and an approve press is refused.
    pub max_direct_approve_minor: BTreeMap<String, u64>,
    /// One outbound request, connect to last byte.
    pub timeout_ms: u64,
    /// The longest wait between two delivery attempts.
    pub max_backoff_secs: u64,
}

/// A Teams conversation the bot posts to: its Bot Connector URL and id, as
/// the bot was told when it was added to the channel.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TeamsChannel {
    pub service_url: String,
    pub conversation_id: String,
}

impl Default for TeamsSettings {
    fn default() -> Self {
        TeamsSettings {
            app_id: None,
            app_password: None,
            openid_metadata_url: "https://login.botframework.com/v1/.well-known/openidconfiguration".into(),
            issuer: "https://api.botframework.com".into(),
            token_url: "https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token".into(),
            token_scope: "https://api.botframework.com/.default".into(),
            allowed_hosts: vec!["smba.trafficmanager.net".into(), ".botframework.com".into()],
            channels: BTreeMap::new(),
            max_direct_approve_minor: BTreeMap::new(),
            timeout_ms: 5_000,
            max_backoff_secs: 300,
        }
    }
}

impl TeamsSettings {
    /// The conversation `tenant`'s waiting payments are posted to, if any.
    pub fn channel_for(&self, tenant: &str) -> Option<&TeamsChannel> {
        self.app_id.as_ref().and(self.channels.get(tenant))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RailSettings {
    /// The rail's base URL (a Stripe-compatible transfers API). Unset: `serve`
    /// starts the bundled simulator in-process on `simulator_listen`.
    pub url: Option<String>,
    /// Sent as `Authorization: Bearer …` (https only, or plain http to loopback).
    #[serde(skip_serializing)]
    pub api_key: Option<SecretString>,
    /// TCP + TLS connect timeout.
    pub connect_timeout_ms: u64,
    /// Whole rail request, body included. Past it the outcome is `unknown`.
    pub total_timeout_ms: u64,
    /// How long after an operation was recorded reconciliation may still
    /// resubmit it with the same idempotency key. Keep it below the rail's own
    /// key window (24 h at Stripe and in the simulator); 0 never resubmits.
    pub resubmit_window_secs: u64,
    /// How often the reconciliation worker looks at open operations.
    pub reconcile_interval_secs: u64,
    /// Where the in-process simulator listens when `url` is unset (loopback;
    /// port 0 picks a free one; the bound URL is written to `DATA_DIR/rail-sim.url`).
    pub simulator_listen: SocketAddr,
}

impl Default for RailSettings {
    fn default() -> Self {
        RailSettings {
            url: None,
            api_key: None,
            connect_timeout_ms: 2_000,
            total_timeout_ms: 10_000,
            resubmit_window_secs: 23 * 3600,
            reconcile_interval_secs: 2,
            simulator_listen: "127.0.0.1:0".parse().expect("a valid loopback address"),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        let caps = CurrencyRules::defaults();
        Settings {
            listen: "127.0.0.1:8080".parse().expect("a valid default address"),
            data_dir: PathBuf::from("data"),
            database: DatabaseSettings::default(),
            public_url: "http://localhost:8080".into(),
            site_root: PathBuf::from("target/site"),
            log_format: LogFormat::Text,
            proposals: ProposalSettings::default(),
            idempotency: IdempotencySettings::default(),
            approval: ApprovalSettings::default(),
            console: ConsoleSettings::default(),
            currencies: caps.allowed().map(|c| c.code().to_owned()).collect(),
            currency_caps_minor: caps.allowed().map(|c| (c.code().to_owned(), caps.cap(c).expect("allowed"))).collect(),
            policy: PolicyConfig::default(),
            slack: SlackSettings::default(),
            teams: TeamsSettings::default(),
            rail: RailSettings::default(),
            rails: BTreeMap::new(),
            metrics: MetricsSettings::default(),
            webhooks: WebhookSettings::default(),
            risk: RiskSettings::default(),
            payables: payables::PayablesSettings::default(),
            mcp: McpSettings::default(),
            oidc: OidcSettings::default(),
            passkeys: PasskeySettings::default(),
            tenants: BTreeMap::new(),
            agent_api: AgentApiSettings::default(),
            tracing: TracingSettings::default(),
            reports: ReportSettings::default(),
            notifications: NotifySettings::default(),
            policies: crate::decision::policy::PolicyBook::default(),
        }
    }
}

/// The top-level keys of `Settings`, which `COUNTERSIGN_*` variables may set.
const SETTINGS_KEYS: &[&str] = &[
    "listen",
    "data_dir",
    "database",
    "public_url",
    "site_root",
    "log_format",
    "proposals",
    "idempotency",
    "approval",
    "console",
    "currencies",
    "currency_caps_minor",
    "policy",
    "slack",
    "teams",
    "rail",
    "rails",
    "metrics",
    "webhooks",
    "risk",
    "payables",
    "mcp",
    "oidc",
    "passkeys",
    "tenants",
    "agent_api",
    "tracing",
    "reports",
    "notifications",
];

/// Command-line values that override every other source.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub listen: Option<SocketAddr>,
    pub data_dir: Option<PathBuf>,
}

/// `http://` and the address a browser can reach a listener at: a loopback
/// or unspecified address (`127.0.0.1`, `0.0.0.0`, `::`) as `localhost`,
/// which a browser treats as a secure context and passkeys accept as their
/// relying party (an IP address is never one).
fn url_of(listen: SocketAddr) -> String {
    match listen.ip() {
        ip if ip.is_unspecified() || ip.is_loopback() => format!("http://localhost:{}", listen.port()),
        std::net::IpAddr::V6(ip) => format!("http://[{ip}]:{}", listen.port()),
        std::net::IpAddr::V4(ip) => format!("http://{ip}:{}", listen.port()),
    }
}

/// A configuration problem, reported as one line naming the key.
#[derive(Debug, thiserror::Error)]
#[error("configuration error: {0}")]
pub struct ConfigError(String);

impl Settings {
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> Result<Settings, ConfigError> {
        // What the file and the environment say, before the defaults go
        // under it: whether they set `public_url` decides below.
        let mut given = Figment::new();
        if let Some(path) = file {
            if !path.exists() {
                return Err(ConfigError(format!("config file {} does not exist", path.display())));
            }
            given = given.merge(Toml::file_exact(path));
        }
        // Only variables naming a settings key are read: COUNTERSIGN_LOG,
        // COUNTERSIGN_CONFIG, COUNTERSIGN_USER_PASSWORD and the like belong to
        // other parts of the program.
        given = given.merge(
            Env::prefixed("COUNTERSIGN_")
                .filter(|key| {
                    let top = key.as_str().split("__").next().unwrap_or_default();
                    SETTINGS_KEYS.iter().any(|k| top.eq_ignore_ascii_case(k))
                })
                .split("__"),
        );
        let public_url_given = given.contains("public_url");
        let mut figment = Figment::from(Serialized::defaults(Settings::default())).merge(given);
        if let Some(listen) = overrides.listen {
            figment = figment.merge(("listen", listen.to_string()));
            // `serve --listen` with no public_url set: the console is where
            // it listens (links, the token issuer, the banner), not the
            // default's localhost:8080. A random port (0) is not known yet.
            if !public_url_given && listen.port() != 0 {
                figment = figment.merge(("public_url", url_of(listen)));
            }
        }
        if let Some(dir) = &overrides.data_dir {
            figment = figment.merge(("data_dir", dir));
        }
        let mut settings: Settings = figment.extract().map_err(|e| ConfigError(one_line(&e)))?;
        settings.read_secret_files()?;
        settings.validate()?;
        settings.load_policies(file.and_then(Path::parent))?;
        Ok(settings)
    }

    /// Reads and validates every tenant's Cedar policy files (relative
    /// paths from `base`, the config file's folder). One that does not
    /// validate stops the start with Cedar's error located in its file.
    pub fn load_policies(&mut self, base: Option<&Path>) -> Result<(), ConfigError> {
        use crate::decision::policy::{Engine, TenantPolicy};
        let book = crate::decision::policy::PolicyBook::default();
        for (id, tenant) in &self.tenants {
            let read = |key: &str, path: &Option<PathBuf>| -> Result<Option<Engine>, ConfigError> {
                let Some(path) = path else { return Ok(None) };
                let full = match base {
                    Some(dir) if path.is_relative() => dir.join(path),
                    _ => path.clone(),
                };
                Engine::from_file(&full).map(Some).map_err(|e| ConfigError(format!("key `tenants.{id}.{key}`: {e}")))
            };
            let enforced = read("policy", &tenant.policy)?;
            let observed = read("observe", &tenant.observe)?;
            if enforced.is_some() || observed.is_some() {
                book.set(id, TenantPolicy { enforced: enforced.unwrap_or(Engine::Rules), observed });
            }
        }
        self.policies = book;
        Ok(())
    }

    /// Reads each `client_secret_file` into its `client_secret`. The error
    /// names the key and the file, never what it holds.
    fn read_secret_files(&mut self) -> Result<(), ConfigError> {
        for (id, p) in &mut self.oidc.providers {
            let Some(path) = &p.client_secret_file else { continue };
            let key = format!("oidc.providers.{id}.client_secret_file");
            if p.client_secret.is_some() {
                return Err(ConfigError(format!("key `{key}`: give client_secret or client_secret_file, not both")));
            }
            let text = std::fs::read_to_string(path)
                .map_err(|e| ConfigError(format!("key `{key}`: cannot read {}: {}", path.display(), e.kind())))?;
            p.client_secret = Some(SecretString::from(text.trim_end_matches(['\r', '\n']).to_owned()));
        }
        Ok(())
    }

    /// Whether `tenant`'s users may sign in with a password.
    pub fn local_passwords(&self, tenant: &str) -> bool {
        self.tenants.get(tenant).is_none_or(|t| t.local_passwords)
    }

    pub fn currency_rules(&self) -> CurrencyRules {
        CurrencyRules::new(
            self.currencies
                .iter()
                .filter_map(|code| {
                    let cap = *self.currency_caps_minor.get(code)?;
                    Currency::parse(code).ok().map(|c| (c, cap))
                })
                .collect(),
        )
    }

    pub fn database_path(&self) -> PathBuf {
        self.data_dir.join("countersign.db")
    }

    /// Where reports are written: `reports.dir`, else `reports/` in `data_dir`.
    pub fn reports_dir(&self) -> PathBuf {
        self.reports.dir.clone().unwrap_or_else(|| self.data_dir.join("reports"))
    }

    /// The database `database.url` and `data_dir` name.
    pub fn backend(&self) -> Result<crate::store::Backend, ConfigError> {
        use crate::store::Backend;
        match Backend::select(self.database.url.as_ref(), &self.data_dir) {
            Ok(Backend::Postgres { url, .. }) => {
                Ok(Backend::Postgres { url, max_connections: self.database.max_connections })
            }
            Ok(backend) => Ok(backend),
            Err(why) => Err(ConfigError(format!("key `database.url`: {why}"))),
        }
    }

    /// A proposal's page in the console (the API's `approval_url`, Slack's links).
    pub fn proposal_url(&self, id: &str) -> String {
        format!("{}/proposals/{id}", self.public_url.trim_end_matches('/'))
    }

    pub fn secure_cookies(&self) -> bool {
        self.public_url.starts_with("https://")
    }
}

fn one_line(e: &figment::Error) -> String {
    // figment names the key path and the source; keep it on one line.
    let mut parts = Vec::new();
    for err in e.clone() {
        let key = err.path.join(".");
        let source = match (&err.metadata, err.metadata.as_ref().and_then(|m| m.source.as_ref())) {
            (_, Some(source)) => source.to_string(),
            (Some(m), None) => m.name.to_string(),
            (None, None) => String::new(),
        };
        // Parse errors come with a multi-line code excerpt: fold it to one line.
        let kind = err.kind.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
        let mut line = if key.is_empty() { kind } else { format!("key `{key}`: {kind}") };
        if !source.is_empty() {
            line.push_str(&format!(" (from {source})"));
        }
        parts.push(line);
    }
    parts.join("; ")
}

/// The settings, and the currency rules derived from them.
pub trait Config {
    fn settings(&self) -> &crate::config::Settings;
    fn currencies(&self) -> &crate::domain::CurrencyRules;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        Settings::default().validate().unwrap();
    }

    #[test]
    fn the_public_url_follows_listen_unless_it_is_set() {
        let listen = |addr: &str| Overrides { listen: Some(addr.parse().unwrap()), data_dir: None };
        let url = |file: Option<&Path>, addr: &str| Settings::load(file, &listen(addr)).unwrap().public_url;
        assert_eq!(url(None, "127.0.0.1:9123"), "http://localhost:9123");
        assert_eq!(url(None, "0.0.0.0:9000"), "http://localhost:9000");
        assert_eq!(url(None, "[::1]:9000"), "http://localhost:9000");
        assert_eq!(url(None, "10.1.2.3:9000"), "http://10.1.2.3:9000");
        assert_eq!(url(None, "[fd00::1]:9000"), "http://[fd00::1]:9000");
        assert_eq!(url(None, "127.0.0.1:0"), "http://localhost:8080", "a random port is not known yet");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "public_url = \"https://pay.example.com\"\n").unwrap();
        assert_eq!(url(Some(&file), "127.0.0.1:9123"), "https://pay.example.com", "set: kept");
        assert_eq!(Settings::load(None, &Overrides::default()).unwrap().public_url, "http://localhost:8080");
    }

    #[test]
    fn mcp_needs_room_for_at_least_one_request() {
        let mut s = Settings::default();
        s.mcp.max_in_flight = 0;
        assert!(s.validate().unwrap_err().to_string().contains("mcp.max_in_flight"));
    }

    #[test]
    fn the_postgres_pool_size_is_configured_and_bounded() {
        let mut s = Settings::default();
        s.database.url = Some(SecretString::from("postgres://db/cs".to_owned()));
        assert!(matches!(s.backend().unwrap(), crate::store::Backend::Postgres { max_connections: 16, .. }));
        s.database.max_connections = 4;
        s.validate().unwrap();
        assert!(matches!(s.backend().unwrap(), crate::store::Backend::Postgres { max_connections: 4, .. }));
        for bad in [0, 1, 1001] {
            s.database.max_connections = bad;
            let err = s.validate().unwrap_err().to_string();
            assert!(err.contains("database.max_connections"), "{bad}: {err}");
        }
    }

    #[test]
    fn database_url_selects_the_backend() {
        let mut s = Settings::default();
        assert!(matches!(s.backend().unwrap(), crate::store::Backend::Sqlite { data_dir } if data_dir == s.data_dir));
        s.database.url = Some(SecretString::from("postgres://cs:hunter2@db/cs".to_owned()));
        s.validate().unwrap();
        assert!(matches!(s.backend().unwrap(), crate::store::Backend::Postgres { .. }));
        assert!(!format!("{s:?}").contains("hunter2"));
        s.database.url = Some(SecretString::from("mysql://cs:hunter2@db/cs".to_owned()));
        let err = s.validate().unwrap_err().to_string();
        assert!(err.contains("database.url") && err.contains("postgres://"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn database_url_comes_from_the_file_or_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[database]\nurl = \"postgresql://db/cs\"\n").unwrap();
        let s = Settings::load(Some(&path), &Overrides::default()).unwrap();
        assert!(matches!(s.backend().unwrap(), crate::store::Backend::Postgres { .. }));
        std::fs::write(&path, "[database]\nurl = \"sqlite://x.db\"\n").unwrap();
        let err = Settings::load(Some(&path), &Overrides::default()).unwrap_err().to_string();
        assert!(err.contains("database.url"), "{err}");
        std::fs::write(&path, "[database]\npath = \"x.db\"\n").unwrap();
        let err = Settings::load(Some(&path), &Overrides::default()).unwrap_err().to_string();
        assert!(err.contains("path"), "{err}");
    }

    #[test]
    fn secrets_never_print() {
        let mut s = Settings::default();
        s.slack.signing_secrets = vec![SecretString::from("shh-very-secret".to_owned())];
        s.slack.webhook_url = Some(SecretString::from("https://hooks.example/T0/B0/XYZ".to_owned()));
        let printed = format!("{s:?}");
        assert!(!printed.contains("shh-very-secret"));
        assert!(!printed.contains("XYZ"));
        assert_eq!(s.slack.signing_secrets[0].expose_secret(), "shh-very-secret");
    }

    #[test]
    fn file_errors_name_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, "[proposals]\nttl_secs = \"soon\"\n").unwrap();
        let err = Settings::load(Some(&path), &Overrides::default()).unwrap_err().to_string();
        assert!(err.contains("proposals.ttl_secs"), "{err}");
        assert!(!err.contains('\n'), "{err}");

        std::fs::write(&path, "listen_address = \"x\"\n").unwrap();
        let err = Settings::load(Some(&path), &Overrides::default()).unwrap_err().to_string();
        assert!(err.contains("listen_address"), "{err}");

        std::fs::write(&path, "[currency_caps_minor]\nusd = 5\n").unwrap();
        let err = Settings::load(Some(&path), &Overrides::default()).unwrap_err().to_string();
        assert!(err.contains("currency_caps_minor.usd"), "{err}");
    }

    fn load_text(text: &str) -> Result<Settings, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, text.replace("DIR", &dir.path().display().to_string())).unwrap();
        std::fs::write(dir.path().join("secret"), "from-a-file\n").unwrap();
        Settings::load(Some(&path), &Overrides::default()).map_err(|e| e.to_string())
    }

    const PROVIDER: &str = r#"
[oidc.providers.okta]
name = "Okta"
issuer = "https://acme.okta.com"
client_id = "countersign"
client_secret = "oidc-client-secret"
tenants = ["acme"]
"#;

    #[test]
    fn single_sign_on_is_validated() {
        let s = load_text(PROVIDER).unwrap();
        let p = &s.oidc.providers["okta"];
        assert_eq!(p.redirect_url(&s.public_url), "http://localhost:8080/auth/oidc/callback");
        assert!(!format!("{s:?}").contains("oidc-client-secret"), "the client secret never prints");
        assert!(s.local_passwords("acme"));

        let bad = |from: &str, to: &str, key: &str| {
            let err = load_text(&PROVIDER.replace(from, to)).unwrap_err();
            assert!(err.contains(key), "{to}: {err}");
            assert!(!err.contains("oidc-client-secret"), "{err}");
        };
        bad("https://acme.okta.com", "http://acme.okta.com", "oidc.providers.okta.issuer");
        bad("https://acme.okta.com", "https://acme.okta.com/?x=1", "oidc.providers.okta.issuer");
        bad("tenants = [\"acme\"]", "tenants = []", "oidc.providers.okta.tenants");
        bad("client_secret = \"oidc-client-secret\"", "", "oidc.providers.okta.client_secret");
        bad("[oidc.providers.okta]", "[oidc.providers.Okta]", "oidc.providers.Okta");
        bad(
            "tenants = [\"acme\"]",
            "tenants = [\"acme\"]\nredirect_url = \"https://cs.example/callback\"",
            "redirect_url",
        );
        bad(
            "tenants = [\"acme\"]",
            "tenants = [\"acme\"]\nrole_values = { x = \"boss\" }\nroles_claim = \"r\"",
            "role_values",
        );
        // Plain http to loopback is for development and tests.
        load_text(&PROVIDER.replace("https://acme.okta.com", "http://127.0.0.1:9999")).unwrap();

        // The secret from a file (not both).
        let from_file =
            PROVIDER.replace("client_secret = \"oidc-client-secret\"", "client_secret_file = \"DIR/secret\"");
        let s = load_text(&from_file).unwrap();
        assert_eq!(s.oidc.providers["okta"].client_secret.as_ref().unwrap().expose_secret(), "from-a-file");
        let both = PROVIDER.replace("client_secret =", "client_secret_file = \"DIR/secret\"\nclient_secret =");
        assert!(load_text(&both).unwrap_err().contains("not both"));

        // Passwords off for a tenant no provider serves: nobody could sign in.
        let err = load_text("[tenants.globex]\nlocal_passwords = false\n").unwrap_err();
        assert!(err.contains("tenants.globex.local_passwords"), "{err}");
        let s = load_text(&format!("{PROVIDER}\n[tenants.acme]\nlocal_passwords = false\n")).unwrap();
        assert!(!s.local_passwords("acme") && s.local_passwords("globex"));
    }
}
