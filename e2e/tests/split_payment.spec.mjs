// Split payments in the browser (docs/PAYABLES.md "Split payments"): two
// parts to one payee, each under the auto-approval threshold, together over
// it; the second shows in the console as part of a split that needs what
// its total needs, in plain words.
//
// `payables.split_window_secs` is deployment-wide, and on the server the
// other specs share it would add up their payments to the same demo payees.
// So this spec runs its own server (its own data directory and port, the
// demo data, a one-hour window) and pays a trusted payee of its own, added
// with `countersign apply`, that not even the demo's sample proposals pay.
import { test, expect } from '@playwright/test';
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { AGENT_KEY, PASSWORD } from './helpers.mjs';

const PHONE = { width: 390, height: 844 };
const PAYEE = 'acct_splitco0000001';
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

let server;
let base;

test.beforeAll(async () => {
  const port = await freePort();
  base = `http://localhost:${port}`;
  const dir = mkdtempSync(path.join(tmpdir(), 'countersign-splits-'));
  const dataDir = path.join(dir, 'data');
  server = spawn(bin, ['--data-dir', dataDir, 'serve', '--demo', '--listen', `127.0.0.1:${port}`], {
    cwd: repo,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      COUNTERSIGN_LOG: 'warn',
      COUNTERSIGN_PUBLIC_URL: base,
      COUNTERSIGN_PAYABLES__SPLIT_WINDOW_SECS: '3600',
    },
  });
  let stderr = '';
  server.stderr.on('data', (d) => { stderr += d; });
  await new Promise((resolve, reject) => {
    server.on('exit', (code) => reject(new Error(`countersign exited with ${code}: ${stderr}`)));
    createInterface({ input: server.stdout }).on('line', (line) => {
      if (/^countersign listening on/.test(line)) resolve();
    });
  });
  const payee = path.join(dir, 'payee.toml');
  writeFileSync(payee, `
[[payee]]
tenant = "demo"
id = "${PAYEE}"
legal_name = "Splitco Supplies Ltd"
trusted = true
`);
  execFileSync(bin, ['--data-dir', dataDir, 'apply', payee], { cwd: repo, stdio: 'pipe' });
});

test.afterAll(() => {
  server?.kill();
});

async function part(request, invoice) {
  const response = await request.post(`${base}/api/v1/proposals`, {
    headers: { Authorization: `Bearer ${AGENT_KEY}` },
    data: {
      run_id: `e2e-split-${invoice}`, amount_minor: 6_000, currency: 'USD',
      source_account: 'acct_demo000000001234', destination: PAYEE,
      reference: `Invoice ${invoice}`, purpose_code: 'vendor', invoice_id: invoice,
    },
  });
  expect(response.status()).toBe(201);
  return response.json();
}

test('the second part of a split payment is flagged in the console as needing what the total needs', async ({ browser, request }) => {
  // 60.00 to a trusted payee is approved by policy alone ...
  const first = await part(request, 'SPLIT-1');
  expect(first.status).toBe('approved');
  // ... a second 60.00 within the hour makes 120.00: a person decides.
  const second = await part(request, 'SPLIT-2');
  expect(second.status).toBe('pending_approval');
  expect(second.policy.reasons.map((r) => r.rule)).toContain('split_payment');

  const page = await browser.newPage({ viewport: PHONE });
  await page.goto(`${base}/login`);
  await page.fill('input[name=username]', 'ben');
  await page.fill('input[name=password]', PASSWORD);
  await page.click('button[type=submit]');
  await expect(page.locator('#signed-in-as')).toContainText('ben');
  // In the queue, waiting for a person; the first part is not (policy approved it).
  await expect(page.locator(`[data-proposal="${second.id}"]`)).toBeVisible();
  await expect(page.locator(`[data-proposal="${first.id}"]`)).toHaveCount(0);
  await page.goto(`${base}/proposals/${second.id}`);
  const why = page.locator('li[data-rule="split_payment"]');
  await expect(why).toContainText('With another payment to this payee in the last 1 h');
  await expect(why).toContainText(first.id);
  await expect(why).toContainText('the total is 120.00 USD: it needs what that amount needs, one human approval');
  expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
  await page.screenshot({ path: 'artifacts/split-payment-phone.png', fullPage: true });
});
