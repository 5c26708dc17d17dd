//! `[notifications]`: reaching approvers by email and Web Push
//! (`crate::notify`, docs/NOTIFICATIONS.md).

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

/// `[notifications]`: when people are told, and through what.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NotifySettings {
    /// How long before a waiting proposal expires its approvers are told
    /// again (0: never). Only when the proposal lives longer than this.
    pub expiry_warning_secs: u64,
    /// One delivery attempt (SMTP exchange or push post), connect to end.
    pub timeout_ms: u64,
    /// The longest wait between two attempts (backoff doubles up to it).
    pub max_backoff_secs: u64,
    /// A notification not delivered within this many seconds of being due
    /// is abandoned: an alert an hour late helps no one.
    pub give_up_after_secs: u64,
    pub email: EmailSettings,
    pub push: PushSettings,
}

impl Default for NotifySettings {
    fn default() -> Self {
        NotifySettings {
            expiry_warning_secs: 600,
            timeout_ms: 10_000,
            max_backoff_secs: 300,
            give_up_after_secs: 3600,
            email: EmailSettings::default(),
            push: PushSettings::default(),
        }
    }
}

/// `[notifications.email]`: SMTP. Off until `smtp_url` is set.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmailSettings {
    /// `smtp://host:port` (plain, for a relay on this machine or network:
    /// add `?tls=required` for STARTTLS) or `smtps://host:port` (TLS from
    /// the first byte).
    pub smtp_url: Option<String>,
    /// SMTP AUTH user, when the relay asks for one.
    pub username: Option<String>,
    #[serde(skip_serializing)]
    pub password: Option<SecretString>,
    /// The `From` of every message.
    pub from: String,
}

impl Default for EmailSettings {
    fn default() -> Self {
        EmailSettings {
            smtp_url: None,
            username: None,
            password: None,
            from: "Countersign <countersign@localhost>".into(),
        }
    }
}

/// `[notifications.push]`: Web Push (RFC 8030, 8291, 8292).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PushSettings {
    pub enabled: bool,
    /// The VAPID `sub`: whom the push service can reach about this sender
    /// (`mailto:` or `https:`). Unset: the console's public URL when it is
    /// https, else `mailto:countersign@localhost`.
    pub subject: Option<String>,
    /// The push services a browser's subscription may name (its endpoint's
    /// host; a leading `.` allows any subdomain). Plain http only to a
    /// loopback address. Anything else is refused when subscribing and
    /// before each post, so a subscription cannot make the server call an
    /// internal address.
    pub allowed_hosts: Vec<String>,
}

impl Default for PushSettings {
    fn default() -> Self {
        PushSettings {
            enabled: true,
            subject: None,
            allowed_hosts: vec![
                "fcm.googleapis.com".into(),
                "updates.push.services.mozilla.com".into(),
                ".push.apple.com".into(),
                ".notify.windows.com".into(),
            ],
        }
    }
}

impl NotifySettings {
    pub(super) fn check(&self) -> Result<(), (String, &'static str)> {
        if let Some(url) = &self.email.smtp_url {
            let scheme = url.split_once("://").map(|(s, _)| s);
            if !matches!(scheme, Some("smtp" | "smtps")) {
                return Err(("notifications.email.smtp_url".into(), "must start with smtp:// or smtps://"));
            }
            if self.email.from.parse::<lettre::message::Mailbox>().is_err() {
                return Err((
                    "notifications.email.from".into(),
                    "must be an address, e.g. \"Countersign <a@b.example>\"",
                ));
            }
        }
        if let Some(subject) = &self.push.subject {
            if !(subject.starts_with("mailto:") || subject.starts_with("https://")) {
                return Err(("notifications.push.subject".into(), "must start with mailto: or https://"));
            }
        }
        if self.timeout_ms == 0 {
            return Err(("notifications.timeout_ms".into(), "must be at least 1"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_name_their_key() {
        let mut s = NotifySettings::default();
        assert!(s.check().is_ok());
        s.email.smtp_url = Some("http://mail".into());
        assert_eq!(s.check().unwrap_err().0, "notifications.email.smtp_url");
        s.email.smtp_url = Some("smtp://127.0.0.1:25".into());
        s.email.from = "not an address".into();
        assert_eq!(s.check().unwrap_err().0, "notifications.email.from");
        s.email.from = "Ops <ops@example.com>".into();
        s.push.subject = Some("ops@example.com".into());
        assert_eq!(s.check().unwrap_err().0, "notifications.push.subject");
    }
}
