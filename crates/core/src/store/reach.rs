//! Reaching approvers (`crate::notify`): each person's email address, their
//! devices subscribed to Web Push, and the notifications outbox.

use chrono::{DateTime, Utc};

use super::outbox::{self, Table};
use super::{new_id, query, ts, Builder, Conn, Exec, Int, Known, OptTimestamp, Pool, Result, Row, Timestamp};

/// What a notification is about; stored as its name in snake case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::EnumString, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum Kind {
    /// A proposal started waiting for a decision (or its approval lapsed).
    Arrived,
    /// A waiting proposal expires soon.
    Expiring,
    /// Its approvers, reminded by the tenant's escalation rule.
    Reminder,
    /// The backup group, when the rule escalates (through quiet hours).
    Escalated,
}

/// How a notification travels; stored as its name in snake case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::EnumString, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum Channel {
    /// Not yet addressed: the worker expands it into one row per recipient
    /// and channel, reading who may approve when it does.
    Fanout,
    Email,
    Push,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A notification to queue.
#[derive(Debug, Clone)]
pub struct NewNotification<'a> {
    pub tenant_id: &'a str,
    pub proposal_id: &'a str,
    pub kind: Kind,
    pub channel: Channel,
    /// Set for email and push.
    pub user_id: Option<&'a str>,
    /// Set for push.
    pub subscription_id: Option<&'a str>,
    pub due: DateTime<Utc>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct NotificationRow {
    pub id: String,
    pub tenant_id: String,
    pub proposal_id: String,
    #[sqlx(try_from = "Known<Kind>")]
    pub kind: Kind,
    #[sqlx(try_from = "Known<Channel>")]
    pub channel: Channel,
    pub user_id: Option<String>,
    pub subscription_id: Option<String>,
    #[sqlx(try_from = "Int")]
    pub attempts: i64,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
}

/// Queues notifications. Call it inside the transaction that makes the
/// change they announce. Returns the rows as stored.
pub async fn enqueue(
    conn: &mut Conn,
    items: &[NewNotification<'_>],
    now: DateTime<Utc>,
) -> Result<Vec<NotificationRow>> {
    let mut stored = Vec::with_capacity(items.len());
    for n in items {
        let id = new_id("ntf", now);
        query(
            "INSERT INTO notifications (id, tenant_id, proposal_id, kind, channel, user_id, subscription_id,
             next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&id)
        .bind(n.tenant_id)
        .bind(n.proposal_id)
        .bind(n.kind.as_str())
        .bind(n.channel.as_str())
        .bind(n.user_id)
        .bind(n.subscription_id)
        .bind(ts(n.due))
        .bind(ts(now))
        .execute(&mut *conn)
        .await?;
        stored.push(NotificationRow {
            id,
            tenant_id: n.tenant_id.to_owned(),
            proposal_id: n.proposal_id.to_owned(),
            kind: n.kind,
            channel: n.channel,
            user_id: n.user_id.map(str::to_owned),
            subscription_id: n.subscription_id.map(str::to_owned),
            attempts: 0,
            created_at: now,
        });
    }
    Ok(stored)
}

/// Claims up to `limit` notifications due at `now` for this instance
/// ([`outbox::claim`]), oldest first.
pub async fn claim_due(
    pool: &Pool,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<NotificationRow>> {
    let columns = "id, tenant_id, proposal_id, kind, channel, user_id, subscription_id, attempts, created_at";
    outbox::claim(pool, Table::Notifications, columns, now, lease_until, limit).await
}

impl outbox::Queued for NotificationRow {
    fn queued(&self) -> (DateTime<Utc>, &str) {
        (self.created_at, &self.id)
    }
}

/// Ends a pending notification: `delivered`, or `abandoned` with why.
pub async fn finish<'e>(
    db: impl Into<Exec<'e>>,
    id: &str,
    delivered: bool,
    error: Option<&str>,
    now: DateTime<Utc>,
) -> Result<()> {
    outbox::finish(db, Table::Notifications, id, delivered, error, now).await
}

/// Counts a failed attempt and sets the next one.
pub async fn retry_at<'e>(db: impl Into<Exec<'e>>, id: &str, at: DateTime<Utc>, error: &str) -> Result<()> {
    outbox::retry_at(db, Table::Notifications, id, at, error).await
}

/// How many first notices (`arrived`) of a proposal were delivered on `channel`.
pub async fn delivered_count(pool: &Pool, proposal_id: &str, channel: Channel) -> Result<i64> {
    Ok(super::scalar(
        "SELECT COUNT(*) FROM notifications WHERE proposal_id = ? AND channel = ? AND kind = 'arrived'
         AND status = 'delivered'",
    )
    .bind(proposal_id)
    .bind(channel.as_str())
    .fetch_one(pool)
    .await?)
}

/// The tenants with a subscribed device (`push`) or an active user with an
/// email address (`email`).
pub async fn reachable_tenants(pool: &Pool, push: bool, email: bool) -> Result<std::collections::HashSet<String>> {
    let mut tenants = std::collections::HashSet::new();
    if push {
        let rows = query("SELECT DISTINCT tenant_id FROM push_subscriptions").fetch_all(pool).await?;
        for r in &rows {
            tenants.insert(r.decode::<(String,)>()?.0);
        }
    }
    if email {
        let rows = query("SELECT DISTINCT tenant_id FROM users WHERE email IS NOT NULL AND active = 1")
            .fetch_all(pool)
            .await?;
        for r in &rows {
            tenants.insert(r.decode::<(String,)>()?.0);
        }
    }
    Ok(tenants)
}

