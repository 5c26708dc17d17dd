//! Fuzz target: Slack's button presses, `POST /integrations/slack/interactions`:
//! the signature check (`slack::signature::verify`) and the payload parser
//! (`slack::interaction::Interaction::parse`).
//!
//! The first input byte picks the mode:
//!
//! - even: the rest is a request body. It is parsed, and it is also signed
//!   with a configured secret, which must verify (and with an unknown one,
//!   which must not);
//! - odd: the rest drives a genuine press (action, user, button value,
//!   `response_url`) signed with one of two secrets at some timestamp, then
//!   mutated: the body's bytes, the timestamp's text, the signature's text
//!   (case of its hex digits, prefix, length), missing headers, the
//!   configured secrets (rotation) and the server's clock.
//!
//! Invariants (a panic or a violation is a crash):
//!
//! - neither function panics; both are deterministic;
//! - `verify` accepts only a digits-only timestamp within 5 minutes of the
//!   clock, and only the one signature string Slack would send for that
//!   timestamp and body under a configured secret: `v0=` and the lowercase
//!   hex of the HMAC-SHA256 (recomputed here independently with SHA-256).
//!   The replay guard remembers the signature as sent, so a second spelling
//!   of the same MAC would be a second, unremembered request;
//! - a genuine press, unmodified, is accepted inside the window;
//! - an accepted press is what the form says: exactly one `payload` field,
//!   `type` `block_actions`, the first action's `action_id` decides the
//!   action, the user id is 1-64 ASCII letters and digits, a decision
//!   button's value is `prop_…:sha256:<64 lowercase hex>` and renders back to
//!   itself, and `response_url` is the payload's.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use countersign::notify::slack::interaction::{Action, ButtonValue, Interaction, LINK_ACTIONS};
use countersign::notify::slack::signature::{verify, WINDOW_SECS};
use libfuzzer_sys::fuzz_target;
use secrecy::SecretString;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const NOW: i64 = 1_800_000_000;
const SECRET_A: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const SECRET_B: &str = "rotated-secret-b";
const UNKNOWN: &str = "a secret nobody configured";
const HASH: &str = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

/// HMAC-SHA256 (RFC 2104), written out so the oracle does not share code
/// with the verifier.
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize().into()
}

/// The `X-Slack-Signature` Slack sends.
fn slack_signature(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let mut message = format!("v0:{timestamp}:").into_bytes();
    message.extend_from_slice(body);
    let mac = hmac_sha256(secret.as_bytes(), &message);
    format!("v0={}", mac.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

fn secrets(list: &[&str]) -> Vec<SecretString> {
    list.iter().map(|s| SecretString::from(s.to_string())).collect()
}

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq)]
enum Configured {
    OnlyA,
    BThenA,
    OnlyB,
    Nothing,
}

