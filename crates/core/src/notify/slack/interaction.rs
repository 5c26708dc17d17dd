//! The inbound button press: `application/x-www-form-urlencoded` with one
//! field, `payload`, holding Slack's `block_actions` JSON. Only the fields
//! Countersign uses are read, and each is checked for shape; everything
//! else in the payload is ignored. Parse only after the signature check.

use serde::Deserialize;

/// A parsed, shape-checked button press.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interaction {
    /// The Slack user who pressed (`U…`), mapped to a console user later.
    pub user_id: String,
    pub action: Action,
    /// Where to post the follow-up (checked against the allowlist before use).
    pub response_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Approve(ButtonValue),
    Reject(ButtonValue),
    /// A link button (Open in console, Approve in console): Slack reports the
    /// click, there is nothing to do.
    Link,
}

/// A decision button's `value`: `{proposal_id}:{request_hash}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ButtonValue {
    pub proposal_id: String,
    pub request_hash: String,
}

impl ButtonValue {
    pub fn parse(value: &str) -> Option<ButtonValue> {
        let (proposal_id, request_hash) = value.split_once(':')?;
        let id_ok = proposal_id
            .strip_prefix("prop_")
            .is_some_and(|rest| (1..=64).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_alphanumeric()));
        let hash_ok = request_hash
            .strip_prefix("sha256:")
            .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
        (id_ok && hash_ok)
            .then(|| ButtonValue { proposal_id: proposal_id.to_owned(), request_hash: request_hash.to_owned() })
    }

    pub fn render(proposal_id: &str, request_hash: &str) -> String {
        format!("{proposal_id}:{request_hash}")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("the body is not a form with exactly one `payload` field")]
    NotAForm,
    #[error("`payload` is not a JSON object of the expected shape")]
    BadJson,
    #[error("only `block_actions` interactions are handled")]
    UnsupportedType,
    #[error("`user.id` is not a Slack user id")]
    BadUser,
    #[error("`actions` is empty")]
    NoAction,
    #[error("the button's `value` is not `{{proposal_id}}:{{request_hash}}`")]
    BadValue,
    #[error("unknown `action_id`")]
    UnknownAction,
}

#[derive(Deserialize)]
struct Payload {
    #[serde(rename = "type")]
    kind: String,
    user: User,
    #[serde(default)]
    actions: Vec<RawAction>,
    response_url: Option<String>,
}

#[derive(Deserialize)]
struct User {
    id: String,
}

#[derive(Deserialize)]
struct RawAction {
    action_id: String,
    value: Option<String>,
}

/// Link buttons' `action_id`s (see `message`).
pub const LINK_ACTIONS: [&str; 2] = ["open_console", "approve_in_console"];

impl Interaction {
    pub fn parse(body: &[u8]) -> Result<Interaction, ParseError> {
        let fields: Vec<(String, String)> = serde_urlencoded::from_bytes(body).map_err(|_| ParseError::NotAForm)?;
        let mut payloads = fields.iter().filter(|(k, _)| k == "payload");
        let (Some((_, json)), None) = (payloads.next(), payloads.next()) else {
            return Err(ParseError::NotAForm);
        };
        let payload: Payload = serde_json::from_str(json).map_err(|_| ParseError::BadJson)?;
        if payload.kind != "block_actions" {
            return Err(ParseError::UnsupportedType);
        }
        let user = &payload.user.id;
        if user.is_empty() || user.len() > 64 || !user.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(ParseError::BadUser);
        }
        let first = payload.actions.first().ok_or(ParseError::NoAction)?;
        let value = || first.value.as_deref().and_then(ButtonValue::parse).ok_or(ParseError::BadValue);
        let action = match first.action_id.as_str() {
            "approve" => Action::Approve(value()?),
            "reject" => Action::Reject(value()?),
            id if LINK_ACTIONS.contains(&id) => Action::Link,
            _ => return Err(ParseError::UnknownAction),
        };
        Ok(Interaction { user_id: payload.user.id, action, response_url: payload.response_url })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HASH: &str = "sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    fn form(payload: &serde_json::Value) -> Vec<u8> {
        serde_urlencoded::to_string([("payload", payload.to_string())]).unwrap().into_bytes()
    }

    fn press(action_id: &str, value: &str) -> serde_json::Value {
        json!({
            "type": "block_actions",
            "user": {"id": "U0ANA", "username": "ana"},
            "team": {"id": "T0"},
            "response_url": "https://hooks.slack.com/actions/T0/1/abc",
            "actions": [{"action_id": action_id, "block_id": "decision", "value": value, "type": "button"}],
        })
    }

    #[test]
    fn parses_a_press() {
        let value = format!("prop_01abc:{HASH}");
        let got = Interaction::parse(&form(&press("approve", &value))).unwrap();
        assert_eq!(got.user_id, "U0ANA");
        assert_eq!(got.response_url.as_deref(), Some("https://hooks.slack.com/actions/T0/1/abc"));
        let button = ButtonValue { proposal_id: "prop_01abc".into(), request_hash: HASH.into() };
        assert_eq!(got.action, Action::Approve(button.clone()));
        assert_eq!(Interaction::parse(&form(&press("reject", &value))).unwrap().action, Action::Reject(button));
        assert_eq!(Interaction::parse(&form(&press("open_console", ""))).unwrap().action, Action::Link);
    }

    #[test]
    fn refuses_every_other_shape() {
        let value = format!("prop_01abc:{HASH}");
        let cases: Vec<(Vec<u8>, ParseError)> = vec![
            (b"not=a&payload".to_vec(), ParseError::BadJson),
            (b"other=1".to_vec(), ParseError::NotAForm),
            (
                [form(&press("approve", &value)), b"&".to_vec(), form(&press("reject", &value))].concat(),
                ParseError::NotAForm,
            ),
            (b"payload=%7B".to_vec(), ParseError::BadJson),
            (form(&json!({"type": "view_submission", "user": {"id": "U0"}})), ParseError::UnsupportedType),
            (form(&json!({"type": "block_actions", "user": {"id": "U0/../x"}, "actions": []})), ParseError::BadUser),
            (form(&json!({"type": "block_actions", "user": {"id": "U0"}, "actions": []})), ParseError::NoAction),
            (form(&press("approve", "prop_01abc")), ParseError::BadValue),
            (form(&press("approve", &format!("prop_01abc:{}", &HASH[..20]))), ParseError::BadValue),
            (form(&press("approve", &format!("usr_01abc:{HASH}"))), ParseError::BadValue),
            (form(&press("approve", &format!("prop_01abc:{}", HASH.to_uppercase()))), ParseError::BadValue),
            (form(&press("delete_everything", &value)), ParseError::UnknownAction),
        ];
        for (body, want) in cases {
            assert_eq!(Interaction::parse(&body), Err(want), "{}", String::from_utf8_lossy(&body));
        }
    }

    #[test]
    fn button_values_round_trip() {
        let v = ButtonValue::render("prop_01abc", HASH);
        assert_eq!(ButtonValue::parse(&v).unwrap().request_hash, HASH);
    }
}
