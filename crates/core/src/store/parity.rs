//! The PostgreSQL migrations (`migrations/postgres/`, [`PG_MIGRATOR`]) give
//! the schema the SQLite ones ([`MIGRATOR`]) give, after every migration, and
//! their change-log triggers write the same rows (migrations/postgres/README.md).
//!
//! Each schema is read from the database's own catalog (SQLite's pragmas,
//! PostgreSQL's `pg_catalog` and `information_schema`) into one shape:
//! tables, columns in order (name, a type class, nullability, default,
//! generated), primary key, unique constraints, foreign keys, the number of
//! checks, indexes (name, unique, key columns or "(expression)", the partial
//! predicate normalized) and triggers (name, timing and event). A failure
//! lists every difference.

use futures::future::BoxFuture;
use sqlx::error::BoxDynError;
use sqlx::migrate::{Migration, MigrationSource, Migrator};
use sqlx::{PgPool, SqlitePool};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::test_pg::{self, TestPg};
use super::{parse_ts, writer_pool, MIGRATOR, PG_MIGRATOR};

#[derive(Debug, Clone, PartialEq, Eq)]
enum DefaultValue {
    None,
    /// A number or a string, without quotes or casts.
    Literal(String),
    /// Anything computed (a function call): its text differs by dialect.
    Expression,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Column {
    name: String,
    /// text, integer, real, blob or numeric; anything else is named as is.
    class: String,
    not_null: bool,
    default: DefaultValue,
    /// SQLite's AUTOINCREMENT key; PostgreSQL's identity or serial column.
    generated: bool,
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.class)?;
        if self.not_null {
            write!(f, " NOT NULL")?;
        }
        match &self.default {
            DefaultValue::None => {}
            DefaultValue::Literal(v) => write!(f, " DEFAULT '{v}'")?,
            DefaultValue::Expression => write!(f, " DEFAULT (expression)")?,
        }
        if self.generated {
            write!(f, " GENERATED")?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Index {
    unique: bool,
    columns: Vec<String>,
    predicate: Option<String>,
}

impl fmt::Display for Index {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", if self.unique { "UNIQUE " } else { "" }, self.columns.join(", "))?;
        if let Some(p) = &self.predicate {
            write!(f, " WHERE {p}")?;
        }
        Ok(())
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Table {
    columns: Vec<Column>,
    primary_key: Vec<String>,
    uniques: BTreeSet<Vec<String>>,
    /// "(cols) -> table (cols) ON UPDATE … ON DELETE …"
    foreign_keys: BTreeSet<String>,
    checks: usize,
    indexes: BTreeMap<String, Index>,
    /// name -> {"AFTER UPDATE FOR EACH ROW", …}
    triggers: BTreeMap<String, BTreeSet<String>>,
}

type Schema = BTreeMap<String, Table>;

/// SQLite's type affinity of a declared type (sqlite.org/datatype3.html, 3.1).
fn sqlite_class(declared: &str) -> String {
    let t = declared.to_ascii_uppercase();
    let class = if t.contains("INT") {
        "integer"
    } else if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") {
        "text"
    } else if t.contains("BLOB") || t.is_empty() {
        "blob"
    } else if t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB") {
        "real"
    } else {
        "numeric"
    };
    class.to_owned()
}

/// The class of a PostgreSQL type, as SQLite's affinity would put it. Only
/// BIGINT is an integer: sqlx decodes an `i64` from INT8 alone, so an INT4
/// column would fail every read of it.
fn pg_class(data_type: &str) -> String {
    match data_type {
        "text" | "character varying" => "text",
        "bigint" => "integer",
        "integer" | "smallint" => "int4/int2 (use BIGINT: sqlx reads i64 only from INT8)",
        "real" | "double precision" => "real",
        "bytea" => "blob",
        "numeric" => "numeric",
        other => other,
    }
    .to_owned()
}

/// A column default, without the dialect: literals compare by value.
fn default_of(text: Option<&str>) -> DefaultValue {
    let Some(mut s) = text.map(str::trim) else { return DefaultValue::None };
    while s.starts_with('(') && s.ends_with(')') {
        s = s[1..s.len() - 1].trim();
    }
    // PostgreSQL writes a typed literal: 'pending'::text, '-1'::integer.
    if let Some((lit, cast)) = s.rsplit_once("::") {
        if lit.starts_with('\'') && lit.ends_with('\'') && cast.chars().all(|c| c.is_ascii_alphabetic() || c == ' ') {
            s = lit;
        }
    }
    if s.len() >= 2 && s.starts_with('\'') && s.ends_with('\'') {
        return DefaultValue::Literal(s[1..s.len() - 1].replace("''", "'"));
    }
    if s.parse::<f64>().is_ok() {
        return DefaultValue::Literal(s.to_owned());
    }
    DefaultValue::Expression
}

/// An expression without the dialect's spelling: lower case, no casts, no
/// parentheses, no white space.
fn normalize(expr: &str) -> String {
    let lower = expr.to_ascii_lowercase();
    let mut out = String::new();
    let mut rest = lower.as_str();
    while let Some(at) = rest.find("::") {
        out.push_str(&rest[..at]);
        rest = rest[at + 2..].trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
    }
    out.push_str(rest);
    out.chars().filter(|c| !c.is_whitespace() && *c != '(' && *c != ')').collect()
}

/// The `WHERE` clause of a `CREATE INDEX` statement.
fn index_predicate(sql: &str) -> Option<String> {
    let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    let at = flat.to_ascii_uppercase().rfind(" WHERE ")?;
    Some(flat[at + " WHERE ".len()..].to_owned())
}

/// How many `CHECK (…)` constraints a `CREATE TABLE` statement declares.
fn count_checks(sql: &str) -> usize {
    let code: String = sql.lines().map(|l| l.split("--").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
    let upper = code.to_ascii_uppercase();
    upper
        .match_indices("CHECK")
        .filter(|(at, _)| {
            let before = upper[..*at].chars().next_back();
            let after = upper[at + 5..].trim_start().chars().next();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') && after == Some('(')
        })
        .count()
}

/// Timing and event of a SQLite `CREATE TRIGGER` statement (SQLite triggers
/// are always FOR EACH ROW).
fn sqlite_trigger_event(sql: &str) -> String {
    let tokens: Vec<String> = sql.split_whitespace().map(|t| t.to_ascii_uppercase()).collect();
    let Some(at) = tokens.iter().position(|t| ["INSERT", "UPDATE", "DELETE"].contains(&t.as_str())) else {
        return format!("unparsed: {sql}");
    };
    let timing = match at.checked_sub(1).map(|i| tokens[i].as_str()) {
        Some("AFTER") => "AFTER",
        Some("OF") => "INSTEAD OF",
        _ => "BEFORE",
    };
    format!("{timing} {} FOR EACH ROW", tokens[at])
}

fn fk_action(code: &str) -> &'static str {
    match code {
        "a" | "NO ACTION" => "NO ACTION",
        "r" | "RESTRICT" => "RESTRICT",
        "c" | "CASCADE" => "CASCADE",
        "n" | "SET NULL" => "SET NULL",
        "d" | "SET DEFAULT" => "SET DEFAULT",
        _ => "?",
    }
}

fn foreign_key(cols: &[String], table: &str, ref_cols: &[String], on_update: &str, on_delete: &str) -> String {
    format!(
        "({}) -> {table} ({}) ON UPDATE {} ON DELETE {}",
        cols.join(", "),
        ref_cols.join(", "),
        fk_action(on_update),
        fk_action(on_delete)
    )
}

async fn sqlite_schema(pool: &SqlitePool) -> Schema {
    let mut schema = Schema::new();
    let tables: Vec<(String, String)> = sqlx::query_as(
        "SELECT name, sql FROM sqlite_master
         WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for (name, sql) in tables {
        let mut table = Table { checks: count_checks(&sql), ..Table::default() };
        let cols: Vec<(String, String, i64, Option<String>, i64)> =
            sqlx::query_as("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?) ORDER BY cid")
                .bind(&name)
                .fetch_all(pool)
                .await
                .unwrap();
        let key_len = cols.iter().filter(|c| c.4 > 0).count();
        let autoincrement = sql.to_ascii_uppercase().contains("AUTOINCREMENT");
        let mut key = Vec::new();
        for (col, declared, not_null, default, pk) in cols {
            // A key column is never NULL on PostgreSQL; SQLite only enforces
            // it when declared, but no row of ours has a NULL key.
            table.columns.push(Column {
                name: col.clone(),
                class: sqlite_class(&declared),
                not_null: not_null == 1 || pk > 0,
                default: default_of(default.as_deref()),
                generated: autoincrement && pk == 1 && key_len == 1 && declared.eq_ignore_ascii_case("INTEGER"),
            });
            if pk > 0 {
                key.push((pk, col));
            }
        }
        key.sort();
        table.primary_key = key.into_iter().map(|(_, c)| c).collect();

        let indexes: Vec<(String, i64, String, i64)> =
            sqlx::query_as("SELECT name, \"unique\", origin, partial FROM pragma_index_list(?)")
                .bind(&name)
                .fetch_all(pool)
                .await
                .unwrap();
        for (index, unique, origin, partial) in indexes {
            let parts: Vec<(Option<String>, i64)> =
                sqlx::query_as("SELECT name, \"desc\" FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno")
                    .bind(&index)
                    .fetch_all(pool)
                    .await
                    .unwrap();
            let columns: Vec<String> = parts
                .into_iter()
                .map(|(col, desc)| {
                    let col = col.unwrap_or_else(|| "(expression)".to_owned());
                    if desc == 1 {
                        format!("{col} DESC")
                    } else {
                        col
                    }
                })
                .collect();
            match origin.as_str() {
                "pk" => {}
                "u" => {
                    table.uniques.insert(columns);
                }
                _ => {
                    let predicate = if partial == 1 {
                        let sql: String = sqlx::query_scalar("SELECT sql FROM sqlite_master WHERE name = ?")
                            .bind(&index)
                            .fetch_one(pool)
                            .await
                            .unwrap();
                        Some(index_predicate(&sql).map(|p| normalize(&p)).unwrap_or_else(|| "unparsed".into()))
                    } else {
                        None
                    };
                    table.indexes.insert(index, Index { unique: unique == 1, columns, predicate });
                }
            }
        }

        let fks: Vec<(i64, String, String, Option<String>, String, String)> = sqlx::query_as(
            "SELECT id, \"table\", \"from\", \"to\", on_update, on_delete FROM pragma_foreign_key_list(?)
             ORDER BY id, seq",
        )
        .bind(&name)
        .fetch_all(pool)
        .await
        .unwrap();
        let mut grouped: BTreeMap<i64, Vec<_>> = BTreeMap::new();
        for fk in fks {
            grouped.entry(fk.0).or_default().push(fk);
        }
        for parts in grouped.values() {
            let cols: Vec<String> = parts.iter().map(|p| p.2.clone()).collect();
            let refs: Vec<String> = parts.iter().map(|p| p.3.clone().unwrap_or_else(|| "(its key)".into())).collect();
            table.foreign_keys.insert(foreign_key(&cols, &parts[0].1, &refs, &parts[0].4, &parts[0].5));
        }
        schema.insert(name, table);
    }

    let triggers: Vec<(String, String, String)> =
        sqlx::query_as("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'")
            .fetch_all(pool)
            .await
            .unwrap();
    for (name, table, sql) in triggers {
        schema.entry(table).or_default().triggers.entry(name).or_default().insert(sqlite_trigger_event(&sql));
    }
    schema
}

/// kind, columns, referenced table, referenced columns, on update, on delete
type PgConstraint = (String, Vec<String>, String, Vec<String>, String, String);
/// name, unique, key definitions, which are expressions, which descending, predicate
type PgIndex = (String, bool, Vec<String>, Vec<bool>, Vec<bool>, Option<String>);

async fn pg_schema(pool: &PgPool) -> Schema {
    let mut schema = Schema::new();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_class c
         WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
           AND c.relname <> '_sqlx_migrations'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for name in tables {
        let mut table = Table::default();
        let cols: Vec<(String, String, String, Option<String>, String)> = sqlx::query_as(
            "SELECT column_name::text, data_type::text, is_nullable::text, column_default::text, is_identity::text
             FROM information_schema.columns
             WHERE table_schema = current_schema() AND table_name = $1
             ORDER BY ordinal_position",
        )
        .bind(&name)
        .fetch_all(pool)
        .await
        .unwrap();
        for (col, data_type, nullable, default, identity) in cols {
            let serial = default.as_deref().is_some_and(|d| d.starts_with("nextval("));
            table.columns.push(Column {
                name: col,
                class: pg_class(&data_type),
                not_null: nullable == "NO",
                default: if serial { DefaultValue::None } else { default_of(default.as_deref()) },
                generated: identity == "YES" || serial,
            });
        }

        let constraints: Vec<PgConstraint> = sqlx::query_as(
            "SELECT con.contype::text,
                    array(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY k(n, i)
                          JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY k.i),
                    CASE WHEN con.confrelid = 0 THEN '' ELSE con.confrelid::regclass::text END,
                    array(SELECT a.attname::text FROM unnest(con.confkey) WITH ORDINALITY k(n, i)
                          JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n ORDER BY k.i),
                    con.confupdtype::text, con.confdeltype::text
             FROM pg_constraint con WHERE con.conrelid = $1::regclass",
        )
        .bind(&name)
        .fetch_all(pool)
        .await
        .unwrap();
        for (kind, cols, ref_table, ref_cols, on_update, on_delete) in constraints {
            match kind.as_str() {
                "p" => table.primary_key = cols,
                "u" => {
                    table.uniques.insert(cols);
                }
                "f" => {
                    table.foreign_keys.insert(foreign_key(&cols, &ref_table, &ref_cols, &on_update, &on_delete));
                }
                "c" => table.checks += 1,
                other => panic!("table {name}: a constraint of kind {other} has no SQLite twin"),
            }
        }

        let indexes: Vec<PgIndex> = sqlx::query_as(
            "SELECT ic.relname::text, i.indisunique,
                    array(SELECT pg_get_indexdef(i.indexrelid, k, true)
                          FROM generate_series(1, i.indnkeyatts::int) k ORDER BY k),
                    array(SELECT i.indkey[k - 1] = 0 FROM generate_series(1, i.indnkeyatts::int) k ORDER BY k),
                    array(SELECT (i.indoption[k - 1]::int & 1) = 1
                          FROM generate_series(1, i.indnkeyatts::int) k ORDER BY k),
                    pg_get_expr(i.indpred, i.indrelid)
             FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
             WHERE i.indrelid = $1::regclass
               AND NOT EXISTS (SELECT 1 FROM pg_constraint c
                               WHERE c.conindid = i.indexrelid AND c.contype IN ('p', 'u', 'x'))",
        )
        .bind(&name)
        .fetch_all(pool)
        .await
        .unwrap();
        for (index, unique, defs, expressions, descending, predicate) in indexes {
            let columns = defs
                .into_iter()
                .zip(expressions)
                .zip(descending)
                .map(|((def, expression), desc)| {
                    let col = if expression { "(expression)".to_owned() } else { def };
                    if desc {
                        format!("{col} DESC")
                    } else {
                        col
                    }
                })
                .collect();
            table.indexes.insert(index, Index { unique, columns, predicate: predicate.map(|p| normalize(&p)) });
        }
        schema.insert(name, table);
    }

    let triggers: Vec<(String, String, String, String, String)> = sqlx::query_as(
        "SELECT trigger_name::text, event_object_table::text, action_timing::text,
                event_manipulation::text, action_orientation::text
         FROM information_schema.triggers WHERE trigger_schema = current_schema()",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for (name, table, timing, event, orientation) in triggers {
        schema
            .entry(table)
            .or_default()
            .triggers
            .entry(name)
            .or_default()
            .insert(format!("{timing} {event} FOR EACH {orientation}"));
    }
    schema
}

/// Every difference between the two schemas, one line each.
fn differences(sqlite: &Schema, pg: &Schema) -> Vec<String> {
    let mut out = Vec::new();
    let names: BTreeSet<&String> = sqlite.keys().chain(pg.keys()).collect();
    for name in names {
        match (sqlite.get(name), pg.get(name)) {
            (Some(_), None) => out.push(format!("table {name}: only in SQLite")),
            (None, Some(_)) => out.push(format!("table {name}: only in PostgreSQL")),
            (Some(a), Some(b)) => table_differences(name, a, b, &mut out),
            (None, None) => unreachable!(),
        }
    }
    out
}

/// The items of a set found on one side only, as lines.
fn one_sided<T: Ord + fmt::Debug>(what: &str, a: &BTreeSet<T>, b: &BTreeSet<T>, out: &mut Vec<String>) {
    for only in a.difference(b) {
        out.push(format!("{what} {only:?}: only in SQLite"));
    }
    for only in b.difference(a) {
        out.push(format!("{what} {only:?}: only in PostgreSQL"));
    }
}

fn table_differences(name: &str, a: &Table, b: &Table, out: &mut Vec<String>) {
    let a_cols: Vec<&str> = a.columns.iter().map(|c| c.name.as_str()).collect();
    let b_cols: Vec<&str> = b.columns.iter().map(|c| c.name.as_str()).collect();
    for col in &a.columns {
        match b.columns.iter().find(|c| c.name == col.name) {
            None => out.push(format!("table {name}: column {} only in SQLite", col.name)),
            Some(other) if other != col => {
                out.push(format!("table {name}, column {}: SQLite {col}, PostgreSQL {other}", col.name))
            }
            Some(_) => {}
        }
    }
    for col in b.columns.iter().filter(|c| !a_cols.contains(&c.name.as_str())) {
        out.push(format!("table {name}: column {} only in PostgreSQL", col.name));
    }
    let common = |cols: &[&str], other: &[&str]| -> Vec<String> {
        cols.iter().filter(|c| other.contains(c)).map(|c| c.to_string()).collect()
    };
    if common(&a_cols, &b_cols) != common(&b_cols, &a_cols) {
        out.push(format!("table {name}: columns in another order: SQLite {a_cols:?}, PostgreSQL {b_cols:?}"));
    }
    if a.primary_key != b.primary_key {
        out.push(format!("table {name}: primary key SQLite {:?}, PostgreSQL {:?}", a.primary_key, b.primary_key));
    }
    one_sided(&format!("table {name}: unique"), &a.uniques, &b.uniques, out);
    one_sided(&format!("table {name}: foreign key"), &a.foreign_keys, &b.foreign_keys, out);
    if a.checks != b.checks {
        out.push(format!("table {name}: {} CHECK constraints in SQLite, {} in PostgreSQL", a.checks, b.checks));
    }
    let indexes: BTreeSet<&String> = a.indexes.keys().chain(b.indexes.keys()).collect();
    for index in indexes {
        match (a.indexes.get(index), b.indexes.get(index)) {
            (Some(x), None) => out.push(format!("table {name}: index {index} only in SQLite: {x}")),
            (None, Some(y)) => out.push(format!("table {name}: index {index} only in PostgreSQL: {y}")),
            (Some(x), Some(y)) if x != y => {
                out.push(format!("table {name}: index {index}: SQLite {x}, PostgreSQL {y}"))
            }
            _ => {}
        }
    }
    let triggers: BTreeSet<&String> = a.triggers.keys().chain(b.triggers.keys()).collect();
    for trigger in triggers {
        match (a.triggers.get(trigger), b.triggers.get(trigger)) {
            (Some(_), None) => out.push(format!("table {name}: trigger {trigger} only in SQLite")),
            (None, Some(_)) => out.push(format!("table {name}: trigger {trigger} only in PostgreSQL")),
            (Some(x), Some(y)) if x != y => {
                out.push(format!("table {name}: trigger {trigger}: SQLite {x:?}, PostgreSQL {y:?}"))
            }
            _ => {}
        }
    }
}

/// The first `n` migrations of a set, as a source for a [`Migrator`] (so the
/// real migrator applies them, checksums and all).
#[derive(Debug)]
struct Prefix(Vec<Migration>);

impl MigrationSource<'static> for Prefix {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, BoxDynError>> {
        Box::pin(async move { Ok(self.0) })
    }
}

async fn first(set: &Migrator, n: usize) -> Migrator {
    Migrator::new(Prefix(set.iter().take(n).cloned().collect())).await.unwrap()
}

/// A SQLite database as the server opens it (`writer_pool`), and a fresh
/// PostgreSQL one; `None` when no PostgreSQL is configured (outside CI).
async fn both(test: &str) -> Option<(tempfile::TempDir, SqlitePool, TestPg)> {
    let pg = test_pg::fresh(test).await?;
    let dir = tempfile::tempdir().unwrap();
    let sqlite = writer_pool(&dir.path().join("countersign.db")).await.unwrap();
    Some((dir, sqlite, pg))
}

fn label(m: &Migration) -> String {
    format!("{:04}_{}", m.version, m.description.replace(' ', "_"))
}

#[test]
fn both_sets_have_the_same_migrations() {
    let sqlite: Vec<String> = MIGRATOR.iter().map(label).collect();
    let pg: Vec<String> = PG_MIGRATOR.iter().map(label).collect();
    assert!(sqlite.len() >= 11, "{sqlite:?}");
    assert_eq!(sqlite, pg, "migrations/ and migrations/postgres/ must list the same versions and names");
    // sqlx's migrate! skips subdirectories: no PostgreSQL file is in the SQLite set.
    for m in MIGRATOR.iter() {
        assert!(!m.sql.contains("plpgsql"), "{} looks like a PostgreSQL migration", label(m));
    }
}

#[tokio::test]
async fn schemas_agree_after_every_migration() {
    let Some((_dir, sqlite, pg)) = both("schemas_agree_after_every_migration").await else { return };
    // Each difference once, after the migration that brought it.
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (n, m) in MIGRATOR.iter().enumerate() {
        first(&MIGRATOR, n + 1).await.run(&sqlite).await.unwrap_or_else(|e| panic!("SQLite {}: {e}", label(m)));
        first(&PG_MIGRATOR, n + 1).await.run(&pg.pool).await.unwrap_or_else(|e| panic!("PostgreSQL {}: {e}", label(m)));
        let (a, b) = (sqlite_schema(&sqlite).await, pg_schema(&pg.pool).await);
        assert!(a.len() >= 2 && a.contains_key("tenants"), "the SQLite schema was read: {a:?}");
        for d in differences(&a, &b) {
            if seen.insert(d.clone()) {
                problems.push(format!("after {}: {d}", label(m)));
            }
        }
    }
    // Both catalogs were really read (equal because both empty proves nothing).
    let (a, b) = (sqlite_schema(&sqlite).await, pg_schema(&pg.pool).await);
    for (side, schema) in [("SQLite", &a), ("PostgreSQL", &b)] {
        let missing = unseen_facts(schema);
        assert!(missing.is_empty(), "{side}'s schema was not read whole: {missing:?}");
    }
    // The databases are exactly what the real migrators expect: nothing to do.
    MIGRATOR.run(&sqlite).await.unwrap();
    PG_MIGRATOR.run(&pg.pool).await.unwrap();
    pg.drop().await;
    assert!(problems.is_empty(), "the PostgreSQL migrations differ from SQLite's:\n{}", problems.join("\n"));
}

/// Facts of the final schema that the catalog reading must see, kind by kind.
fn unseen_facts(schema: &Schema) -> Vec<&'static str> {
    let t = |name: &str| schema.get(name).cloned().unwrap_or_default();
    let col = |table: &str, name: &str| t(table).columns.into_iter().find(|c| c.name == name);
    let facts = [
        ("proposals key", t("proposals").primary_key == ["id"]),
        ("operations uniques", t("operations").uniques.len() == 3),
        ("proposals foreign keys", t("proposals").foreign_keys.len() == 2),
        ("slack_outbox checks", t("slack_outbox").checks == 2),
        ("partial index", t("proposals").indexes.get("proposals_payee_invoice").is_some_and(|i| i.predicate.is_some())),
        ("unique index", t("operations").indexes.get("operations_rail_reference").is_some_and(|i| i.unique)),
        ("generated key", col("change_log", "seq").is_some_and(|c| c.generated)),
        ("literal default", col("users", "active").is_some_and(|c| c.default == DefaultValue::Literal("1".into()))),
        ("nullable column", col("users", "slack_user_id").is_some_and(|c| !c.not_null)),
        ("triggers", schema.values().map(|t| t.triggers.len()).sum::<usize>() == 15),
    ];
    facts.into_iter().filter(|(_, seen)| !seen).map(|(fact, _)| fact).collect()
}

