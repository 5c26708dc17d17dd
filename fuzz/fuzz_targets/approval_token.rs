//! Fuzz target: the approval-token verifier (`KeyStore::verify`, the first
//! step of every commit).
//!
//! One key store is built once per process around a fixed P-256 key (so a
//! crashing input reproduces), and a few genuine tokens are minted with
//! `KeyStore::mint`. The first input byte picks the mode:
//!
//! - even: the rest of the input, as text, is the token (arbitrary bytes);
//! - odd: the rest drives structure-aware mutations of a genuine token: JSON
//!   edits of its header and claims (alg, typ, kid, every claim, duplicate
//!   members), signature edits (bit flips, truncation, the (r, n - s) twin,
//!   DER form), other base64 alphabets and padding, stray characters, an
//!   optional re-signature with our key or a foreign one, and the commit's
//!   expectation (proposal, tenant, agent, issuer, clock).
//!
//! Invariants (a panic or a violation is a crash):
//!
//! - verification never panics;
//! - an accepted token carries exactly the signature `mint` makes for its
//!   signing input (ECDSA here is deterministic, RFC 6979, and minted in its
//!   low-s form): no other encoding or signature of the same content is
//!   accepted. (This target found the (r, n - s) twin being accepted; fixed
//!   in `token.rs`, `a_token_has_one_valid_string_the_high_s_twin_is_refused`.)
//! - an accepted token has `alg` ES256, our `typ` and our `kid`, and claims
//!   that meet the expectation: issuer, audience, proposal, tenant, agent,
//!   `nbf` and `exp` within the 30 s leeway of the caller's clock;
//! - a mutated token that was not re-signed is accepted only when its
//!   signing input is a genuine token's, and then with that token's claims;
//! - a genuine token, unmodified, is accepted inside its window by its own
//!   expectation.

#![no_main]

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::LazyLock;

use arbitrary::{Arbitrary, Unstructured};
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use chrono::{DateTime, Duration, Utc};
use countersign::decision::approval::keys::jwk_thumbprint;
use countersign::decision::approval::{ApprovalClaims, Expected, KeyStore, MintRequest, AUDIENCE, LEEWAY_SECS, TOKEN_TYP};
use jsonwebtoken::{Algorithm, EncodingKey};
use libfuzzer_sys::fuzz_target;
use p256::pkcs8::{EncodePrivateKey, LineEnding};
use p256::SecretKey;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

const ISS: &str = "https://console.example";
/// The order n of the P-256 group, big-endian.
const ORDER: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa,
    0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
];

struct Genuine {
    token: String,
    claims: ApprovalClaims,
}

struct Fixture {
    store: KeyStore,
    kid: String,
    /// Our private key, to recompute the one signature `mint` would make.
    ours: EncodingKey,
    foreign: EncodingKey,
    foreign_kid: String,
    genuine: Vec<Genuine>,
    t0: DateTime<Utc>,
}

fn fixed_key(label: &str) -> SecretKey {
    SecretKey::from_slice(&Sha256::digest(label.as_bytes())).expect("a SHA-256 digest is a valid P-256 scalar")
}

fn kid_of(secret: &SecretKey) -> String {
    let point = secret.public_key().to_sec1_bytes();
    jwk_thumbprint(&URL_SAFE_NO_PAD.encode(&point[1..33]), &URL_SAFE_NO_PAD.encode(&point[33..65]))
}

fn encoding_key(secret: &SecretKey) -> EncodingKey {
    EncodingKey::from_ec_der(secret.to_pkcs8_der().expect("PKCS#8").as_bytes())
}

