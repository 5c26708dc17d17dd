//! Minting and verifying approval tokens: compact JWS, ES256, header
//! `typ: countersign-approval+jwt` and `kid` (SPEC §5).
//!
//! Verification never lets the token choose how it is verified: the header
//! is decoded here first, `alg` must be exactly `ES256`, and the signature is
//! then checked with the hard-coded ES256 verifier against the EC public key
//! of the named kid. No HMAC key is ever built from a public key, and
//! `jku`/`jwk`/`x5u`/`x5c` headers are ignored. jsonwebtoken validates no
//! claims here: every time check uses the caller's `now` (never the system
//! clock) with [`LEEWAY_SECS`].

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};
use rand::rngs::OsRng;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::keys::KeyStore;

/// The JOSE header `typ` of an approval token.
pub const TOKEN_TYP: &str = "countersign-approval+jwt";
/// The `aud` of every approval token.
pub const AUDIENCE: &str = "countersign:commit";
/// Clock-skew allowance for `nbf` and `exp`, in seconds.
pub const LEEWAY_SECS: i64 = 30;
/// The longest lifetime a token may be minted with.
pub const MAX_TTL_SECS: u64 = 900;
/// The lifetime when the deployment does not configure one.
pub const DEFAULT_TTL_SECS: u64 = 300;
/// Tokens longer than this are refused as malformed before any decoding.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
const ALG: &str = "ES256";
const JTI_PREFIX: &str = "tok_";

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ApprovalClaims {
    /// The console's public URL.
    pub iss: String,
    /// Always [`AUDIENCE`].
    pub aud: String,
    /// The approver who gave the last approval, or `policy:<rule id>`.
    pub sub: String,
    /// Every approver's id, in order.
    pub approvers: Vec<String>,
    /// Tenant id.
    pub tid: String,
    /// Proposal id.
    pub pid: String,
    /// The request hash (checked by commit against the stored one).
    pub rh: String,
    /// The agent that may redeem the token.
    pub azp: String,
    /// How the approvers authenticated (`pwd`, `passkey`, `slack`, `policy`).
    pub amr: Vec<String>,
    pub iat: i64,
    pub nbf: i64,
    pub exp: i64,
    /// Unique token id (`tok_` + 26 base32 characters, 130 random bits).
    pub jti: String,
    /// The approvals a delegate gave for someone away: who gave each, for
    /// whom, under which delegation. Absent when there is none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delegations: Vec<DelegatedClaim>,
}

/// One approval given under a delegation, in a token's `delegations`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct DelegatedClaim {
    /// The delegate who gave it (one of `approvers`).
    pub approver: String,
    /// The user it counts for.
    #[serde(rename = "for")]
    pub on_behalf_of: String,
    /// The delegation (`dlg_…`).
    pub delegation: String,
}

#[derive(Debug, Clone, Copy)]
pub struct MintRequest<'a> {
    pub issuer: &'a str,
    pub sub: &'a str,
    pub approvers: &'a [String],
    pub tenant_id: &'a str,
    pub proposal_id: &'a str,
    pub request_hash: &'a str,
    pub agent_id: &'a str,
    pub amr: &'a [String],
    pub delegations: &'a [DelegatedClaim],
    pub now: DateTime<Utc>,
    /// 1 ..= [`MAX_TTL_SECS`]; anything else is refused.
    pub ttl_secs: u64,
}

/// What the commit request says the token must be for.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    pub issuer: &'a str,
    /// The proposal id from the request path.
    pub proposal_id: &'a str,
    /// The calling agent's tenant.
    pub tenant_id: &'a str,
    /// The calling agent.
    pub agent_id: &'a str,
    pub now: DateTime<Utc>,
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("approval token lifetime must be 1 to {max} seconds, not {ttl_secs}", max = MAX_TTL_SECS)]
    InvalidTtl { ttl_secs: u64 },
    #[error("cannot sign the approval token: {0}")]
    Signing(#[source] serde_json::Error),
}

