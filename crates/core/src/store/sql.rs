//! One query text, run on either backend (docs/DECISIONS.md, "The store on
//! two backends").
//!
//! Every store function writes its SQL once, with `?` placeholders, and
//! binds its values once: [`query`] and [`scalar`] collect them, and the
//! executor the function is given ([`Exec`]: a [`Pool`] or a [`Conn`])
//! decides which sqlx driver runs it. On SQLite the text and the values go
//! to sqlx's typed SQLite driver unchanged and the row stays a `SqliteRow`:
//! the cost over calling sqlx directly is one `match` and one small vector
//! per statement, next to a round trip to the connection's worker thread.
//! On PostgreSQL the placeholders are renumbered `$1, $2, …` ([`pg_text`]).
//!
//! Values bind as `i64`, text or bytes, never `bool` or unsigned integers:
//! PostgreSQL checks a parameter's type against its column's, and every
//! integer column is `BIGINT` (a `bool` binds as 0/1).

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{Decode, PgConnection, PgPool, Postgres, Row as _, Sqlite, SqliteConnection, SqlitePool, Type};
use std::borrow::Cow;
use std::fmt::Display;

/// A pool of connections (the writer or the readers of a [`super::Db`]).
#[derive(Clone, Debug)]
pub enum Pool {
    Sqlite(SqlitePool),
    /// SQLite's readers (`super::readers`).
    SqliteReaders(std::sync::Arc<super::readers::Readers>),
    Pg(PgPool),
}

/// One connection, held until dropped: a pooled connection or an open
/// transaction. Store functions that must share a transaction take it.
#[derive(Debug)]
pub enum Conn {
    Sqlite(PoolConnection<Sqlite>),
    SqliteReader(super::readers::Reader),
    SqliteTx(sqlx::Transaction<'static, Sqlite>),
    Pg(PoolConnection<Postgres>),
    PgTx(PgTx),
}

/// A PostgreSQL transaction, and whether it wrote audit entries that are
/// linked into the chain once it commits (`super::audit::link`).
#[derive(Debug)]
pub struct PgTx {
    pub(super) tx: sqlx::Transaction<'static, Postgres>,
    /// Where the linking transaction gets its connection once this one's
    /// went back to the pool.
    pub(super) pool: PgPool,
    pub(super) unlinked: bool,
}

impl Pool {
    /// Starts a transaction (on SQLite's writer pool, writes queue here).
    ///
    /// On SQLite it takes the write lock at once (`BEGIN IMMEDIATE`): a
    /// deferred transaction that has read and then writes after another
    /// process (the CLI beside `serve`, the server's background workers
    /// beside the CLI) committed fails at once with `SQLITE_BUSY`, where an
    /// immediate one waits its turn (the busy timeout). In-process, the
    /// single writer connection serializes them anyway.
    pub async fn begin(&self) -> sqlx::Result<super::Tx> {
        Ok(super::Tx(match self {
            Pool::Sqlite(p) => Conn::SqliteTx(p.begin_with("BEGIN IMMEDIATE").await?),
            Pool::SqliteReaders(_) => {
                return Err(sqlx::Error::Configuration("a write transaction on SQLite's readers".into()))
            }
            Pool::Pg(p) => Conn::PgTx(PgTx { tx: p.begin().await?, pool: p.clone(), unlinked: false }),
        }))
    }

    /// A connection of the pool, outside a transaction.
    pub async fn acquire(&self) -> sqlx::Result<super::Pooled> {
        Ok(super::Pooled(match self {
            Pool::Sqlite(p) => Conn::Sqlite(p.acquire().await?),
            Pool::SqliteReaders(r) => Conn::SqliteReader(r.acquire().await?),
            Pool::Pg(p) => Conn::Pg(p.acquire().await?),
        }))
    }

    pub async fn close(&self) {
        match self {
            Pool::Sqlite(p) => p.close().await,
            Pool::SqliteReaders(r) => r.close().await,
            Pool::Pg(p) => p.close().await,
        }
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self, Pool::Pg(_))
    }

