//! Every way a Bot Framework token can fail, against tokens signed here with
//! the local issuer's RSA key (`testdata/`), the forger's, or none at all.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use super::*;

const NOW: i64 = 1_800_000_000;
const ISSUER: &str = "https://api.botframework.com";
const APP_ID: &str = "00000000-0000-0000-0000-00000000b07a";
const SERVICE: &str = "https://smba.trafficmanager.net/emea/";

fn public(name: &str) -> (String, String) {
    let all: Value = serde_json::from_str(include_str!("testdata/public.json")).unwrap();
    (all[name]["n"].as_str().unwrap().to_owned(), all[name]["e"].as_str().unwrap().to_owned())
}

fn keys() -> KeySet {
    let (n, e) = public("issuer");
    let jwks = json!({"keys": [
        {"kty": "RSA", "use": "sig", "kid": "k1", "n": n, "e": e, "endorsements": ["msteams", "webchat"]},
        {"kty": "RSA", "use": "sig", "kid": "k-webchat", "n": n, "e": e, "endorsements": ["webchat"]},
        {"kty": "EC", "kid": "ec", "crv": "P-256", "x": "AA", "y": "AA"},
    ]});
    KeySet::parse(jwks.to_string().as_bytes()).unwrap()
}

fn claims() -> Value {
    json!({"iss": ISSUER, "aud": APP_ID, "exp": NOW + 3600, "nbf": NOW - 60, "serviceUrl": SERVICE})
}

fn sign_with(pem: &str, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap()).unwrap()
}

fn sign(claims: &Value) -> String {
    sign_with(include_str!("testdata/issuer.pem"), "k1", claims)
}

fn check(token: &str) -> Result<Verified, Refusal> {
    verify(token, &keys(), Expect { issuer: ISSUER, audience: APP_ID }, NOW)
}

fn with(change: Value) -> Value {
    let mut c = claims();
    for (k, v) in change.as_object().unwrap() {
        if v.is_null() {
            c.as_object_mut().unwrap().remove(k);
        } else {
            c[k] = v.clone();
        }
    }
    c
}

fn b64(v: &Value) -> String {
    URL_SAFE_NO_PAD.encode(v.to_string())
}

#[test]
fn a_token_signed_by_the_bot_framework_for_this_bot_verifies() {
    let verified = check(&sign(&claims())).unwrap();
    assert_eq!(verified.service_url.as_deref(), Some(SERVICE));
    assert_eq!(verified.expires_at, NOW + 3600);
    assert_eq!(check_activity(&verified, SERVICE, "msteams"), Ok(()));
    assert_eq!(check_activity(&verified, "https://smba.trafficmanager.net/emea", "msteams"), Ok(()), "a trailing /");
    // An audience list naming this bot, and the edges of the leeway.
    assert!(check(&sign(&with(json!({"aud": ["other", APP_ID]})))).is_ok());
    assert!(check(&sign(&with(json!({"exp": NOW - LEEWAY_SECS})))).is_ok());
    assert!(check(&sign(&with(json!({"nbf": NOW + LEEWAY_SECS})))).is_ok());
    assert!(check(&sign(&with(json!({"nbf": null})))).is_ok(), "nbf is optional");
}

#[test]
fn each_claim_that_does_not_hold_has_its_refusal() {
    let cases = [
        (json!({"iss": "https://evil.example"}), Refusal::Issuer),
        (json!({"iss": null}), Refusal::Issuer),
        (json!({"iss": "https://api.botframework.com/"}), Refusal::Issuer),
        (json!({"aud": "another-bot"}), Refusal::Audience),
        (json!({"aud": ["another-bot"]}), Refusal::Audience),
        (json!({"aud": null}), Refusal::Audience),
        (json!({"exp": NOW - LEEWAY_SECS - 1}), Refusal::Expired),
        (json!({"exp": null}), Refusal::Expired),
        (json!({"nbf": NOW + LEEWAY_SECS + 1}), Refusal::NotYetValid),
    ];
    for (change, refusal) in cases {
        assert_eq!(check(&sign(&with(change.clone()))), Err(refusal), "{change}");
    }
    // An empty App ID matches nothing, not even an empty audience.
    let empty = verify(&sign(&with(json!({"aud": ""}))), &keys(), Expect { issuer: ISSUER, audience: "" }, NOW);
    assert_eq!(empty, Err(Refusal::Audience));
}