/// Why a token was refused, in the order the checks run. Carries no token
/// content; [`reason`](TokenRejection::reason) is the stable machine string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenRejection {
    #[error("the approval token is not a compact JWS")]
    Malformed,
    #[error("the approval token's alg is not ES256")]
    WrongAlg,
    #[error("the approval token's typ is not {TOKEN_TYP}")]
    WrongTyp,
    #[error("the approval token's signing key is unknown")]
    UnknownKid,
    #[error("the approval token was signed with a key marked compromised")]
    KeyCompromised,
    #[error("the approval token's signature is invalid")]
    BadSignature,
    #[error("the approval token was issued by another console")]
    WrongIssuer,
    #[error("the approval token is not meant for commit")]
    WrongAudience,
    #[error("the approval token is not valid yet")]
    NotYetValid,
    #[error("the approval token has expired")]
    Expired,
    #[error("the approval token is for another proposal")]
    WrongProposal,
    #[error("the approval token is for another tenant")]
    WrongTenant,
    #[error("the approval token is for another agent")]
    WrongAgent,
}

impl TokenRejection {
    /// The `reason` of the 401 `approval_token_invalid` answer.
    pub fn reason(&self) -> &'static str {
        match self {
            TokenRejection::Malformed => "malformed",
            TokenRejection::WrongAlg => "wrong_alg",
            TokenRejection::WrongTyp => "wrong_typ",
            TokenRejection::UnknownKid => "unknown_kid",
            TokenRejection::KeyCompromised => "key_compromised",
            TokenRejection::BadSignature => "bad_signature",
            TokenRejection::WrongIssuer => "wrong_issuer",
            TokenRejection::WrongAudience => "wrong_audience",
            TokenRejection::NotYetValid => "not_yet_valid",
            TokenRejection::Expired => "expired",
            TokenRejection::WrongProposal => "wrong_proposal",
            TokenRejection::WrongTenant => "wrong_tenant",
            TokenRejection::WrongAgent => "wrong_agent",
        }
    }
}

/// `tok_` + 26 Crockford base32 characters: 130 bits from the OS RNG
/// (each byte's low 5 bits; 256 is a multiple of 32, so unbiased).
fn new_jti() -> String {
    let mut bytes = [0u8; 26];
    OsRng.fill_bytes(&mut bytes);
    let mut jti = String::with_capacity(JTI_PREFIX.len() + bytes.len());
    jti.push_str(JTI_PREFIX);
    jti.extend(bytes.iter().map(|b| crate::domain::ids::crockford_char(*b)));
    jti
}

/// One part of a compact JWS: base64url (no padding) of a JSON object.
pub(crate) fn decode_json_object(part: &str) -> Option<Map<String, Value>> {
    let bytes = URL_SAFE_NO_PAD.decode(part).ok()?;
    match serde_json::from_slice(&bytes).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// The protected header of a token or a receipt (in `jsonwebtoken`'s
/// member order, which tokens minted before used).
#[derive(Serialize)]
struct JwsHeader<'a> {
    typ: &'a str,
    alg: &'a str,
    kid: &'a str,
}

impl KeyStore {
    /// Signs an approval token with the active key. Lifetime: `nbf = iat =
    /// now`, `exp = now + ttl_secs`.
    pub fn mint(&self, req: &MintRequest<'_>) -> Result<(String, ApprovalClaims), TokenError> {
        if req.ttl_secs == 0 || req.ttl_secs > MAX_TTL_SECS {
            return Err(TokenError::InvalidTtl { ttl_secs: req.ttl_secs });
        }
        self.follow_rotation();
        let key = self.active_key();
        let iat = req.now.timestamp();
        let claims = ApprovalClaims {
            iss: req.issuer.to_owned(),
            aud: AUDIENCE.to_owned(),
            sub: req.sub.to_owned(),
            approvers: req.approvers.to_vec(),
            tid: req.tenant_id.to_owned(),
            pid: req.proposal_id.to_owned(),
            rh: req.request_hash.to_owned(),
            azp: req.agent_id.to_owned(),
            amr: req.amr.to_vec(),
            iat,
            nbf: iat,
            exp: iat + req.ttl_secs as i64,
            jti: new_jti(),
            delegations: req.delegations.to_vec(),
        };
        let header = JwsHeader { alg: ALG, typ: TOKEN_TYP, kid: &key.kid };
        let token = key.sign_compact(&header, &claims).map_err(TokenError::Signing)?;
        Ok((token, claims))
    }

    /// Signs `claims` as an ES256 compact JWS of type `typ` with the active
    /// key (low-S, as the tokens): the receipts' signature.
    pub fn sign_jws(&self, typ: &str, claims: &impl serde::Serialize) -> Result<String, TokenError> {
        self.follow_rotation();
        let key = self.active_key();
        key.sign_compact(&JwsHeader { alg: ALG, typ, kid: &key.kid }, claims).map_err(TokenError::Signing)
    }