    /// An aggregate joining `item` of every row with `;` into one text
    /// (SQLite's `group_concat`, PostgreSQL's `string_agg`), in no promised
    /// order. Each row returned is a round trip between the connection's
    /// thread and ours: for many small rows, one joined text costs less.
    pub fn joined(&self, item: &str) -> String {
        if self.is_postgres() {
            format!("string_agg({item}, ';')")
        } else {
            format!("group_concat({item}, ';')")
        }
    }
}

impl Conn {
    pub fn is_postgres(&self) -> bool {
        matches!(self, Conn::Pg(_) | Conn::PgTx(_))
    }
}

/// Where a statement runs: a pool, or a connection (inside a transaction).
pub enum Exec<'e> {
    Pool(&'e Pool),
    Conn(&'e mut Conn),
    /// A PostgreSQL connection the store holds outside a [`Conn`] (the
    /// audit chain's linking transaction).
    PgConn(&'e mut PgConnection),
}

impl<'e> From<&'e mut PgConnection> for Exec<'e> {
    fn from(c: &'e mut PgConnection) -> Self {
        Exec::PgConn(c)
    }
}

impl<'e> From<&'e Pool> for Exec<'e> {
    fn from(p: &'e Pool) -> Self {
        Exec::Pool(p)
    }
}

impl<'e> From<&'e mut Conn> for Exec<'e> {
    fn from(c: &'e mut Conn) -> Self {
        Exec::Conn(c)
    }
}

impl<'e> From<&'e mut super::Tx> for Exec<'e> {
    fn from(t: &'e mut super::Tx) -> Self {
        Exec::Conn(&mut t.0)
    }
}

impl<'e> From<&'e mut super::Pooled> for Exec<'e> {
    fn from(c: &'e mut super::Pooled) -> Self {
        Exec::Conn(&mut c.0)
    }
}

impl<'e> Exec<'e> {
    pub fn is_postgres(&self) -> bool {
        match self {
            Exec::Pool(p) => p.is_postgres(),
            Exec::Conn(c) => c.is_postgres(),
            Exec::PgConn(_) => true,
        }
    }
}