#[test]
fn a_key_that_is_not_the_bot_frameworks_is_refused() {
    // The forger's key under a kid the set knows: the signature fails.
    let forged = sign_with(include_str!("testdata/forger.pem"), "k1", &claims());
    assert_eq!(check(&forged), Err(Refusal::BadSignature));
    // Under a kid the set does not know, or no kid at all.
    assert_eq!(check(&sign_with(include_str!("testdata/forger.pem"), "k9", &claims())), Err(Refusal::UnknownKey));
    let no_kid = jsonwebtoken::encode(
        &Header::new(Algorithm::RS256),
        &claims(),
        &EncodingKey::from_rsa_pem(include_str!("testdata/issuer.pem").as_bytes()).unwrap(),
    )
    .unwrap();
    assert_eq!(check(&no_kid), Err(Refusal::UnknownKey));
    // The EC entry of the set is no RSA key.
    assert_eq!(check(&sign_with(include_str!("testdata/issuer.pem"), "ec", &claims())), Err(Refusal::UnknownKey));
    // A genuine token with its claims changed after signing.
    let genuine = sign(&claims());
    let parts: Vec<&str> = genuine.split('.').collect();
    let tampered = format!("{}.{}.{}", parts[0], b64(&with(json!({"aud": APP_ID, "exp": NOW + 99_999}))), parts[2]);
    assert_eq!(check(&tampered), Err(Refusal::BadSignature));
}

#[test]
fn only_rs256_is_accepted_none_and_hmac_confusion_are_refused() {
    let body = b64(&claims());
    let none = format!("{}.{body}.", b64(&json!({"alg": "none", "kid": "k1", "typ": "JWT"})));
    assert_eq!(check(&none), Err(Refusal::Algorithm));
    let none_upper = format!("{}.{body}.", b64(&json!({"alg": "NONE", "kid": "k1"})));
    assert_eq!(check(&none_upper), Err(Refusal::Algorithm));
    // HS256 keyed with the issuer's public key, as a confused verifier would check it.
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("k1".into());
    for secret in [include_str!("testdata/issuer.pub.pem").as_bytes(), public("issuer").0.as_bytes()] {
        let hs = jsonwebtoken::encode(&header, &claims(), &EncodingKey::from_secret(secret).unwrap()).unwrap();
        assert_eq!(check(&hs), Err(Refusal::Algorithm));
    }
    // RS256 in the header over another algorithm's signature still fails.
    let rs_header = format!("{}.{body}", b64(&json!({"alg": "RS256", "kid": "k1"})));
    assert_eq!(check(&format!("{rs_header}.AAAA")), Err(Refusal::BadSignature));
    let no_alg = format!("{}.{body}.AAAA", b64(&json!({"kid": "k1"})));
    assert_eq!(check(&no_alg), Err(Refusal::Algorithm));
}

#[test]
fn what_is_not_a_jwt_is_malformed() {
    for bad in ["", "abc", "a.b", "a.b.c.d", "!!!.e30.AAAA", &format!("{}.e30.AAAA", URL_SAFE_NO_PAD.encode("[1]"))] {
        assert_eq!(check(bad), Err(Refusal::Malformed), "{bad:?}");
    }
    assert_eq!(kid_of(&sign(&claims())).as_deref(), Some("k1"));
    assert_eq!(kid_of("garbage"), None);
}

#[test]
fn the_token_must_match_its_activity() {
    let verified = check(&sign(&claims())).unwrap();
    assert_eq!(check_activity(&verified, "https://evil.example/", "msteams"), Err(Refusal::ServiceUrl));
    assert_eq!(check_activity(&verified, "https://smba.trafficmanager.net/amer/", "msteams"), Err(Refusal::ServiceUrl));
    assert_eq!(check_activity(&verified, SERVICE, "webchat"), Err(Refusal::Channel));
    let no_claim = check(&sign(&with(json!({"serviceUrl": null})))).unwrap();
    assert_eq!(check_activity(&no_claim, SERVICE, "msteams"), Err(Refusal::ServiceUrl));
    // A key the Bot Framework endorses for Web Chat only cannot speak for Teams.
    let webchat = sign_with(include_str!("testdata/issuer.pem"), "k-webchat", &claims());
    let verified = check(&webchat).unwrap();
    assert_eq!(check_activity(&verified, SERVICE, "msteams"), Err(Refusal::Endorsement));
}

#[test]
fn every_refusal_has_its_own_reason() {
    let all = [
        Refusal::NotConfigured,
        Refusal::MissingToken,
        Refusal::Malformed,
        Refusal::Algorithm,
        Refusal::UnknownKey,
        Refusal::BadSignature,
        Refusal::Issuer,
        Refusal::Audience,
        Refusal::Expired,
        Refusal::NotYetValid,
        Refusal::ServiceUrl,
        Refusal::Channel,
        Refusal::Endorsement,
        Refusal::Replayed,
        Refusal::KeysUnavailable,
    ];
    let reasons: std::collections::BTreeSet<&str> = all.iter().map(|r| r.reason()).collect();
    assert_eq!(reasons.len(), all.len());
}