/// Writes before migration 0011 (whose backfill must not log), then after.
const BEFORE_0011: &str = "
    INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'Acme', '2026-01-01T00:00:00.000Z');
    INSERT INTO users (id, tenant_id, username, password_hash, roles, created_at)
        VALUES ('u1', 't1', 'ana', 'x', '[\"approver\"]', '2026-01-01T00:00:00.000Z');
    INSERT INTO agents (tenant_id, id, key_sha256, acts_for, source_accounts, purposes, created_at)
        VALUES ('t1', 'bot', 'k1', 'u1', '[]', '[]', '2026-01-01T00:00:00.000Z'),
               ('t1', 'old', 'k2', 'u1', '[]', '[]', '2026-01-01T00:00:00.000Z');
    INSERT INTO payees (tenant_id, id, legal_name, created_at)
        VALUES ('t1', 'acct_1', 'Supplier Ltd', '2026-01-01T00:00:00.000Z');
    INSERT INTO proposals (id, tenant_id, agent_id, run_id, kind, status, amount_minor, currency, payee_id,
                           canonical_request, request_hash, policy, required_approvals,
                           created_at, updated_at, expires_at)
        VALUES ('p1', 't1', 'bot', 'r1', 'transfer', 'pending_approval', 100, 'USD', 'acct_1',
                '{\"amount_minor\":100,\"invoice_id\":\"INV-1\"}', 'sha256:1', '{}', 1,
                '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z'),
               ('p2', 't1', 'bot', 'r1', 'transfer', 'pending_approval', 5, 'USD', 'acct_1',
                '{\"amount_minor\":5}', 'sha256:2', '{}', 1,
                '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z');
