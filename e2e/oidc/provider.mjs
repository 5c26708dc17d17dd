// A real OpenID provider for the tests: the certified `oidc-provider`
// package, on loopback, with one confidential client and static accounts.
// Started by the Rust API tests (server/tests/api/oidc.rs) and by the
// browser test (e2e/tests/sso.spec.mjs); never part of the product.
//
//   node e2e/oidc/provider.mjs
//
// Environment (all optional):
//   OIDC_PORT           port on 127.0.0.1 (default 0: a free one)
//   OIDC_ISSUER         the issuer it names itself (default http://localhost:<port>);
//                       a test gives another one to play a provider whose
//                       discovery does not match the configured issuer
//   OIDC_CLIENT_ID      default "countersign"
//   OIDC_CLIENT_SECRET  default "test-client-secret"
//   OIDC_REDIRECT_URIS  comma-separated (default http://127.0.0.1:1/auth/oidc/callback)
//
// Once listening it prints one line, `oidc provider listening on <url>`,
// and nothing else on stdout. It stops when its standard input closes (so a
// test that dies takes it along) or on SIGTERM.
//
// Sign-in goes through the provider's own development pages
// (`devInteractions`): any password is accepted for a known account; the
// account id is the subject (`sub`). There is no shortcut for the server
// under test: it sees exactly what a real provider would send.

import { createServer } from 'node:http';
import Provider from 'oidc-provider';

/** sub -> claims. `tenant`, `roles` and `groups` are what countersign's tests map. */
const ACCOUNTS = {
  'idp-ana': { name: 'Ana Approver', email: 'ana@acme.example', tenant: 'acme', roles: ['approver'] },
  'idp-ben': { name: 'Ben Approver', email: 'ben@acme.example', tenant: 'acme', roles: ['approver'] },
  // An admin and approver in the registry whom the provider knows as an approver only.
  'idp-gus': { name: 'Gus', email: 'gus@globex.example', tenant: 'globex', roles: ['approver'] },
  // Linked to an acme user, but the provider says another tenant.
  'idp-maya': { name: 'Maya', email: 'maya@acme.example', tenant: 'globex', roles: ['approver'] },
  // Carries the e-mail address of a linked user, but is nobody's subject.
  'idp-stranger': { name: 'Stranger', email: 'ana@acme.example', tenant: 'acme', roles: ['approver', 'admin'] },
  // In the registry as a viewer only; the provider's groups grant the rest
  // where the tenant maps them (`groups_claim`, server/tests/api/oidc.rs).
  'idp-olga': { name: 'Olga', email: 'olga@acme.example', tenant: 'acme', roles: ['approver', 'viewer'], groups: ['Finance Approvers', 'Everyone'] },
  // The demo's approver (e2e/tests/sso.spec.mjs).
  'idp-demo-maya': { name: 'Maya (demo)', email: 'maya@demo.example', tenant: 'demo', roles: ['approver'] },
};

const port = Number(process.env.OIDC_PORT || 0);
const clientId = process.env.OIDC_CLIENT_ID || 'countersign';
const clientSecret = process.env.OIDC_CLIENT_SECRET || 'test-client-secret';
const redirectUris = (process.env.OIDC_REDIRECT_URIS || 'http://127.0.0.1:1/auth/oidc/callback').split(',');

// Listen first (the issuer names the port), then mount the provider.
let handler = (req, res) => { res.statusCode = 503; res.end(); };
const server = createServer((req, res) => handler(req, res));
await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
const bound = server.address().port;
const issuer = process.env.OIDC_ISSUER || `http://localhost:${bound}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: redirectUris,
    response_types: ['code'],
    grant_types: ['authorization_code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  async findAccount(ctx, sub) {
    const account = ACCOUNTS[sub];
    if (!account) return undefined;
    return { accountId: sub, async claims() { return { sub, ...account }; } };
  },
  // `countersign` is the scope countersign asks for; its claims go into
  // the ID token (conformIdTokenClaims off), as many providers do.
  claims: {
    openid: ['sub'],
    email: ['email'],
    profile: ['name'],
    countersign: ['tenant', 'roles', 'groups'],
  },
  scopes: ['openid', 'email', 'profile', 'countersign'],
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  // Fixed keys for the test provider's own cookies (not secrets of anything real).
  cookies: { keys: ['countersign-test-provider-cookie-key'] },
  ttl: { AuthorizationCode: 60, IdToken: 300, AccessToken: 300, Interaction: 600, Session: 600, Grant: 600 },
});
// Plain http on loopback: no proxy headers to trust.
provider.proxy = false;
handler = provider.callback();

process.stdout.write(`oidc provider listening on http://127.0.0.1:${bound} issuer ${issuer}\n`);

const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.resume();
