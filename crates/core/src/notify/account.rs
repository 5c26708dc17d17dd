//! A person's own notification settings (the account page,
//! `/api/v1/me/notifications`): where their email goes, and which of their
//! devices get Web Push.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{push, Reaching};
use crate::config::Config;
use crate::store::directory::User;
use crate::store::reach::{self as stored, NewSubscription, Subscription};
use crate::store::{Store, StoreError};

/// How many devices one person may subscribe.
pub const MAX_DEVICES: usize = 10;

/// A subscribed device, as its owner sees it (never its keys or endpoint).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DeviceView {
    /// `psub_…`
    pub id: String,
    /// What the browser said it is ("Chrome on Android").
    pub label: String,
    pub created_at: String,
    /// When a notification last reached its push service.
    pub last_sent_at: Option<String>,
}

impl From<Subscription> for DeviceView {
    fn from(s: Subscription) -> Self {
        DeviceView {
            id: s.id,
            label: s.label,
            created_at: crate::store::ts(s.created_at),
            last_sent_at: s.last_sent_at.map(crate::store::ts),
        }
    }
}

/// Someone's notification settings.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct NotificationSettings {
    /// Where email notifications go; none when unset.
    pub email: Option<String>,
    /// Whether this deployment sends email (`[notifications.email]`).
    pub email_available: bool,
    /// Whether this deployment sends Web Push.
    pub push_available: bool,
    /// The VAPID public key browsers subscribe with
    /// (`applicationServerKey`): SEC1 uncompressed, base64url.
    pub vapid_public_key: String,
    /// Their devices subscribed to Web Push, oldest first.
    pub devices: Vec<DeviceView>,
    /// Their quiet hours, when they set them.
    pub quiet_hours: Option<QuietHoursView>,
}

/// When arrivals and reminders are not sent to someone (an escalation is).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct QuietHoursView {
    /// An IANA time zone.
    #[schema(examples("Europe/Paris"))]
    pub time_zone: String,
    /// From-until in that zone; may span midnight.
    #[schema(examples("22:00-07:00"))]
    pub hours: String,
}

#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("must be an email address such as ana@example.com")]
    BadEmail,
    #[error(transparent)]
    BadSubscription(#[from] push::BadSubscription),
    #[error("a label is 1 to 100 characters")]
    BadLabel,
    #[error("at most {MAX_DEVICES} devices can be subscribed: remove one first")]
    TooMany,
    #[error("web push is off on this deployment")]
    PushOff,
    #[error("no such device")]
    NotFound,
    #[error("time_zone {0}")]
    BadTimeZone(super::quiet::BadQuietHours),
    #[error("hours {0}")]
    BadHours(super::quiet::BadQuietHours),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub async fn settings(
    state: &(impl Store + Config + Reaching),
    user: &User,
) -> Result<NotificationSettings, AccountError> {
    let devices = stored::subscriptions_of(&state.db().read, &user.id).await?;
    let current = crate::store::directory::user_by_id(&mut *state.db().reader().await?, &user.id).await?;
    let current = current.unwrap_or_else(|| user.clone());
    let quiet_hours = match (current.time_zone, current.quiet_hours) {
        (Some(time_zone), Some(hours)) => Some(QuietHoursView { time_zone, hours }),
        _ => None,
    };
    Ok(NotificationSettings {
        email: current.email,
        quiet_hours,
        email_available: state.reach().mailer.is_some(),
        push_available: state.settings().notifications.push.enabled,
        vapid_public_key: state.reach().vapid.active_public_sec1(),
        devices: devices.into_iter().map(DeviceView::from).collect(),
    })
}

/// Sets or (blank) clears where their email goes.
pub async fn set_email(
    state: &(impl Store + Config + Reaching),
    user: &User,
    email: Option<&str>,
) -> Result<NotificationSettings, AccountError> {
    let email = email.map(str::trim).filter(|e| !e.is_empty());
    if email.is_some_and(|e| !super::email::valid_address(e)) {
        return Err(AccountError::BadEmail);
    }
    stored::set_email(&state.db().write, &user.id, email).await?;
    if email.is_some() {
        state.reach().audience.add(&user.tenant_id);
    }
    settings(state, user).await
}

/// Sets their quiet hours (`hours` such as "22:00-07:00" in `time_zone`),
/// or clears them (none).
pub async fn set_quiet_hours(
    state: &(impl Store + Config + Reaching),
    user: &User,
    quiet: Option<(&str, &str)>,
) -> Result<NotificationSettings, AccountError> {
    let quiet = match quiet {
        Some((zone, hours)) => {
            let zone = zone.trim();
            super::quiet::check_zone(zone).map_err(AccountError::BadTimeZone)?;
            let hours = super::quiet::QuietHours::parse(hours).map_err(AccountError::BadHours)?.to_string();
            Some((zone.to_owned(), hours))
        }
        None => None,
    };
    stored::set_quiet_hours(&state.db().write, &user.id, quiet.as_ref().map(|(z, h)| (z.as_str(), h.as_str()))).await?;
    settings(state, user).await
}

/// What a browser's `PushSubscription.toJSON()` holds, and a label.
pub struct NewDevice<'a> {
    pub endpoint: &'a str,
    pub p256dh: &'a str,
    pub auth: &'a str,
    pub label: &'a str,
}

pub async fn subscribe(
    state: &(impl Store + Config + Reaching),
    user: &User,
    device: &NewDevice<'_>,
    now: DateTime<Utc>,
) -> Result<DeviceView, AccountError> {
    if !state.settings().notifications.push.enabled {
        return Err(AccountError::PushOff);
    }
    let label = device.label.trim();
    if label.is_empty() || label.chars().count() > 100 || label.chars().any(char::is_control) {
        return Err(AccountError::BadLabel);
    }
    push::check_subscription(&state.reach().push_hosts, device.endpoint, device.p256dh, device.auth)?;
    let mut tx = state.db().begin().await?;
    let mine = stored::subscriptions_of(&mut *tx, &user.id).await?;
    let again = mine.iter().any(|s| s.endpoint == device.endpoint);
    if !again && mine.len() >= MAX_DEVICES {
        return Err(AccountError::TooMany);
    }
    let new = NewSubscription {
        tenant_id: &user.tenant_id,
        user_id: &user.id,
        endpoint: device.endpoint,
        p256dh: device.p256dh,
        auth: device.auth,
        label,
    };
    let stored = stored::subscribe(&mut tx, &new, now).await?;
    tx.commit().await?;
    state.reach().audience.add(&user.tenant_id);
    Ok(stored.into())
}

pub async fn unsubscribe(state: &impl Store, user: &User, id: &str) -> Result<(), AccountError> {
    match stored::unsubscribe(&state.db().write, id, Some(&user.id)).await? {
        true => Ok(()),
        false => Err(AccountError::NotFound),
    }
}