    /// SPEC §6 checks 1–3. The `rh` comparison, `jti` single use and the
    /// rest are the caller's.
    pub fn verify(&self, token: &str, expected: &Expected<'_>) -> Result<ApprovalClaims, TokenRejection> {
        use TokenRejection as R;
        if token.len() > MAX_TOKEN_BYTES {
            return Err(R::Malformed);
        }
        let mut parts = token.split('.');
        let (Some(header_b64), Some(payload_b64), Some(signature_b64), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(R::Malformed);
        };
        let header = decode_json_object(header_b64).ok_or(R::Malformed)?;
        let payload = decode_json_object(payload_b64).ok_or(R::Malformed)?;
        let Ok(signature) = URL_SAFE_NO_PAD.decode(signature_b64) else {
            return Err(R::Malformed);
        };

        if header.get("alg").and_then(Value::as_str) != Some(ALG) {
            return Err(R::WrongAlg);
        }
        if header.get("typ").and_then(Value::as_str) != Some(TOKEN_TYP) {
            return Err(R::WrongTyp);
        }
        let kid = header.get("kid").and_then(Value::as_str).ok_or(R::UnknownKid)?;
        if self.is_compromised(kid) {
            return Err(R::KeyCompromised);
        }
        let key = match self.key(kid) {
            Some(key) => key,
            None if self.reload_for_unknown_kid() => self.key(kid).ok_or(R::UnknownKid)?,
            None => return Err(R::UnknownKid),
        };
        let signing_input = &token[..header_b64.len() + 1 + payload_b64.len()];
        // Hard-coded ES256 with an EC public key: the header cannot pick either.
        if !key.verifies(signing_input.as_bytes(), &signature) {
            return Err(R::BadSignature);
        }

        let claims: ApprovalClaims = serde_json::from_value(Value::Object(payload)).map_err(|_| R::Malformed)?;
        let now = expected.now.timestamp();
        if claims.iss != expected.issuer {
            return Err(R::WrongIssuer);
        }
        if claims.aud != AUDIENCE {
            return Err(R::WrongAudience);
        }
        if claims.nbf > now.saturating_add(LEEWAY_SECS) {
            return Err(R::NotYetValid);
        }
        if now > claims.exp.saturating_add(LEEWAY_SECS) {
            return Err(R::Expired);
        }
        if claims.pid != expected.proposal_id {
            return Err(R::WrongProposal);
        }
        if claims.tid != expected.tenant_id {
            return Err(R::WrongTenant);
        }
        if claims.azp != expected.agent_id {
            return Err(R::WrongAgent);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::approval::keys::jwk_thumbprint;
    use jsonwebtoken::{Algorithm, EncodingKey};
    use p256::elliptic_curve::Generate;
    use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
    use p256::{PublicKey, SecretKey};
    use serde_json::json;
    use std::path::Path;
    use std::time::Duration;

    const ISS: &str = "https://console.example";

    fn t0() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-01T12:00:00Z").unwrap().with_timezone(&Utc)
    }

    fn secs(n: i64) -> chrono::Duration {
        chrono::Duration::seconds(n)
    }

    fn setup() -> (tempfile::TempDir, KeyStore) {
        let tmp = tempfile::tempdir().unwrap();
        let store = KeyStore::open_or_create(tmp.path()).unwrap();
        (tmp, store)
    }

    fn approvers() -> Vec<String> {
        vec!["usr_alice".into(), "usr_bob".into()]
    }

    fn amr() -> Vec<String> {
        vec!["passkey".into(), "pwd".into()]
    }

    fn mint_with(store: &KeyStore, issuer: &str, ttl_secs: u64) -> Result<(String, ApprovalClaims), TokenError> {
        let (approvers, amr) = (approvers(), amr());
        store.mint(&MintRequest {
            issuer,
            sub: "usr_bob",
            approvers: &approvers,
            tenant_id: "ten_1",
            proposal_id: "prop_1",
            request_hash: "sha256:0f1e2d",
            agent_id: "agt_1",
            amr: &amr,
            delegations: &[],
            now: t0(),
            ttl_secs,
        })
    }

    fn mint(store: &KeyStore) -> (String, ApprovalClaims) {
        mint_with(store, ISS, 300).unwrap()
    }

    fn expected(now: DateTime<Utc>) -> Expected<'static> {
        Expected { issuer: ISS, proposal_id: "prop_1", tenant_id: "ten_1", agent_id: "agt_1", now }
    }

