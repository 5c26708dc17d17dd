//! Teams: users linked to their Entra ID object id, the replay guard of
//! inbound activities, and the outbox of cards to send.

use chrono::{DateTime, Utc};

use super::outbox::{self, Table};
use super::{new_id, query, ts, Conn, Exec, Int, Pool, Result, Timestamp};

/// How a card is sent to a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `POST {serviceUrl}/v3/conversations/{id}/activities`: a new card.
    Post,
    /// `PUT {serviceUrl}/v3/conversations/{id}/activities/{activity}`: the
    /// card replaced for everyone in the conversation.
    Put,
}

/// A card to send.
#[derive(Debug, Clone)]
pub struct NewCard<'a> {
    pub tenant_id: &'a str,
    pub proposal_id: &'a str,
    pub method: Method,
    pub service_url: &'a str,
    pub conversation_id: &'a str,
    /// The card replaced ([`Method::Put`]).
    pub activity_id: Option<&'a str>,
    pub body: &'a serde_json::Value,
}

fn kind(method: Method) -> &'static str {
    match method {
        Method::Post => "post",
        Method::Put => "update",
    }
}

/// A claimed card.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CardRow {
    pub id: String,
    pub tenant_id: String,
    pub proposal_id: String,
    pub kind: String,
    pub service_url: String,
    pub conversation_id: String,
    pub activity_id: Option<String>,
    pub body: String,
    #[sqlx(try_from = "Int")]
    pub attempts: i64,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
}

impl CardRow {
    pub fn method(&self) -> Method {
        if self.kind == "update" {
            Method::Put
        } else {
            Method::Post
        }
    }
}

impl outbox::Queued for CardRow {
    fn queued(&self) -> (DateTime<Utc>, &str) {
        (self.created_at, &self.id)
    }
}

/// Queues a card, due at once. Call it inside the transaction that makes
/// the change it announces.
pub async fn enqueue<'e>(db: impl Into<Exec<'e>>, c: &NewCard<'_>, now: DateTime<Utc>) -> Result<String> {
    let id = new_id("tms", now);
    query(
        "INSERT INTO teams_outbox (id, tenant_id, proposal_id, kind, service_url, conversation_id, activity_id, body,
                                   next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&id)
    .bind(c.tenant_id)
    .bind(c.proposal_id)
    .bind(kind(c.method))
    .bind(c.service_url)
    .bind(c.conversation_id)
    .bind(c.activity_id)
    .bind(c.body.to_string())
    .bind(ts(now))
    .bind(ts(now))
    .execute(db)
    .await?;
    Ok(id)
}

/// Claims up to `limit` cards due at `now` for this instance, oldest first.
pub async fn claim_due(
    pool: &Pool,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<CardRow>> {
    outbox::claim(pool, Table::Teams, "*", now, lease_until, limit).await
}

/// Ends a pending card: `delivered` or `abandoned` (with why).
pub async fn finish<'e>(
    db: impl Into<Exec<'e>>,
    id: &str,
    delivered: bool,
    error: Option<&str>,
    now: DateTime<Utc>,
) -> Result<()> {
    outbox::finish(db, Table::Teams, id, delivered, error, now).await
}

/// Counts a failed attempt and sets the next one.
pub async fn retry_at<'e>(db: impl Into<Exec<'e>>, id: &str, at: DateTime<Utc>, error: &str) -> Result<()> {
    outbox::retry_at(db, Table::Teams, id, at, error).await
}

/// Remembers a verified activity until `keep_until`; false when it was seen
/// before (a replay).
pub async fn first_sighting<'e>(db: impl Into<Exec<'e>>, key: &str, keep_until: DateTime<Utc>) -> Result<bool> {
    let done = query("INSERT INTO teams_activities (id, keep_until) VALUES (?, ?) ON CONFLICT (id) DO NOTHING")
        .bind(key)
        .bind(ts(keep_until))
        .execute(db)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Forgets activities whose tokens can no longer verify.
pub async fn forget_activities_before<'e>(db: impl Into<Exec<'e>>, now: DateTime<Utc>) -> Result<u64> {
    let done = query("DELETE FROM teams_activities WHERE keep_until < ?").bind(ts(now)).execute(db).await?;
    Ok(done.rows_affected())
}

/// Links (or with `None` unlinks) a tenant's user to a Teams user. Returns
/// whether the user exists; a Teams user linked to someone else is a
/// unique violation (`StoreError::Conflict`).
pub async fn link(
    conn: &mut Conn,
    tenant: &str,
    username: &str,
    aad_object_id: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool> {
    let user: Option<String> = super::scalar("SELECT id FROM users WHERE tenant_id = ? AND username = ?")
        .bind(tenant)
        .bind(username)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(user) = user else { return Ok(false) };
    query("DELETE FROM teams_links WHERE user_id = ?").bind(&user).execute(&mut *conn).await?;
    if let Some(aad) = aad_object_id {
        query("INSERT INTO teams_links (aad_object_id, user_id, linked_at) VALUES (?, ?, ?)")
            .bind(aad)
            .bind(&user)
            .bind(ts(now))
            .execute(&mut *conn)
            .await?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_link_is_one_to_one_and_an_activity_is_seen_once_on_each_backend() {
        for db in crate::store::test_pg::each_backend("teams_links_and_activities").await {
            let now = Utc::now();
            let mut tx = db.begin().await.unwrap();
            crate::store::directory::upsert_tenant(&mut tx, "t1", "T1").await.unwrap();
            for name in ["ana", "ben"] {
                let spec = crate::store::directory::UserSpec {
                    tenant_id: "t1".into(),
                    username: name.into(),
                    password_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into(),
                    roles: vec![crate::domain::Role::Approver],
                    approval_limits_minor: Default::default(),
                    slack_user_id: None,
                    oidc: None,
                };
                crate::store::directory::upsert_user(&mut tx, &spec).await.unwrap();
            }
            assert!(link(&mut tx, "t1", "ana", Some("aad-ana"), now).await.unwrap());
            assert!(!link(&mut tx, "t1", "nobody", Some("aad-x"), now).await.unwrap());
            tx.commit().await.unwrap();
            let ana = crate::store::directory::user_by_teams_id(&db.read, "aad-ana").await.unwrap().unwrap();
            assert_eq!(ana.username, "ana");
            let mut tx = db.begin().await.unwrap();
            let taken = link(&mut tx, "t1", "ben", Some("aad-ana"), now).await;
            assert!(matches!(taken, Err(crate::store::StoreError::Conflict(_))), "{taken:?}");
            drop(tx);
            let mut tx = db.begin().await.unwrap();
            assert!(link(&mut tx, "t1", "ana", None, now).await.unwrap());
            tx.commit().await.unwrap();
            assert!(crate::store::directory::user_by_teams_id(&db.read, "aad-ana").await.unwrap().is_none());

            let until = now + chrono::Duration::minutes(65);
            assert!(first_sighting(&db.write, "k1", until).await.unwrap());
            assert!(!first_sighting(&db.write, "k1", until).await.unwrap(), "a replay");
            assert_eq!(forget_activities_before(&db.write, now).await.unwrap(), 0);
            assert_eq!(forget_activities_before(&db.write, until + chrono::Duration::seconds(1)).await.unwrap(), 1);
            assert!(first_sighting(&db.write, "k1", until).await.unwrap(), "forgotten once its token expired");
        }
    }
}
