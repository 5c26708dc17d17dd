//! Validation: entries into a plan of typed values, every problem
//! collected, by the value rules of the domain.

use super::*;

// ---------------------------------------------------------------------------
// Validation: entries into a plan of typed values, every problem collected
// ---------------------------------------------------------------------------

/// Everything to apply, validated; references not yet checked.
#[derive(Default)]
pub(super) struct Plan {
    pub(super) tenants: Vec<TenantPlan>,
    pub(super) users: Vec<UserPlan>,
    pub(super) agents: Vec<AgentPlan>,
    pub(super) payees: Vec<PayeePlan>,
}

pub(super) struct TenantPlan {
    pub(super) id: Located<String>,
    pub(super) name: String,
    /// Daily budget per currency code, in minor units.
    pub(super) budgets: BTreeMap<String, u64>,
}

pub(super) struct UserPlan {
    pub(super) entry: Loc,
    pub(super) tenant: Located<String>,
    pub(super) username: Located<String>,
    pub(super) credential: Credential,
    pub(super) roles: Vec<Role>,
    pub(super) limits: BTreeMap<String, u64>,
    pub(super) slack_user_id: Option<Located<String>>,
    /// `None`: keep the stored link; `Some(None)`: no link.
    pub(super) oidc: Option<Option<Located<OidcIdentity>>>,
}

/// How a user's password is given.
pub(super) enum Credential {
    /// An argon2id PHC string, stored as is.
    Hash(String),
    /// A plain password (the `add` command, or a development file), hashed
    /// before the write transaction starts.
    Plain { password: SecretString, at: Loc },
    /// The stored password of the existing user stays.
    Keep { at: Loc },
}

pub(super) struct AgentPlan {
    pub(super) entry: Loc,
    pub(super) tenant: Located<String>,
    pub(super) id: Located<String>,
    pub(super) key_sha256: Located<String>,
    /// Where a plain development key was given instead of its hash.
    pub(super) plain_key_at: Option<Loc>,
    pub(super) acts_for: Located<String>,
    pub(super) source_accounts: Vec<SourceAccount>,
    pub(super) purposes: Vec<PurposeCode>,
}

pub(super) struct PayeePlan {
    pub(super) entry: Loc,
    pub(super) tenant: Located<String>,
    pub(super) id: Located<PayeeId>,
    pub(super) legal_name: String,
    pub(super) trusted: bool,
}

/// Parses values, recording a [`Problem`] for each one refused.
pub(super) struct Checker<'s> {
    pub(super) source: &'s Source<'s>,
    pub(super) problems: Vec<Problem>,
}

impl<'s> Checker<'s> {
    pub(super) fn new(source: &'s Source<'s>) -> Self {
        Checker { source, problems: Vec::new() }
    }

    pub(super) fn loc<T>(&self, key: &str, value: &Spanned<T>) -> Loc {
        self.source.loc(key.to_owned(), &value.span())
    }

    pub(super) fn fail<T>(&mut self, key: &str, value: &Spanned<T>, why: impl fmt::Display) {
        let problem = self.loc(key, value).problem(why.to_string());
        self.problems.push(problem);
    }

    /// `rule(value)`, or `None` with a problem recorded under `key`.
    pub(super) fn parse<T, U, E: fmt::Display>(
        &mut self,
        key: &str,
        value: &Spanned<T>,
        rule: impl FnOnce(&T) -> Result<U, E>,
    ) -> Option<U> {
        rule(value.get_ref()).map_err(|why| self.fail(key, value, why)).ok()
    }

    /// Like [`Checker::parse`], remembering where the value was written.
    pub(super) fn parse_located<T, U, E: fmt::Display>(
        &mut self,
        key: &str,
        value: &Spanned<T>,
        rule: impl FnOnce(&T) -> Result<U, E>,
    ) -> Option<Located<U>> {
        let at = self.loc(key, value);
        self.parse(key, value, rule).map(|value| Located { value, at })
    }

    /// An optional value: `Some(None)` when absent, `None` when refused.
    pub(super) fn parse_optional<T, U, E: fmt::Display>(
        &mut self,
        key: &str,
        value: Option<&Spanned<T>>,
        rule: impl FnOnce(&T) -> Result<U, E>,
    ) -> Option<Option<Located<U>>> {
        match value {
            None => Some(None),
            Some(value) => self.parse_located(key, value, rule).map(Some),
        }
    }

