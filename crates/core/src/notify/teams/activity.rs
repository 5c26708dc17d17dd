//! The inbound activity: the Bot Framework's JSON, read only after its token
//! verified. Only the fields Countersign uses are read, each checked for
//! shape; everything else is ignored. An Adaptive Card's `Action.Execute`
//! arrives as an `invoke` named `adaptiveCard/action` whose
//! `value.action` carries the button's `verb` and `data` (the inputs'
//! values merged in).

use serde::Deserialize;
use serde_json::Value;

/// A parsed activity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    pub id: String,
    pub service_url: String,
    pub channel_id: String,
    pub conversation_id: String,
    /// The sender's Entra ID object id, which a console user is linked to.
    pub from_aad_object_id: Option<String>,
    /// The message whose card was pressed (replaced for everyone after a decision).
    pub reply_to_id: Option<String>,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A press on one of our cards' `Action.Execute` buttons.
    CardAction(CardAction),
    /// Anything else (a message to the bot, the bot added to a team…):
    /// acknowledged, nothing is done.
    Other,
}

/// A button press: what it asks and the payment it was shown for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardAction {
    pub verb: Verb,
    pub proposal_id: String,
    pub request_hash: String,
    pub amount_minor: u64,
    pub currency: String,
    /// The card's reason field (rejections), trimmed; empty when not given.
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Approve,
    Reject,
    /// Teams asks for the card as it stands (Universal Actions' refresh).
    Refresh,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Approve => "approve",
            Verb::Reject => "reject",
            Verb::Refresh => "refresh",
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("not a JSON activity")]
    NotJson,
    #[error("missing or malformed field `{0}`")]
    Field(&'static str),
}

#[derive(Deserialize)]
struct Raw {
    #[serde(rename = "type")]
    kind: Option<String>,
    id: Option<String>,
    name: Option<String>,
    #[serde(rename = "serviceUrl")]
    service_url: Option<String>,
    #[serde(rename = "channelId")]
    channel_id: Option<String>,
    from: Option<RawFrom>,
    conversation: Option<RawConversation>,
    #[serde(rename = "replyToId")]
    reply_to_id: Option<String>,
    value: Option<Value>,
}

#[derive(Deserialize)]
struct RawFrom {
    #[serde(rename = "aadObjectId")]
    aad_object_id: Option<String>,
}

#[derive(Deserialize)]
struct RawConversation {
    id: Option<String>,
}

/// Longest id, URL or reason read from an activity.
const MAX_FIELD: usize = 512;

fn bounded(s: Option<String>, field: &'static str) -> Result<String, ParseError> {
    s.filter(|s| !s.is_empty() && s.len() <= MAX_FIELD && !s.chars().any(char::is_control))
        .ok_or(ParseError::Field(field))
}

impl Activity {
    pub fn parse(body: &[u8]) -> Result<Activity, ParseError> {
        let raw: Raw = serde_json::from_slice(body).map_err(|_| ParseError::NotJson)?;
        let kind = match (raw.kind.as_deref(), raw.name.as_deref()) {
            (Some("invoke"), Some("adaptiveCard/action")) => Kind::CardAction(CardAction::parse(raw.value.as_ref())?),
            _ => Kind::Other,
        };
        Ok(Activity {
            id: bounded(raw.id, "id")?,
            service_url: bounded(raw.service_url, "serviceUrl")?,
            channel_id: bounded(raw.channel_id, "channelId")?,
            conversation_id: bounded(raw.conversation.and_then(|c| c.id), "conversation.id")?,
            from_aad_object_id: raw.from.and_then(|f| f.aad_object_id).filter(|s| !s.is_empty() && s.len() <= 64),
            reply_to_id: raw.reply_to_id.filter(|s| !s.is_empty() && s.len() <= MAX_FIELD),
            kind,
        })
    }
}

