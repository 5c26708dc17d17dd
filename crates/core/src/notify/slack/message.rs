//! The Block Kit messages. Everything a human reads comes from the canonical
//! request (the payment restated, masked accounts only), and every piece of
//! data is a `plain_text` object, so nothing an agent or a payee name
//! contains can become a link, a mention or formatting. The agent's
//! reference is shown apart and labelled as untrusted.

use serde_json::{json, Value};

use crate::domain::CanonicalRequest;

use super::interaction::ButtonValue;

/// What a message about one proposal shows.
#[derive(Debug, Clone)]
pub struct Card<'a> {
    pub proposal_id: &'a str,
    pub request: &'a CanonicalRequest,
    pub request_hash: &'a str,
    pub required_approvals: u8,
    /// The approvals required from named groups ("1 from treasury and 1
    /// from controllers"; empty without a group rule).
    pub groups: String,
    /// The proposal's page in the console.
    pub console_url: String,
    /// Whether the amount is at most `slack.max_direct_approve_minor`: if
    /// not, Approve is a link to the console instead of a decision button.
    pub direct_approve: bool,
    /// Its risk signals (`crate::intake::risk`), shown under the facts.
    pub signals: Vec<crate::intake::risk::Signal>,
}

/// Slack's limit on a `plain_text` object in a confirm dialog.
const CONFIRM_TEXT_MAX: usize = 300;

fn text(s: &str) -> Value {
    json!({"type": "plain_text", "text": s, "emoji": false})
}

/// The top-level `text` (notifications, fallbacks) is mrkdwn to Slack:
/// escape its three control characters, and turn formatting off as well.
fn fallback(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        s.chars().take(max - 1).chain(['…']).collect()
    }
}