/// The driver-level executor an [`Exec`] stands for.
enum Target<'e> {
    SqlitePool(&'e SqlitePool),
    SqliteReaders(&'e std::sync::Arc<super::readers::Readers>),
    Sqlite(&'e mut SqliteConnection),
    PgPool(&'e PgPool),
    Pg(&'e mut PgConnection),
}

impl<'e> Exec<'e> {
    fn target(self) -> Target<'e> {
        match self {
            Exec::Pool(Pool::Sqlite(p)) => Target::SqlitePool(p),
            Exec::Pool(Pool::SqliteReaders(r)) => Target::SqliteReaders(r),
            Exec::Pool(Pool::Pg(p)) => Target::PgPool(p),
            Exec::Conn(Conn::Sqlite(c)) => Target::Sqlite(c),
            Exec::Conn(Conn::SqliteReader(c)) => Target::Sqlite(c),
            Exec::Conn(Conn::SqliteTx(t)) => Target::Sqlite(t),
            Exec::Conn(Conn::Pg(c)) => Target::Pg(c),
            Exec::Conn(Conn::PgTx(t)) => Target::Pg(&mut t.tx),
            Exec::PgConn(c) => Target::Pg(c),
        }
    }
}

/// A bound value.
#[derive(Debug, Clone)]
pub enum Arg<'q> {
    Int(Option<i64>),
    Text(Option<Cow<'q, str>>),
    Bytes(Option<Cow<'q, [u8]>>),
}

impl Arg<'_> {
    fn into_owned(self) -> Arg<'static> {
        match self {
            Arg::Int(v) => Arg::Int(v),
            Arg::Text(v) => Arg::Text(v.map(|t| Cow::Owned(t.into_owned()))),
            Arg::Bytes(v) => Arg::Bytes(v.map(|b| Cow::Owned(b.into_owned()))),
        }
    }
}

macro_rules! arg_from {
    ($($t:ty => |$v:ident| $e:expr),* $(,)?) => {
        $(impl<'q> From<$t> for Arg<'q> {
            fn from($v: $t) -> Self {
                $e
            }
        })*
    };
}

arg_from! {
    i64 => |v| Arg::Int(Some(v)),
    Option<i64> => |v| Arg::Int(v),
    bool => |v| Arg::Int(Some(i64::from(v))),
    &'q str => |v| Arg::Text(Some(Cow::Borrowed(v))),
    &'q String => |v| Arg::Text(Some(Cow::Borrowed(v.as_str()))),
    &'q &'q str => |v| Arg::Text(Some(Cow::Borrowed(*v))),
    String => |v| Arg::Text(Some(Cow::Owned(v))),
    Option<&'q str> => |v| Arg::Text(v.map(Cow::Borrowed)),
    Option<String> => |v| Arg::Text(v.map(Cow::Owned)),
    Option<&'q String> => |v| Arg::Text(v.map(|s| Cow::Borrowed(s.as_str()))),
    &'q Option<String> => |v| Arg::Text(v.as_deref().map(Cow::Borrowed)),
    &'q [u8] => |v| Arg::Bytes(Some(Cow::Borrowed(v))),
    &'q Vec<u8> => |v| Arg::Bytes(Some(Cow::Borrowed(v.as_slice()))),
    Vec<u8> => |v| Arg::Bytes(Some(Cow::Owned(v))),
    Option<&'q [u8]> => |v| Arg::Bytes(v.map(Cow::Borrowed)),
    Option<Vec<u8>> => |v| Arg::Bytes(v.map(Cow::Owned)),
}

/// The statement's text for PostgreSQL: each `?` outside a quoted string or
/// identifier becomes `$1`, `$2`, … in order.
pub fn pg_text(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut quote: Option<char> = None;
    let mut n = 0;
    for ch in sql.chars() {
        match (quote, ch) {
            (None, '\'' | '"') => {
                quote = Some(ch);
                out.push(ch);
            }
            (Some(q), c) if c == q => {
                quote = None;
                out.push(ch);
            }
            (None, '?') => {
                n += 1;
                out.push('$');
                out.push_str(&n.to_string());
            }
            _ => out.push(ch),
        }
    }
    out
}

/// A row of either backend; read it with [`Row::decode`].
pub enum Row {
    Sqlite(SqliteRow),
    Pg(PgRow),
}

/// What a statement changed.
#[derive(Debug, Clone, Copy)]
pub struct Done(u64);

impl Done {
    pub fn rows_affected(&self) -> u64 {
        self.0
    }
}

/// A statement and its values.
#[must_use = "a query does nothing until it is run"]
pub struct Query<'q> {
    sql: Cow<'q, str>,
    args: Vec<Arg<'q>>,
}

/// A statement, with `?` placeholders.
pub fn query<'q>(sql: impl Into<Cow<'q, str>>) -> Query<'q> {
    Query { sql: sql.into(), args: Vec::with_capacity(8) }
}

fn bind_sqlite<'q>(
    q: sqlx::query::Query<'q, Sqlite, SqliteArguments<'q>>,
    arg: Arg<'q>,
) -> sqlx::query::Query<'q, Sqlite, SqliteArguments<'q>> {
    match arg {
        Arg::Int(v) => q.bind(v),
        Arg::Text(v) => q.bind(v),
        Arg::Bytes(v) => q.bind(v.map(Cow::into_owned)),
    }
}

fn bind_pg<'q>(
    q: sqlx::query::Query<'q, Postgres, PgArguments>,
    arg: Arg<'q>,
) -> sqlx::query::Query<'q, Postgres, PgArguments> {
    match arg {
        Arg::Int(v) => q.bind(v),
        Arg::Text(v) => q.bind(v),
        Arg::Bytes(v) => q.bind(v.map(Cow::into_owned)),
    }
}

/// Runs `$method` on whichever driver `$exec` names, mapping the driver's
/// result with `$sqlite` / `$pg`.
macro_rules! dispatch {
    ($self:ident, $exec:expr, $method:ident, $sqlite:expr, $pg:expr) => {{
        let Query { sql, args } = $self;
        let exec: Exec<'_> = $exec.into();
        match exec.target() {
            Target::SqlitePool(p) => {
                let q = args.into_iter().fold(sqlx::query::<Sqlite>(&sql), |q, a| bind_sqlite(q, a));
                q.$method(p).await.map($sqlite)
            }
            Target::Sqlite(c) => {
                let q = args.into_iter().fold(sqlx::query::<Sqlite>(&sql), |q, a| bind_sqlite(q, a));
                q.$method(c).await.map($sqlite)
            }
            Target::SqliteReaders(r) => {
                let mut c = r.acquire().await?;
                let q = args.into_iter().fold(sqlx::query::<Sqlite>(&sql), |q, a| bind_sqlite(q, a));
                q.$method(&mut *c).await.map($sqlite)
            }
            Target::PgPool(p) => {
                let text = pg_text(&sql);
                let q = args.into_iter().fold(sqlx::query::<Postgres>(&text), |q, a| bind_pg(q, a));
                q.$method(p).await.map($pg)
            }
            Target::Pg(c) => {
                let text = pg_text(&sql);
                let q = args.into_iter().fold(sqlx::query::<Postgres>(&text), |q, a| bind_pg(q, a));
                q.$method(c).await.map($pg)
            }
        }
    }};
}

