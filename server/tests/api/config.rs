//! Configuration and start-up (SPEC §14): TOML plus
//! `COUNTERSIGN_*` overrides, one clear error line naming the key, and a
//! private data directory with the database.

use serde_json::json;
use std::os::unix::fs::PermissionsExt;

use crate::helpers::*;

/// Runs `countersign serve` expecting it to refuse to start; returns stderr.
async fn serve_fails(config: &str, env: &[(&str, &str)]) -> String {
    let scratch = Scratch::new(config);
    let (code, stdout, stderr) =
        cli_env(&scratch.config, &scratch.data_dir(), &["serve", "--listen", "127.0.0.1:0"], None, env).await;
    assert_ne!(code, 0, "serve must refuse this config\nstdout: {stdout}\nstderr: {stderr}");
    assert!(!stdout.contains("listening on"), "{stdout}");
    assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "no panic: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one error line, got:\n{stderr}");
    stderr
}

#[tokio::test]
async fn a_bad_value_in_the_config_file_is_one_line_naming_the_key() {
    let stderr = serve_fails("[proposals]\nttl_secs = \"soon\"\n", &[]).await;
    assert!(stderr.contains("proposals.ttl_secs"), "{stderr}");
}

#[tokio::test]
async fn a_bad_environment_override_is_one_line_naming_the_key() {
    let stderr = serve_fails("", &[("COUNTERSIGN_PROPOSALS__TTL_SECS", "abc")]).await;
    assert!(stderr.to_lowercase().contains("proposals.ttl_secs"), "{stderr}");
}

#[tokio::test]
async fn a_per_agent_limit_must_name_tenant_and_agent() {
    let stderr = serve_fails("[agent_api.agents.\"payout-bot\"]\nrequests_per_second = 1\nburst = 1\n", &[]).await;
    assert!(stderr.contains("agent_api.agents.\"payout-bot\""), "{stderr}");
}

#[tokio::test]
async fn an_unknown_config_key_is_one_line_naming_it() {
    let stderr = serve_fails("[proposals]\nttl_sec = 60\n", &[]).await;
    assert!(stderr.contains("ttl_sec"), "{stderr}");
}

#[tokio::test]
async fn malformed_toml_is_one_clear_line() {
    serve_fails("[proposals\nttl_secs = 5\n", &[]).await;
}

#[tokio::test]
async fn a_missing_config_file_is_one_clear_line() {
    let scratch = Scratch::new("");
    let missing = scratch.dir.path().join("nope.toml");
    let (code, stdout, stderr) =
        cli_env(&missing, &scratch.data_dir(), &["serve", "--listen", "127.0.0.1:0"], None, &[]).await;
    assert_ne!(code, 0, "{stdout}{stderr}");
    assert_eq!(stderr.lines().filter(|l| !l.trim().is_empty()).count(), 1, "{stderr}");
    assert!(stderr.contains("nope.toml"), "{stderr}");
}

#[tokio::test]
async fn an_unreachable_postgres_stops_serve_without_printing_the_url() {
    let stderr = serve_fails("[database]\nurl = \"postgres://cs:hunter2@127.0.0.1:9/cs\"\n", &[]).await;
    assert!(stderr.contains("cannot connect to PostgreSQL"), "{stderr}");
    assert!(stderr.contains("database.url"), "says what to change: {stderr}");
    assert!(!stderr.contains("hunter2"), "the URL's password never prints: {stderr}");
}

