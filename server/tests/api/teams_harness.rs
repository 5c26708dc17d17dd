//! A local Bot Framework on loopback, built on `wiremock`: it serves an
//! OpenID metadata document and its JWKS (the local issuer's RSA key, made
//! for the tests: `crates/core/src/notify/teams/testdata/`), grants the bot its
//! own token (client credentials) and records every card the bot posts or
//! replaces through the Bot Connector API (refusing any without that
//! token). Tokens for inbound activities are signed here, RS256 with the
//! issuer's key — or forged: another key, another algorithm, other claims.

#![allow(dead_code)]

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use std::time::Duration;
use wiremock::matchers::{body_string_contains, header, method, path, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::*;

pub const ISSUER: &str = "https://api.botframework.com";
pub const APP_ID: &str = "5c2a1e3b-0d4f-4b6a-9c8e-7f1a2b3c4d5e";
pub const APP_PASSWORD: &str = "teams-app-password-for-tests";
pub const BOT_TOKEN: &str = "bot-token-granted-by-the-local-issuer";
pub const CONVERSATION: &str = "19:acme-payments@thread.tacv2";
pub const ANA_AAD: &str = "6f1c2d3e-4a5b-4c6d-8e7f-00000000a0a0";
pub const BEN_AAD: &str = "6f1c2d3e-4a5b-4c6d-8e7f-00000000b0b0";
pub const STRANGER_AAD: &str = "6f1c2d3e-4a5b-4c6d-8e7f-00000000ffff";
/// The card the presses below are made on.
pub const CARD_ACTIVITY: &str = "1:posted-card";

const ISSUER_PEM: &str = include_str!("../../../crates/core/src/notify/teams/testdata/issuer.pem");
const FORGER_PEM: &str = include_str!("../../../crates/core/src/notify/teams/testdata/forger.pem");
const ISSUER_PUBLIC_PEM: &str = include_str!("../../../crates/core/src/notify/teams/testdata/issuer.pub.pem");
const PUBLIC: &str = include_str!("../../../crates/core/src/notify/teams/testdata/public.json");

pub struct FakeBotFramework {
    pub base: String,
    server: MockServer,
}

#[derive(Debug, Clone)]
pub struct Sent {
    pub method: String,
    pub path: String,
    pub body: Value,
}

impl FakeBotFramework {
    pub async fn start() -> FakeBotFramework {
        let server = MockServer::builder().start().await;
        let base = server.uri();
        let issuer: Value = serde_json::from_str(PUBLIC).unwrap();
        let (n, e) = (issuer["issuer"]["n"].clone(), issuer["issuer"]["e"].clone());
        Mock::given(method("GET"))
            .and(path("/v1/.well-known/openidconfiguration"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "issuer": ISSUER,
                "authorization_endpoint": "https://invalid.botframework.com",
                "jwks_uri": format!("{base}/v1/.well-known/keys"),
                "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["private_key_jwt"],
            })))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/v1/.well-known/keys"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"keys": [
                {"kty": "RSA", "use": "sig", "kid": "k1", "n": n, "e": e, "endorsements": ["msteams", "skype"]},
                {"kty": "RSA", "use": "sig", "kid": "k-webchat", "n": n, "e": e, "endorsements": ["webchat"]},
            ]})))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/botframework.com/oauth2/v2.0/token"))
            .and(body_string_contains("grant_type=client_credentials"))
            .and(body_string_contains(format!("client_id={APP_ID}")))
            .and(body_string_contains(format!("client_secret={APP_PASSWORD}")))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "token_type": "Bearer", "expires_in": 3600, "ext_expires_in": 3600, "access_token": BOT_TOKEN,
            })))
            .mount(&server)
            .await;
        for verb in ["POST", "PUT"] {
            Mock::given(method(verb))
                .and(path_regex("^/v3/conversations/[^/]+/activities"))
                .and(header("authorization", format!("Bearer {BOT_TOKEN}").as_str()))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": CARD_ACTIVITY})))
                .mount(&server)
                .await;
        }
        FakeBotFramework { base, server }
    }

    /// The conversations' service URL, as activities and tokens carry it.
    pub fn service_url(&self) -> String {
        format!("{}/", self.base)
    }

    /// Every card sent to the Bot Connector with the bot's token, in order.
    pub async fn sent(&self) -> Vec<Sent> {
        let all = self.server.received_requests().await.expect("request recording is on");
        all.iter()
            .filter(|r| r.url.path().starts_with("/v3/conversations/"))
            .filter(|r| {
                r.headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {BOT_TOKEN}"))
            })
            .map(|r| Sent {
                method: r.method.to_string(),
                path: r.url.path().to_owned(),
                body: serde_json::from_slice(&r.body).unwrap_or(Value::Null),
            })
            .collect()
    }

    /// Waits (up to 10 s) for a card sent with `method` that mentions `needle`.
    pub async fn wait_for(&self, method: &str, needle: &str) -> Sent {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) =
                self.sent().await.into_iter().find(|s| s.method == method && s.body.to_string().contains(needle))
            {
                return s;
            }
            assert!(tokio::time::Instant::now() < deadline, "a {method} mentioning {needle} within 10 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Valid claims for a token that carries an activity to the bot.
    pub fn claims(&self) -> Value {
        let now = chrono::Utc::now().timestamp();
        json!({"iss": ISSUER, "aud": APP_ID, "exp": now + 3600, "nbf": now - 60, "serviceUrl": self.service_url()})
    }

    /// Signs `claims` as the Bot Framework does (RS256, kid `k1`).
    pub fn token(&self, claims: &Value) -> String {
        sign_rs256(ISSUER_PEM, "k1", claims)
    }

    /// The server's config section for this Bot Framework (acme posts to
    /// [`CONVERSATION`]; at or above 10,000.00 USD Approve is a link).
    pub fn config(&self) -> String {
        format!(
            r#"
[teams]
app_id = "{APP_ID}"
app_password = "{APP_PASSWORD}"
openid_metadata_url = "{base}/v1/.well-known/openidconfiguration"
issuer = "{ISSUER}"
token_url = "{base}/botframework.com/oauth2/v2.0/token"
allowed_hosts = ["127.0.0.1"]
max_direct_approve_minor = {{ USD = 1_000_000 }}

[teams.channels.acme]
service_url = "{base}/"
conversation_id = "{CONVERSATION}"
"#,
            base = self.base
        )
    }

    /// An `adaptiveCard/action` invoke: `verb` pressed by `aad` with `data`.
    pub fn press(&self, id: &str, aad: &str, verb: &str, data: &Value) -> Value {
        json!({
            "type": "invoke", "name": "adaptiveCard/action", "id": id, "channelId": "msteams",
            "serviceUrl": self.service_url(), "replyToId": CARD_ACTIVITY,
            "timestamp": chrono::Utc::now().to_rfc3339(),
            "from": {"id": format!("29:{aad}"), "aadObjectId": aad, "name": "someone"},
            "recipient": {"id": format!("28:{APP_ID}"), "name": "Countersign"},
            "conversation": {"id": CONVERSATION, "conversationType": "channel"},
            "channelData": {"tenant": {"id": "72f988bf-0000-0000-0000-000000000000"}},
            "value": {"action": {"type": "Action.Execute", "verb": verb, "data": data}, "trigger": "manual"},
        })
    }
}