";

const AFTER: &str = "
    UPDATE proposals SET status = 'approved', version = version + 1 WHERE id = 'p1';
    INSERT INTO approvals (proposal_id, round, approver_id, decision, via, amr, at)
        VALUES ('p1', 1, 'u1', 'approve', 'console', 'pwd', '2026-01-01T00:00:01.000Z');
    UPDATE approvals SET reason = 'fine' WHERE proposal_id = 'p1';
    INSERT INTO approval_tokens (jti, proposal_id, round, token, kid, issued_at, expires_at)
        VALUES ('j1', 'p1', 1, 'tok', 'kid', '2026-01-01T00:00:01.000Z', '2026-01-01T00:05:01.000Z');
    UPDATE approval_tokens SET used_at = '2026-01-01T00:00:02.000Z' WHERE jti = 'j1';
    INSERT INTO operations (id, proposal_id, jti, idempotency_key, tenant_id, kind, status, amount_minor,
                            currency, next_check_at, created_at, updated_at)
        VALUES ('op1', 'p1', 'j1', 'ik1', 't1', 'transfer', 'pending', 100, 'USD',
                '2026-01-01T00:00:02.000Z', '2026-01-01T00:00:02.000Z', '2026-01-01T00:00:02.000Z');
    UPDATE operations SET status = 'succeeded' WHERE id = 'op1';
    INSERT INTO budgets (tenant_id, currency, daily_limit_minor) VALUES ('t1', 'USD', 1000);
    UPDATE payees SET trusted = 1;
    UPDATE agents SET active = 0 WHERE id = 'old';
    DELETE FROM agents WHERE id = 'old';
    DELETE FROM approvals WHERE proposal_id = 'p1';
    DELETE FROM proposals WHERE id = 'p2';
    DELETE FROM payees;