fn write_private(path: PathBuf, contents: &[u8]) {
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path).expect("key file");
    file.write_all(contents).expect("write key file");
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let secret = fixed_key("countersign fuzz: approval signing key");
    let foreign_secret = fixed_key("countersign fuzz: a key nobody trusts");
    let kid = kid_of(&secret);

    // One key directory per process (libFuzzer may run several); those of
    // processes that have ended are removed.
    const PREFIX: &str = "countersign-fuzz-token-";
    let tmp = std::env::temp_dir();
    for entry in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.strip_prefix(PREFIX) {
            if !std::path::Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let data_dir = tmp.join(format!("{PREFIX}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::DirBuilder::new().mode(0o700).recursive(true).create(data_dir.join("keys")).expect("keys dir");
    let pem = secret.to_pkcs8_pem(LineEnding::LF).expect("PEM");
    write_private(data_dir.join("keys").join(format!("{kid}.pem")), pem.as_bytes());
    write_private(data_dir.join("keys").join("active"), format!("{kid}\n").as_bytes());
    let store = KeyStore::open_or_create(&data_dir).expect("key store");
    assert_eq!(store.active_kid(), kid);

    let t0 = DateTime::parse_from_rfc3339("2026-03-01T12:00:00Z").expect("t0").with_timezone(&Utc);
    let variants: [(&str, &[&str], &[&str], &str, &str, &str, u64); 3] = [
        ("usr_bob", &["usr_alice", "usr_bob"], &["passkey", "pwd"], "ten_1", "prop_1", "agt_1", 300),
        ("policy:auto_approve", &["policy:auto_approve"], &["policy"], "ten_1", "prop_2", "agt_1", 900),
        ("usr_zoë", &["usr_zoë"], &["slack"], "ten_2", "prop_3", "agt_2", 1),
    ];
    let genuine = variants
        .iter()
        .map(|(sub, approvers, amr, tid, pid, azp, ttl)| {
            let approvers: Vec<String> = approvers.iter().map(|s| s.to_string()).collect();
            let amr: Vec<String> = amr.iter().map(|s| s.to_string()).collect();
            let (token, claims) = store
                .mint(&MintRequest {
                    issuer: ISS,
                    sub,
                    approvers: &approvers,
                    tenant_id: tid,
                    proposal_id: pid,
                    request_hash: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                    agent_id: azp,
                    amr: &amr,
                    now: t0,
                    ttl_secs: *ttl,
                })
                .expect("mint");
            Genuine { token, claims }
        })
        .collect::<Vec<_>>();

    // `COUNTERSIGN_FUZZ_WRITE_SEEDS=DIR` writes the genuine tokens as raw-mode
    // inputs (they stay valid: the key and the clock are fixed).
    if let Some(dir) = std::env::var_os("COUNTERSIGN_FUZZ_WRITE_SEEDS") {
        for (i, g) in genuine.iter().enumerate() {
            let mut input = vec![0u8];
            input.extend_from_slice(g.token.as_bytes());
            std::fs::write(PathBuf::from(&dir).join(format!("raw-genuine-{i}")), input).expect("seed");
        }
    }

    Fixture {
        store,
        kid,
        ours: encoding_key(&secret),
        foreign: encoding_key(&foreign_secret),
        foreign_kid: kid_of(&foreign_secret),
        genuine,
        t0,
    }
});

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Member {
    Alg,
    Typ,
    Kid,
    Jku,
    Jwk,
    Crit,
    B64,
    Iss,
    Aud,
    Sub,
    Approvers,
    Tid,
    Pid,
    Rh,
    Azp,
    Amr,
    Iat,
    Nbf,
    Exp,
    Jti,
}

impl Member {
    fn name(self) -> &'static str {
        match self {
            Member::Alg => "alg",
            Member::Typ => "typ",
            Member::Kid => "kid",
            Member::Jku => "jku",
            Member::Jwk => "jwk",
            Member::Crit => "crit",
            Member::B64 => "b64",
            Member::Iss => "iss",
            Member::Aud => "aud",
            Member::Sub => "sub",
            Member::Approvers => "approvers",
            Member::Tid => "tid",
            Member::Pid => "pid",
            Member::Rh => "rh",
            Member::Azp => "azp",
            Member::Amr => "amr",
            Member::Iat => "iat",
            Member::Nbf => "nbf",
            Member::Exp => "exp",
            Member::Jti => "jti",
        }
    }
}