#[tokio::test]
async fn migrate_with_an_unreachable_postgres_from_the_environment_writes_nothing() {
    let scratch = Scratch::new("");
    let env = [("COUNTERSIGN_DATABASE__URL", "postgresql://cs:hunter2@127.0.0.1:9/cs")];
    let (code, stdout, stderr) = cli_env(&scratch.config, &scratch.data_dir(), &["migrate"], None, &env).await;
    assert_ne!(code, 0, "{stdout}{stderr}");
    assert!(stderr.contains("cannot connect to PostgreSQL"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert!(!stdout.contains("up to date"), "{stdout}");
    assert!(!scratch.data_dir().join("countersign.db").exists(), "no SQLite database instead");
}

#[tokio::test]
async fn a_database_url_of_another_kind_is_one_line_naming_the_key() {
    let stderr = serve_fails("[database]\nurl = \"mysql://cs:hunter2@db/cs\"\n", &[]).await;
    assert!(stderr.contains("database.url"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[tokio::test]
async fn migrate_creates_the_database_and_is_safe_to_repeat() {
    let scratch = Scratch::new("");
    for _ in 0..2 {
        let (code, out, err) = scratch.cli(&["migrate"], None).await;
        assert_eq!(code, 0, "{out}{err}");
        // Names the database it migrated: the file, or PostgreSQL (not a file it did not touch).
        let named =
            if on_postgres() { "PostgreSQL database".to_owned() } else { format!("{}", scratch.data_dir().display()) };
        assert!(out.contains(&named) && out.contains("up to date"), "{out}");
    }
    if !on_postgres() {
        // PostgreSQL keeps nothing in the data directory until `serve`.
        let mode = std::fs::metadata(scratch.data_dir()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "data dir mode {mode:o}");
    }
    assert_eq!(scalar(&scratch.db().await, "SELECT COUNT(*) FROM proposals").await, 0);
}

#[tokio::test]
async fn an_environment_override_takes_effect() {
    let scratch = Scratch::with_fixture("[proposals]\nttl_secs = 3600\n");
    scratch.apply_fixture().await;
    let server = scratch.serve(&[("COUNTERSIGN_PROPOSALS__TTL_SECS", "90")]).await;
    let p = server.create(&transfer()).await;
    assert_eq!(
        (rfc3339(&p["expires_at"]) - rfc3339(&p["created_at"])).num_seconds(),
        90,
        "the environment beats the file"
    );
}

#[tokio::test]
async fn serve_creates_a_private_data_directory_and_the_database() {
    let scratch = Scratch::new("");
    let data = scratch.data_dir();
    assert!(!data.exists());
    let server = scratch.serve(&[]).await;

    let mode = std::fs::metadata(&data).expect("data dir exists").permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "data dir mode {mode:o}");
    // The SQLite file, in write-ahead-log mode; on PostgreSQL, no file.
    assert_eq!(data.join("countersign.db").is_file(), !on_postgres(), "countersign.db exists on SQLite only");

    let db = server.db().await;
    if !on_postgres() {
        let journal: String = one("PRAGMA journal_mode").fetch_one(&db).await.unwrap();
        assert_eq!(journal, "wal");
    }
    // Migrated: the tables exist (empty: no demo data unless asked for).
    assert_eq!(scalar(&db, "SELECT COUNT(*) FROM proposals").await, 0);
    assert_eq!(scalar(&db, "SELECT COUNT(*) FROM audit_log").await, 0);

    let r = send(server.client.get(server.url("/healthz"))).await;
    assert_eq!(r.status, 200);
    let r = send(server.client.get(server.url("/readyz"))).await;
    assert_eq!(r.status, 200);
    // Nobody can use the API on an empty registry.
    server.propose_as(ACME_BOT_KEY, &json!({})).await.assert_error(401, "unauthenticated");
}

#[tokio::test]
async fn an_existing_data_directory_is_tightened_to_0700() {
    let scratch = Scratch::new("");
    std::fs::create_dir(scratch.data_dir()).unwrap();
    std::fs::set_permissions(scratch.data_dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = scratch.data_dir();
    let _server = scratch.serve(&[]).await;
    let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "data dir mode {mode:o}");
}

#[tokio::test]
async fn a_slack_webhook_off_the_allowlist_is_refused_at_start_without_printing_it() {
    let stderr = serve_fails("[slack]\nwebhook_url = \"https://evil.example/T0SECRET/B0/XYZ\"\n", &[]).await;
    assert!(stderr.contains("slack.webhook_url") && stderr.contains("allowed_hosts"), "{stderr}");
    assert!(!stderr.contains("T0SECRET") && !stderr.contains("evil.example"), "{stderr}");
    let stderr = serve_fails(
        "[slack]\nallowed_hosts = [\"hooks.slack.com\"]\n[slack.webhook_urls]\nacme = \"http://hooks.slack.com/T0SECRET\"\n",
        &[],
    )
    .await;
    assert!(stderr.contains("slack.webhook_urls.acme") && stderr.contains("https"), "{stderr}");
    assert!(!stderr.contains("T0SECRET"), "{stderr}");
}
