// Single sign-on in a real browser: a countersign server of its own (demo
// data, one OpenID provider configured) and the `oidc-provider` package
// (e2e/oidc/provider.mjs) on another site (localhost vs 127.0.0.1, so the
// provider's redirect back is a cross-site navigation, as in production and
// unlike the shared server of the other specs). Maya signs in through the
// provider's own pages and lands on the queue.
import { test, expect } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = process.env.COUNTERSIGN_BIN
  ? path.resolve(repo, 'e2e', process.env.COUNTERSIGN_BIN)
  : path.resolve(repo, 'target/debug/countersign');

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

/** Starts `cmd`, resolves with the child and the first stdout line matching `pattern`. */
function startAndWait(cmd, args, options, pattern) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...options, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('exit', (code) => reject(new Error(`${cmd} exited with ${code}: ${stderr}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = line.match(pattern);
      if (m) resolve({ child, match: m });
    });
  });
}

let idp;
let server;
let base;

test.beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  idp = await startAndWait('node', [path.join(repo, 'e2e/oidc/provider.mjs')], {
    env: { ...process.env, OIDC_REDIRECT_URIS: `${base}/auth/oidc/callback` },
  }, /issuer (\S+)/);
  const issuer = idp.match[1];

  const dir = mkdtempSync(path.join(tmpdir(), 'countersign-sso-'));
  const config = path.join(dir, 'countersign.toml');
  writeFileSync(config, `
public_url = "${base}"

[oidc.providers.testidp]
name = "Test IdP"
issuer = "${issuer}"
client_id = "countersign"
client_secret = "test-client-secret"
scopes = ["countersign"]
tenants = ["demo"]
tenant_claim = "tenant"
roles_claim = "roles"

[tenants.demo]
local_passwords = false
`);
  const dataDir = path.join(dir, 'data');
  server = await startAndWait(bin, ['--config', config, '--data-dir', dataDir, 'serve', '--demo', '--listen', `127.0.0.1:${port}`], {
    cwd: repo, env: { ...process.env, COUNTERSIGN_LOG: 'warn' },
  }, /^countersign listening on/);
  // Maya is linked to her identity at the provider (the demo does not link anyone).
  const links = path.join(dir, 'links.toml');
  writeFileSync(links, `
[[user]]
tenant = "demo"
username = "maya"
password = "countersign-demo"
roles = ["approver"]
approval_limit_minor = { USD = 5_000_000 }
oidc_issuer = "${issuer}"
oidc_subject = "idp-demo-maya"
`);
  execFileSync(bin, ['--config', config, '--data-dir', dataDir, 'apply', links], { cwd: repo, stdio: 'pipe' });
});

test.afterAll(() => {
  server?.child.kill();
  idp?.child.kill();
});

test('a reviewer signs in through the identity provider and lands on the queue', async ({ page }) => {
  await page.goto(`${base}/login`);
  // Hydrated: the console's router is live, and must leave this link to the server.
  await page.waitForLoadState('networkidle');
  const button = page.locator('a.button.sso', { hasText: 'Sign in with Test IdP' });
  await expect(button).toBeVisible();
  const axe = await new AxeBuilder({ page }).analyze();
  expect(axe.violations.map((v) => `${v.id}: ${v.help}`), 'the sign-in page with a provider button').toEqual([]);
  await page.screenshot({ path: 'artifacts/sso-login.png', fullPage: true });
  await button.click();

  // The provider's own sign-in page, on another site.
  await expect(page).toHaveURL(/^http:\/\/localhost:\d+\/interaction\//);
  await page.fill('input[name=login]', 'idp-demo-maya');
  await page.fill('input[name=password]', 'any password');
  await page.click('button[type=submit]');
  // Its consent page.
  await expect(page.locator('button', { hasText: 'Continue' })).toBeVisible();
  await page.click('button[type=submit]');

  // Back at countersign, signed in, on the queue.
  await expect(page).toHaveURL(`${base}/`);
  await expect(page.locator('#signed-in-as')).toContainText('maya');
  await expect(page.locator('h1')).toContainText("Approval queue");
  await page.screenshot({ path: 'artifacts/sso-queue.png', fullPage: true });
});

test('a password is refused for a tenant that signs in with single sign-on', async ({ page }) => {
  await page.goto(`${base}/login`);
  await page.fill('input[name=username]', 'ana');
  await page.fill('input[name=password]', 'countersign-demo');
  await page.click('button[type=submit]');
  await expect(page.locator('[role=alert]')).toContainText('single sign-on');
  await expect(page.locator('#signed-in-as')).toHaveCount(0);
});
