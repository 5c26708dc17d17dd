use super::*;
use crate::store::audit::Verification;
use std::sync::OnceLock;

const KEY: &str = "cs_test_0123456789abcdefghijKLMNOP";

/// One argon2id hash for the whole test run (hashing is slow on purpose).
fn ana_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| password::hash_password("ana-password"))
}

/// The SPEC §14 example, with a real hash and key hash, plus the user
/// `maya` its agent acts for (the example leaves her out).
fn spec_example() -> String {
    format!(
        r#"[[tenant]]
id = "acme"
name = "Acme Corp"
daily_budget_minor = {{ USD = 5_000_000 }}

[[user]]
tenant = "acme"
username = "ana"
password_hash = "{hash}"   # or `password = "..."`
roles = ["approver"]
approval_limit_minor = {{ USD = 500_000 }}
slack_user_id = "U0ANA"

[[user]]
tenant = "acme"
username = "maya"
password = "maya-dev-password"
roles = ["viewer"]

[[agent]]
tenant = "acme"
id = "payout-bot"
key_sha256 = "{key_hash}"
acts_for = "maya"
source_accounts = ["acct_0123456789abcdef"]
purposes = ["vendor", "refund"]

[[payee]]
tenant = "acme"
id = "acct_acme0000000001"
legal_name = "Acme Supplies Ltd"
trusted = true
"#,
        hash = ana_hash(),
        key_hash = key_sha256(KEY),
    )
}

async fn open() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).await.unwrap();
    (dir, db)
}

async fn apply(db: &Db, text: &str) -> Result<ApplySummary, ApplyError> {
    apply_toml(db, &Settings::default(), "acme.toml", text).await
}