pub fn sign_rs256(pem: &str, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap()).unwrap()
}

/// Tokens that must each be refused, with the reason the server gives.
pub fn forged_tokens(bf: &FakeBotFramework) -> Vec<(&'static str, String)> {
    let claims = bf.claims();
    let with = |k: &str, v: Value| {
        let mut c = claims.clone();
        c[k] = v;
        c
    };
    let now = chrono::Utc::now().timestamp();
    let b64 = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let mut hs_header = Header::new(Algorithm::HS256);
    hs_header.kid = Some("k1".into());
    let hs256 =
        jsonwebtoken::encode(&hs_header, &claims, &EncodingKey::from_secret(ISSUER_PUBLIC_PEM.as_bytes()).unwrap())
            .unwrap();
    vec![
        ("bad_issuer", bf.token(&with("iss", json!("https://login.microsoftonline.com/evil/v2.0")))),
        ("bad_audience", bf.token(&with("aud", json!("another-bots-app-id")))),
        ("expired", bf.token(&with("exp", json!(now - 3600)))),
        ("not_yet_valid", bf.token(&with("nbf", json!(now + 3600)))),
        ("unknown_key", sign_rs256(FORGER_PEM, "k-forger", &claims)),
        ("bad_signature", sign_rs256(FORGER_PEM, "k1", &claims)),
        ("bad_algorithm", format!("{}.{}.", b64(&json!({"alg": "none", "kid": "k1"})), b64(&claims))),
        ("bad_algorithm", hs256),
        ("service_url_mismatch", bf.token(&with("serviceUrl", json!("https://smba.trafficmanager.net/emea/")))),
        ("not_endorsed", sign_rs256(ISSUER_PEM, "k-webchat", &claims)),
        ("malformed_token", "not-a-jwt".to_owned()),
    ]
}

/// POSTs an activity to the bot's endpoint with `authorization`.
pub async fn deliver(server: &TestServer, authorization: Option<&str>, activity: &Value) -> Reply {
    let mut rb = reqwest::Client::new().post(server.url("/integrations/teams/messages")).json(activity);
    if let Some(a) = authorization {
        rb = rb.header("authorization", a);
    }
    send(rb).await
}

pub async fn link_teams(server: &TestServer, username: &str, aad: &str) {
    let args = ["user", "link-teams", "--tenant", "acme", "--username", username, "--aad-object-id", aad];
    let (code, stdout, stderr) = server.cli(&args).await;
    assert_eq!(code, 0, "link-teams: {stdout}{stderr}");
}

/// The `Action.Execute` buttons of a card activity, by verb.
pub fn execute_action(activity: &Value, verb: &str) -> Option<Value> {
    activity["attachments"][0]["content"]["actions"]
        .as_array()?
        .iter()
        .find(|a| a["type"] == "Action.Execute" && a["verb"] == verb)
        .cloned()
}