impl<'q> Query<'q> {
    pub fn bind(mut self, value: impl Into<Arg<'q>>) -> Self {
        self.args.push(value.into());
        self
    }

    /// The same statement owning its text and values (to run in a task of
    /// its own).
    pub fn into_owned(self) -> Query<'static> {
        Query { sql: Cow::Owned(self.sql.into_owned()), args: self.args.into_iter().map(Arg::into_owned).collect() }
    }

    pub async fn execute<'e>(self, exec: impl Into<Exec<'e>>) -> sqlx::Result<Done> {
        dispatch!(self, exec, execute, |r| Done(r.rows_affected()), |r| Done(r.rows_affected()))
    }

    pub async fn fetch_one<'e>(self, exec: impl Into<Exec<'e>>) -> sqlx::Result<Row> {
        dispatch!(self, exec, fetch_one, Row::Sqlite, Row::Pg)
    }

    pub async fn fetch_optional<'e>(self, exec: impl Into<Exec<'e>>) -> sqlx::Result<Option<Row>> {
        dispatch!(self, exec, fetch_optional, |r| r.map(Row::Sqlite), |r| r.map(Row::Pg))
    }

    pub async fn fetch_all<'e>(self, exec: impl Into<Exec<'e>>) -> sqlx::Result<Vec<Row>> {
        dispatch!(self, exec, fetch_all, |rs| rs.into_iter().map(Row::Sqlite).collect(), |rs| rs
            .into_iter()
            .map(Row::Pg)
            .collect())
    }
}

/// A value both drivers decode the same way.
pub trait Value<'r>: Decode<'r, Sqlite> + Type<Sqlite> + Decode<'r, Postgres> + Type<Postgres> {}
impl<'r, T: Decode<'r, Sqlite> + Type<Sqlite> + Decode<'r, Postgres> + Type<Postgres>> Value<'r> for T {}

impl Row {
    /// The row as `T` (a `#[derive(sqlx::FromRow)]` struct, its columns
    /// read by name): a column missing or unreadable is a
    /// [`super::StoreError::Corrupt`] naming it.
    pub fn decode<T: super::rows::Decoded>(&self) -> super::Result<T> {
        let read = match self {
            Row::Sqlite(r) => T::from_row(r),
            Row::Pg(r) => T::from_row(r),
        };
        Ok(read?)
    }

    /// Whether the row has a column named `name`.
    pub fn has_column(&self, name: &str) -> bool {
        use sqlx::Row as _;
        match self {
            Row::Sqlite(r) => r.try_column(name).is_ok(),
            Row::Pg(r) => r.try_column(name).is_ok(),
        }
    }

    /// The column `name` (or at `index`), as `T`.
    pub fn try_get<'r, T: Value<'r>>(&'r self, column: &str) -> sqlx::Result<T> {
        match self {
            Row::Sqlite(r) => r.try_get(column),
            Row::Pg(r) => r.try_get(column),
        }
    }

    pub(crate) fn try_get_at<'r, T: Value<'r>>(&'r self, index: usize) -> sqlx::Result<T> {
        match self {
            Row::Sqlite(r) => r.try_get(index),
            Row::Pg(r) => r.try_get(index),
        }
    }

    /// An integer column, as [`super::rows::Int`] reads one (PostgreSQL's
    /// `INT4`, `INT2` and `BOOL` too).
    pub fn try_int<I: sqlx::ColumnIndex<PgRow> + sqlx::ColumnIndex<SqliteRow>>(
        &self,
        column: I,
    ) -> sqlx::Result<Option<i64>> {
        let int: Option<super::rows::Int> = match self {
            Row::Sqlite(r) => r.try_get(column)?,
            Row::Pg(r) => r.try_get(column)?,
        };
        Ok(int.map(i64::from))
    }
}