    fn reject(store: &KeyStore, token: &str) -> &'static str {
        store.verify(token, &expected(t0())).map(|c| panic!("accepted: {c:?}")).unwrap_err().reason()
    }

    fn b64json(v: &Value) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
    }

    fn is_low_s(signature: &[u8]) -> bool {
        p256::ecdsa::Signature::from_slice(signature).is_ok_and(|s| s.normalize_s() == s)
    }

    /// The token with its signature in the low-S form (the other is refused).
    fn with_low_s(token: String) -> String {
        let (input, signature_b64) = token.rsplit_once('.').unwrap();
        let signature = p256::ecdsa::Signature::from_slice(&URL_SAFE_NO_PAD.decode(signature_b64).unwrap()).unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.normalize_s().to_bytes()))
    }

    /// (header, claims, signature) of a compact JWS.
    fn parts(token: &str) -> (Value, Value, String) {
        let p: Vec<&str> = token.split('.').collect();
        assert_eq!(p.len(), 3);
        let dec = |s: &str| serde_json::from_slice(&URL_SAFE_NO_PAD.decode(s).unwrap()).unwrap();
        (dec(p[0]), dec(p[1]), p[2].to_string())
    }

    fn sign(key: &EncodingKey, alg: Algorithm, header: &Value, claims: &Value) -> String {
        let input = format!("{}.{}", b64json(header), b64json(claims));
        let sig = jsonwebtoken::crypto::sign(input.as_bytes(), key, alg).unwrap();
        // Signed as the server signs: ES256 in its low-s form.
        if alg == Algorithm::ES256 {
            with_low_s(format!("{input}.{sig}"))
        } else {
            format!("{input}.{sig}")
        }
    }

    /// Signs arbitrary header/claims with the store's own active key.
    fn resign(store: &KeyStore, header: &Value, claims: &Value) -> String {
        sign(&store.active_key().encoding, Algorithm::ES256, header, claims)
    }

    fn foreign_key() -> (SecretKey, EncodingKey) {
        let secret = SecretKey::generate();
        let der = secret.to_pkcs8_der().unwrap();
        let key = EncodingKey::from_ec_der(der.as_bytes());
        (secret, key)
    }

    fn public_key_of(store: &KeyStore) -> PublicKey {
        let jwks = store.jwks();
        let jwk = &jwks["keys"][0];
        let mut sec1 = vec![4u8];
        sec1.extend(URL_SAFE_NO_PAD.decode(jwk["x"].as_str().unwrap()).unwrap());
        sec1.extend(URL_SAFE_NO_PAD.decode(jwk["y"].as_str().unwrap()).unwrap());
        PublicKey::from_sec1_bytes(&sec1).unwrap()
    }

    #[test]
    fn valid_token_round_trips_all_claims() {
        let (_tmp, store) = setup();
        let (token, minted) = mint(&store);
        let verified = store.verify(&token, &expected(t0())).unwrap();
        assert_eq!(verified, minted);
        let want = ApprovalClaims {
            iss: ISS.into(),
            aud: AUDIENCE.into(),
            sub: "usr_bob".into(),
            approvers: approvers(),
            tid: "ten_1".into(),
            pid: "prop_1".into(),
            rh: "sha256:0f1e2d".into(),
            azp: "agt_1".into(),
            amr: amr(),
            iat: t0().timestamp(),
            nbf: t0().timestamp(),
            exp: t0().timestamp() + 300,
            jti: minted.jti.clone(),
            delegations: Vec::new(),
        };
        assert_eq!(verified, want);
        let (_, payload, _) = parts(&token);
        assert_eq!(serde_json::from_value::<ApprovalClaims>(payload).unwrap(), want);
    }

    #[test]
    fn jti_is_prefixed_random_base32() {
        let (_tmp, store) = setup();
        let (_, a) = mint(&store);
        let (_, b) = mint(&store);
        assert_ne!(a.jti, b.jti);
        for jti in [&a.jti, &b.jti] {
            let body = jti.strip_prefix("tok_").unwrap();
            assert_eq!(body.len(), 26);
            assert!(body.bytes().all(|c| crate::domain::ids::CROCKFORD.contains(&c)), "{jti}");
        }
    }

    #[test]
    fn header_has_es256_typ_and_kid() {
        let (_tmp, store) = setup();
        let (token, _) = mint(&store);
        let (header, _, _) = parts(&token);
        assert_eq!(header, json!({ "alg": "ES256", "typ": TOKEN_TYP, "kid": store.active_kid() }));
    }

    #[test]
    fn tokens_and_receipts_verify_with_another_implementation_and_are_low_s() {
        // Signed with `ring`; checked here with RustCrypto's `p256` against
        // the published JWK, as an outside verifier would.
        use p256::ecdsa::signature::Verifier;
        let (_tmp, store) = setup();
        let jwk = &store.jwks()["keys"][0];
        let mut sec1 = vec![4u8];
        for c in ["x", "y"] {
            sec1.extend(URL_SAFE_NO_PAD.decode(jwk[c].as_str().unwrap()).unwrap());
        }
        let public = p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1).unwrap();
        for _ in 0..16 {
            for jws in [mint(&store).0, store.sign_jws("countersign-receipt+jws", &json!({"n": 1})).unwrap()] {
                let (input, sig) = jws.rsplit_once('.').unwrap();
                let sig = URL_SAFE_NO_PAD.decode(sig).unwrap();
                assert!(is_low_s(&sig), "one valid string per token");
                let sig = p256::ecdsa::Signature::from_slice(&sig).unwrap();
                public.verify(input.as_bytes(), &sig).expect("verifies under the published key");
            }
        }
    }

    #[test]
    fn hand_signed_control_token_verifies() {
        // The forging helpers below are sound: unmodified, they produce a valid token.
        let (_tmp, store) = setup();
        let (token, claims) = mint(&store);
        let (header, payload, _) = parts(&token);
        assert_eq!(store.verify(&resign(&store, &header, &payload), &expected(t0())), Ok(claims));
    }

    #[test]
    fn flipped_signature_byte_is_rejected() {
        let (_tmp, store) = setup();
        let (token, _) = mint(&store);
        let (input, sig) = token.rsplit_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(sig).unwrap();
        assert_eq!(bytes.len(), 64, "raw r||s");
        bytes[40] ^= 0x01;
        let tampered = format!("{input}.{}", URL_SAFE_NO_PAD.encode(&bytes));
        assert_eq!(reject(&store, &tampered), "bad_signature");
        let truncated = format!("{input}.{}", URL_SAFE_NO_PAD.encode(&bytes[..63]));
        assert_eq!(reject(&store, &truncated), "bad_signature");
    }

    #[test]
    fn changed_claims_under_the_old_signature_are_rejected() {
        let (_tmp, store) = setup();
        let (token, _) = mint(&store);
        let (header, mut claims, sig) = parts(&token);
        claims["rh"] = json!("sha256:another-request");
        claims["exp"] = json!(t0().timestamp() + 86_400);
        let tampered = format!("{}.{}.{sig}", b64json(&header), b64json(&claims));
        assert_eq!(reject(&store, &tampered), "bad_signature");
    }

    #[test]
    fn alg_none_is_rejected() {
        let (_tmp, store) = setup();
        let (token, _) = mint(&store);
        let (mut header, claims, sig) = parts(&token);
        header["alg"] = json!("none");
        let unsigned = format!("{}.{}.", b64json(&header), b64json(&claims));
        assert_eq!(reject(&store, &unsigned), "wrong_alg");
        let with_old_sig = format!("{}.{}.{sig}", b64json(&header), b64json(&claims));
        assert_eq!(reject(&store, &with_old_sig), "wrong_alg");
    }

    #[test]
    fn hs256_signed_with_the_public_key_is_rejected() {
        let (_tmp, store) = setup();
        let (token, _) = mint(&store);
        let (mut header, claims, _) = parts(&token);
        header["alg"] = json!("HS256");
        let public = public_key_of(&store);
        let pem = public.to_public_key_pem(LineEnding::LF).unwrap();
        let der = public.to_public_key_der().unwrap();
        let jwk = serde_json::to_vec(&store.jwks()["keys"][0]).unwrap();
        let sec1 = public.to_sec1_bytes();
        for secret in [pem.as_bytes(), der.as_bytes(), &jwk[..], &sec1[..]] {
            let hmac_key = EncodingKey::from_secret(secret).unwrap();
            let forged = sign(&hmac_key, Algorithm::HS256, &header, &claims);
            // The forgery is a well-formed HS256 token under that secret …
            let (input, sig) = forged.rsplit_once('.').unwrap();
            let hmac_check = jsonwebtoken::DecodingKey::from_secret(secret).unwrap();
            assert!(jsonwebtoken::crypto::verify(sig, input.as_bytes(), &hmac_check, Algorithm::HS256).unwrap());
            // … and is refused before any key is involved.
            assert_eq!(reject(&store, &forged), "wrong_alg");
        }
    }

    #[test]
    fn every_other_alg_is_rejected_even_with_a_valid_es256_signature() {
        let (_tmp, store) = setup();
        let (token, _) = mint(&store);
        let (header, claims, _) = parts(&token);
        let algs = [
            json!("none"),
            json!("None"),
            json!("NONE"),
            json!("HS256"),
            json!("HS384"),
            json!("HS512"),
            json!("RS256"),
            json!("PS256"),
            json!("ES384"),
            json!("ES512"),
            json!("EdDSA"),
            json!("es256"),
            json!("ES256K"),
            json!("ES256 "),
            json!(""),
            json!(null),
            json!(256),
            json!(["ES256"]),
        ];
        for alg in algs {
            let mut h = header.clone();
            h["alg"] = alg.clone();
            assert_eq!(reject(&store, &resign(&store, &h, &claims)), "wrong_alg", "alg {alg}");
        }
        let mut h = header.clone();
        h.as_object_mut().unwrap().remove("alg");
        assert_eq!(reject(&store, &resign(&store, &h, &claims)), "wrong_alg");
    }

    #[test]
    fn wrong_typ_is_rejected() {
        let (_tmp, store) = setup();
        let (token, _) = mint(&store);
        let (header, claims, _) = parts(&token);
        for typ in [json!("JWT"), json!("at+jwt"), json!("Countersign-Approval+JWT"), json!(null)] {
            let mut h = header.clone();
            h["typ"] = typ.clone();
            assert_eq!(reject(&store, &resign(&store, &h, &claims)), "wrong_typ", "typ {typ}");
        }
        let mut h = header.clone();
        h.as_object_mut().unwrap().remove("typ");
        assert_eq!(reject(&store, &resign(&store, &h, &claims)), "wrong_typ");
    }

    #[test]
    fn foreign_key_claiming_our_kid_is_rejected() {
        let (_tmp, store) = setup();
        let (token, _) = mint(&store);
        let (header, claims, _) = parts(&token);
        let (_, foreign) = foreign_key();
        let forged = sign(&foreign, Algorithm::ES256, &header, &claims);
        assert_eq!(reject(&store, &forged), "bad_signature");
    }

    #[test]
    fn unknown_or_missing_kid_is_rejected() {
        let (_tmp, store) = setup();
        let (token, _) = mint(&store);
        let (header, claims, _) = parts(&token);
        let (secret, foreign) = foreign_key();
        let point = secret.public_key().to_sec1_bytes();
        let kid = jwk_thumbprint(&URL_SAFE_NO_PAD.encode(&point[1..33]), &URL_SAFE_NO_PAD.encode(&point[33..]));
        let mut h = header.clone();
        h["kid"] = json!(kid);
        assert_eq!(reject(&store, &sign(&foreign, Algorithm::ES256, &h, &claims)), "unknown_kid");
        // Our own signature, but a kid we do not have, or none at all.
        for kid in [json!("no-such-kid"), json!(null), json!(7)] {
            h["kid"] = kid;
            assert_eq!(reject(&store, &resign(&store, &h, &claims)), "unknown_kid");
        }
        h.as_object_mut().unwrap().remove("kid");
        assert_eq!(reject(&store, &resign(&store, &h, &claims)), "unknown_kid");
    }

    #[test]
    fn expiry_uses_the_injected_clock_with_30s_leeway() {
        let (_tmp, store) = setup();
        let (token, claims) = mint(&store);
        let exp = t0() + secs(300);
        assert_eq!(claims.exp, exp.timestamp());
        for ok in [0, 29, 30] {
            assert!(store.verify(&token, &expected(exp + secs(ok))).is_ok(), "exp + {ok}s");
        }
        for late in [31, 3600] {
            let err = store.verify(&token, &expected(exp + secs(late))).unwrap_err();
            assert_eq!(err.reason(), "expired", "exp + {late}s");
        }
    }

    #[test]
    fn not_yet_valid_uses_the_injected_clock_with_30s_leeway() {
        let (_tmp, store) = setup();
        let (token, _) = mint(&store);
        for ok in [0, 29, 30] {
            assert!(store.verify(&token, &expected(t0() - secs(ok))).is_ok(), "nbf - {ok}s");
        }
        for early in [31, 3600] {
            let err = store.verify(&token, &expected(t0() - secs(early))).unwrap_err();
            assert_eq!(err.reason(), "not_yet_valid", "nbf - {early}s");
        }
        // A signed token whose nbf lies ahead of its iat.
        let (header, mut claims, _) = parts(&token);
        claims["nbf"] = json!(t0().timestamp() + 60);
        assert_eq!(reject(&store, &resign(&store, &header, &claims)), "not_yet_valid");
    }

    #[test]
    fn wrong_issuer_is_rejected() {
        let (_tmp, store) = setup();
        let (token, _) = mint_with(&store, "https://other-console.example", 300).unwrap();
        assert_eq!(reject(&store, &token), "wrong_issuer");
        let (token, _) = mint(&store);
        let other = Expected { issuer: "https://console.example/", ..expected(t0()) };
        assert_eq!(store.verify(&token, &other).unwrap_err().reason(), "wrong_issuer");
    }

    #[test]
    fn wrong_audience_is_rejected() {
        let (_tmp, store) = setup();
        let (token, _) = mint(&store);
        let (header, mut claims, _) = parts(&token);
        for aud in ["countersign:approve", "https://console.example", ""] {
            claims["aud"] = json!(aud);
            assert_eq!(reject(&store, &resign(&store, &header, &claims)), "wrong_audience");
        }
    }

    #[test]
    fn wrong_proposal_tenant_or_agent_is_rejected() {
        let (_tmp, store) = setup();
        let (token, _) = mint(&store);
        let base = expected(t0());
        let cases = [
            (Expected { proposal_id: "prop_2", ..base }, "wrong_proposal"),
            (Expected { tenant_id: "ten_2", ..base }, "wrong_tenant"),
            (Expected { agent_id: "agt_2", ..base }, "wrong_agent"),
        ];
        for (exp, reason) in cases {
            assert_eq!(store.verify(&token, &exp).unwrap_err().reason(), reason);
        }
    }

    #[test]
    fn malformed_tokens_are_rejected() {
        let (_tmp, store) = setup();
        let (token, _) = mint(&store);
        let (header, claims, sig) = parts(&token);
        let (h, c) = (b64json(&header), b64json(&claims));
        let not_json = URL_SAFE_NO_PAD.encode("not json");
        let array = b64json(&json!(["ES256"]));
        let cases = [
            String::new(),
            "abc".into(),
            format!("{h}.{c}"),
            format!("{h}.{c}.{sig}.{sig}"),
            format!("{h}.{c}.{sig}."),
            format!("!!.{c}.{sig}"),
            format!("{h}=.{c}.{sig}"),
            format!("{not_json}.{c}.{sig}"),
            format!("{h}.{not_json}.{sig}"),
            format!("{array}.{c}.{sig}"),
            format!("{h}.{array}.{sig}"),
            format!("{h}.{c}.+{}", &sig[1..]),
            format!("{h}.{c}.{sig}{}", "A".repeat(MAX_TOKEN_BYTES)),
        ];
        for case in &cases {
            assert_eq!(reject(&store, case), "malformed", "{case:.80}");
        }
        // Validly signed, but a required claim is missing or mistyped.
        let mut missing = claims.clone();
        missing.as_object_mut().unwrap().remove("azp");
        assert_eq!(reject(&store, &resign(&store, &header, &missing)), "malformed");
        let mut aud_array = claims.clone();
        aud_array["aud"] = json!([AUDIENCE]);
        assert_eq!(reject(&store, &resign(&store, &header, &aud_array)), "malformed");
    }

    #[test]
    fn ttl_outside_1_to_900_is_refused() {
        let (_tmp, store) = setup();
        for ttl in [0, 901, 3600, u64::MAX] {
            assert!(
                matches!(mint_with(&store, ISS, ttl), Err(TokenError::InvalidTtl { ttl_secs }) if ttl_secs == ttl),
                "ttl {ttl}"
            );
        }
        let (_, claims) = mint_with(&store, ISS, 900).unwrap();
        assert_eq!(claims.exp - claims.iat, 900);
        let (_, claims) = mint_with(&store, ISS, 1).unwrap();
        assert_eq!(claims.exp - claims.iat, 1);
    }

    #[test]
    fn rotation_keeps_old_tokens_valid_and_signs_with_the_new_key() {
        let (tmp, store) = setup();
        let old_kid = store.active_kid();
        let (old_token, _) = mint(&store);
        let new_kid = KeyStore::rotate(tmp.path()).unwrap();
        assert_ne!(new_kid, old_kid);
        store.reload().unwrap();
        assert_eq!(store.active_kid(), new_kid);
        let (new_token, _) = mint(&store);
        assert_eq!(parts(&new_token).0["kid"], json!(new_kid));
        assert!(store.verify(&old_token, &expected(t0())).is_ok());
        assert!(store.verify(&new_token, &expected(t0())).is_ok());
        let jwks = store.jwks();
        let mut listed: Vec<&str> =
            jwks["keys"].as_array().unwrap().iter().map(|k| k["kid"].as_str().unwrap()).collect();
        listed.sort();
        let mut want = vec![old_kid.as_str(), new_kid.as_str()];
        want.sort();
        assert_eq!(listed, want);
    }

    fn cli_rotates_and_mints(data_dir: &Path) -> (String, String) {
        // Another process: the CLI rotates; another store instance mints.
        let kid = KeyStore::rotate(data_dir).unwrap();
        let other = KeyStore::open_or_create(data_dir).unwrap();
        assert_eq!(other.active_kid(), kid);
        let (token, _) = mint(&other);
        (kid, token)
    }

    #[test]
    fn key_from_another_process_is_picked_up_by_verify() {
        let (tmp, server) = setup();
        let (kid, token) = cli_rotates_and_mints(tmp.path());
        assert!(!server.kids().contains(&kid));
        assert!(server.verify(&token, &expected(t0())).is_ok());
        assert!(server.kids().contains(&kid));
    }

    #[test]
    fn reload_on_unknown_kid_is_rate_limited() {
        let tmp = tempfile::tempdir().unwrap();
        let server = KeyStore::open_with_interval(tmp.path(), Duration::from_secs(3600)).unwrap();
        let (token, _) = mint(&server);
        let (header, claims, _) = parts(&token);
        let mut h = header.clone();
        h["kid"] = json!("made-up");
        assert_eq!(reject(&server, &resign(&server, &h, &claims)), "unknown_kid"); // spends the reload
        let (kid, token) = cli_rotates_and_mints(tmp.path());
        assert_eq!(reject(&server, &token), "unknown_kid", "no second reload within the interval");
        assert!(!server.kids().contains(&kid));
        server.reload().unwrap();
        assert!(server.verify(&token, &expected(t0())).is_ok());
    }

    #[test]
    fn mint_follows_a_rotation_by_another_process() {
        let tmp = tempfile::tempdir().unwrap();
        let server = KeyStore::open_with_interval(tmp.path(), Duration::ZERO).unwrap();
        let (before, _) = mint(&server);
        let new_kid = KeyStore::rotate(tmp.path()).unwrap();
        let (after, _) = mint(&server);
        assert_eq!(parts(&after).0["kid"], json!(new_kid));
        assert_eq!(server.active_kid(), new_kid);
        assert!(server.verify(&before, &expected(t0())).is_ok());
    }

    #[test]
    fn a_token_has_one_valid_string_the_high_s_twin_is_refused() {
        use p256::ecdsa::Signature;
        let (_tmp, store) = setup();
        for _ in 0..20 {
            let (token, _) = mint(&store);
            let (input, sig_b64) = token.rsplit_once('.').unwrap();
            let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(sig_b64).unwrap()).unwrap();
            assert_eq!(sig.normalize_s(), sig, "minted low-s");
            // (r, n - s) is the same signature to ECDSA, a different string to us.
            let (r, s) = sig.split_scalars();
            use p256::elliptic_curve::PrimeField;
            let twin = Signature::from_scalars(r.to_repr(), (-*s).to_repr()).unwrap();
            let twin_token = format!("{input}.{}", URL_SAFE_NO_PAD.encode(twin.to_bytes()));
            assert_ne!(twin_token, token);
            assert_eq!(reject(&store, &twin_token), "bad_signature");
            assert!(store.verify(&token, &expected(t0())).is_ok());
        }
    }

    #[test]
    fn rejection_reasons_are_stable() {
        use TokenRejection as R;
        let all = [
            (R::Malformed, "malformed"),
            (R::WrongAlg, "wrong_alg"),
            (R::WrongTyp, "wrong_typ"),
            (R::UnknownKid, "unknown_kid"),
            (R::BadSignature, "bad_signature"),
            (R::WrongIssuer, "wrong_issuer"),
            (R::WrongAudience, "wrong_audience"),
            (R::NotYetValid, "not_yet_valid"),
            (R::Expired, "expired"),
            (R::WrongProposal, "wrong_proposal"),
            (R::WrongTenant, "wrong_tenant"),
            (R::WrongAgent, "wrong_agent"),
        ];
        for (rejection, reason) in all {
            assert_eq!(rejection.reason(), reason);
        }
    }
}