fn problems(result: Result<impl fmt::Debug, ApplyError>) -> Vec<Problem> {
    match result {
        Err(ApplyError::Invalid(problems)) => problems,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

/// The one problem of a refused input.
fn problem(result: Result<impl fmt::Debug, ApplyError>) -> Problem {
    let mut all = problems(result);
    assert_eq!(all.len(), 1, "{all:?}");
    all.remove(0)
}

fn line_of_text(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).expect("needle in text") + 1
}

async fn maya_hash(db: &Db) -> String {
    directory::password_hash_in_tenant(&mut db.reader().await.unwrap(), "acme", "maya")
        .await
        .unwrap()
        .expect("maya exists")
}

async fn count(db: &Db, table: &str) -> i64 {
    crate::store::probe::count(db, table).await
}

async fn counts(db: &Db) -> Vec<i64> {
    let mut all = Vec::new();
    for table in ["tenants", "budgets", "users", "approval_limits", "agents", "payees", "audit_log"] {
        all.push(count(db, table).await);
    }
    all
}

async fn audit_text(db: &Db) -> String {
    let rows = crate::store::probe::pairs(db, "SELECT action, data FROM audit_log ORDER BY seq").await;
    rows.iter().map(|(a, d)| format!("{a} {d}\n")).collect()
}

#[tokio::test]
async fn the_spec_example_applies() {
    let (_dir, db) = open().await;
    let summary = apply(&db, &spec_example()).await.unwrap();
    assert_eq!(
        summary.to_string(),
        "applied acme.toml: 1 tenant created, 1 budget created, 2 users created, 1 agent created, 1 payee created"
    );

    let conn = &mut *db.reader().await.unwrap();
    let ana = directory::user_by_username(conn, "ana").await.unwrap().unwrap();
    assert_eq!(ana.tenant_id, "acme");
    assert_eq!(ana.roles, vec![Role::Approver]);
    assert_eq!(ana.approval_limits_minor, BTreeMap::from([("USD".to_owned(), 500_000)]));
    assert_eq!(ana.slack_user_id.as_deref(), Some("U0ANA"));
    let maya = directory::user_by_username(conn, "maya").await.unwrap().unwrap();
    let agent = directory::agent(conn, "acme", "payout-bot").await.unwrap().unwrap();
    assert_eq!(agent.acts_for, maya.id);
    assert_eq!(agent.source_accounts, vec!["acct_0123456789abcdef"]);
    assert_eq!(agent.purposes, vec!["refund", "vendor"]);
    let payee = directory::payee(&db.read, "acme", "acct_acme0000000001").await.unwrap().unwrap();
    assert_eq!(payee.legal_name, "Acme Supplies Ltd");
    assert!(payee.trusted);
    let budget = "SELECT daily_limit_minor FROM budgets WHERE tenant_id = 'acme' AND currency = 'USD'";
    assert_eq!(crate::store::probe::int(&db, budget).await, Some(5_000_000));

    assert_eq!(audit::verify(&db.read).await.unwrap(), Verification::Intact { entries: 6 });
    let audit = audit_text(&db).await;
    for action in [
        "registry.tenant.created",
        "registry.budget.created",
        "registry.user.created",
        "registry.agent.created",
        "registry.payee.created",
    ] {
        assert!(audit.contains(action), "{audit}");
    }
    assert!(audit.contains("acct_…cdef") && audit.contains("acct_…0001"), "accounts are masked: {audit}");
    for secret in ["0123456789abcdef", "acme0000000001", "$argon2", &key_sha256(KEY), "maya-dev-password"] {
        assert!(!audit.contains(secret), "audit leaks {secret}: {audit}");
    }
}

#[tokio::test]
async fn applying_twice_changes_nothing() {
    let (_dir, db) = open().await;
    let text = spec_example();
    apply(&db, &text).await.unwrap();
    let before = counts(&db).await;
    let before_hash = maya_hash(&db).await;

    let again = apply(&db, &text).await.unwrap();
    assert_eq!(again.changed(), 0, "{again}");
    assert_eq!(
        again.to_string(),
        "applied acme.toml: 1 tenant unchanged, 1 budget unchanged, 2 users unchanged, 1 agent unchanged, 1 payee unchanged"
    );
    assert_eq!(counts(&db).await, before, "same rows, no new audit entries");
    let after_hash = maya_hash(&db).await;
    assert_eq!(before_hash, after_hash, "a plain password that still matches keeps its hash");
}

#[tokio::test]
async fn changes_are_updates_and_nothing_unnamed_is_deleted() {
    let (_dir, db) = open().await;
    apply(&db, &spec_example()).await.unwrap();
    let text = r#"
[[tenant]]
id = "acme"
name = "Acme Corporation"
daily_budget_minor = { USD = 6_000_000, EUR = 1_000 }

[[payee]]
tenant = "acme"
id = "acct_acme0000000001"
legal_name = "Acme Supplies Limited"
"#;
    let summary = apply(&db, text).await.unwrap();
    assert_eq!(summary.tenants, Counts { created: 0, updated: 1, unchanged: 0 });
    assert_eq!(summary.budgets, Counts { created: 1, updated: 1, unchanged: 0 });
    assert_eq!(summary.payees, Counts { created: 0, updated: 1, unchanged: 0 });
    assert_eq!(count(&db, "users").await, 2);
    assert_eq!(count(&db, "agents").await, 1);
    let payee = directory::payee(&db.read, "acme", "acct_acme0000000001").await.unwrap().unwrap();
    assert!(!payee.trusted, "`trusted` defaults to false");
    let audit = audit_text(&db).await;
    assert!(audit.contains("registry.tenant.updated") && audit.contains("registry.payee.updated"), "{audit}");
}

#[tokio::test]
async fn an_unknown_key_names_file_line_and_key() {
    let (_dir, db) = open().await;
    let text = spec_example().replace("acts_for = \"maya\"", "acts_for = \"maya\"\nact_for = \"ana\"");
    let p = problem(apply(&db, &text).await);
    let line = line_of_text(&text, "act_for = ");
    assert_eq!(p.file.as_deref(), Some("acme.toml"));
    assert_eq!(p.line, Some(line));
    assert_eq!(p.key.as_deref(), Some("agent[0].act_for"));
    assert!(
        p.to_string().starts_with(&format!("acme.toml:{line}: key `agent[0].act_for`: unknown field `act_for`")),
        "{p}"
    );

    let p = problem(apply(&db, "[[tenant]]\nid = \"a\"\nname = \"A\"\n\n[[tennant]]\nid = \"b\"\n").await);
    assert_eq!((p.line, p.key.as_deref()), (Some(5), Some("tennant")), "{p}");
    assert_eq!(count(&db, "tenants").await, 0);
}

#[tokio::test]
async fn wrong_types_missing_keys_and_syntax_errors_name_their_line() {
    let (_dir, db) = open().await;
    let text = spec_example().replace("purposes = [\"vendor\", \"refund\"]", "purposes = \"vendor\"");
    let p = problem(apply(&db, &text).await);
    assert_eq!(p.key.as_deref(), Some("agent[0].purposes"), "{p}");
    assert_eq!(p.line, Some(line_of_text(&text, "purposes = ")));
    assert!(p.message.contains("invalid type"), "{p}");

    let text = "[[tenant]]\nid = \"acme\"\ndaily_budget_minor = { USD = -5 }\nname = \"Acme\"\n";
    let p = problem(apply(&db, text).await);
    assert_eq!((p.line, p.key.as_deref()), (Some(3), Some("tenant[0].daily_budget_minor.USD")), "{p}");

    let text = "[[tenant]]\nid = \"acme\"\nname = \"Acme\"\n\n[[tenant]]\nid = \"beta\"\n";
    let p = problem(apply(&db, text).await);
    assert_eq!((p.line, p.key.as_deref()), (Some(5), Some("tenant[1].name")), "{p}");
    assert!(p.message.contains("missing field"), "{p}");

    let text = "[[tenant]]\nid = \"acme\"\nname = \n";
    let p = problem(apply(&db, text).await);
    assert_eq!(p.line, Some(3), "{p}");
    assert!(!p.to_string().contains('\n'), "{p}");

    let text = "[[tenant]]\nid = \"acme\"\nname = 1979-05-27T07:32:00Z\n";
    let p = problem(apply(&db, text).await);
    assert_eq!((p.line, p.key.as_deref()), (Some(3), Some("tenant[0].name")), "{p}");
    assert_eq!(count(&db, "tenants").await, 0);
}

#[tokio::test]
async fn a_dangling_acts_for_is_refused_and_nothing_is_applied() {
    let (_dir, db) = open().await;
    let text = spec_example().replace("acts_for = \"maya\"", "acts_for = \"mia\"");
    let p = problem(apply(&db, &text).await);
    assert_eq!(
        p.to_string(),
        format!(
            "acme.toml:{}: key `agent[0].acts_for`: user `mia` is not defined in this file or the database",
            line_of_text(&text, "acts_for = ")
        )
    );
    assert_eq!(counts(&db).await, vec![0; 7], "nothing applied, not even an audit entry");
}

#[tokio::test]
async fn dangling_tenants_and_foreign_users_are_refused() {
    let (_dir, db) = open().await;
    apply(&db, &spec_example()).await.unwrap();
    let text = r#"
[[tenant]]
id = "beta"
name = "Beta"

[[payee]]
tenant = "gamma"
id = "ba_1"
legal_name = "Gamma Ltd"

[[agent]]
tenant = "beta"
id = "bot"
key = "cs_test_aaaaaaaaaaaaaaaaaaaaaaaa"
acts_for = "ana"
source_accounts = ["acct_0123456789abcdef"]
purposes = ["vendor"]
"#;
    let all = problems(apply(&db, text).await);
    let keys: Vec<_> = all.iter().map(|p| p.key.clone().unwrap()).collect();
    assert_eq!(keys, vec!["payee[0].tenant", "agent[0].acts_for"], "{all:?}");
    assert!(all[0].message.contains("tenant `gamma` is not defined"), "{all:?}");
    assert!(all[1].message.contains("user `ana` belongs to another tenant"), "{all:?}");
    assert_eq!(count(&db, "tenants").await, 1, "beta was not created");
}

#[tokio::test]
async fn a_username_of_another_tenant_is_refused_by_key() {
    let (_dir, db) = open().await;
    apply(&db, &spec_example()).await.unwrap();
    let text = format!(
        "[[tenant]]\nid = \"beta\"\nname = \"Beta\"\n\n[[user]]\ntenant = \"beta\"\nusername = \"ana\"\npassword_hash = \"{}\"\nroles = [\"viewer\"]\n",
        ana_hash()
    );
    let p = problem(apply(&db, &text).await);
    assert_eq!(p.key.as_deref(), Some("user[0].username"));
    assert_eq!(p.line, Some(7));
    assert_eq!(p.message, "username `ana` is not available", "one generic message");
    assert_eq!(count(&db, "tenants").await, 1, "rolled back: beta was not created");
}

#[tokio::test]
async fn a_plain_password_for_another_tenants_username_never_touches_that_users_hash() {
    let (_dir, db) = open().await;
    apply(&db, &spec_example()).await.unwrap();
    let before = maya_hash(&db).await;
    let text = "[[tenant]]\nid = \"beta\"\nname = \"Beta\"\n\n[[user]]\ntenant = \"beta\"\nusername = \"maya\"\npassword = \"anything-at-all\"\nroles = [\"viewer\"]\n";
    let p = problem(apply(&db, text).await);
    assert_eq!((p.key.as_deref(), p.message.as_str()), (Some("user[0].username"), "username `maya` is not available"));
    assert_eq!(maya_hash(&db).await, before);
    assert_eq!(count(&db, "tenants").await, 1);
}

#[tokio::test]
async fn currencies_must_be_upper_case_and_accepted() {
    let (_dir, db) = open().await;
    for (code, why) in [("usd", "upper-case"), ("XXX", "accepts"), ("CHF", "accepts")] {
        let text = spec_example().replace("daily_budget_minor = { USD", &format!("daily_budget_minor = {{ {code}"));
        let p = problem(apply(&db, &text).await);
        assert_eq!(p.key, Some(format!("tenant[0].daily_budget_minor.{code}")));
        assert_eq!(p.line, Some(line_of_text(&text, "daily_budget_minor")));
        assert!(p.message.contains(why) && p.message.contains("EUR, GBP, JPY, USD, VND"), "{p}");
    }
    assert_eq!(count(&db, "tenants").await, 0);
}

#[tokio::test]
async fn source_accounts_purposes_and_ids_use_the_domain_rules() {
    let (_dir, db) = open().await;
    let text = spec_example().replace("acct_0123456789abcdef", "acct_0123456789");
    let p = problem(apply(&db, &text).await);
    assert_eq!(p.key.as_deref(), Some("agent[0].source_accounts[0]"));
    assert!(p.message.contains("^acct_[A-Za-z0-9]{16}$"), "{p}");
    assert!(!p.message.contains("acct_0123456789"), "the account is not echoed: {p}");

    let text = spec_example()
        .replace("purposes = [\"vendor\", \"refund\"]", "purposes = [\"vendor\", \"bribes\"]")
        .replace("id = \"payout-bot\"", "id = \"Payout Bot\"")
        .replace("roles = [\"approver\"]", "roles = [\"boss\"]")
        .replace("id = \"acct_acme0000000001\"", "id = \"iban_1\"")
        .replace("legal_name = \"Acme Supplies Ltd\"", "legal_name = \"Acme\\u202Eevil\"");
    let all = problems(apply(&db, &text).await);
    let keys: Vec<_> = all.iter().map(|p| p.key.clone().unwrap()).collect();
    assert_eq!(
        keys,
        vec!["user[0].roles[0]", "agent[0].id", "agent[0].purposes[1]", "payee[0].id", "payee[0].legal_name"],
        "every problem is reported at once: {all:?}"
    );
    assert_eq!(count(&db, "tenants").await, 0);
}

#[tokio::test]
async fn a_plain_password_is_accepted_and_stored_hashed() {
    let (_dir, db) = open().await;
    apply(&db, &spec_example()).await.unwrap();
    let stored = maya_hash(&db).await;
    assert!(password::is_argon2id_phc(&stored), "{stored}");
    assert!(!stored.contains("maya-dev-password"));
    assert!(password::verify_password("maya-dev-password", &stored));

    let changed = spec_example().replace("maya-dev-password", "maya-new-password");
    let summary = apply(&db, &changed).await.unwrap();
    assert_eq!(summary.users, Counts { created: 0, updated: 1, unchanged: 1 });
    let stored = maya_hash(&db).await;
    assert!(password::verify_password("maya-new-password", &stored));
}

#[tokio::test]
async fn password_rules() {
    let (_dir, db) = open().await;
    let both = spec_example().replace("roles = [\"viewer\"]", "roles = [\"viewer\"]\npassword_hash = \"x\"");
    let p = problem(apply(&db, &both).await);
    assert_eq!(p.key.as_deref(), Some("user[1].password_hash"));
    assert!(p.message.contains("not both"), "{p}");

    let neither = spec_example().replace("password = \"maya-dev-password\"\n", "");
    let p = problem(apply(&db, &neither).await);
    assert_eq!(
        (p.key.as_deref(), p.line),
        (Some("user[1].password_hash"), Some(line_of_text(&neither, "username = \"maya\"") - 2))
    );

    let not_phc = spec_example().replace(ana_hash(), "$2b$12$notargon");
    let p = problem(apply(&db, &not_phc).await);
    assert_eq!(p.key.as_deref(), Some("user[0].password_hash"));
    assert!(!p.message.contains("notargon"), "{p}");

    let short = spec_example().replace("maya-dev-password", "hunter2");
    let p = problem(apply(&db, &short).await);
    assert_eq!(p.key.as_deref(), Some("user[1].password"));
    assert!(!p.to_string().contains("hunter2"), "{p}");
}

#[tokio::test]
async fn a_plain_key_is_stored_only_as_its_sha256() {
    let (_dir, db) = open().await;
    let text = spec_example().replace(&format!("key_sha256 = \"{}\"", key_sha256(KEY)), &format!("key = \"{KEY}\""));
    assert!(text.contains(KEY));
    apply(&db, &text).await.unwrap();
    let stored = crate::store::probe::texts(&db, "SELECT key_sha256 FROM agents").await;
    assert_eq!(stored, [key_sha256(KEY)]);
    let agent = directory::agent_by_key_hash(&db.read, &key_sha256(KEY)).await.unwrap().unwrap();
    assert_eq!(agent.id, "payout-bot");
    let dump = crate::store::probe::texts(&db, "SELECT key_sha256 || source_accounts || purposes FROM agents").await;
    assert!(!dump.concat().contains(KEY));
    assert!(!audit_text(&db).await.contains(KEY));
    assert_eq!(apply(&db, &text).await.unwrap().changed(), 0, "a plain key is idempotent too");
}

#[tokio::test]
async fn key_rules_never_echo_the_key() {
    let (_dir, db) = open().await;
    let live = generate_agent_key(true);
    let text = spec_example().replace(&format!("key_sha256 = \"{}\"", key_sha256(KEY)), &format!("key = \"{live}\""));
    let p = problem(apply(&db, &text).await);
    assert_eq!(p.key.as_deref(), Some("agent[0].key"));
    assert!(!p.to_string().contains(&live[8..]), "{p}");

    let text = spec_example().replace(&key_sha256(KEY), &live);
    let p = problem(apply(&db, &text).await);
    assert_eq!(p.key.as_deref(), Some("agent[0].key_sha256"));
    assert!(!p.to_string().contains(&live[8..]), "{p}");

    let text = spec_example().replace(&key_sha256(KEY), &key_sha256(KEY).to_uppercase());
    assert_eq!(problem(apply(&db, &text).await).key.as_deref(), Some("agent[0].key_sha256"));
}

#[tokio::test]
async fn duplicates_within_a_file_are_refused() {
    let (_dir, db) = open().await;
    let text = format!("{}\n[[user]]\ntenant = \"acme\"\nusername = \"ana\"\npassword = \"another-password\"\nroles = [\"viewer\"]\nslack_user_id = \"U0ANA\"\n", spec_example());
    let all = problems(apply(&db, &text).await);
    let messages: Vec<_> = all.iter().map(Problem::to_string).collect();
    assert_eq!(all.len(), 2, "{messages:?}");
    assert!(
        messages[0].contains("key `user[2].username`: username `ana` is already defined by `user[0].username`"),
        "{messages:?}"
    );
    assert!(messages[1].contains("key `user[2].slack_user_id`"), "{messages:?}");
}

#[tokio::test]
async fn add_commands_share_the_rules_and_the_audit() {
    let (_dir, db) = open().await;
    let settings = Settings::default();
    add_tenant(&db, &settings, "acme", "Acme Corp", &BTreeMap::from([("USD".to_owned(), 5_000_000)])).await.unwrap();
    let new_user = |username: &str, tenant: &str| NewUser {
        tenant: tenant.into(),
        username: username.into(),
        credential: NewCredential::Password("correct horse battery".into()),
        roles: vec!["approver".into(), "viewer".into(), "approver".into()],
        limits: BTreeMap::from([("USD".to_owned(), 500_000)]),
        slack_user_id: None,
    };
    let id = add_user(&db, &settings, new_user("ana", "acme"), "cli").await.unwrap();
    assert!(id.starts_with("usr_"), "{id}");
    assert_eq!(add_user(&db, &settings, new_user("ana", "acme"), "cli").await.unwrap(), id, "the same user again");
    let ana = directory::user_by_id(&mut db.reader().await.unwrap(), &id).await.unwrap().unwrap();
    assert_eq!(ana.roles, vec![Role::Viewer, Role::Approver], "sorted, deduplicated");

    let agent = NewAgent {
        tenant: "acme".into(),
        id: "payout-bot".into(),
        acts_for: "ana".into(),
        source_accounts: vec!["acct_0123456789abcdef".into()],
        purposes: vec!["vendor".into()],
    };
    let key = add_agent(&db, &settings, agent.clone(), "cli").await.unwrap();
    assert!(key.starts_with("cs_live_") && key.len() == 40, "{key}");
    let found = directory::agent_by_key_hash(&db.read, &key_sha256(&key)).await.unwrap().unwrap();
    assert_eq!(found.acts_for, id);
    let rotated = add_agent(&db, &settings, agent.clone(), "cli").await.unwrap();
    assert_ne!(rotated, key, "adding again rotates the key");
    assert!(directory::agent_by_key_hash(&db.read, &key_sha256(&key)).await.unwrap().is_none());

    add_payee(&db, "acme", "acct_acme0000000001", "Acme Supplies Ltd", true, "cli").await.unwrap();
    assert!(directory::payee(&db.read, "acme", "acct_acme0000000001").await.unwrap().unwrap().trusted);

    let audit = audit_text(&db).await;
    for action in [
        "registry.tenant.created",
        "registry.budget.created",
        "registry.user.created",
        "registry.agent.created",
        "registry.agent.updated",
        "registry.payee.created",
    ] {
        assert!(audit.contains(action), "{action}: {audit}");
    }
    assert!(!audit.contains(&key) && !audit.contains(&key_sha256(&key)) && !audit.contains("correct horse"), "{audit}");

    // Refusals name the key, and say where the reference was looked for.
    let p = problem(add_agent(&db, &settings, NewAgent { acts_for: "maya".into(), ..agent.clone() }, "cli").await);
    assert_eq!(p.to_string(), "key `agent.acts_for`: user `maya` is not defined in the database");
    add_tenant(&db, &settings, "beta", "Beta", &BTreeMap::new()).await.unwrap();
    let p = problem(add_agent(&db, &settings, NewAgent { tenant: "beta".into(), ..agent.clone() }, "cli").await);
    assert_eq!(p.to_string(), "key `agent.acts_for`: user `ana` belongs to another tenant");
    let p = problem(add_user(&db, &settings, new_user("ana", "beta"), "cli").await);
    assert_eq!(p.to_string(), "key `user.username`: username `ana` is not available");
    let p = problem(
        add_user(&db, &settings, NewUser { roles: vec!["boss".into()], ..new_user("bo", "acme") }, "cli").await,
    );
    assert_eq!(p.key.as_deref(), Some("user.roles[0]"));
    let p = problem(add_tenant(&db, &settings, "gamma", "Gamma", &BTreeMap::from([("XXX".to_owned(), 1)])).await);
    assert_eq!(p.key.as_deref(), Some("tenant.daily_budget_minor.XXX"));
    let p = problem(add_payee(&db, "nope", "ba_1", "Nope Ltd", false, "cli").await);
    assert_eq!(p.to_string(), "key `payee.tenant`: tenant `nope` is not defined in the database");
    assert_eq!(audit::verify(&db.read).await.unwrap(), Verification::Intact { entries: 7 });
}

#[test]
fn new_user_debug_redacts_the_password() {
    let u = NewUser {
        tenant: "acme".into(),
        username: "ana".into(),
        credential: NewCredential::Password("hunter2-hunter2".into()),
        roles: vec![],
        limits: BTreeMap::new(),
        slack_user_id: None,
    };
    assert!(!format!("{u:?}").contains("hunter2"));
}

#[test]
fn agent_keys_and_their_hashes() {
    for live in [true, false] {
        let key = generate_agent_key(live);
        let (prefix, body) = key.split_at(8);
        assert_eq!(prefix, if live { "cs_live_" } else { "cs_test_" });
        assert_eq!(body.len(), 32);
        assert!(body.chars().all(|c| c.is_ascii_alphanumeric()), "{key}");
    }
    assert_ne!(generate_agent_key(true), generate_agent_key(true));
    assert_eq!(key_sha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

#[test]
fn value_rules() {
    assert!(registry_id("acme").is_ok() && registry_id("0-a_b").is_ok() && registry_id(&"a".repeat(64)).is_ok());
    for bad in ["", "-acme", "_a", "Acme", "ac me", "acmé", &"a".repeat(65)] {
        assert!(registry_id(bad).is_err(), "{bad}");
    }
    assert!(
        username("Ana.B-1_x").is_ok() && username(&"a".repeat(128)).is_ok() && username("ana+ap@x.example").is_ok()
    );
    for bad in ["", "ana b", "ana<x>", &"a".repeat(129)] {
        assert!(username(bad).is_err(), "{bad}");
    }
    assert!(display_text("Acme Supplies Ltd").is_ok() && display_text(&"é".repeat(200)).is_ok());
    for bad in ["", "   ", "a\nb", "a\u{202E}b", "a\u{200B}b", &"é".repeat(201)] {
        assert!(display_text(bad).is_err(), "{bad:?}");
    }
    assert!(sha256_hex(&key_sha256("k")).is_ok() && sha256_hex(&"g".repeat(64)).is_err());
    assert!(AgentKey::parse_test_key("cs_test_0123456789abcdef").is_ok());
    for bad in ["cs_live_0123456789abcdef", "cs_test_short", "cs_test_0123456789abcde-", "0123456789abcdef0123"] {
        assert!(AgentKey::parse_test_key(bad).is_err(), "{bad}");
    }
    assert!(storable_amount(i64::MAX as u64).is_ok() && storable_amount(i64::MAX as u64 + 1).is_err());
}

#[test]
fn summaries_read_plainly() {
    let mut s = ApplySummary { source: "x.toml".into(), ..ApplySummary::default() };
    assert_eq!(s.to_string(), "applied x.toml: nothing to apply");
    s.users = Counts { created: 2, updated: 1, unchanged: 0 };
    s.payees = Counts { created: 0, updated: 0, unchanged: 1 };
    assert_eq!(s.to_string(), "applied x.toml: 2 users created, 1 user updated, 1 payee unchanged");
    assert_eq!(s.changed(), 3);
}