/// Values that are right somewhere, so edits hit the interesting cases.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Known {
    Es256,
    Hs256,
    AlgNone,
    Typ,
    Jwt,
    OurKid,
    ForeignKid,
    Iss,
    IssSlash,
    Aud,
    Prop1,
    Prop2,
    Ten1,
    Ten2,
    Agt1,
    Agt2,
    T0,
    T0PlusTtl,
    FarPast,
    FarFuture,
    OtherJti,
}

#[derive(Arbitrary, Debug, Clone)]
enum Leaf {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Known(Known),
    ArrayOfKnown(Known),
    Strings(Vec<String>),
    Object(String, Box<Leaf>),
}

impl Leaf {
    fn value(&self, fx: &Fixture) -> Value {
        match self {
            Leaf::Null => Value::Null,
            Leaf::Bool(b) => json!(b),
            Leaf::Int(i) => json!(i),
            Leaf::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number).unwrap_or(Value::Null),
            Leaf::Str(s) => json!(s),
            Leaf::Known(k) => known(fx, *k),
            Leaf::ArrayOfKnown(k) => json!([known(fx, *k)]),
            Leaf::Strings(items) => json!(items),
            Leaf::Object(name, inner) => json!({ name: inner.value(fx) }),
        }
    }
}

fn known(fx: &Fixture, k: Known) -> Value {
    let t0 = fx.t0.timestamp();
    match k {
        Known::Es256 => json!("ES256"),
        Known::Hs256 => json!("HS256"),
        Known::AlgNone => json!("none"),
        Known::Typ => json!(TOKEN_TYP),
        Known::Jwt => json!("JWT"),
        Known::OurKid => json!(fx.kid),
        Known::ForeignKid => json!(fx.foreign_kid),
        Known::Iss => json!(ISS),
        Known::IssSlash => json!(format!("{ISS}/")),
        Known::Aud => json!(AUDIENCE),
        Known::Prop1 => json!("prop_1"),
        Known::Prop2 => json!("prop_2"),
        Known::Ten1 => json!("ten_1"),
        Known::Ten2 => json!("ten_2"),
        Known::Agt1 => json!("agt_1"),
        Known::Agt2 => json!("agt_2"),
        Known::T0 => json!(t0),
        Known::T0PlusTtl => json!(t0 + 300),
        Known::FarPast => json!(i64::MIN),
        Known::FarFuture => json!(i64::MAX),
        Known::OtherJti => json!(fx.genuine[1].claims.jti),
    }
}

#[derive(Arbitrary, Debug, Clone)]
enum JsonEdit {
    Set(Member, Leaf),
    Remove(Member),
    /// Appends a second member of the same name to the JSON text.
    Duplicate(Member, Leaf),
    /// Re-serializes with whitespace: same JSON, other bytes.
    Pretty,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Segment {
    Header,
    Claims,
    Signature,
}

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq)]
enum Style {
    UrlNoPad,
    UrlPadded,
    StandardNoPad,
    StandardPadded,
    /// Canonical, but the unused low bits of the last character set.
    TrailingBits,
    /// Canonical, followed by a line break.
    Newline,
}

#[derive(Arbitrary, Debug, Clone)]
enum Edit {
    Header(JsonEdit),
    Claims(JsonEdit),
    RawBytes(Segment, Vec<u8>),
    FlipBit(Segment, u16),
    Truncate(Segment, u8),
    Append(Segment, Vec<u8>),
    /// (r, s) becomes (r, n - s).
    NegateS,
    /// The signature as an ASN.1 DER sequence instead of raw r || s.
    Der,
    Encode(Segment, Style),
}

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq)]
enum Resign {
    No,
    Ours,
    Foreign,
}