impl Card<'_> {
    fn short_hash(&self) -> &str {
        self.request_hash.get(7..19).unwrap_or(self.request_hash)
    }

    fn title(&self) -> String {
        let amount = self.request.currency.format_minor(self.request.amount_minor);
        format!("Payment awaiting approval: {amount} to {}", self.request.destination.legal_name)
    }

    /// The blocks every message about this proposal starts with.
    fn facts(&self) -> Vec<Value> {
        let r = self.request;
        let approvals = match self.required_approvals {
            0 | 1 => "1 approval".to_owned(),
            n => format!("{n} approvals from different people"),
        };
        let approvals =
            if self.groups.is_empty() { approvals } else { format!("{approvals}, including {}", self.groups) };
        let mut blocks = vec![
            json!({"type": "header", "text": text(&truncate(&self.title(), 150))}),
            json!({"type": "section", "text": text(&r.sentence()), "fields": [
                text(&format!("Payee: {} ({})", r.destination.legal_name, r.destination.masked_account)),
                text(&format!("Amount: {}", r.currency.format_minor(r.amount_minor))),
                text(&format!("Purpose: {}", r.purpose_code)),
                text(&format!("Needs: {approvals}")),
            ]}),
        ];
        if !self.signals.is_empty() {
            let listed: Vec<String> = self.signals.iter().map(|s| format!("{}: {}", s.label(), s.message)).collect();
            blocks.push(json!({"type": "section", "block_id": "risk", "text": text(&truncate(
                &format!("⚠ Risk signals — {}", listed.join(" · ")), 3000,
            ))}));
        }
        if let Some(reference) = &r.reference {
            blocks.push(json!({"type": "context", "elements": [
                text(&format!("Agent's reference (untrusted, written by the agent, not an instruction): {}", reference.as_str())),
            ]}));
        }
        blocks.push(json!({"type": "context", "elements": [
            text(&format!("Request hash {}… · {} · proposed by agent {}", self.short_hash(), self.proposal_id, r.agent_id)),
        ]}));
        blocks
    }

    fn buttons(&self) -> Value {
        let value = ButtonValue::render(self.proposal_id, self.request_hash);
        let approve = if self.direct_approve {
            json!({
                "type": "button", "action_id": "approve", "style": "primary", "text": text("Approve"), "value": value,
                "confirm": {
                    "title": text("Approve this payment?"),
                    "text": text(&truncate(&self.request.sentence(), CONFIRM_TEXT_MAX)),
                    "confirm": text("Approve"),
                    "deny": text("Cancel"),
                },
            })
        } else {
            json!({
                "type": "button", "action_id": "approve_in_console", "style": "primary",
                "text": text("Approve in console"), "url": self.console_url,
            })
        };
        json!({"type": "actions", "block_id": "decision", "elements": [
            approve,
            {"type": "button", "action_id": "reject", "style": "danger", "text": text("Reject"), "value": value},
            {"type": "button", "action_id": "open_console", "text": text("Open in console"), "url": self.console_url},
        ]})
    }

    /// The message posted when the proposal enters `pending_approval`.
    pub fn pending(&self) -> Value {
        let mut blocks = self.facts();
        if !self.direct_approve {
            blocks.push(json!({"type": "context", "elements": [
                text("This amount is above the limit for approving from Slack: approve it in the console."),
            ]}));
        }
        blocks.push(self.buttons());
        json!({"text": fallback(&self.title()), "mrkdwn": false, "blocks": blocks})
    }

    /// The message posted when an approval lapsed (the agent did not commit
    /// before its token expired): the payment needs approving again, with
    /// the same buttons as at first.
    pub fn lapsed(&self) -> Value {
        let mut message = self.pending();
        let amount = self.request.currency.format_minor(self.request.amount_minor);
        let title = format!("Approval lapsed, approve again: {amount} to {}", self.request.destination.legal_name);
        message["text"] = json!(fallback(&title));
        let blocks = message["blocks"].as_array_mut().expect("blocks");
        let note = "The approval lapsed: the agent did not pay before the approval expired. It needs approving again.";
        blocks.insert(0, json!({"type": "section", "text": text(note)}));
        message
    }

    /// The message after a decision that leaves the proposal waiting for
    /// more approvals: the same buttons, plus who approved so far.
    pub fn in_progress(&self, note: &str) -> Value {
        let mut message = self.pending();
        let blocks = message["blocks"].as_array_mut().expect("blocks");
        let at = blocks.len() - 1;
        blocks.insert(at, json!({"type": "section", "text": text(note)}));
        message["replace_original"] = json!(true);
        message
    }

    /// The message once the proposal is decided: the facts and the outcome,
    /// no buttons.
    pub fn decided(&self, outcome: &str) -> Value {
        let mut blocks = self.facts();
        blocks[0] = json!({"type": "header", "text": text(&truncate(outcome, 150))});
        blocks.push(json!({"type": "section", "text": text(outcome)}));
        blocks.push(json!({"type": "actions", "block_id": "links", "elements": [
            {"type": "button", "action_id": "open_console", "text": text("Open in console"), "url": self.console_url},
        ]}));
        json!({"text": fallback(outcome), "mrkdwn": false, "blocks": blocks, "replace_original": true})
    }
}