/// Sets (or, with `None`, clears) a user's email address.
pub async fn set_email<'e>(db: impl Into<Exec<'e>>, user_id: &str, email: Option<&str>) -> Result<()> {
    query("UPDATE users SET email = ? WHERE id = ?").bind(email).bind(user_id).execute(db).await?;
    Ok(())
}

/// Someone told about a proposal on a channel, or held back by their quiet
/// hours (`notifications::QUIET`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Told {
    pub proposal_id: String,
    pub user_id: String,
    #[sqlx(try_from = "Known<Channel>")]
    pub channel: Channel,
    #[sqlx(try_from = "Known<Kind>")]
    pub kind: Kind,
    pub status: String,
    #[sqlx(try_from = "OptTimestamp")]
    pub finished_at: Option<DateTime<Utc>>,
}

impl Told {
    pub fn delivered(&self) -> bool {
        self.status == "delivered"
    }
}

/// Who was told about these proposals (delivered notices, and those held
/// back by quiet hours), oldest first.
pub async fn told_about(pool: &Pool, proposal_ids: &[&str], quiet: &str) -> Result<Vec<Told>> {
    if proposal_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = Builder::new(
        "SELECT proposal_id, user_id, channel, kind, status, finished_at FROM notifications
         WHERE channel <> 'fanout' AND user_id IS NOT NULL AND (status = 'delivered' OR last_error = ",
    );
    q.push_bind(quiet).push(") AND proposal_id IN (");
    q.push_list(proposal_ids.iter().copied());
    q.push(") ORDER BY finished_at");
    q.build().fetch_all(pool).await?.iter().map(Row::decode).collect()
}

/// Sets (or clears) their time zone and quiet hours, checked by the caller.
pub async fn set_quiet_hours<'e>(db: impl Into<Exec<'e>>, user_id: &str, quiet: Option<(&str, &str)>) -> Result<()> {
    query("UPDATE users SET time_zone = ?, quiet_hours = ? WHERE id = ?")
        .bind(quiet.map(|q| q.0))
        .bind(quiet.map(|q| q.1))
        .bind(user_id)
        .execute(db)
        .await?;
    Ok(())
}

/// A device subscribed to Web Push.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Subscription {
    pub id: String,
    pub tenant_id: String,
    pub user_id: String,
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    pub label: String,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "OptTimestamp")]
    pub last_sent_at: Option<DateTime<Utc>>,
}

/// What a browser gave when subscribing.
pub struct NewSubscription<'a> {
    pub tenant_id: &'a str,
    pub user_id: &'a str,
    pub endpoint: &'a str,
    pub p256dh: &'a str,
    pub auth: &'a str,
    pub label: &'a str,
}

/// Stores a subscription of one user of one tenant. The same user
/// subscribing the same endpoint again (new keys) replaces their row; a
/// row another user holds for that endpoint (someone else signed in on the
/// same browser, or anyone who learnt the URL) is never touched.
pub async fn subscribe(conn: &mut Conn, s: &NewSubscription<'_>, now: DateTime<Utc>) -> Result<Subscription> {
    query("DELETE FROM push_subscriptions WHERE tenant_id = ? AND user_id = ? AND endpoint = ?")
        .bind(s.tenant_id)
        .bind(s.user_id)
        .bind(s.endpoint)
        .execute(&mut *conn)
        .await?;
    let row = query(
        "INSERT INTO push_subscriptions (id, tenant_id, user_id, endpoint, p256dh, auth, label, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
    )
    .bind(new_id("psub", now))
    .bind(s.tenant_id)
    .bind(s.user_id)
    .bind(s.endpoint)
    .bind(s.p256dh)
    .bind(s.auth)
    .bind(s.label)
    .bind(ts(now))
    .fetch_one(&mut *conn)
    .await?;
    row.decode()
}

/// A user's subscriptions, oldest first.
pub async fn subscriptions_of<'e>(db: impl Into<Exec<'e>>, user_id: &str) -> Result<Vec<Subscription>> {
    let rows = query("SELECT * FROM push_subscriptions WHERE user_id = ? ORDER BY created_at, id")
        .bind(user_id)
        .fetch_all(db)
        .await?;
    rows.iter().map(Row::decode).collect()
}

pub async fn subscription<'e>(db: impl Into<Exec<'e>>, id: &str) -> Result<Option<Subscription>> {
    let row = query("SELECT * FROM push_subscriptions WHERE id = ?").bind(id).fetch_optional(db).await?;
    row.as_ref().map(Row::decode).transpose()
}

/// Removes a subscription; `user_id` scopes it to its owner when given.
/// Returns whether one was removed.
pub async fn unsubscribe<'e>(db: impl Into<Exec<'e>>, id: &str, user_id: Option<&str>) -> Result<bool> {
    let done = match user_id {
        Some(user) => query("DELETE FROM push_subscriptions WHERE id = ? AND user_id = ?").bind(id).bind(user),
        None => query("DELETE FROM push_subscriptions WHERE id = ?").bind(id),
    }
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn mark_sent<'e>(db: impl Into<Exec<'e>>, id: &str, now: DateTime<Utc>) -> Result<()> {
    query("UPDATE push_subscriptions SET last_sent_at = ? WHERE id = ?").bind(ts(now)).bind(id).execute(db).await?;
    Ok(())
}
