//! The queue's one query: [`QueueParams`] as the console API's query
//! string and the queue page's address give it (unknown parameters are
//! refused, by name), and [`ListQuery`], the checked listing shared by the
//! console queue, the queue page and the agent listing. Its defaults —
//! pending proposals, newest first, 25 a page — are written here only.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::domain::{Currency, FieldError, ProposalStatus};
use crate::store::Store;
use crate::store::{
    self,
    proposals::{ListFilters, ListOrder, ProposalRow},
};

/// The status the queue lists when none is asked for.
pub const DEFAULT_STATUS: &str = "pending_approval";
/// The order the queue lists in when none is asked for.
pub const DEFAULT_ORDER: &str = "newest";

#[derive(Debug, Default, Clone, Deserialize, Serialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct QueueParams {
    /// Only proposals with this status (`pending_approval` by default), or
    /// `all`.
    #[param(schema_with = queue_status_schema)]
    pub status: Option<String>,
    #[param(schema_with = queue_order_schema)]
    pub order: Option<String>,
    /// Page size.
    #[param(minimum = 1, maximum = 100, default = 25)]
    pub limit: Option<u32>,
    /// The opaque `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Part of the payee's legal name (any case), or its exact id.
    #[param(max_length = 100)]
    pub payee: Option<String>,
    /// Only this currency (ISO 4217); needed by `min` and `max`.
    #[param(example = "USD")]
    pub currency: Option<String>,
    /// At least this amount, in major units of `currency` (e.g. `1250.00`).
    #[param(example = "1000.00")]
    pub min: Option<String>,
    /// At most this amount, in major units of `currency`.
    pub max: Option<String>,
    /// Only proposals of agents whose id contains this (any case).
    #[param(max_length = 100)]
    pub agent: Option<String>,
    /// Only proposals for this invoice id.
    pub invoice_id: Option<String>,
    /// Created on or after this day (UTC, `YYYY-MM-DD`).
    #[param(format = Date)]
    pub from: Option<String>,
    /// Created on or before this day (UTC, `YYYY-MM-DD`).
    #[param(format = Date)]
    pub to: Option<String>,
}

impl QueueParams {
    /// The console page's query string, read as `GET /api/v1/queue` reads
    /// its own; an unknown parameter is named.
    pub fn from_query(query: &str) -> Result<QueueParams, String> {
        serde_urlencoded::from_str(query.trim_start_matches('?')).map_err(|e| {
            let e = e.to_string();
            // serde names the unknown field; keep only that, never the value.
            match e.split('`').nth(1) {
                Some(field) if e.starts_with("unknown field") => format!("{field}: is not a search field"),
                _ => "the search could not be read".to_owned(),
            }
        })
    }

    pub fn status_or_default(&self) -> String {
        self.status.clone().filter(|s| !s.is_empty()).unwrap_or_else(|| DEFAULT_STATUS.into())
    }

    pub fn order_or_default(&self) -> String {
        self.order.clone().filter(|s| !s.is_empty()).unwrap_or_else(|| DEFAULT_ORDER.into())
    }

    /// This query string with `cursor` (the next page's); fields not
    /// given, or given empty (the search form sends every field), stay out
    /// of it. An empty value is a pair ending in `=`: in any other, `=` is
    /// encoded.
    pub fn with_cursor(&self, cursor: &str) -> String {
        let next = QueueParams { cursor: Some(cursor.to_owned()), ..self.clone() };
        let query = serde_urlencoded::to_string(&next).unwrap_or_default();
        query.split('&').filter(|pair| !pair.ends_with('=')).collect::<Vec<_>>().join("&")
    }
}

/// A proposal status or `all`.
fn queue_status_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
    use utoipa::PartialSchema;
    OneOfBuilder::new()
        .item(ProposalStatus::schema())
        .item(ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["all"])))
        .default(Some(json!(DEFAULT_STATUS)))
        .into()
}

fn queue_order_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(QUEUE_ORDERS.map(|(name, _)| name)))
        .default(Some(json!(DEFAULT_ORDER)))
        .build()
}