impl Configured {
    fn list(self) -> &'static [&'static str] {
        match self {
            Configured::OnlyA => &[SECRET_A],
            Configured::BThenA => &[SECRET_B, SECRET_A],
            Configured::OnlyB => &[SECRET_B],
            Configured::Nothing => &[],
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum SignWith {
    A,
    B,
    Unknown,
    Empty,
}

impl SignWith {
    fn secret(self) -> &'static str {
        match self {
            SignWith::A => SECRET_A,
            SignWith::B => SECRET_B,
            SignWith::Unknown => UNKNOWN,
            SignWith::Empty => "",
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
enum ActionId {
    Approve,
    Reject,
    OpenConsole,
    ApproveInConsole,
    Other(String),
}

#[derive(Arbitrary, Debug, Clone)]
enum ButtonText {
    Genuine,
    UpperHash,
    ShortHash,
    NoHash,
    OtherPrefix,
    Missing,
    Text(String),
}

#[derive(Arbitrary, Debug, Clone)]
struct Press {
    action_id: ActionId,
    button: ButtonText,
    user: Option<String>,
    response_url: Option<String>,
    /// Extra actions after the first (only the first counts).
    more_actions: Vec<String>,
    kind: Option<String>,
}

impl Press {
    fn payload(&self) -> Value {
        let action_id = match &self.action_id {
            ActionId::Approve => "approve".to_owned(),
            ActionId::Reject => "reject".to_owned(),
            ActionId::OpenConsole => "open_console".to_owned(),
            ActionId::ApproveInConsole => "approve_in_console".to_owned(),
            ActionId::Other(s) => s.clone(),
        };
        let value = match &self.button {
            ButtonText::Genuine => Some(format!("prop_01hzyxw:{HASH}")),
            ButtonText::UpperHash => Some(format!("prop_01hzyxw:{}", HASH.to_uppercase())),
            ButtonText::ShortHash => Some(format!("prop_01hzyxw:{}", &HASH[..40])),
            ButtonText::NoHash => Some("prop_01hzyxw".to_owned()),
            ButtonText::OtherPrefix => Some(format!("usr_01hzyxw:{HASH}")),
            ButtonText::Missing => None,
            ButtonText::Text(s) => Some(s.clone()),
        };
        let mut actions =
            vec![json!({"action_id": action_id, "block_id": "decision", "value": value, "type": "button"})];
        actions.extend(self.more_actions.iter().map(|id| json!({"action_id": id, "value": format!("prop_1:{HASH}")})));
        json!({
            "type": self.kind.clone().unwrap_or_else(|| "block_actions".to_owned()),
            "user": {"id": self.user.clone().unwrap_or_else(|| "U0ANA".to_owned()), "username": "ana"},
            "team": {"id": "T0"},
            "response_url": self.response_url.clone().unwrap_or_else(|| "https://hooks.slack.com/actions/T0/1/abc".into()),
            "actions": actions,
        })
    }

    fn body(&self) -> Vec<u8> {
        serde_urlencoded::to_string([("payload", self.payload().to_string())]).expect("form").into_bytes()
    }
}

#[derive(Arbitrary, Debug, Clone)]
enum BodyEdit {
    FlipBit(u16),
    Insert(u16, u8),
    Remove(u16),
    Append(Vec<u8>),
    /// A second `payload` field or another field.
    AppendField(bool, String),
}

#[derive(Arbitrary, Debug, Clone)]
enum TimestampText {
    AsSigned,
    LeadingZero,
    Plus,
    Space,
    Text(String),
}

#[derive(Arbitrary, Debug, Clone)]
enum SignatureEdit {
    /// Upper-cases the hex digits whose bit is set in the mask.
    Case(u64),
    UpperPrefix,
    DropPrefix,
    FlipDigit(u8),
    Truncate(u8),
    Append(String),
    Replace(String),
}

#[derive(Arbitrary, Debug)]
struct Case {
    press: Press,
    sign_with: SignWith,
    configured: Configured,
    /// Seconds between the signed timestamp and the server's clock.
    skew: i32,
    sent_timestamp: TimestampText,
    body_edits: Vec<BodyEdit>,
    signature_edits: Vec<SignatureEdit>,
    drop_timestamp: bool,
    drop_signature: bool,
}

fn edit_body(body: &mut Vec<u8>, edit: &BodyEdit) {
    match edit {
        BodyEdit::FlipBit(at) if !body.is_empty() => {
            let bit = usize::from(*at) % (body.len() * 8);
            body[bit / 8] ^= 1 << (bit % 8);
        }
        BodyEdit::FlipBit(_) => {}
        BodyEdit::Insert(at, byte) => {
            let at = usize::from(*at) % (body.len() + 1);
            body.insert(at, *byte);
        }
        BodyEdit::Remove(at) if !body.is_empty() => {
            let at = usize::from(*at) % body.len();
            body.remove(at);
        }
        BodyEdit::Remove(_) => {}
        BodyEdit::Append(bytes) => body.extend_from_slice(bytes),
        BodyEdit::AppendField(payload, value) => {
            let name = if *payload { "payload" } else { "team_id" };
            let field = serde_urlencoded::to_string([(name, value.as_str())]).expect("form");
            body.push(b'&');
            body.extend_from_slice(field.as_bytes());
        }
    }
}

fn edit_signature(signature: &mut String, edit: &SignatureEdit) {
    match edit {
        SignatureEdit::Case(mask) => {
            *signature = signature
                .char_indices()
                .map(|(i, c)| if i >= 3 && (mask >> (i % 64)) & 1 == 1 { c.to_ascii_uppercase() } else { c })
                .collect();
        }
        SignatureEdit::UpperPrefix => *signature = signature.replacen("v0=", "V0=", 1),
        SignatureEdit::DropPrefix => *signature = signature.trim_start_matches("v0=").to_owned(),
        SignatureEdit::FlipDigit(at) => {
            let mut chars: Vec<char> = signature.chars().collect();
            if chars.len() > 3 {
                let at = 3 + usize::from(*at) % (chars.len() - 3);
                chars[at] = if chars[at] == '0' { '1' } else { '0' };
                *signature = chars.into_iter().collect();
            }
        }
        SignatureEdit::Truncate(keep) => {
            let keep: String = signature.chars().take(usize::from(*keep)).collect();
            *signature = keep;
        }
        SignatureEdit::Append(s) => signature.push_str(s),
        SignatureEdit::Replace(s) => *signature = s.clone(),
    }
}

/// `verify` with every invariant on its answer. `genuine` says the request
/// is exactly what Slack would send under a configured secret.
fn check_verify(
    configured: &[&str],
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now: i64,
    genuine: bool,
) {
    let answer = verify(&secrets(configured), timestamp, signature, body, now);
    assert_eq!(answer, verify(&secrets(configured), timestamp, signature, body, now), "verify is not deterministic");
    match answer {
        Ok(()) => {
            let timestamp = timestamp.expect("accepted without a timestamp");
            let signature = signature.expect("accepted without a signature");
            assert!(
                !timestamp.is_empty() && timestamp.bytes().all(|b| b.is_ascii_digit()),
                "accepted timestamp {timestamp:?}"
            );
            let at: i64 = timestamp.parse().expect("digits");
            assert!((at - now).abs() <= WINDOW_SECS, "accepted a timestamp {}s off", at - now);
            assert!(
                configured.iter().any(|secret| slack_signature(secret, timestamp, body) == signature),
                "accepted a signature that is not the one Slack sends for this timestamp and body: {signature:?}"
            );
        }
        Err(refusal) => {
            let _ = refusal.reason();
            assert!(!genuine, "a genuine request was refused: {refusal}");
        }
    }
}

/// `Interaction::parse` with every invariant on an accepted press.
fn check_parse(body: &[u8]) {
    let parsed = Interaction::parse(body);
    assert_eq!(parsed, Interaction::parse(body), "parse is not deterministic");
    let Ok(press) = parsed else { return };

    let fields: Vec<(String, String)> = serde_urlencoded::from_bytes(body).expect("an accepted body is a form");
    let payloads: Vec<&String> = fields.iter().filter(|(k, _)| k == "payload").map(|(_, v)| v).collect();
    assert_eq!(payloads.len(), 1, "accepted with {} payload fields", payloads.len());
    let payload: Value = serde_json::from_str(payloads[0]).expect("an accepted payload is JSON");
    assert_eq!(payload["type"], "block_actions");
    assert_eq!(payload["user"]["id"].as_str(), Some(press.user_id.as_str()));
    let user = press.user_id.as_str();
    assert!((1..=64).contains(&user.len()) && user.bytes().all(|b| b.is_ascii_alphanumeric()), "user {user:?}");
    assert_eq!(press.response_url.as_deref(), payload["response_url"].as_str(), "response_url is not the payload's");

    let first = &payload["actions"][0];
    let action_id = first["action_id"].as_str().expect("the first action has an action_id");
    let value = first["value"].as_str();
    match &press.action {
        Action::Approve(button) | Action::Reject(button) => {
            let want = if matches!(press.action, Action::Approve(_)) { "approve" } else { "reject" };
            assert_eq!(action_id, want, "the first action decides");
            let rendered = ButtonValue::render(&button.proposal_id, &button.request_hash);
            assert_eq!(value, Some(rendered.as_str()), "the button's value is the one pressed");
            assert_eq!(ButtonValue::parse(&rendered).as_ref(), Some(button), "the value does not render back");
            let id = button.proposal_id.strip_prefix("prop_").expect("prop_ prefix");
            assert!((1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric()), "id {id:?}");
            let hex = button.request_hash.strip_prefix("sha256:").expect("sha256: prefix");
            assert!(hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')), "hash {hex:?}");
        }
        Action::Link => assert!(LINK_ACTIONS.contains(&action_id), "a link action from {action_id:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode & 1 == 0 {
        let body = rest;
        let timestamp = NOW.to_string();
        let signed = slack_signature(SECRET_A, &timestamp, body);
        check_verify(&[SECRET_B, SECRET_A], Some(&timestamp), Some(&signed), body, NOW, true);
        let foreign = slack_signature(UNKNOWN, &timestamp, body);
        check_verify(&[SECRET_B, SECRET_A], Some(&timestamp), Some(&foreign), body, NOW, false);
        check_parse(body);
        return;
    }
    let Ok(case) = Case::arbitrary_take_rest(Unstructured::new(rest)) else { return };
    let now = NOW + i64::from(case.skew);
    let signed_timestamp = NOW.to_string();
    let mut body = case.press.body();
    let mut signature = slack_signature(case.sign_with.secret(), &signed_timestamp, &body);
    let configured = case.configured.list();
    let mut genuine = configured.contains(&case.sign_with.secret()) && i64::from(case.skew).abs() <= WINDOW_SECS;

    for edit in &case.body_edits {
        edit_body(&mut body, edit);
    }
    for edit in &case.signature_edits {
        edit_signature(&mut signature, edit);
    }
    let timestamp = match &case.sent_timestamp {
        TimestampText::AsSigned => signed_timestamp.clone(),
        TimestampText::LeadingZero => format!("0{signed_timestamp}"),
        TimestampText::Plus => format!("+{signed_timestamp}"),
        TimestampText::Space => format!(" {signed_timestamp}"),
        TimestampText::Text(s) => s.clone(),
    };
    genuine &= !case.drop_timestamp
        && !case.drop_signature
        && timestamp == signed_timestamp
        && body == case.press.body()
        && signature == slack_signature(case.sign_with.secret(), &signed_timestamp, &body);
    check_verify(
        configured,
        (!case.drop_timestamp).then_some(timestamp.as_str()),
        (!case.drop_signature).then_some(signature.as_str()),
        &body,
        now,
        genuine,
    );
    check_parse(&body);
});