#[derive(Arbitrary, Debug, Clone)]
enum Expectation {
    Genuine,
    OtherProposal,
    OtherTenant,
    OtherAgent,
    OtherIssuer,
    Custom { iss: String, pid: String, tid: String, azp: String },
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Clock {
    Minted,
    Offset(i32),
    Min,
    Max,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum TextOp {
    Insert(u16, u8),
    Remove(u16),
}

#[derive(Arbitrary, Debug)]
struct Case {
    which: u8,
    edits: Vec<Edit>,
    resign: Resign,
    text_ops: Vec<TextOp>,
    expectation: Expectation,
    clock: Clock,
}

/// A token taken apart: decoded segments and how each is encoded.
struct Parts {
    segments: [Vec<u8>; 3],
    styles: [Style; 3],
}

impl Parts {
    fn of(token: &str) -> Parts {
        let mut it = token.split('.');
        let mut next = || URL_SAFE_NO_PAD.decode(it.next().expect("three segments")).expect("canonical base64url");
        Parts { segments: [next(), next(), next()], styles: [Style::UrlNoPad; 3] }
    }

    fn encoded(&self, i: usize) -> String {
        encode(&self.segments[i], self.styles[i])
    }

    fn signing_input(&self) -> String {
        format!("{}.{}", self.encoded(0), self.encoded(1))
    }

    fn token(&self) -> String {
        format!("{}.{}", self.signing_input(), self.encoded(2))
    }

    fn edit_json(&mut self, i: usize, edit: &JsonEdit, fx: &Fixture) {
        let Ok(Value::Object(mut map)) = serde_json::from_slice::<Value>(&self.segments[i]) else { return };
        match edit {
            JsonEdit::Set(m, leaf) => {
                map.insert(m.name().to_owned(), leaf.value(fx));
                self.segments[i] = serde_json::to_vec(&map).expect("serializes");
            }
            JsonEdit::Remove(m) => {
                map.remove(m.name());
                self.segments[i] = serde_json::to_vec(&map).expect("serializes");
            }
            JsonEdit::Duplicate(m, leaf) => {
                let text = &mut self.segments[i];
                if text.last() == Some(&b'}') {
                    text.pop();
                    let member = format!(",{}:{}}}", json!(m.name()), leaf.value(fx));
                    text.extend_from_slice(member.as_bytes());
                }
            }
            JsonEdit::Pretty => self.segments[i] = serde_json::to_vec_pretty(&map).expect("serializes"),
        }
    }
}

fn encode(bytes: &[u8], style: Style) -> String {
    match style {
        Style::UrlNoPad => URL_SAFE_NO_PAD.encode(bytes),
        Style::UrlPadded => URL_SAFE.encode(bytes),
        Style::StandardNoPad => STANDARD_NO_PAD.encode(bytes),
        Style::StandardPadded => STANDARD.encode(bytes),
        Style::Newline => format!("{}\n", URL_SAFE_NO_PAD.encode(bytes)),
        Style::TrailingBits => {
            let mut text = URL_SAFE_NO_PAD.encode(bytes);
            // 1 or 2 leftover bytes leave 4 or 2 unused bits in the last character.
            let unused = match bytes.len() % 3 {
                1 => 0b1111,
                2 => 0b11,
                _ => 0,
            };
            if let Some(last) = text.pop() {
                let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
                let index = alphabet.iter().position(|&c| c as char == last).expect("base64url character");
                text.push(alphabet[index | unused] as char);
            }
            text
        }
    }
}

/// n - s for a 32-byte big-endian s (any s; wraps like the group would not,
/// which is fine: a wrapped value is just another bad signature).
fn negate(s: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let mut d = i16::from(ORDER[i]) - i16::from(s[i]) - borrow;
        borrow = i16::from(d < 0);
        if d < 0 {
            d += 256;
        }
        out[i] = d as u8;
    }
    out
}

fn der_integer(bytes: &[u8]) -> Vec<u8> {
    let trimmed: Vec<u8> = bytes.iter().copied().skip_while(|&b| b == 0).collect();
    let mut body = if trimmed.first().is_some_and(|&b| b & 0x80 != 0) { vec![0] } else { vec![] };
    body.extend(if trimmed.is_empty() { vec![0] } else { trimmed });
    let mut out = vec![0x02, body.len() as u8];
    out.extend(body);
    out
}

/// The signature `mint` puts on `input`: deterministic ES256, low-s form.
fn minted_signature(input: &str, key: &EncodingKey) -> Vec<u8> {
    let raw = jsonwebtoken::crypto::sign(input.as_bytes(), key, Algorithm::ES256).expect("sign");
    let raw = URL_SAFE_NO_PAD.decode(raw).expect("jsonwebtoken encodes base64url");
    p256::ecdsa::Signature::from_slice(&raw).expect("64-byte r || s").normalize_s().to_bytes().to_vec()
}

fn mutate(fx: &Fixture, genuine: &Genuine, case: &Case) -> String {
    let mut parts = Parts::of(&genuine.token);
    for edit in &case.edits {
        match edit {
            Edit::Header(e) => parts.edit_json(0, e, fx),
            Edit::Claims(e) => parts.edit_json(1, e, fx),
            Edit::RawBytes(seg, bytes) => parts.segments[*seg as usize] = bytes.clone(),
            Edit::FlipBit(seg, at) => {
                let bytes = &mut parts.segments[*seg as usize];
                if !bytes.is_empty() {
                    let bit = usize::from(*at) % (bytes.len() * 8);
                    bytes[bit / 8] ^= 1 << (bit % 8);
                }
            }
            Edit::Truncate(seg, keep) => parts.segments[*seg as usize].truncate(usize::from(*keep)),
            Edit::Append(seg, bytes) => parts.segments[*seg as usize].extend_from_slice(bytes),
            Edit::NegateS => {
                let sig = &mut parts.segments[2];
                if sig.len() == 64 {
                    let s = negate(&sig[32..]);
                    sig[32..].copy_from_slice(&s);
                }
            }
            Edit::Der => {
                let sig = &parts.segments[2];
                if sig.len() == 64 {
                    let (r, s) = (der_integer(&sig[..32]), der_integer(&sig[32..]));
                    let mut der = vec![0x30, (r.len() + s.len()) as u8];
                    der.extend(r);
                    der.extend(s);
                    parts.segments[2] = der;
                }
            }
            Edit::Encode(seg, style) => parts.styles[*seg as usize] = *style,
        }
    }
    let key = match case.resign {
        Resign::No => None,
        Resign::Ours => Some(&fx.ours),
        Resign::Foreign => Some(&fx.foreign),
    };
    if let Some(key) = key {
        parts.segments[2] = minted_signature(&parts.signing_input(), key);
    }
    let mut token: Vec<char> = parts.token().chars().collect();
    for op in &case.text_ops {
        match *op {
            TextOp::Insert(at, byte) => {
                let at = usize::from(at) % (token.len() + 1);
                token.insert(at, char::from(byte));
            }
            TextOp::Remove(at) if !token.is_empty() => {
                let at = usize::from(at) % token.len();
                token.remove(at);
            }
            TextOp::Remove(_) => {}
        }
    }
    token.into_iter().collect()
}

struct Expect {
    iss: String,
    pid: String,
    tid: String,
    azp: String,
    now: DateTime<Utc>,
}

impl Expect {
    fn of(claims: &ApprovalClaims, now: DateTime<Utc>) -> Expect {
        Expect {
            iss: claims.iss.clone(),
            pid: claims.pid.clone(),
            tid: claims.tid.clone(),
            azp: claims.azp.clone(),
            now,
        }
    }