/// A one-column result read as `Self` (see [`scalar`]).
pub trait Scalar: Sized + Send {
    fn read(row: &Row) -> sqlx::Result<Self>;
}

impl Scalar for i64 {
    fn read(row: &Row) -> sqlx::Result<Self> {
        row.try_int(0)?
            .ok_or_else(|| sqlx::Error::ColumnDecode { index: "0".to_owned(), source: "unexpected NULL".into() })
    }
}

impl Scalar for Option<i64> {
    fn read(row: &Row) -> sqlx::Result<Self> {
        row.try_int(0)
    }
}

macro_rules! scalar_of {
    ($($t:ty),*) => {
        $(impl Scalar for $t {
            fn read(row: &Row) -> sqlx::Result<Self> {
                row.try_get_at(0)
            }
        })*
    };
}

scalar_of!(String, Option<String>, Vec<u8>, Option<Vec<u8>>);

/// A statement whose rows are one value each.
#[must_use = "a query does nothing until it is run"]
pub struct ScalarQuery<'q, T> {
    inner: Query<'q>,
    _t: std::marker::PhantomData<fn() -> T>,
}

/// A one-column statement, read as `T`.
pub fn scalar<'q, T: Scalar>(sql: impl Into<Cow<'q, str>>) -> ScalarQuery<'q, T> {
    ScalarQuery { inner: query(sql), _t: std::marker::PhantomData }
}

impl<'q, T: Scalar> ScalarQuery<'q, T> {
    pub fn bind(mut self, value: impl Into<Arg<'q>>) -> Self {
        self.inner = self.inner.bind(value);
        self
    }

    pub async fn fetch_one<'e>(self, exec: impl Into<Exec<'e>>) -> sqlx::Result<T> {
        T::read(&self.inner.fetch_one(exec).await?)
    }

    pub async fn fetch_optional<'e>(self, exec: impl Into<Exec<'e>>) -> sqlx::Result<Option<T>> {
        self.inner.fetch_optional(exec).await?.as_ref().map(T::read).transpose()
    }

    pub async fn fetch_all<'e>(self, exec: impl Into<Exec<'e>>) -> sqlx::Result<Vec<T>> {
        self.inner.fetch_all(exec).await?.iter().map(T::read).collect()
    }
}

/// A statement assembled piece by piece (filters, `IN` lists).
pub struct Builder<'q> {
    sql: String,
    args: Vec<Arg<'q>>,
}

impl<'q> Builder<'q> {
    pub fn new(start: impl Into<String>) -> Self {
        Builder { sql: start.into(), args: Vec::new() }
    }

    pub fn push(&mut self, text: impl Display) -> &mut Self {
        use std::fmt::Write;
        write!(self.sql, "{text}").expect("writing to a String");
        self
    }

    pub fn push_bind(&mut self, value: impl Into<Arg<'q>>) -> &mut Self {
        self.sql.push('?');
        self.args.push(value.into());
        self
    }

    /// Binds each of `values`, separated by `, ` (an `IN` list's inside).
    pub fn push_list<A: Into<Arg<'q>>>(&mut self, values: impl IntoIterator<Item = A>) -> &mut Self {
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                self.sql.push_str(", ");
            }
            self.push_bind(v);
        }
        self
    }

    pub fn sql(&self) -> &str {
        &self.sql
    }

    pub fn build(self) -> Query<'q> {
        Query { sql: Cow::Owned(self.sql), args: self.args }
    }
}

#[cfg(test)]
mod tests {
    use super::pg_text;

    #[test]
    fn placeholders_are_numbered_outside_quotes() {
        assert_eq!(
            pg_text("SELECT ? , '?' AS q, \"a?\" FROM t WHERE a = ? AND b IN (?, ?)"),
            "SELECT $1 , '?' AS q, \"a?\" FROM t WHERE a = $2 AND b IN ($3, $4)"
        );
        assert_eq!(pg_text("SELECT 'it''s?' , ?"), "SELECT 'it''s?' , $1");
    }
}