/// A validated listing query, shared by the agent listing, the console
/// queue endpoint and the queue page.
pub struct ListQuery {
    pub status: Option<ProposalStatus>,
    pub order: ListOrder,
    pub filters: ListFilters,
    pub limit: u32,
    pub cursor: Option<String>,
}

/// The queue's sort orders, as the `order` parameter names them.
pub const QUEUE_ORDERS: [(&str, ListOrder); 5] = [
    ("newest", ListOrder::Newest),
    ("oldest", ListOrder::Oldest),
    ("amount_desc", ListOrder::AmountDesc),
    ("amount_asc", ListOrder::AmountAsc),
    ("expires_soonest", ListOrder::ExpiresSoonest),
];

impl ListQuery {
    /// The parameter value of this query's order.
    pub fn order_name(&self) -> &'static str {
        QUEUE_ORDERS.iter().find(|(_, o)| *o == self.order).map_or("newest", |(name, _)| name)
    }
}

/// A search term: trimmed, empty is none, at most 100 characters without
/// control characters.
fn term(field: &str, value: Option<&str>, errors: &mut Vec<FieldError>) -> Option<String> {
    let value = value.map(str::trim).filter(|v| !v.is_empty())?;
    if value.chars().count() > 100 || value.chars().any(char::is_control) {
        errors.push(FieldError::new(
            field,
            "invalid_value",
            "must be at most 100 characters, without control characters",
        ));
        return None;
    }
    Some(value.to_owned())
}

/// `YYYY-MM-DD` as the start of that UTC day.
fn day(field: &str, value: Option<&str>, errors: &mut Vec<FieldError>) -> Option<DateTime<Utc>> {
    let value = value.map(str::trim).filter(|v| !v.is_empty())?;
    match chrono::NaiveDate::parse_from_str(value, "%Y-%m-%d") {
        Ok(date) => Some(date.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc()),
        Err(_) => {
            errors.push(FieldError::new(field, "invalid_value", "must be a date, YYYY-MM-DD"));
            None
        }
    }
}

/// The search filters of the queue; amounts are in major units of `currency`,
/// which they need.
fn filters(q: &QueueParams, errors: &mut Vec<FieldError>) -> ListFilters {
    let currency =
        term("currency", q.currency.as_deref(), errors).and_then(|c| match Currency::parse(&c.to_uppercase()) {
            Ok(c) => Some(c),
            Err(_) => {
                errors.push(FieldError::new("currency", "invalid_value", "is not a known currency code"));
                None
            }
        });
    let mut amount = |field: &str, value: Option<&str>| {
        let value = value.map(str::trim).filter(|v| !v.is_empty())?;
        let Some(currency) = currency else {
            errors.push(FieldError::new(field, "invalid_value", "needs a currency to compare amounts in"));
            return None;
        };
        match currency.parse_major(value) {
            Ok(minor) => Some(minor),
            Err(_) => {
                errors.push(FieldError::new(field, "invalid_value", "must be an amount such as 1250.00"));
                None
            }
        }
    };
    let min_minor = amount("min", q.min.as_deref());
    let max_minor = amount("max", q.max.as_deref());
    ListFilters {
        payee: term("payee", q.payee.as_deref(), errors),
        currency: currency.map(|c| c.code().to_owned()),
        min_minor,
        max_minor,
        agent: term("agent", q.agent.as_deref(), errors),
        invoice_id: term("invoice_id", q.invoice_id.as_deref(), errors),
        created_from: day("from", q.from.as_deref(), errors),
        // `to` is inclusive: before the start of the next day.
        created_before: day("to", q.to.as_deref(), errors).map(|d| d + Duration::days(1)),
    }
}

/// Checks the paging part of a listing query: `limit` (1–100, `default`
/// when absent) and `cursor` (an id from a previous page).
fn paging(
    limit: Option<u32>,
    default: u32,
    cursor: Option<&str>,
    errors: &mut Vec<FieldError>,
) -> (u32, Option<String>) {
    let limit = limit.unwrap_or(default);
    if !(1..=100).contains(&limit) {
        errors.push(FieldError::new("limit", "invalid_value", "must be between 1 and 100"));
    }
    let cursor = cursor.filter(|c| !c.is_empty());
    if cursor.is_some_and(|c| !c.starts_with("prop_") || c.len() > 64) {
        errors.push(FieldError::new("cursor", "invalid_value", "is not a cursor from a previous page"));
    }
    (limit, cursor.map(str::to_owned))
}