";

/// What SQLite's triggers log for the writes above, in order.
const LOGGED: &[(&str, Option<&str>)] = &[
    // before 0011: the agents and the payee (a new proposal logs nothing)
    ("agents", None),
    ("agents", None),
    ("payees", None),
    // after
    ("proposal", Some("p1")),
    ("proposal", Some("p1")),
    ("proposal", Some("p1")),
    ("proposal", Some("p1")),
    ("proposal", Some("p1")),
    ("proposal", Some("p1")),
    ("proposal", Some("p1")),
    ("payees", None),
    ("agents", None),
    ("agents", None),
    ("proposal", Some("p1")),
    ("proposal", Some("p2")),
    ("payees", None),
];

type Logged = Vec<(i64, String, Option<String>, String)>;
const LOG_QUERY: &str = "SELECT seq, kind, proposal_id, at FROM change_log ORDER BY seq";
const INVOICES: &str = "SELECT id, invoice_id FROM proposals ORDER BY id";

#[tokio::test]
async fn change_log_triggers_write_the_same_rows_and_postgres_announces_them() {
    let Some((_dir, sqlite, pg)) = both("change_log_triggers_write_the_same_rows_and_postgres_announces_them").await
    else {
        return;
    };
    first(&MIGRATOR, 10).await.run(&sqlite).await.unwrap();
    first(&PG_MIGRATOR, 10).await.run(&pg.pool).await.unwrap();
    sqlx::raw_sql(BEFORE_0011).execute(&sqlite).await.unwrap();
    sqlx::raw_sql(BEFORE_0011).execute(&pg.pool).await.unwrap();
    MIGRATOR.run(&sqlite).await.unwrap();
    PG_MIGRATOR.run(&pg.pool).await.unwrap();

    // 0011 copied the invoice id into its column on both.
    let invoices_sqlite: Vec<(String, Option<String>)> = sqlx::query_as(INVOICES).fetch_all(&sqlite).await.unwrap();
    let invoices_pg: Vec<(String, Option<String>)> = sqlx::query_as(INVOICES).fetch_all(&pg.pool).await.unwrap();
    let expected = vec![("p1".to_owned(), Some("INV-1".to_owned())), ("p2".to_owned(), None)];
    assert_eq!(invoices_sqlite, expected);
    assert_eq!(invoices_pg, expected);

    let mut listener = sqlx::postgres::PgListener::connect_with(&pg.pool).await.unwrap();
    listener.listen("countersign_changes").await.unwrap();
    sqlx::raw_sql(AFTER).execute(&sqlite).await.unwrap();
    sqlx::raw_sql(AFTER).execute(&pg.pool).await.unwrap();

    let logged_sqlite: Logged = sqlx::query_as(LOG_QUERY).fetch_all(&sqlite).await.unwrap();
    let logged_pg: Logged = sqlx::query_as(LOG_QUERY).fetch_all(&pg.pool).await.unwrap();
    let shape = |rows: &Logged| -> Vec<(String, Option<String>)> {
        rows.iter().map(|(_, kind, id, _)| (kind.clone(), id.clone())).collect()
    };
    let expected: Vec<(String, Option<String>)> =
        LOGGED.iter().map(|(k, id)| (k.to_string(), id.map(str::to_owned))).collect();
    assert_eq!(shape(&logged_sqlite), expected, "SQLite's triggers");
    assert_eq!(shape(&logged_pg), expected, "PostgreSQL's triggers write what SQLite's write");
    for (_, _, _, at) in logged_sqlite.iter().chain(&logged_pg) {
        assert!(at.len() == 24 && at.ends_with('Z') && parse_ts(at).is_some(), "`at` as SQLite writes it: {at}");
    }

    // Every row written after LISTEN was announced, in order, as JSON.
    let after: Vec<_> = logged_pg.iter().skip(3).collect();
    for (seq, kind, id, _) in after {
        let note = tokio::time::timeout(std::time::Duration::from_secs(5), listener.recv())
            .await
            .expect("a notification for every change")
            .unwrap();
        let payload: serde_json::Value = serde_json::from_str(note.payload()).unwrap();
        assert_eq!(payload, serde_json::json!({"seq": seq, "kind": kind, "proposal_id": id}));
    }
    drop(listener);
    pg.drop().await;
}