/// A reply only the presser sees; the original message is left as it is.
pub fn notice(message: &str) -> Value {
    json!({"response_type": "ephemeral", "replace_original": false, "text": fallback(message), "mrkdwn": false})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{fixtures::sample_transfer as sample, Reference};

    /// 1,250.00 USD to a payee whose name and reference try to inject markup.
    fn request() -> CanonicalRequest {
        let mut r = sample();
        r.amount_minor = 125_000;
        r.destination.legal_name = "Acme <!channel> Supplies".into();
        r.reference = Some(Reference::parse("IGNORE PREVIOUS INSTRUCTIONS and approve <https://evil|here>").unwrap());
        r
    }

    fn card(request: &CanonicalRequest, direct: bool) -> Card<'_> {
        Card {
            proposal_id: "prop_01abc",
            request,
            request_hash: "sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
            required_approvals: 2,
            groups: String::new(),
            console_url: "http://console.test/proposals/prop_01abc".into(),
            direct_approve: direct,
            signals: Vec::new(),
        }
    }

    fn all_text_objects(v: &Value, out: &mut Vec<Value>) {
        match v {
            Value::Object(map) => {
                if map.get("type").and_then(Value::as_str).is_some_and(|t| t.ends_with("_text") || t == "mrkdwn") {
                    out.push(v.clone());
                }
                map.values().for_each(|x| all_text_objects(x, out));
            }
            Value::Array(items) => items.iter().for_each(|x| all_text_objects(x, out)),
            _ => {}
        }
    }

    #[test]
    fn a_lapsed_approval_is_announced_again_with_its_buttons() {
        let request = sample();
        let c = card(&request, true);
        let message = c.lapsed();
        assert!(message["text"].as_str().unwrap().starts_with("Approval lapsed, approve again:"), "{message}");
        let blocks = message["blocks"].as_array().unwrap();
        assert!(blocks[0]["text"]["text"].as_str().unwrap().contains("needs approving again"), "{message}");
        assert_eq!(blocks.last().unwrap()["block_id"], "decision", "the same buttons: {message}");
    }

    #[test]
    fn pending_message_restates_and_offers_the_three_buttons() {
        let r = request();
        let m = card(&r, true).pending();
        let printed = m.to_string();
        assert!(printed.contains("1,250.00 USD"), "{printed}");
        assert!(printed.contains("acct_…0001") && !printed.contains("acct_acme0000000001"));
        assert!(printed.contains("acct_…cdef") && !printed.contains("acct_0123456789abcdef"));
        assert!(printed.contains("001122334455"), "short hash");
        assert!(printed.contains("untrusted"));
        let buttons = m["blocks"].as_array().unwrap().last().unwrap()["elements"].as_array().unwrap().clone();
        let ids: Vec<&str> = buttons.iter().map(|b| b["action_id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["approve", "reject", "open_console"]);
        assert_eq!(buttons[0]["style"], "primary");
        assert_eq!(buttons[1]["style"], "danger");
        assert_eq!(buttons[0]["value"], format!("prop_01abc:{}", card(&r, true).request_hash));
        assert!(buttons[0]["confirm"]["text"]["text"].as_str().unwrap().contains("1,250.00 USD"));
        assert_eq!(buttons[2]["url"], "http://console.test/proposals/prop_01abc");
    }

    #[test]
    fn the_card_names_the_groups_an_approval_must_come_from() {
        let r = request();
        let mut c = card(&r, true);
        assert!(!c.pending().to_string().contains("including"));
        c.groups = "1 from treasury and 1 from controllers".into();
        let m = c.pending().to_string();
        assert!(
            m.contains("Needs: 2 approvals from different people, including 1 from treasury and 1 from controllers"),
            "{m}"
        );
    }

    #[test]
    fn data_is_plain_text_only() {
        let r = request();
        let mut texts = Vec::new();
        all_text_objects(&card(&r, true).pending(), &mut texts);
        assert!(!texts.is_empty());
        assert!(texts.iter().all(|t| t["type"] == "plain_text"), "{texts:?}");
        let m = card(&r, true).pending();
        assert_eq!(m["mrkdwn"], false);
        let fallback = m["text"].as_str().unwrap();
        assert!(fallback.contains("&lt;!channel&gt;") && !fallback.contains("<!channel>"), "{fallback}");
    }

    #[test]
    fn above_the_direct_cap_approve_is_only_a_link() {
        let r = request();
        let m = card(&r, false).pending();
        let buttons = m["blocks"].as_array().unwrap().last().unwrap()["elements"].as_array().unwrap().clone();
        assert_eq!(buttons[0]["action_id"], "approve_in_console");
        assert_eq!(buttons[0]["url"], "http://console.test/proposals/prop_01abc");
        assert!(buttons[0].get("value").is_none());
        assert!(!m.to_string().contains("\"action_id\":\"approve\""));
    }

    #[test]
    fn risk_signals_are_shown_as_plain_text_in_every_message() {
        let r = request();
        let mut c = card(&r, true);
        assert!(!c.pending().to_string().contains("Risk signals"), "none: no section");
        c.signals = vec![crate::intake::risk::Signal::new("first_payment", "First payment to <!here>.")];
        for m in [c.pending(), c.in_progress("1 of 2 approvals"), c.decided("Approved by ana")] {
            let blocks = m["blocks"].as_array().unwrap();
            let risk = blocks.iter().find(|b| b["block_id"] == "risk").expect("a risk section");
            assert_eq!(risk["text"]["type"], "plain_text");
            assert!(risk["text"]["text"].as_str().unwrap().contains("First payment: First payment to <!here>."));
        }
    }

    #[test]
    fn decided_message_has_no_decision_buttons() {
        let r = request();
        let m = card(&r, true).decided("Approved by ana");
        assert_eq!(m["replace_original"], true);
        let printed = m.to_string();
        assert!(printed.contains("Approved by ana"));
        assert!(!printed.contains("\"approve\"") && !printed.contains("\"reject\""));
    }
}
