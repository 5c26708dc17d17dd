//! Reading a row into domain types. Every getter is fallible: a missing
//! column, a value of the wrong type, an unknown status, a timestamp that is
//! not RFC 3339 or JSON that does not parse is a [`StoreError::Corrupt`]
//! naming the column, never a default that reads as a real state.

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use std::borrow::Cow;

use super::sql::{Row, Value};
use super::{parse_ts, Result, StoreError};

/// The columns of one row, optionally under a join alias prefix (`o_id`, …).
pub struct Cols<'r> {
    row: &'r Row,
    prefix: &'static str,
}

impl<'r> Cols<'r> {
    pub fn of(row: &'r Row) -> Cols<'r> {
        Cols { row, prefix: "" }
    }

    /// Columns named `{prefix}{name}` (the aliases of a join).
    pub fn prefixed(row: &'r Row, prefix: &'static str) -> Cols<'r> {
        Cols { row, prefix }
    }

    fn name<'n>(&self, name: &'n str) -> Cow<'n, str> {
        if self.prefix.is_empty() {
            Cow::Borrowed(name)
        } else {
            Cow::Owned(format!("{}{name}", self.prefix))
        }
    }

    /// The raw value of a column, as the database types it.
    pub fn get<T: Value<'r>>(&self, name: &str) -> Result<T> {
        let column = self.name(name);
        self.row.try_get::<T>(&column).map_err(|e| StoreError::corrupt(&column, e))
    }

    pub fn text(&self, name: &str) -> Result<String> {
        self.get(name)
    }

    pub fn opt_text(&self, name: &str) -> Result<Option<String>> {
        self.get(name)
    }

    /// An integer (on PostgreSQL also an `INT4` literal or a `BOOL`
    /// comparison, which SQLite types as integers).
    pub fn int(&self, name: &str) -> Result<i64> {
        self.opt_int(name)?.ok_or_else(|| StoreError::corrupt(&self.name(name), "NULL"))
    }

    pub fn opt_int(&self, name: &str) -> Result<Option<i64>> {
        let column = self.name(name);
        self.row.try_int(column.as_ref()).map_err(|e| StoreError::corrupt(&column, e))
    }

    /// A non-negative integer (an amount, a count).
    pub fn unsigned(&self, name: &str) -> Result<u64> {
        let v = self.int(name)?;
        u64::try_from(v).map_err(|_| StoreError::corrupt(&self.name(name), "negative"))
    }

    /// A 0/1 flag; any other value is an error.
    pub fn flag(&self, name: &str) -> Result<bool> {
        match self.int(name)? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(StoreError::corrupt(&self.name(name), "not a 0/1 flag")),
        }
    }

    pub fn at(&self, name: &str) -> Result<DateTime<Utc>> {
        let text: &str = self.get(name)?;
        parse_ts(text).ok_or_else(|| StoreError::corrupt(&self.name(name), "not an RFC 3339 timestamp"))
    }

    pub fn opt_at(&self, name: &str) -> Result<Option<DateTime<Utc>>> {
        match self.get::<Option<&str>>(name)? {
            None => Ok(None),
            Some(text) => parse_ts(text)
                .map(Some)
                .ok_or_else(|| StoreError::corrupt(&self.name(name), "not an RFC 3339 timestamp")),
        }
    }

    /// A closed set (a status, a role) read with its own parser.
    pub fn parse<T>(&self, name: &str, parse: impl FnOnce(&str) -> Option<T>) -> Result<T> {
        let text: &str = self.get(name)?;
        parse(text).ok_or_else(|| StoreError::corrupt(&self.name(name), "not a known value"))
    }

    /// A JSON column, deserialized.
    pub fn json<T: DeserializeOwned>(&self, name: &str) -> Result<T> {
        let text: &str = self.get(name)?;
        serde_json::from_str(text).map_err(|e| StoreError::corrupt(&self.name(name), e))
    }

    /// Whether a nullable column (the key of a left join) holds a value.
    pub fn present(&self, name: &str) -> Result<bool> {
        Ok(self.get::<Option<&str>>(name)?.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn unreadable_values_are_errors_naming_their_column() {
        for db in crate::store::test_pg::each_backend("unreadable_values_are_errors_naming_their_column").await {
            check_unreadable(&db).await;
            db.finish().await;
        }
    }

    async fn check_unreadable(db: &crate::store::Db) {
        let row = crate::store::query("SELECT 'pending_approval' AS good, 'frozen' AS bad, '2026-01-01T00:00:00.000Z' AS t, 'yesterday' AS bad_t, 2 AS f, -1 AS n, '{' AS j")
            .fetch_one(&db.read)
            .await
            .unwrap();
        let c = Cols::of(&row);
        assert!(c.parse("good", crate::domain::ProposalStatus::parse).is_ok());
        let corrupt = |r: Result<()>| match r {
            Err(StoreError::Corrupt { column, .. }) => column,
            other => panic!("{other:?}"),
        };
        assert_eq!(corrupt(c.parse("bad", crate::domain::ProposalStatus::parse).map(|_| ())), "bad");
        assert!(c.at("t").is_ok());
        assert_eq!(corrupt(c.at("bad_t").map(|_| ())), "bad_t");
        assert_eq!(corrupt(c.flag("f").map(|_| ())), "f");
        assert_eq!(corrupt(c.unsigned("n").map(|_| ())), "n");
        assert_eq!(corrupt(c.json::<serde_json::Value>("j").map(|_| ())), "j");
        assert_eq!(corrupt(c.text("missing").map(|_| ())), "missing");
        assert_eq!(corrupt(c.text("n").map(|_| ())), "n", "an integer is not text");
    }
}