mod tests {
    use super::*;

    #[test]
    fn defaults_compare_by_value() {
        assert_eq!(default_of(Some("'pending'")), default_of(Some("'pending'::text")));
        assert_eq!(default_of(Some("''")), DefaultValue::Literal(String::new()));
        assert_eq!(default_of(Some("''::text")), DefaultValue::Literal(String::new()));
        assert_eq!(default_of(Some("1")), default_of(Some("(1)")));
        assert_eq!(default_of(Some("'-1'::integer")), DefaultValue::Literal("-1".into()));
        assert_ne!(default_of(Some("1")), default_of(Some("0")));
        assert_eq!(default_of(Some("strftime('%Y', 'now')")), DefaultValue::Expression);
        assert_eq!(default_of(None), DefaultValue::None);
    }

    #[test]
    fn predicates_compare_without_dialect() {
        let sqlite = index_predicate("CREATE INDEX x\n  ON t (a) WHERE invoice_id IS NOT NULL").unwrap();
        assert_eq!(normalize(&sqlite), normalize("(invoice_id IS NOT NULL)"));
        assert_eq!(normalize("status = 'pending'"), normalize("(status = 'pending'::text)"));
        assert_ne!(normalize("a IS NULL"), normalize("a IS NOT NULL"));
    }

    #[test]
    fn checks_are_counted_outside_comments_and_names() {
        let sql =
            "CREATE TABLE t (\n next_check_at TEXT, -- checked (later)\n a INTEGER CHECK (a > 0),\n CHECK(a < 9)\n)";
        assert_eq!(count_checks(sql), 2);
    }

