//! Upgrades (docs/DEPLOY.md "Upgrades"): a database that
//! the previous release filled through its API (`scripts/upgrade-fixture.sh`
//! made `tests/fixtures/upgrade/<commit>/` with that release's binary) is
//! migrated by today's binary, on SQLite and on PostgreSQL; every row of its
//! history is unchanged, the audit chain and the kept approvals verify, the
//! server serves every proposal as it was and logs the old entries; and a
//! database migrated by a newer release is refused with a clear message.

use std::path::{Path, PathBuf};

use crate::helpers::*;

/// The release the fixture comes from: `main` at commit 59d4763.
const PREVIOUS_RELEASE: &str = "59d4763";
/// The demo agent's key (the fixture serves the demo tenant).
const DEMO_AGENT: &str = "cs_test_demo0payout0bot0key000000000000";
/// The public URL the fixture was served under (its log's origin).
const PUBLIC_URL: &str = "http://localhost:3999";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade").join(PREVIOUS_RELEASE)
}

/// Copies the fixture's keys into `data_dir`, private as the server wants them.
fn copy_keys(data_dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700)).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let path = entry.unwrap().path();
            let target = to.join(path.file_name().unwrap());
            if path.is_dir() {
                copy(&path, &target);
            } else {
                std::fs::copy(&path, &target).unwrap();
                std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
            }
        }
    }
    copy(&fixture().join("keys"), &data_dir.join("keys"));
}

/// What must survive an upgrade unchanged: every audit entry (its hash
/// chains everything), every proposal and every operation, as text.
const HISTORY: [&str; 3] = [
    "SELECT CAST(seq AS TEXT) || '|' || at || '|' || actor || '|' || action || '|' || data || '|' || hash
     FROM audit_log ORDER BY seq",
    "SELECT id || '|' || status || '|' || request_hash || '|' || canonical_request || '|' || policy
     FROM proposals ORDER BY id",
    "SELECT id || '|' || proposal_id || '|' || status || '|' || idempotency_key || '|' || COALESCE(rail_reference, '')
     FROM operations ORDER BY id",
];

async fn history(url: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for sql in HISTORY {
        let rows: Vec<String> = if url.starts_with("postgres") {
            let pool = sqlx::PgPool::connect(url).await.unwrap();
            sqlx::query_scalar(sql).fetch_all(&pool).await.unwrap()
        } else {
            let pool = sqlx::SqlitePool::connect(url).await.unwrap();
            sqlx::query_scalar(sql).fetch_all(&pool).await.unwrap()
        };
        out.push(rows);
    }
    out
}

/// Migrates the fixture with today's binary (through `countersign audit
/// verify`, which opens the database) and checks what it promises.
async fn upgrade_and_check(scratch: Scratch, url: &str) {
    let before = history(url).await;
    assert!(before[0].len() > 20 && before[1].len() >= 4 && !before[2].is_empty(), "a filled fixture: {before:?}");

    let (code, out, err) = scratch.cli(&["audit", "verify"], None).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("audit trail intact: {} entries verified", before[0].len())), "{out}");
    let (code, out, err) = scratch.cli(&["audit", "verify-approvals"], None).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(history(url).await, before, "migrations never rewrite history rows");

    // Served by today's binary: every proposal as it was — save what time
    // alone does to an open one since the fixture was made (its approval
    // or the proposal itself expires; the server's workers run at start).
    let server = scratch.serve(&[("COUNTERSIGN_PUBLIC_URL", PUBLIC_URL)]).await;
    for row in &before[1] {
        let mut fields = row.split('|');
        let (id, status, hash) = (fields.next().unwrap(), fields.next().unwrap(), fields.next().unwrap());
        let r = server.get_proposal(DEMO_AGENT, id).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["request_hash"].as_str(), Some(hash), "{id}");
        let now = r.body["status"].as_str().unwrap();
        let aged = match status {
            "approved" => "approval_expired",
            "pending_approval" => "expired",
            other => other,
        };
        assert!(now == status || now == aged, "{id}: {status} before the upgrade, {now} after");
    }
    // The old entries are in the transparency log, under the same key.
    let entries = before[0].len() as u64;
    let mut size = 0;
    for _ in 0..50 {
        let info = send(server.client.get(server.url("/api/v1/log"))).await.body;
        size = info["size"].as_u64().unwrap();
        if size >= entries {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(size >= entries, "the log covers the old entries: {size} of {entries}");
}

/// Marks `url`'s database as migrated by a release newer than this one.
async fn from_the_future(url: &str) {
    if url.starts_with("postgres") {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
             VALUES (9999, 'from a newer release', TRUE, '\\x00', 0)",
        )
        .execute(&pool)
        .await
        .unwrap();
    } else {
        let pool = sqlx::SqlitePool::connect(url).await.unwrap();
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
             VALUES (9999, 'from a newer release', 1, x'00', 0)",
        )
        .execute(&pool)
        .await
        .unwrap();
    }
}