    /// Exactly one of a credential's stored form (`stored`: its key name and
    /// value) and its development-only plain form: the one given, or `None`
    /// with a problem when both or neither are.
    pub(super) fn exactly_one<'v, H, P, E>(
        &mut self,
        at: &str,
        entry: &Spanned<E>,
        stored: (&str, &'v Option<Spanned<H>>),
        plain: (&str, &'v Option<Spanned<P>>),
        what_stored_is: &str,
    ) -> Option<Given<'v, H, P>> {
        match (stored.1, plain.1) {
            (Some(value), None) => Some(Given::Stored(value)),
            (None, Some(value)) => Some(Given::Plain(value)),
            (Some(value), Some(_)) => {
                let why = format!("give either `{}` or `{}`, not both", stored.0, plain.0);
                self.fail(&join(at, stored.0), value, why);
                None
            }
            (None, None) => {
                let why = format!(
                    "is missing: give `{}` ({what_stored_is}) or, for development only, `{}`",
                    stored.0, plain.0
                );
                self.fail(&join(at, stored.0), entry, why);
                None
            }
        }
    }

    /// A non-empty list, each item parsed by `rule`; sorted and deduplicated
    /// so that the stored form does not depend on the order written.
    pub(super) fn list<U: Ord, E: fmt::Display>(
        &mut self,
        key: &str,
        values: &TextList,
        rule: impl Fn(&str) -> Result<U, E>,
    ) -> Option<Vec<U>> {
        if values.get_ref().is_empty() {
            self.fail(key, values, "must list at least one value");
            return None;
        }
        let parsed: Vec<Option<U>> = values
            .get_ref()
            .iter()
            .enumerate()
            .map(|(i, item)| self.parse(&format!("{key}[{i}]"), item, |s| rule(s)))
            .collect();
        let mut items: Vec<U> = parsed.into_iter().collect::<Option<_>>()?;
        items.sort();
        items.dedup();
        Some(items)
    }

    /// Amounts per currency: upper-case codes the deployment accepts,
    /// amounts that fit the database.
    pub(super) fn amounts(
        &mut self,
        key: &str,
        amounts: Option<&Spanned<Amounts>>,
        rules: &CurrencyRules,
    ) -> Option<BTreeMap<String, u64>> {
        let Some(amounts) = amounts else { return Some(BTreeMap::new()) };
        let parsed: Vec<Option<(String, u64)>> = amounts
            .get_ref()
            .iter()
            .map(|(code, amount)| {
                let key = join(key, code);
                let code = Spanned::new(amount.span(), code.clone());
                let code = self.parse(&key, &code, |c| accepted_currency(c, rules));
                let amount = self.parse(&key, amount, |n| storable_amount(*n));
                code.zip(amount)
            })
            .collect();
        parsed.into_iter().collect()
    }

    /// The plan, or every problem found.
    pub(super) fn finish(mut self, plan: Plan) -> Result<Plan, ApplyError> {
        self.problems.extend(duplicates(&plan));
        if self.problems.is_empty() {
            Ok(plan)
        } else {
            Err(ApplyError::Invalid(self.problems))
        }
    }
}

pub(super) fn validate_file(
    source: &Source<'_>,
    file: &ProvisionFile,
    rules: &CurrencyRules,
    settings: &Settings,
) -> Result<Plan, ApplyError> {
    let mut c = Checker::new(source);
    let plan = Plan {
        tenants: each(&mut c, "tenant", &file.tenant, |c, at, e| validate_tenant(c, at, e, rules)),
        users: each(&mut c, "user", &file.user, |c, at, e| validate_user(c, at, e, rules, settings)),
        agents: each(&mut c, "agent", &file.agent, validate_agent),
        payees: each(&mut c, "payee", &file.payee, validate_payee),
    };
    c.finish(plan)
}