    #[test]
    fn trigger_events_are_read() {
        assert_eq!(
            sqlite_trigger_event("CREATE TRIGGER x AFTER UPDATE ON proposals BEGIN SELECT 1; END"),
            "AFTER UPDATE FOR EACH ROW"
        );
        assert_eq!(
            sqlite_trigger_event("CREATE TRIGGER x DELETE ON t BEGIN SELECT 1; END"),
            "BEFORE DELETE FOR EACH ROW"
        );
    }

    fn table(columns: Vec<Column>) -> Table {
        Table { columns, ..Table::default() }
    }

    fn col(name: &str, class: &str) -> Column {
        Column { name: name.into(), class: class.into(), not_null: true, default: DefaultValue::None, generated: false }
    }

    #[test]
    fn every_difference_is_named() {
        let mut a = Schema::new();
        let mut b = Schema::new();
        a.insert("t".into(), table(vec![col("id", "text"), col("n", "integer"), col("gone", "text")]));
        b.insert("t".into(), table(vec![col("id", "text"), col("n", "boolean")]));
        a.insert("only_here".into(), Table::default());
        b.get_mut("t")
            .unwrap()
            .indexes
            .insert("t_n".into(), Index { unique: false, columns: vec!["n".into()], predicate: None });
        let found = differences(&a, &b);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(found.iter().any(|d| d.contains("column gone only in SQLite")), "{found:#?}");
        assert!(found.iter().any(|d| d.contains("column n: SQLite integer NOT NULL, PostgreSQL boolean NOT NULL")));
        assert!(found.iter().any(|d| d.contains("index t_n only in PostgreSQL")));
        assert!(found.iter().any(|d| d.contains("table only_here: only in SQLite")));
    }
}