async fn downgrade_is_refused(scratch: &Scratch, url: &str) {
    from_the_future(url).await;
    let (code, out, err) = scratch.cli(&["audit", "verify"], None).await;
    assert_ne!(code, 0, "{out}");
    assert!(
        err.contains("the database was migrated by a newer Countersign (it has migration 9999")
            && err.contains("downgrading is not supported"),
        "{err}"
    );
}

#[tokio::test]
async fn the_previous_releases_sqlite_database_upgrades_and_keeps_its_history() {
    // `[database]` without a URL: SQLite, also on the suite's PostgreSQL pass.
    let scratch = Scratch::new(&format!("public_url = \"{PUBLIC_URL}\"\n[database]\n"));
    let data = scratch.data_dir();
    copy_keys(&data);
    std::fs::copy(fixture().join("countersign.db"), data.join("countersign.db")).unwrap();
    let url = format!("sqlite://{}", data.join("countersign.db").display());
    let again = Scratch::new("[database]\n");
    let again_data = again.data_dir();
    copy_keys(&again_data);
    std::fs::copy(fixture().join("countersign.db"), again_data.join("countersign.db")).unwrap();

    upgrade_and_check(scratch, &url).await;
    let again_url = format!("sqlite://{}", again_data.join("countersign.db").display());
    let (code, _, err) = again.cli(&["audit", "verify"], None).await;
    assert_eq!(code, 0, "{err}");
    downgrade_is_refused(&again, &again_url).await;
}

#[tokio::test]
async fn the_previous_releases_postgres_database_upgrades_and_keeps_its_history() {
    let Ok(server) = std::env::var("COUNTERSIGN_TEST_DATABASE_URL") else {
        eprintln!("SKIPPED: COUNTERSIGN_TEST_DATABASE_URL is not set (make test sets it)");
        return;
    };
    let url = restored_dump(&server, "a");
    let scratch = Scratch::new(&format!("public_url = \"{PUBLIC_URL}\"\n[database]\nurl = \"{url}\"\n"));
    copy_keys(&scratch.data_dir());
    upgrade_and_check(scratch, &url).await;
    let url = restored_dump(&server, "b");
    let again = Scratch::new(&format!("[database]\nurl = \"{url}\"\n"));
    copy_keys(&again.data_dir());
    let (code, _, err) = again.cli(&["audit", "verify"], None).await;
    assert_eq!(code, 0, "{err}");
    downgrade_is_refused(&again, &url).await;
}

/// A fresh database on the test server with the fixture's dump loaded
/// (psql, as an operator restoring a `pg_dump` would); its URL.
fn restored_dump(server: &str, suffix: &str) -> String {
    let name = format!("cs_upgrade_{}_{suffix}", std::process::id());
    let bin = std::fs::read_dir("/usr/lib/postgresql")
        .expect("Debian's PostgreSQL")
        .map(|e| e.unwrap().path().join("bin"))
        .max()
        .unwrap();
    let admin = |sql: &str| {
        let status = std::process::Command::new(bin.join("psql"))
            .args(["-q", "-v", "ON_ERROR_STOP=1", "-d", server, "-c", sql])
            .status()
            .unwrap();
        assert!(status.success(), "{sql}");
    };
    admin(&format!("DROP DATABASE IF EXISTS {name}"));
    admin(&format!("CREATE DATABASE {name} TEMPLATE template0 LOCALE 'C'"));
    let (base, _) = server.rsplit_once('/').unwrap();
    let url = format!("{base}/{name}");
    let output = std::process::Command::new(bin.join("psql"))
        .args(["-q", "-v", "ON_ERROR_STOP=1", "-d", &url, "-f"])
        .arg(fixture().join("postgres.sql"))
        .output()
        .unwrap();
    assert!(output.status.success(), "restoring the dump: {}", String::from_utf8_lossy(&output.stderr));
    url
}