    fn as_expected(&self) -> Expected<'_> {
        Expected { issuer: &self.iss, proposal_id: &self.pid, tenant_id: &self.tid, agent_id: &self.azp, now: self.now }
    }

    fn admits(&self, claims: &ApprovalClaims) -> bool {
        let now = i128::from(self.now.timestamp());
        let leeway = i128::from(LEEWAY_SECS);
        claims.iss == self.iss
            && claims.aud == AUDIENCE
            && claims.pid == self.pid
            && claims.tid == self.tid
            && claims.azp == self.azp
            && i128::from(claims.nbf) <= now + leeway
            && now <= i128::from(claims.exp) + leeway
    }
}

fn decode_object(segment: &str) -> Map<String, Value> {
    let bytes = URL_SAFE_NO_PAD.decode(segment).expect("an accepted segment is base64url");
    match serde_json::from_slice(&bytes).expect("an accepted segment is JSON") {
        Value::Object(map) => map,
        other => panic!("an accepted segment is not an object: {other}"),
    }
}

/// Verifies and checks every invariant. `signed_anywhere` says whether the
/// token may carry a signature made outside `mint` in this process: raw
/// inputs (a corpus entry minted by an earlier run under the same fixed key)
/// and cases that re-signed their edits.
fn check(fx: &Fixture, token: &str, expect: &Expect, signed_anywhere: bool) {
    let Ok(claims) = fx.store.verify(token, &expect.as_expected()) else {
        if let Some(g) = fx.genuine.iter().find(|g| g.token == token) {
            assert!(!expect.admits(&g.claims), "a genuine token was refused inside its window");
        }
        return;
    };
    let (input, signature) = token.rsplit_once('.').expect("an accepted token has three segments");
    let ours = URL_SAFE_NO_PAD.encode(minted_signature(input, &fx.ours));
    assert_eq!(signature, ours, "accepted a token whose signature is not the one `mint` makes for its content");
    let (header, payload) = input.split_once('.').expect("an accepted token has three segments");
    let header = decode_object(header);
    assert_eq!(header.get("alg"), Some(&json!("ES256")), "accepted alg");
    assert_eq!(header.get("typ"), Some(&json!(TOKEN_TYP)), "accepted typ");
    assert_eq!(header.get("kid"), Some(&json!(fx.kid)), "accepted kid");
    let payload: ApprovalClaims =
        serde_json::from_value(Value::Object(decode_object(payload))).expect("accepted claims deserialize");
    assert_eq!(payload, claims, "returned claims are not the token's");
    assert!(expect.admits(&claims), "accepted claims outside the expectation: {claims:?}");
    if !signed_anywhere {
        let g = fx.genuine.iter().find(|g| g.token.starts_with(&format!("{input}."))).unwrap_or_else(|| {
            panic!("accepted a token nobody signed: {token}");
        });
        assert_eq!(g.claims, claims);
    }
}

