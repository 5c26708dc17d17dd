//! What a notification says: the payment restated (payee name, masked
//! account, amount, invoice), its risk signals and when it expires, with a
//! link to the proposal in the console. Never an approve-by-link: the link
//! opens the proposal page, behind sign-in, where the decision is taken as
//! any other. Never a full account number, a token or a hash.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::intake::risk::Signal;
use crate::store::proposals::ProposalRow;
use crate::store::reach::Kind;

/// A notification about one proposal, for one person.
pub struct Notice<'a> {
    pub kind: Kind,
    pub row: &'a ProposalRow,
    pub signals: &'a [Signal],
    /// The proposal's page.
    pub url: String,
    pub now: DateTime<Utc>,
}

/// The push payload the service worker shows (`assets/sw.js`).
#[derive(Debug, Serialize)]
pub struct PushPayload {
    pub title: String,
    pub body: String,
    /// Opened on a click: the proposal's page.
    pub url: String,
    /// One notification per proposal on a device: a later one replaces it.
    pub tag: String,
    pub kind: &'static str,
    pub proposal_id: String,
}

fn amount(row: &ProposalRow) -> String {
    row.request.currency.format_minor(row.amount_minor)
}

/// "14 min", "2 h 5 min", "under a minute".
pub fn remaining(until: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let mins = (until - now).num_minutes();
    match mins {
        m if m < 1 => "under a minute".into(),
        m if m < 60 => format!("{m} min"),
        m if m % 60 == 0 => format!("{} h", m / 60),
        m => format!("{} h {} min", m / 60, m % 60),
    }
}

impl Notice<'_> {
    pub fn title(&self) -> String {
        let payee = &self.row.request.destination.legal_name;
        match self.kind {
            Kind::Arrived => format!("Approve {} to {payee}?", amount(self.row)),
            Kind::Expiring => {
                format!("Expires in {}: {} to {payee}", remaining(self.row.expires_at, self.now), amount(self.row))
            }
            Kind::Reminder => format!("Still waiting: {} to {payee}", amount(self.row)),
            Kind::Escalated => format!("Escalated to you: {} to {payee}", amount(self.row)),
        }
    }

    /// One line: the signals, else the invoice, and the time left.
    fn line(&self) -> String {
        let mut parts: Vec<String> = self.signals.iter().map(|s| format!("⚠ {}", s.label())).collect();
        if parts.is_empty() {
            parts.push("No risk signals".into());
        }
        if let Some(invoice) = &self.row.request.invoice_id {
            parts.push(format!("invoice {}", invoice.as_str()));
        }
        parts.push(format!("expires in {}", remaining(self.row.expires_at, self.now)));
        parts.join(" · ")
    }

    pub fn push(&self) -> PushPayload {
        PushPayload {
            title: self.title(),
            body: self.line(),
            url: self.url.clone(),
            tag: self.row.id.clone(),
            kind: self.kind.as_str(),
            proposal_id: self.row.id.clone(),
        }
    }

    /// The email's subject.
    pub fn subject(&self) -> String {
        match self.kind {
            Kind::Arrived => {
                format!("Approval needed: {} to {}", amount(self.row), self.row.request.destination.legal_name)
            }
            Kind::Expiring | Kind::Reminder | Kind::Escalated => self.title(),
        }
    }

    /// The email's plain-text body, for `username`.
    pub fn email_text(&self, username: &str) -> String {
        let r = &self.row.request;
        let opening = match self.kind {
            Kind::Arrived => "A payment is waiting for your approval.",
            Kind::Expiring => "A payment you can approve expires soon. Unless it is decided, it ends unpaid.",
            Kind::Reminder => "A payment you can approve is still waiting for a decision.",
            Kind::Escalated => {
                "Nobody has decided this payment in time, so it was escalated to you as its backup approver. \
                 Unless it is decided, it ends unpaid."
            }
        };
        let signals = if self.signals.is_empty() {
            "none".to_owned()
        } else {
            self.signals.iter().map(|s| format!("{}: {}", s.label(), s.message)).collect::<Vec<_>>().join("; ")
        };
        let mut lines = vec![
            format!("Hello {username},"),
            String::new(),
            opening.to_owned(),
            String::new(),
            format!("  Payee:    {} ({})", r.destination.legal_name, r.destination.masked_account),
            format!("  Amount:   {}", amount(self.row)),
            format!("  Purpose:  {}", r.purpose_code),
        ];
        if let Some(invoice) = &r.invoice_id {
            lines.push(format!("  Invoice:  {}", invoice.as_str()));
        }
        lines.extend([
            format!("  Agent:    {}", self.row.agent_id),
            format!("  Signals:  {signals}"),
            format!(
                "  Expires:  {} (in {})",
                self.row.expires_at.format("%Y-%m-%d %H:%M UTC"),
                remaining(self.row.expires_at, self.now)
            ),
            String::new(),
            "Review it in Countersign. You sign in first; nothing is approved from this email:".into(),
            self.url.clone(),
            String::new(),
            "You get these because you can approve this payment. Change where they go on your account page.".into(),
        ]);
        lines.join("\r\n") + "\r\n"
    }
}

#[cfg(test)]
mod tests {
    use super::remaining;
    use chrono::{Duration, TimeZone, Utc};

    #[test]
    fn time_left_reads_as_a_person_says_it() {
        let now = Utc.with_ymd_and_hms(2026, 12, 3, 6, 0, 0).unwrap();
        let said: Vec<String> = [0, 30, 60 * 14, 3600, 3600 * 2 + 300]
            .iter()
            .map(|s| remaining(now + Duration::seconds(*s), now))
            .collect();
        assert_eq!(said, ["under a minute", "under a minute", "14 min", "1 h", "2 h 5 min"]);
    }
}