/// Validates every entry of one array of tables, keyed `kind[i]`.
pub(super) fn each<E, P>(
    c: &mut Checker<'_>,
    kind: &str,
    entries: &[Spanned<E>],
    validate: impl Fn(&mut Checker<'_>, &str, &Spanned<E>) -> Option<P>,
) -> Vec<P> {
    entries.iter().enumerate().filter_map(|(i, entry)| validate(c, &format!("{kind}[{i}]"), entry)).collect()
}

pub(super) fn validate_tenant(
    c: &mut Checker<'_>,
    at: &str,
    entry: &Spanned<TenantEntry>,
    rules: &CurrencyRules,
) -> Option<TenantPlan> {
    let e = entry.get_ref();
    let id = c.parse_located(&join(at, "id"), &e.id, |s| registry_id(s));
    let name = c.parse(&join(at, "name"), &e.name, |s| display_text(s));
    let budgets = c.amounts(&join(at, "daily_budget_minor"), e.daily_budget_minor.as_ref(), rules);
    Some(TenantPlan { id: id?, name: name?, budgets: budgets? })
}

pub(super) fn validate_user(
    c: &mut Checker<'_>,
    at: &str,
    entry: &Spanned<UserEntry>,
    rules: &CurrencyRules,
    settings: &Settings,
) -> Option<UserPlan> {
    let e = entry.get_ref();
    let tenant = c.parse_located(&join(at, "tenant"), &e.tenant, |s| registry_id(s));
    let username = c.parse_located(&join(at, "username"), &e.username, |s| username(s));
    let credential = credential(c, at, entry);
    let roles = c.list(&join(at, "roles"), &e.roles, |s| {
        Role::parse(s).ok_or_else(|| format!("`{s}` is not a role: must be viewer, approver or admin"))
    });
    let limits = c.amounts(&join(at, "approval_limit_minor"), e.approval_limit_minor.as_ref(), rules);
    let slack_user_id = c.parse_optional(&join(at, "slack_user_id"), e.slack_user_id.as_ref(), |s| slack_user_id(s));
    let oidc = oidc_link(c, at, entry, settings);
    Some(UserPlan {
        entry: c.loc(at, entry),
        tenant: tenant?,
        username: username?,
        credential: credential?,
        roles: roles?,
        limits: limits?,
        slack_user_id: slack_user_id?,
        oidc: oidc?,
    })
}

/// `oidc_issuer` and `oidc_subject`, both or neither: the issuer must be
/// one of the configured providers' (exactly: a trailing slash matters),
/// the subject 1-255 visible ASCII characters (OpenID Connect Core 2).
pub(super) fn oidc_link(
    c: &mut Checker<'_>,
    at: &str,
    entry: &Spanned<UserEntry>,
    settings: &Settings,
) -> Option<Option<Option<Located<OidcIdentity>>>> {
    let e = entry.get_ref();
    match (&e.oidc_issuer, &e.oidc_subject) {
        (None, None) if e.keep_oidc => Some(None),
        (None, None) => Some(Some(None)),
        (Some(issuer), Some(subject)) => {
            let issuer = c.parse(&join(at, "oidc_issuer"), issuer, |i| {
                if settings.oidc.providers.values().any(|p| &p.issuer == i) {
                    Ok(i.clone())
                } else {
                    Err("is not the issuer of any provider in the server's [oidc.providers] (compared exactly)")
                }
            });
            let subject_at = c.loc(&join(at, "oidc_subject"), subject);
            let subject = c.parse(&join(at, "oidc_subject"), subject, |s| {
                if (1..=255).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic()) {
                    Ok(s.clone())
                } else {
                    Err("must be 1-255 visible ASCII characters")
                }
            });
            Some(Some(Some(Located { value: OidcIdentity { issuer: issuer?, subject: subject? }, at: subject_at })))
        }
        (Some(issuer), None) => {
            c.fail(&join(at, "oidc_subject"), issuer, "is missing: give oidc_issuer and oidc_subject together");
            None
        }
        (None, Some(subject)) => {
            c.fail(&join(at, "oidc_issuer"), subject, "is missing: give oidc_issuer and oidc_subject together");
            None
        }
    }
}