fn status_filter(status: &str, message: &'static str, errors: &mut Vec<FieldError>) -> Option<ProposalStatus> {
    let parsed = ProposalStatus::parse(status);
    if parsed.is_none() {
        errors.push(FieldError::new("status", "invalid_value", message));
    }
    parsed
}

impl ListQuery {
    /// The console queue: pending by default; `status=all` lists every
    /// status; searched by payee, currency and amount range, agent, invoice
    /// id and creation dates; sorted by creation, amount or expiry.
    pub fn parse(q: &QueueParams) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let status = match q.status_or_default().as_str() {
            "all" => None,
            s => status_filter(s, "is not a proposal status (or `all`)", &mut errors),
        };
        let wanted = q.order_or_default();
        let order = match QUEUE_ORDERS.iter().find(|(name, _)| *name == wanted) {
            Some((_, order)) => *order,
            None => {
                errors.push(FieldError::new(
                    "order",
                    "invalid_value",
                    "must be newest, oldest, amount_desc, amount_asc or expires_soonest",
                ));
                ListOrder::Newest
            }
        };
        let filters = filters(q, &mut errors);
        let (limit, cursor) = paging(q.limit, 25, q.cursor.as_deref(), &mut errors);
        if errors.is_empty() {
            Ok(ListQuery { status, order, filters, limit, cursor })
        } else {
            Err(errors)
        }
    }

    /// The agent listing: every status unless one is named, newest first.
    pub fn for_agent(status: Option<&str>, limit: Option<u32>, cursor: Option<&str>) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let status = match status {
            None | Some("") => None,
            Some(s) => status_filter(s, "is not a proposal status", &mut errors),
        };
        let (limit, cursor) = paging(limit, 50, cursor, &mut errors);
        if errors.is_empty() {
            Ok(ListQuery { status, order: ListOrder::Newest, filters: ListFilters::default(), limit, cursor })
        } else {
            Err(errors)
        }
    }

    /// One page of the tenant's proposals (only `agent`'s when given), and
    /// the cursor of the next page when there is one.
    pub async fn run(
        &self,
        state: &impl Store,
        tenant: &str,
        agent: Option<&str>,
    ) -> crate::store::Result<(Vec<ProposalRow>, Option<String>)> {
        let listing = store::proposals::Listing {
            tenant_id: tenant,
            agent_id: agent,
            status: self.status,
            order: self.order,
            filters: &self.filters,
            limit: self.limit,
            cursor: self.cursor.as_deref(),
        };
        let (rows, more) = store::proposals::list(&state.db().read, &listing).await?;
        let next = if more { rows.last().map(|r| r.id.clone()) } else { None };
        Ok((rows, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_pending_newest_25() {
        let q = ListQuery::parse(&QueueParams::default()).unwrap();
        assert_eq!((q.status, q.order_name(), q.limit), (Some(ProposalStatus::PendingApproval), DEFAULT_ORDER, 25));
        assert!(ListQuery::parse(&QueueParams::from_query("status=all").unwrap()).unwrap().status.is_none());
        assert!(QueueParams::from_query("bogus=1").unwrap_err().contains("bogus"));
    }

    #[test]
    fn the_next_page_keeps_the_search_given_and_leaves_out_empty_fields() {
        let params =
            QueueParams::from_query("?status=all&payee=Acme+%26+Co&currency=&min=&limit=10&cursor=old").unwrap();
        let next = params.with_cursor("c=1");
        assert_eq!(next, "status=all&limit=10&cursor=c%3D1&payee=Acme+%26+Co");
        let again = QueueParams::from_query(&next).unwrap();
        assert_eq!(
            (again.payee.as_deref(), again.currency, again.cursor.as_deref()),
            (Some("Acme & Co"), None, Some("c=1"))
        );
    }
}
