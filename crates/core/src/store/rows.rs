//! Reading a row into domain types. The store's row structs derive
//! `sqlx::FromRow`; a column that is not plain text is read through one of
//! the column types here, named with `#[sqlx(try_from = "…")]`, which decode
//! the same on both backends (the schema keeps timestamps and JSON as text,
//! flags as integers).
//!
//! Each column type checks its value in its `Decode`, and converts into the
//! field's type with an infallible `From`: sqlx (0.8.6) reports a failed
//! `TryFrom` of `try_from` as "unprintable error", losing why.
//!
//! Every one is strict: a missing column, a value of the wrong type, a NULL
//! where a value belongs, an unknown status, a timestamp that is not RFC
//! 3339, a flag other than 0/1, a negative amount or JSON that does not
//! parse is a [`StoreError::Corrupt`](super::StoreError::Corrupt) naming
//! the column ([`Row::decode`](super::Row::decode)), never a default that
//! reads as a real state. Their messages never quote the stored value.

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use sqlx::error::{BoxDynError, UnexpectedNullError};
use sqlx::postgres::{PgRow, PgTypeInfo, PgValueRef};
use sqlx::sqlite::{SqliteRow, SqliteTypeInfo, SqliteValueRef};
use sqlx::{Database, Decode, FromRow, Postgres, Sqlite, Type, TypeInfo, ValueRef};

use super::parse_ts;
use super::reach::{Channel, Kind};
use super::slack::Target;
use crate::decision::policy::Decision;
use crate::domain::{CanonicalRequest, OpStatus, ProposalStatus, Role};
use std::str::FromStr;

/// A row struct either backend's rows decode into (any `#[derive(sqlx::FromRow)]`
/// whose fields both backends decode); read it with [`super::Row::decode`].
pub trait Decoded: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> {}

impl<T: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow>> Decoded for T {}

/// A value that is there: sqlx hands a NULL to the decoder of a type that is
/// not an `Option`, and SQLite would read it as 0 or "".
fn present<'r, DB: Database>(value: &DB::ValueRef<'r>) -> Result<(), BoxDynError> {
    if value.is_null() {
        Err(Box::new(UnexpectedNullError))
    } else {
        Ok(())
    }
}

/// The text of a non-NULL text column.
fn text<'r, DB: Database>(value: DB::ValueRef<'r>) -> Result<&'r str, BoxDynError>
where
    &'r str: Decode<'r, DB>,
{
    present::<DB>(&value)?;
    <&str as Decode<DB>>::decode(value)
}

/// Column types stored as `$stored` (text, an integer): the columns they
/// accept are its columns, on either backend.
macro_rules! stored_as {
    ($stored:ty: $($t:ident$(<$p:ident>)?),+) => {$(
        impl<DB: Database $(, $p)?> Type<DB> for $t$(<$p>)?
        where
            $stored: Type<DB>,
        {
            fn type_info() -> DB::TypeInfo {
                <$stored as Type<DB>>::type_info()
            }

            fn compatible(ty: &DB::TypeInfo) -> bool {
                <$stored as Type<DB>>::compatible(ty)
            }
        }
    )+};
}

stored_as!(String: Timestamp, OptTimestamp, Json<T>, Known<T>, Roles);
stored_as!(Int: Unsigned<T>, OptUnsigned, Flag);

/// An RFC 3339 timestamp (`ts` writes them).
pub struct Timestamp(DateTime<Utc>);

impl<'r, DB: Database> Decode<'r, DB> for Timestamp
where
    &'r str: Decode<'r, DB>,
{
    fn decode(value: DB::ValueRef<'r>) -> Result<Self, BoxDynError> {
        parse_ts(text::<DB>(value)?).map(Timestamp).ok_or_else(|| "not an RFC 3339 timestamp".into())
    }
}

impl From<Timestamp> for DateTime<Utc> {
    fn from(t: Timestamp) -> Self {
        t.0
    }
}

/// A timestamp or NULL.
pub struct OptTimestamp(Option<DateTime<Utc>>);

impl<'r, DB: Database> Decode<'r, DB> for OptTimestamp
where
    &'r str: Decode<'r, DB>,
{
    fn decode(value: DB::ValueRef<'r>) -> Result<Self, BoxDynError> {
        if value.is_null() {
            return Ok(OptTimestamp(None));
        }
        Timestamp::decode(value).map(|t| OptTimestamp(Some(t.0)))
    }
}