impl CardAction {
    fn parse(value: Option<&Value>) -> Result<CardAction, ParseError> {
        let action = value.and_then(|v| v.get("action")).ok_or(ParseError::Field("value.action"))?;
        if action.get("type").and_then(Value::as_str) != Some("Action.Execute") {
            return Err(ParseError::Field("value.action.type"));
        }
        let verb = match action.get("verb").and_then(Value::as_str) {
            Some("approve") => Verb::Approve,
            Some("reject") => Verb::Reject,
            Some("refresh") => Verb::Refresh,
            _ => return Err(ParseError::Field("value.action.verb")),
        };
        let data = action.get("data").ok_or(ParseError::Field("value.action.data"))?;
        let text = |k: &'static str| bounded(data.get(k).and_then(Value::as_str).map(str::to_owned), k);
        let amount_minor = data.get("amount_minor").and_then(Value::as_u64).ok_or(ParseError::Field("amount_minor"))?;
        let reason = match data.get("reason") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(r)) if r.chars().count() <= 500 => r.trim().to_owned(),
            Some(_) => return Err(ParseError::Field("reason")),
        };
        Ok(CardAction {
            verb,
            proposal_id: text("proposal_id")?,
            request_hash: text("request_hash")?,
            amount_minor,
            currency: text("currency")?,
            reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn invoke(data: Value) -> Value {
        json!({
            "type": "invoke", "name": "adaptiveCard/action", "id": "f:1", "channelId": "msteams",
            "serviceUrl": "https://smba.trafficmanager.net/emea/", "replyToId": "1:card",
            "from": {"id": "29:x", "aadObjectId": "aad-ana"}, "conversation": {"id": "19:chan@thread.tacv2"},
            "value": {"action": {"type": "Action.Execute", "verb": "approve", "data": data}, "trigger": "manual"},
        })
    }

    fn data() -> Value {
        json!({"proposal_id": "prop_1", "request_hash": "sha256:ab", "amount_minor": 25_000, "currency": "USD"})
    }

    #[test]
    fn a_card_action_is_read_with_its_payment() {
        let a = Activity::parse(invoke(data()).to_string().as_bytes()).unwrap();
        assert_eq!(
            (a.id.as_str(), a.channel_id.as_str(), a.reply_to_id.as_deref()),
            ("f:1", "msteams", Some("1:card"))
        );
        assert_eq!(a.from_aad_object_id.as_deref(), Some("aad-ana"));
        let Kind::CardAction(press) = a.kind else { panic!("a card action") };
        assert_eq!(
            press,
            CardAction {
                verb: Verb::Approve,
                proposal_id: "prop_1".into(),
                request_hash: "sha256:ab".into(),
                amount_minor: 25_000,
                currency: "USD".into(),
                reason: String::new()
            }
        );
    }

    #[test]
    fn other_activities_are_acknowledged_and_bad_presses_refused() {
        let message = json!({"type": "message", "id": "m", "channelId": "msteams", "serviceUrl": "https://s/",
                             "conversation": {"id": "c"}, "text": "hi"});
        assert_eq!(Activity::parse(message.to_string().as_bytes()).unwrap().kind, Kind::Other);
        assert_eq!(Activity::parse(b"not json"), Err(ParseError::NotJson));
        let mut bad_amount = data();
        bad_amount["amount_minor"] = json!("25000");
        assert_eq!(Activity::parse(invoke(bad_amount).to_string().as_bytes()), Err(ParseError::Field("amount_minor")));
        let mut no_hash = data();
        no_hash.as_object_mut().unwrap().remove("request_hash");
        assert_eq!(Activity::parse(invoke(no_hash).to_string().as_bytes()), Err(ParseError::Field("request_hash")));
        let mut verb = invoke(data());
        verb["value"]["action"]["verb"] = json!("pay");
        assert_eq!(Activity::parse(verb.to_string().as_bytes()), Err(ParseError::Field("value.action.verb")));
        let mut no_service = invoke(data());
        no_service.as_object_mut().unwrap().remove("serviceUrl");
        assert_eq!(Activity::parse(no_service.to_string().as_bytes()), Err(ParseError::Field("serviceUrl")));
    }
}