fuzz_target!(|data: &[u8]| {
    let fx = &*FIXTURE;
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode & 1 == 0 {
        let token = String::from_utf8_lossy(rest);
        check(fx, &token, &Expect::of(&fx.genuine[0].claims, fx.t0), true);
        return;
    }
    let Ok(case) = Case::arbitrary_take_rest(Unstructured::new(rest)) else { return };
    let genuine = &fx.genuine[usize::from(case.which) % fx.genuine.len()];
    let token = mutate(fx, genuine, &case);
    let now = match case.clock {
        Clock::Minted => fx.t0,
        Clock::Offset(secs) => fx.t0 + Duration::seconds(i64::from(secs)),
        Clock::Min => DateTime::<Utc>::MIN_UTC,
        Clock::Max => DateTime::<Utc>::MAX_UTC,
    };
    let mut expect = Expect::of(&genuine.claims, now);
    match case.expectation {
        Expectation::Genuine => {}
        Expectation::OtherProposal => expect.pid.push('x'),
        Expectation::OtherTenant => expect.tid.push('x'),
        Expectation::OtherAgent => expect.azp.push('x'),
        Expectation::OtherIssuer => expect.iss.push('/'),
        Expectation::Custom { iss, pid, tid, azp } => expect = Expect { iss, pid, tid, azp, now },
    }
    check(fx, &token, &expect, case.resign != Resign::No);
});