/// Which of a credential's two forms an entry gave.
pub(super) enum Given<'v, H, P> {
    Stored(&'v Spanned<H>),
    Plain(&'v Spanned<P>),
}

/// Exactly one of `password_hash` (an argon2id PHC string) and `password`.
pub(super) fn credential(c: &mut Checker<'_>, at: &str, entry: &Spanned<UserEntry>) -> Option<Credential> {
    let e = entry.get_ref();
    if e.keep_password && e.password.is_none() && e.password_hash.is_none() {
        return Some(Credential::Keep { at: c.loc(at, entry) });
    }
    let (hash_key, plain_key) = (join(at, "password_hash"), join(at, "password"));
    let stored = ("password_hash", &e.password_hash);
    match c.exactly_one(at, entry, stored, ("password", &e.password), "an argon2id PHC string")? {
        Given::Stored(hash) => c.parse(&hash_key, hash, |h| {
            if password::is_argon2id_phc(h) {
                Ok(Credential::Hash(h.clone()))
            } else {
                Err("must be an argon2id PHC string ($argon2id$v=19$m=…,t=…,p=…$salt$hash)")
            }
        }),
        Given::Plain(plain) => {
            let plain_at = c.loc(&plain_key, plain);
            c.parse(&plain_key, plain, |p| match p.expose_secret().chars().count() {
                0..=7 => Err("must be at least 8 characters"),
                _ => Ok(Credential::Plain { password: p.clone(), at: plain_at }),
            })
        }
    }
}

pub(super) fn validate_agent(c: &mut Checker<'_>, at: &str, entry: &Spanned<AgentEntry>) -> Option<AgentPlan> {
    let e = entry.get_ref();
    let tenant = c.parse_located(&join(at, "tenant"), &e.tenant, |s| registry_id(s));
    let id = c.parse_located(&join(at, "id"), &e.id, |s| registry_id(s));
    let key = agent_key(c, at, entry);
    let acts_for = c.parse_located(&join(at, "acts_for"), &e.acts_for, |s| username(s));
    let source_accounts = c.list(&join(at, "source_accounts"), &e.source_accounts, SourceAccount::parse);
    let purposes = c.list(&join(at, "purposes"), &e.purposes, PurposeCode::parse);
    let (key_sha256, plain_key_at) = key?;
    Some(AgentPlan {
        entry: c.loc(at, entry),
        tenant: tenant?,
        id: id?,
        key_sha256,
        plain_key_at,
        acts_for: acts_for?,
        source_accounts: source_accounts?,
        purposes: purposes?,
    })
}

/// Exactly one of `key_sha256` and (development only) `key = "cs_test_…"`.
/// Returns the hash to store and, for a plain key, where it was written.
pub(super) fn agent_key(
    c: &mut Checker<'_>,
    at: &str,
    entry: &Spanned<AgentEntry>,
) -> Option<(Located<String>, Option<Loc>)> {
    let e = entry.get_ref();
    let (hash_key, plain_key) = (join(at, "key_sha256"), join(at, "key"));
    let stored = ("key_sha256", &e.key_sha256);
    match c.exactly_one(at, entry, stored, ("key", &e.key), "64 lowercase hex digits")? {
        Given::Stored(hash) => c.parse_located(&hash_key, hash, |h| sha256_hex(h)).map(|h| (h, None)),
        Given::Plain(key) => {
            let hash = c.parse_located(&plain_key, key, |k| {
                AgentKey::parse_test_key(k.expose_secret()).map(|key| key.sha256().into_string())
            })?;
            let plain_at = hash.at.clone();
            Some((hash, Some(plain_at)))
        }
    }
}

pub(super) fn validate_payee(c: &mut Checker<'_>, at: &str, entry: &Spanned<PayeeEntry>) -> Option<PayeePlan> {
    let e = entry.get_ref();
    let tenant = c.parse_located(&join(at, "tenant"), &e.tenant, |s| registry_id(s));
    let id = c.parse_located(&join(at, "id"), &e.id, |s| PayeeId::parse(s));
    let legal_name = c.parse(&join(at, "legal_name"), &e.legal_name, |s| display_text(s));
    Some(PayeePlan {
        entry: c.loc(at, entry),
        tenant: tenant?,
        id: id?,
        legal_name: legal_name?,
        trusted: e.trusted.as_ref().is_some_and(|t| *t.get_ref()),
    })
}

/// Values that must be unique within one input: a second definition is
/// refused, naming the first. Key hashes and accounts are never echoed.
pub(super) fn duplicates(plan: &Plan) -> Vec<Problem> {
    let tenants =
        plan.tenants.iter().map(|t| (format!("tenant {}", t.id.value), &t.id.at, format!("tenant `{}`", t.id.value)));
    let users = plan.users.iter().map(|u| {
        (format!("username {}", u.username.value), &u.username.at, format!("username `{}`", u.username.value))
    });
    let slack_ids = plan
        .users
        .iter()
        .filter_map(|u| u.slack_user_id.as_ref())
        .map(|s| (format!("slack {}", s.value), &s.at, format!("slack_user_id `{}`", s.value)));
    let oidc = plan.users.iter().filter_map(|u| u.oidc.as_ref().and_then(Option::as_ref)).map(|l| {
        (format!("oidc {} {}", l.value.issuer, l.value.subject), &l.at, "this oidc_issuer and oidc_subject".to_owned())
    });
    let agents = plan.agents.iter().map(|a| {
        let id = format!("{}/{}", a.tenant.value, a.id.value);
        (format!("agent {id}"), &a.id.at, format!("agent `{id}`"))
    });
    let keys =
        plan.agents.iter().map(|a| (format!("key {}", a.key_sha256.value), &a.key_sha256.at, "the same key".into()));
    let payees = plan.payees.iter().map(|p| {
        (format!("payee {}/{}", p.tenant.value, p.id.value.expose()), &p.id.at, format!("payee `{}`", p.id.value))
    });

    let mut first: BTreeMap<String, &Loc> = BTreeMap::new();
    let mut problems = Vec::new();
    for (identity, at, what) in
        tenants.chain(users).chain(slack_ids).chain(oidc).chain(agents).chain(keys).chain(payees)
    {
        match first.get(&identity) {
            Some(earlier) => problems.push(at.problem(format!("{what} is already defined by `{}`", earlier.key))),
            None => {
                first.insert(identity, at);
            }
        }
    }
    problems
}

/// Says where a plain password or key was accepted: fine for a demo, never
/// for production.
pub(super) fn warn_development_secrets(plan: &Plan) {
    for user in &plan.users {
        if let Credential::Plain { at, .. } = &user.credential {
            tracing::warn!("{}", at.problem("a plain password is accepted for development only; use `password_hash`"));
        }
    }
    for at in plan.agents.iter().filter_map(|a| a.plain_key_at.as_ref()) {
        tracing::warn!("{}", at.problem("a plain key is accepted for development only; use `key_sha256`"));
    }
}

// ---------------------------------------------------------------------------
// Value rules
// ---------------------------------------------------------------------------

// The rules themselves live in the domain (`countersign_domain::registry`);
// these adapt them to the checker (a value out, the rule's words as the error).

pub(super) fn registry_id(s: &str) -> Result<String, FieldRule> {
    RegistryId::parse(s).map(RegistryId::into_string)
}

pub(super) fn username(s: &str) -> Result<String, FieldRule> {
    Username::parse(s).map(Username::into_string)
}

pub(super) fn display_text(s: &str) -> Result<String, FieldRule> {
    DisplayText::parse(s).map(DisplayText::into_string)
}

pub(super) fn slack_user_id(s: &str) -> Result<String, FieldRule> {
    SlackUserId::parse(s).map(SlackUserId::into_string)
}

/// A currency code exactly as the deployment lists it (upper case).
pub(super) fn accepted_currency(code: &str, rules: &CurrencyRules) -> Result<String, String> {
    match Currency::parse(code) {
        Ok(c) if c.code() == code && rules.cap(c).is_some() => Ok(code.to_owned()),
        _ => {
            let accepted: Vec<String> = rules.allowed().map(|c| c.code().to_owned()).collect();
            Err(format!(
                "`{code}` is not an upper-case currency code this deployment accepts ({})",
                accepted.join(", ")
            ))
        }
    }
}

/// Minor-unit amounts are stored as signed 64-bit integers.
pub(super) fn storable_amount(n: u64) -> Result<u64, &'static str> {
    if i64::try_from(n).is_ok() {
        Ok(n)
    } else {
        Err("must be at most 9223372036854775807")
    }
}

/// A key hash: exactly 64 lowercase hex digits. The value is never echoed.
pub(super) fn sha256_hex(s: &str) -> Result<String, FieldRule> {
    KeySha256::parse(s).map(KeySha256::into_string)
}
