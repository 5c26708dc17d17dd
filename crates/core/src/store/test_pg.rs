//! A fresh PostgreSQL database per test, on the server that
//! `COUNTERSIGN_TEST_DATABASE_URL` names (`make test` starts a throwaway one:
//! `scripts/pg.sh`).
//!
//! Without that variable a PostgreSQL test is skipped, saying why, unless
//! `CI` is set: CI must run every test, so there it fails.

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};

/// The variable naming the test server (a database on it the tests may
/// connect to and create databases from).
pub const URL_VAR: &str = "COUNTERSIGN_TEST_DATABASE_URL";

/// The test server's URL (set: call after [`fresh`] returned a database).
pub fn server_url() -> String {
    std::env::var(URL_VAR).expect("the test server's URL")
}

/// A database of its own for one test; [`TestPg::drop`] removes it (a test
/// that panics leaves it behind, with the throwaway cluster).
pub struct TestPg {
    pub pool: PgPool,
    pub name: String,
    server: PgConnectOptions,
}

/// Whether this runs under CI (`CI` set, and not to `false` or `0`).
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// A new, empty database for `test`, or `None` (after printing why) when no
/// test server is configured outside CI.
pub async fn fresh(test: &str) -> Option<TestPg> {
    fresh_from(test, None).await
}

/// A new database for `test` with the store's schema already migrated: a
/// copy of this test binary's template (see [`template`]), or `None` as
/// [`fresh`].
pub async fn fresh_migrated(test: &str) -> Option<TestPg> {
    let server = server_options(test)?;
    let template = template(&server).await;
    fresh_from(test, Some(template)).await
}

/// The test server's connection options, or `None` (after printing why)
/// when none is configured outside CI.
fn server_options(test: &str) -> Option<PgConnectOptions> {
    let url = match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => url,
        _ if in_ci() => {
            panic!("{test}: {URL_VAR} is not set, and CI must run the PostgreSQL tests (scripts/test.sh sets it)")
        }
        _ => {
            eprintln!(
                "SKIPPED {test}: {URL_VAR} is not set (scripts/pg.sh starts a throwaway PostgreSQL; make test does)"
            );
            return None;
        }
    };
    Some(
        PgConnectOptions::from_str(&url)
            .unwrap_or_else(|e| panic!("{URL_VAR} is not a PostgreSQL URL: {e}"))
            .disable_statement_logging(),
    )
}

/// This test binary's template: a database migrated once, which
/// `CREATE DATABASE … TEMPLATE` copies for each test (far cheaper than
/// running the migrations again). Nothing stays connected to it.
async fn template(server: &PgConnectOptions) -> &'static str {
    static TEMPLATE: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    TEMPLATE
        .get_or_init(|| async {
            let name = format!("cs_template_{}_{}", std::process::id(), rand::random::<u32>());
            create(server, &format!("CREATE DATABASE {name}")).await;
            let pool = PgPoolOptions::new()
                .max_connections(1)
                .connect_with(server.clone().database(&name))
                .await
                .expect("connect to the template database");
            let db = crate::store::Db::on_postgres(pool).await.expect("migrate the template database");
            db.close().await;
            name
        })
        .await
}

async fn create(server: &PgConnectOptions, statement: &str) {
    let mut admin = server.connect().await.unwrap_or_else(|e| panic!("{URL_VAR}: cannot connect: {e}"));
    sqlx::query(statement).execute(&mut admin).await.unwrap_or_else(|e| panic!("{statement}: {e}"));
    admin.close().await.ok();
}

async fn fresh_from(test: &str, template: Option<&str>) -> Option<TestPg> {
    let server = server_options(test)?;
    static SERIAL: AtomicU32 = AtomicU32::new(0);
    let name =
        format!("cs_{}_{}_{}", std::process::id(), SERIAL.fetch_add(1, Ordering::Relaxed), rand::random::<u32>());
    match template {
        Some(template) => create(&server, &format!("CREATE DATABASE {name} TEMPLATE {template}")).await,
        None => create(&server, &format!("CREATE DATABASE {name}")).await,
    }
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect_with(server.clone().database(&name))
        .await
        .expect("connect to the fresh database");
    Some(TestPg { pool, name, server })
}

impl TestPg {
    /// Two stores on this database, as two instances would have: this
    /// test's pool and a second pool of its own (the schema must be there).
    pub async fn two_instances(&self) -> (crate::store::Db, crate::store::Db) {
        let a = crate::store::Db::on_postgres(self.pool.clone()).await.expect("the first instance");
        let second = sqlx::postgres::PgPoolOptions::new()
            .max_connections(4)
            .connect_with(self.pool.connect_options().as_ref().clone())
            .await
            .expect("a second pool");
        (a, crate::store::Db::on_postgres(second).await.expect("the second instance"))
    }

    /// Closes the pool and drops the database.
    pub async fn drop(self) {
        self.pool.close().await;
        let mut admin = self.server.connect().await.expect("connect to drop the test database");
        sqlx::query(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name))
            .execute(&mut admin)
            .await
            .expect("DROP DATABASE");
        admin.close().await.ok();
    }
}

/// A fresh store on one backend, for a test that runs on each.
pub struct TestDb {
    pub db: crate::store::Db,
    /// `sqlite` or `postgres`, for assertion messages.
    pub backend: &'static str,
    guard: Guard,
}

enum Guard {
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    Pg(Box<TestPg>),
}

impl std::ops::Deref for TestDb {
    type Target = crate::store::Db;
    fn deref(&self) -> &crate::store::Db {
        &self.db
    }
}

impl TestDb {
    /// Closes the store and removes its database.
    pub async fn finish(self) {
        self.db.close().await;
        if let Guard::Pg(pg) = self.guard {
            TestPg::drop(*pg).await;
        }
    }
}

/// A fresh, migrated store on SQLite, and one on PostgreSQL when a test
/// server is configured (see [`fresh`]: under CI it must be).
pub async fn each_backend(test: &str) -> Vec<TestDb> {
    let tmp = tempfile::tempdir().unwrap();
    let sqlite = crate::store::Db::open(tmp.path()).await.unwrap();
    let mut dbs = vec![TestDb { db: sqlite, backend: "sqlite", guard: Guard::Sqlite(tmp) }];
    if let Some(pg) = fresh_migrated(test).await {
        let db = crate::store::Db::on_postgres(pg.pool.clone()).await.expect("migrate the PostgreSQL store");
        dbs.push(TestDb { db, backend: "postgres", guard: Guard::Pg(Box::new(pg)) });
    }
    dbs
}
