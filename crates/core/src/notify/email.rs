//! Email over SMTP (`lettre`): plain text, one message per recipient, to
//! the relay `[notifications.email]` names. Errors carry the SMTP reply
//! code or an error kind, never an address or a body.

use lettre::message::{header::ContentType, Mailbox};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use secrecy::ExposeSecret;

use crate::config::EmailSettings;

/// The SMTP relay, when one is configured.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailer").finish_non_exhaustive()
    }
}

/// Why a message was not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MailError {
    /// The address or the message cannot be sent as it is.
    #[error("{0}")]
    Permanent(String),
    #[error("{0}")]
    Transient(String),
}

impl Mailer {
    /// The relay of `settings`, or `None` when email is off. Settings are
    /// checked when loaded, so a bad URL here is a plain error.
    pub fn from_settings(settings: &EmailSettings, timeout: std::time::Duration) -> anyhow::Result<Option<Mailer>> {
        let Some(url) = &settings.smtp_url else { return Ok(None) };
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)?.timeout(Some(timeout));
        if let (Some(user), Some(password)) = (&settings.username, &settings.password) {
            builder = builder.credentials(Credentials::new(user.clone(), password.expose_secret().to_owned()));
        }
        Ok(Some(Mailer { transport: builder.build(), from: settings.from.parse()? }))
    }

    /// Sends `text` to `to`.
    pub async fn send(&self, to: &str, subject: &str, text: String) -> Result<(), MailError> {
        let to: Mailbox = to.parse().map_err(|_| MailError::Permanent("the address is not valid".into()))?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(subject)
            .header(ContentType::TEXT_PLAIN)
            .body(text)
            .map_err(|e| MailError::Permanent(format!("the message cannot be built: {e}")))?;
        match self.transport.send(message).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_permanent() => Err(MailError::Permanent(format!(
                "the relay refused it ({})",
                e.status().map_or_else(|| "5xx".into(), |c| c.to_string())
            ))),
            Err(e) if e.is_transient() => Err(MailError::Transient(format!(
                "the relay deferred it ({})",
                e.status().map_or_else(|| "4xx".into(), |c| c.to_string())
            ))),
            Err(e) if e.is_timeout() => Err(MailError::Transient("timed out".into())),
            Err(_) => Err(MailError::Transient("could not reach the relay".into())),
        }
    }
}

/// Whether `address` is one an email can go to (`local@domain`, at most
/// 254 characters).
pub fn valid_address(address: &str) -> bool {
    address.len() <= 254 && address.parse::<lettre::Address>().is_ok()
}