impl From<OptTimestamp> for Option<DateTime<Utc>> {
    fn from(t: OptTimestamp) -> Self {
        t.0
    }
}

/// An integer. PostgreSQL types an integer literal (`0 AS x`) `INT4`, a
/// `SMALLINT` `INT2` and a comparison `BOOL`, where SQLite has one integer
/// type: all read as `i64` here.
pub struct Int(i64);

impl Type<Sqlite> for Int {
    fn type_info() -> SqliteTypeInfo {
        <i64 as Type<Sqlite>>::type_info()
    }

    fn compatible(ty: &SqliteTypeInfo) -> bool {
        <i64 as Type<Sqlite>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Sqlite> for Int {
    fn decode(value: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
        present::<Sqlite>(&value)?;
        <i64 as Decode<Sqlite>>::decode(value).map(Int)
    }
}

impl Type<Postgres> for Int {
    fn type_info() -> PgTypeInfo {
        <i64 as Type<Postgres>>::type_info()
    }

    fn compatible(ty: &PgTypeInfo) -> bool {
        <i64 as Type<Postgres>>::compatible(ty)
            || <i32 as Type<Postgres>>::compatible(ty)
            || <i16 as Type<Postgres>>::compatible(ty)
            || <bool as Type<Postgres>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Postgres> for Int {
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        present::<Postgres>(&value)?;
        let ty = value.type_info().into_owned();
        if <i64 as Type<Postgres>>::compatible(&ty) {
            <i64 as Decode<Postgres>>::decode(value).map(Int)
        } else if <i32 as Type<Postgres>>::compatible(&ty) {
            <i32 as Decode<Postgres>>::decode(value).map(|v| Int(v.into()))
        } else if <i16 as Type<Postgres>>::compatible(&ty) {
            <i16 as Decode<Postgres>>::decode(value).map(|v| Int(v.into()))
        } else if <bool as Type<Postgres>>::compatible(&ty) {
            <bool as Decode<Postgres>>::decode(value).map(|v| Int(v.into()))
        } else {
            Err(format!("not an integer ({})", ty.name()).into())
        }
    }
}

impl From<Int> for i64 {
    fn from(v: Int) -> Self {
        v.0
    }
}

/// A non-negative integer (an amount, a count) within `T`'s range.
pub struct Unsigned<T>(T);

impl<'r, DB: Database, T: TryFrom<i64>> Decode<'r, DB> for Unsigned<T>
where
    Int: Decode<'r, DB>,
{
    fn decode(value: DB::ValueRef<'r>) -> Result<Self, BoxDynError> {
        let Int(v) = Int::decode(value)?;
        T::try_from(v).map(Unsigned).map_err(|_| if v < 0 { "negative" } else { "out of range" }.into())
    }
}

/// A non-negative amount or NULL.
pub struct OptUnsigned(Option<u64>);

impl<'r, DB: Database> Decode<'r, DB> for OptUnsigned
where
    Int: Decode<'r, DB>,
{
    fn decode(value: DB::ValueRef<'r>) -> Result<Self, BoxDynError> {
        if value.is_null() {
            return Ok(OptUnsigned(None));
        }
        Unsigned::<u64>::decode(value).map(|v| OptUnsigned(Some(v.0)))
    }
}

impl From<OptUnsigned> for Option<u64> {
    fn from(v: OptUnsigned) -> Self {
        v.0
    }
}

/// A 0/1 flag; any other value is an error.
pub struct Flag(bool);

impl<'r, DB: Database> Decode<'r, DB> for Flag
where
    Int: Decode<'r, DB>,
{
    fn decode(value: DB::ValueRef<'r>) -> Result<Self, BoxDynError> {
        match Int::decode(value)?.0 {
            0 => Ok(Flag(false)),
            1 => Ok(Flag(true)),
            _ => Err("not a 0/1 flag".into()),
        }
    }
}

impl From<Flag> for bool {
    fn from(f: Flag) -> Self {
        f.0
    }
}

/// A JSON text, deserialized. (sqlx's own `Json` reads PostgreSQL's `JSON`
/// and `JSONB` types, not the `TEXT` both schemas keep it in.)
pub struct Json<T>(T);

impl<'r, DB: Database, T: DeserializeOwned> Decode<'r, DB> for Json<T>
where
    &'r str: Decode<'r, DB>,
{
    fn decode(value: DB::ValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(Json(serde_json::from_str(text::<DB>(value)?)?))
    }
}

/// A closed set's stored name (a status, an outbox target), parsed by its
/// `FromStr` (strum's); an unknown name is an error.
pub struct Known<T>(T);

impl<'r, DB: Database, T: FromStr> Decode<'r, DB> for Known<T>
where
    &'r str: Decode<'r, DB>,
{
    fn decode(value: DB::ValueRef<'r>) -> Result<Self, BoxDynError> {
        text::<DB>(value)?.parse().map(Known).map_err(|_| "not a known value".into())
    }
}

/// The field types the generic column types convert into, each named (a
/// generic `impl<T> From<Json<T>> for T` is not allowed: `T` is not this
/// crate's).
macro_rules! into_field {
    ($($column:ident<$($t:ty),+>;)+) => {$($(
        impl From<$column<$t>> for $t {
            fn from(c: $column<$t>) -> Self {
                c.0
            }
        }
    )+)+};
}

into_field! {
    Unsigned<u64, usize, u32, u16, u8>;
    Json<CanonicalRequest, Decision, Vec<String>, serde_json::Value>;
    Known<ProposalStatus, OpStatus, Target, Kind, Channel>;
}

/// A JSON list of role names; an unknown name is an error (that does not
/// quote it, as serde's would).
pub struct Roles(Vec<Role>);

impl<'r, DB: Database> Decode<'r, DB> for Roles
where
    &'r str: Decode<'r, DB>,
{
    fn decode(value: DB::ValueRef<'r>) -> Result<Self, BoxDynError> {
        let names: Vec<String> = serde_json::from_str(text::<DB>(value)?)?;
        let roles = names.iter().map(|name| Role::parse(name).ok_or("not a known role"));
        Ok(Roles(roles.collect::<Result<_, _>>()?))
    }
}

impl From<Roles> for Vec<Role> {
    fn from(r: Roles) -> Self {
        r.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_pg::TestDb;
    use crate::store::{Result, Row, StoreError};

    /// One struct per case: each reads one column as a row struct would.
    #[allow(dead_code)]
    mod cases {
        use super::*;

        /// Every column of the statement that reads, and how.
        #[derive(sqlx::FromRow)]
        pub struct Readable {
            #[sqlx(rename = "good", try_from = "Known<ProposalStatus>")]
            pub status: ProposalStatus,
            #[sqlx(try_from = "Timestamp")]
            pub t: DateTime<Utc>,
            #[sqlx(try_from = "OptTimestamp")]
            pub absent: Option<DateTime<Utc>>,
            #[sqlx(rename = "t", try_from = "OptTimestamp")]
            pub some_t: Option<DateTime<Utc>>,
            #[sqlx(try_from = "Flag")]
            pub one: bool,
            #[sqlx(rename = "one", try_from = "Unsigned<u64>")]
            pub amount: u64,
            #[sqlx(rename = "n", try_from = "Int")]
            pub int: i64,
            #[sqlx(rename = "cmp", try_from = "Int")]
            pub comparison: i64,
            #[sqlx(rename = "good_j", try_from = "Json<serde_json::Value>")]
            pub json: serde_json::Value,
            #[sqlx(rename = "roles", try_from = "Roles")]
            pub roles: Vec<Role>,
        }

        #[derive(sqlx::FromRow)]
        pub struct BadStatus {
            #[sqlx(try_from = "Known<ProposalStatus>")]
            pub bad: ProposalStatus,
        }

        #[derive(sqlx::FromRow)]
        pub struct BadTimestamp {
            #[sqlx(try_from = "Timestamp")]
            pub bad_t: DateTime<Utc>,
        }

        #[derive(sqlx::FromRow)]
        pub struct BadOptTimestamp {
            #[sqlx(rename = "bad_t", try_from = "OptTimestamp")]
            pub bad_t: Option<DateTime<Utc>>,
        }

        #[derive(sqlx::FromRow)]
        pub struct NullTimestamp {
            #[sqlx(try_from = "Timestamp")]
            pub absent: DateTime<Utc>,
        }

        #[derive(sqlx::FromRow)]
        pub struct NullInt {
            #[sqlx(try_from = "Int")]
            pub absent: i64,
        }

        #[derive(sqlx::FromRow)]
        pub struct BadFlag {
            #[sqlx(try_from = "Flag")]
            pub f: bool,
        }

        #[derive(sqlx::FromRow)]
        pub struct Negative {
            #[sqlx(try_from = "Unsigned<u64>")]
            pub n: u64,
        }

        #[derive(sqlx::FromRow)]
        pub struct OutOfRange {
            #[sqlx(try_from = "Unsigned<u8>")]
            pub big: u8,
        }

        #[derive(sqlx::FromRow)]
        pub struct BadJson {
            #[sqlx(try_from = "Json<serde_json::Value>")]
            pub j: serde_json::Value,
        }

        #[derive(sqlx::FromRow)]
        pub struct BadRoles {
            #[sqlx(try_from = "Roles")]
            pub bad_roles: Vec<Role>,
        }

        #[derive(sqlx::FromRow)]
        pub struct Missing {
            pub missing: String,
        }

        #[derive(sqlx::FromRow)]
        pub struct IntegerAsText {
            pub n: String,
        }

        #[derive(sqlx::FromRow)]
        pub struct TextAsInteger {
            #[sqlx(try_from = "Int")]
            pub good: i64,
        }
    }

    #[tokio::test]
    async fn unreadable_values_are_errors_naming_their_column() {
        for db in crate::store::test_pg::each_backend("unreadable_values_are_errors_naming_their_column").await {
            check_unreadable(&db).await;
            db.finish().await;
        }
    }

    /// The column and the reason a decoding failed with (it must fail as `Corrupt`).
    fn corrupt<T: Decoded>(row: &Row) -> (String, String) {
        match row.decode::<T>() {
            Err(StoreError::Corrupt { column, reason }) => (column, reason),
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("read"),
        }
    }

    async fn check_unreadable(db: &TestDb) {
        let row = crate::store::query(
            "SELECT 'pending_approval' AS good, 'frozen' AS bad, '2026-01-01T00:00:00.000Z' AS t,
                'yesterday' AS bad_t, NULL AS absent, 1 AS one, 2 AS f, -1 AS n, 300 AS big, 1 = 1 AS cmp,
                '{' AS j, '{\"a\": [1]}' AS good_j, '[\"admin\", \"viewer\"]' AS roles, '[\"owner\"]' AS bad_roles",
        )
        .fetch_one(&db.read)
        .await
        .unwrap();
        let read: Result<cases::Readable> = row.decode();
        let read = read.unwrap_or_else(|e| panic!("{}: {e}", db.backend));
        assert_eq!(read.status, ProposalStatus::PendingApproval);
        assert_eq!(read.t, crate::store::parse_ts("2026-01-01T00:00:00.000Z").unwrap());
        assert_eq!((read.absent, read.some_t), (None, Some(read.t)));
        assert!(read.one);
        assert_eq!((read.amount, read.int, read.comparison), (1, -1, 1), "PostgreSQL's INT4 and BOOL read too");
        assert_eq!(read.json, serde_json::json!({"a": [1]}));
        assert_eq!(read.roles, [Role::Admin, Role::Viewer]);

        // Each case: the column named, and a reason that says why (never the value).
        let cases = [
            (corrupt::<cases::BadStatus>(&row), "bad", "not a known value"),
            (corrupt::<cases::BadTimestamp>(&row), "bad_t", "not an RFC 3339 timestamp"),
            (corrupt::<cases::BadOptTimestamp>(&row), "bad_t", "not an RFC 3339 timestamp"),
            (corrupt::<cases::NullTimestamp>(&row), "absent", "unexpected null"),
            (corrupt::<cases::NullInt>(&row), "absent", "unexpected null"),
            (corrupt::<cases::BadFlag>(&row), "f", "not a 0/1 flag"),
            (corrupt::<cases::Negative>(&row), "n", "negative"),
            (corrupt::<cases::OutOfRange>(&row), "big", "out of range"),
            (corrupt::<cases::BadJson>(&row), "j", "EOF while parsing"),
            (corrupt::<cases::BadRoles>(&row), "bad_roles", "not a known role"),
            (corrupt::<cases::Missing>(&row), "missing", "no such column"),
            (corrupt::<cases::IntegerAsText>(&row), "n", "mismatched types"),
            (corrupt::<cases::TextAsInteger>(&row), "good", "mismatched types"),
        ];
        for ((column, reason), expected_column, why) in cases {
            assert_eq!(column, expected_column, "{}: {reason}", db.backend);
            assert!(reason.contains(why), "{}: {column}: {reason}", db.backend);
            for value in ["frozen", "yesterday", "owner"] {
                assert!(!reason.contains(value), "{}: {column}: the value is quoted: {reason}", db.backend);
            }
        }
    }
}
