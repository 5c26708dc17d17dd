// Every console page at a desktop
// and a phone size fits without horizontal scrolling (down to 360 px), has
// no axe violation, and is kept as a screenshot; the queue's cold load is
// measured; the wasm goes out compressed.
import { test, expect } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import zlib from 'node:zlib';
import { commit, countersign, lowContrast, poll, pollUntil, propose, recordHydration, simulatorUrl, signIn } from './helpers.mjs';

const SIZES = {
  desktop: { width: 1440, height: 900 },
  phone: { width: 390, height: 844 },
};

/** The pages, each with who sees it; ids are filled in by the first test. */
const ids = {};
function pages() {
  return [
    { name: 'home-signed-out', path: '/', user: null },
    { name: 'sign-in', path: '/login', user: null },
    { name: 'sign-in-failed', path: '/login?error=invalid&username=ana&next=/operations', user: null },
    { name: 'queue', path: '/', user: 'ana' },
    { name: 'queue-approved', path: '/?status=approved&order=newest', user: 'ana' },
    { name: 'queue-empty', path: '/?status=reversed&order=newest', user: 'ana' },
    { name: 'queue-search', path: '/?status=all&currency=USD&min=1.00&order=amount_desc&payee=north', user: 'ana' },
    { name: 'queue-search-error', path: '/?min=5', user: 'ana' },
    { name: 'bulk-confirm', path: `/bulk?id=${ids.pending}&id=${ids.reviewProposal}`, user: 'ana' },
    { name: 'proposal-detail', path: `/proposals/${ids.pending}`, user: 'ana' },
    { name: 'proposal-after-decision', path: `/proposals/${ids.pending}?done=approved&decided=${ids.reviewProposal}`, user: 'ana' },
    { name: 'queue-clear', path: `/?done=rejected&decided=${ids.pending}`, user: 'ana' },
    { name: 'approve-confirm', path: `/proposals/${ids.pending}/approve`, user: 'ana' },
    { name: 'proposal-viewer', path: `/proposals/${ids.pending}`, user: 'vic' },
    { name: 'proposal-needs-review', path: `/proposals/${ids.reviewProposal}`, user: 'ada' },
    { name: 'operations', path: '/operations', user: 'ada' },
    { name: 'operation-resolve', path: `/operations/${ids.reviewOperation}/resolve`, user: 'ada' },
    { name: 'admin', path: '/admin', user: 'ada' },
    { name: 'account-passkeys', path: '/account', user: 'ana' },
    { name: 'admin-forbidden', path: '/admin', user: 'ana' },
    { name: 'error-not-found', path: '/proposals/prop_doesnotexist', user: 'ana' },
    { name: 'error-no-route', path: '/no-such-page', user: 'ana' },
    // Signed out, a console page sends to sign-in (and back after it).
    { name: 'sign-in-deep-link', path: '/operations', user: null },
  ];
}

test.describe.configure({ mode: 'serial' });

/** The demo agent's webhook receiver, on loopback: down for the first event, then up. */
const receiver = { url: '', count: 0 };
async function startReceiver() {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      receiver.count += 1;
      res.writeHead(receiver.count === 1 ? 503 : 204);
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  receiver.url = `http://127.0.0.1:${server.address().port}/hook`;
}

test('setup: proposals in every state the pages show', async ({ request }) => {
  test.setTimeout(90_000);
  // A webhook, so the admin page has a delivery log (a failed attempt, then deliveries).
  await startReceiver();
  const set = ['agent', 'webhook', 'set', '--tenant', 'demo', '--id', 'payout-bot', '--url', receiver.url];
  countersign(set, { COUNTERSIGN_WEBHOOKS__ALLOW_HTTP_LOOPBACK: 'true' });
  ids.pending = (await propose(request, { amount_minor: 51234 })).id;
  // An operation the rail lost, which reconciliation hands to a human.
  const fault = await request.post(`${simulatorUrl()}/_sim/faults`, { data: { mode: 'error_500', count: 1 } });
  expect(fault.status()).toBe(200);
  const lost = await propose(request, { amount_minor: 4300, destination: 'acct_acme0000000001' });
  const token = lost.approval_token || (await poll(request, lost.id)).approval_token;
  await commit(request, lost.id, token);
  const review = await pollUntil(request, lost.id, 'needs_review');
  ids.reviewProposal = lost.id;
  ids.reviewOperation = review.operation.id;
  await expect.poll(() => receiver.count, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
});

async function signedInContext(browser, user, options) {
  const context = await browser.newContext(options);
  if (user) {
    const page = await context.newPage();
    await signIn(page, user);
    await page.close();
  }
  return context;
}

/** The widest element sticking out of the viewport, for a useful failure. */
async function overflow(page) {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const scroll = document.documentElement.scrollWidth;
    if (scroll <= width) return null;
    const wide = [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > width + 1)
      .map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')} → ${Math.round(e.getBoundingClientRect().right)}px`);
    return { width, scroll, wide: wide.slice(0, 5) };
  });
}

for (const [size, viewport] of Object.entries(SIZES)) {
  test(`every page at ${size} size: fits, no axe violation, screenshot`, async ({ browser }) => {
    test.setTimeout(180_000);
    const found = [];
    for (const user of [null, 'ana', 'vic', 'ada']) {
      const context = await signedInContext(browser, user, { viewport });
      const page = await context.newPage();
      for (const p of pages().filter((p) => p.user === user)) {
        await page.goto(p.path);
        if (p.path === '/') await expect(page.locator('.home')).toHaveAttribute('data-hydrated', 'true');
        await page.screenshot({ path: `artifacts/ui-${p.name}-${size}.png`, fullPage: true });
        const wide = await overflow(page);
        if (wide) found.push(`${p.name}: scrolls sideways at ${viewport.width} px: ${JSON.stringify(wide)}`);
        if (size === 'phone') {
          await page.setViewportSize({ width: 360, height: 740 });
          const narrow = await overflow(page);
          if (narrow) found.push(`${p.name}: scrolls sideways at 360 px: ${JSON.stringify(narrow)}`);
          await page.setViewportSize(viewport);
        }
        const axe = await new AxeBuilder({ page }).analyze();
        for (const v of axe.violations) {
          found.push(`${p.name}: axe ${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
        }
        for (const low of await lowContrast(page)) found.push(`${p.name}: ${low}`);
      }
      await context.close();
    }
    expect(found, found.join('\n')).toEqual([]);
  });
}

test('admin on a phone: the webhook log is cards, and Redeliver sends the proposal again', async ({ browser }) => {
  const context = await signedInContext(browser, 'ada', { viewport: SIZES.phone });
  const page = await context.newPage();
  await page.goto('/admin');
  const log = page.locator('section.webhook[data-agent="payout-bot"] table.webhook-log');
  const row = log.locator('tbody tr').first();
  await expect(row).toBeVisible();
  expect(await row.evaluate((e) => getComputedStyle(e).display)).toBe('block');
  await expect(log.locator('thead')).toHaveCSS('position', 'absolute');
  const before = receiver.count;
  await row.getByRole('button', { name: /^Redeliver/ }).click();
  await expect(page.locator('#admin-flash')).toContainText('Redelivery queued');
  await expect.poll(() => receiver.count, { timeout: 20_000 }).toBeGreaterThan(before);
  // The receiver may also get the stream's own events: wait for the log's line.
  await expect.poll(async () => {
    await page.goto('/admin');
    return log.locator('tbody').innerText();
  }, { timeout: 20_000 }).toContain('redelivery, attempt 1');
  await page.screenshot({ path: 'artifacts/ui-admin-redelivered-phone.png', fullPage: true });
  await context.close();
});

test('dark mode: the queue and a proposal have no axe violation', async ({ browser }) => {
  const found = [];
  for (const [size, viewport] of Object.entries(SIZES)) {
    const context = await signedInContext(browser, 'ana', { viewport, colorScheme: 'dark' });
    const page = await context.newPage();
    for (const [name, path] of [['queue', '/'], ['proposal-detail', `/proposals/${ids.pending}`]]) {
      await page.goto(path);
      expect(await page.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches)).toBe(true);
      await page.screenshot({ path: `artifacts/ui-${name}-${size}-dark.png`, fullPage: true });
      const axe = await new AxeBuilder({ page }).analyze();
      for (const v of axe.violations) found.push(`${name} (${size}, dark): axe ${v.id}: ${v.help}`);
    }
    await context.close();
  }
  expect(found, found.join('\n')).toEqual([]);
});

test('on a phone the queue is cards, the status filter is compact, Sign out stays in the header', async ({ browser }) => {
  const context = await signedInContext(browser, 'ana', { viewport: SIZES.phone });
  const page = await context.newPage();
  await page.goto('/');
  const row = page.locator(`tr[data-proposal="${ids.pending}"]`);
  await expect(row).toBeVisible();
  expect(await row.evaluate((e) => getComputedStyle(e).display)).toBe('grid');
  await expect(page.locator('table.queue-list thead')).toHaveCSS('position', 'absolute');
  // One control, not a row of twelve tabs; the search fields stay folded.
  expect((await page.locator('#status-filter').boundingBox()).height).toBeLessThan(60);
  expect((await page.locator('form.filter').boundingBox()).height).toBeLessThan(200);
  await expect(page.locator('#q-payee')).toBeHidden();
  await expect(page.locator('#status-filter option')).toHaveCount(12);
  const signOut = page.locator('header.topbar button', { hasText: 'Sign out' });
  await expect(signOut).toBeInViewport();
  // With JavaScript on, the filter works too.
  await page.selectOption('#status-filter', 'approved');
  await page.click('form.filter button');
  await expect(page).toHaveURL(/status=approved/);
  await expect(page.locator('#status-filter')).toHaveValue('approved');
  await context.close();
});

test('plain words: statuses, policy and the timeline read as sentences; amounts line up', async ({ browser }) => {
  const context = await signedInContext(browser, 'ana', { viewport: SIZES.desktop });
  const page = await context.newPage();
  await page.goto(`/proposals/${ids.pending}`);
  await expect(page.locator('.proposal-head .badge')).toHaveText('Waiting for approval');
  await expect(page.locator('.timeline')).toContainText('Proposed');
  await expect(page.locator('.timeline')).toContainText('agent payout-bot');
  const text = (await page.locator('main').innerText())
    .replace(/\b(acct|ba|card)_\S+/g, '') // account ids, masked, are what people compare
    .replace(/\bsha256:\S+/g, '');
  expect(text).not.toMatch(/\b[a-z]+_[a-z_]+\b/);
  expect(text).not.toMatch(/\b(proposal|operation)\.[a-z]/);
  expect(text).not.toContain(' via ');

  // Approved automatically, paid, lost by the rail: every kind of line.
  await page.goto(`/proposals/${ids.reviewProposal}`);
  await expect(page.locator('.proposal-head .badge')).toHaveText('Needs review');
  await expect(page.locator('.timeline')).toContainText('Payment sent to the bank');
  const approvals = page.locator('.card', { has: page.locator('h2', { hasText: /^Approvals$/ }) });
  await expect(approvals.locator('li').first()).toContainText('The policy approved automatically');
  const review = (await page.locator('main').innerText())
    .replace(/\b(acct|ba|card)_\S+/g, '')
    .replace(/\bsha256:\S+/g, '')
    .replace(/\((no_rail_record)\)/g, ''); // the rail's error code, kept for support
  expect(review).not.toMatch(/\b[a-z]+_[a-z_]+\b/);
  expect(review).not.toMatch(/\b(proposal|operation|policy|system)[.:][a-z]/);

  await page.goto('/');
  const amount = page.locator(`tr[data-proposal="${ids.pending}"] td.c-amount`);
  await expect(amount).toHaveCSS('text-align', 'right');
  await expect(amount).toHaveCSS('font-variant-numeric', 'tabular-nums');
  await expect(page.locator('table.queue-list th.num')).toHaveCSS('text-align', 'right');
  await context.close();
});

test('cold load of the queue: navigation start to hydrated', async ({ browser }) => {
  const signedIn = await signedInContext(browser, 'ana', { viewport: SIZES.desktop });
  const state = await signedIn.storageState();
  await signedIn.close();
  // A fresh context: nothing cached, the session cookie only.
  const context = await browser.newContext({ viewport: SIZES.desktop, storageState: state });
  const page = await context.newPage();
  await page.addInitScript(recordHydration);
  await page.goto('/');
  await expect(page.locator('.home')).toHaveAttribute('data-hydrated', 'true');
  const timing = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const wasm = performance.getEntriesByType('resource').find((r) => r.name.endsWith('.wasm'));
    return {
      hydrated: window.__hydratedAt,
      domContentLoaded: nav.domContentLoadedEventEnd,
      wasmEncoded: wasm && wasm.encodedBodySize,
      wasmDecoded: wasm && wasm.decodedBodySize,
    };
  });
  expect(timing.hydrated).toBeGreaterThan(0);
  const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
  const line =
    `cold load of the queue: ${Math.round(timing.hydrated)} ms from navigation start to hydrated ` +
    `(DOMContentLoaded ${Math.round(timing.domContentLoaded)} ms; wasm ${kb(timing.wasmEncoded)} over the wire, ` +
    `${kb(timing.wasmDecoded)} decoded)`;
  console.log(line);
  test.info().annotations.push({ type: 'cold-load', description: line });
  await context.close();
});

/** GET with a raw Accept-Encoding: the bytes as sent, and the headers. */
function rawGet(url, encoding) {
  return new Promise((resolve, reject) => {
    http.get(url, { headers: { 'Accept-Encoding': encoding } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject);
  });
}

test('the wasm goes out brotli- or gzip-compressed at build time, and decodes to the file', async ({ baseURL }) => {
  const file = readFileSync(new URL('../../target/site/pkg/countersign.wasm', import.meta.url));
  const built = readFileSync(new URL('../../target/site/pkg/countersign.wasm.br', import.meta.url));
  const url = new URL('/pkg/countersign.wasm', baseURL).toString();
  const br = await rawGet(url, 'br, gzip');
  expect(br.status).toBe(200);
  expect(br.headers['content-encoding']).toBe('br');
  // The file site.sh compressed, as it is, with its length: not compressed
  // again on this request.
  expect(br.body.equals(built)).toBe(true);
  expect(br.headers['content-length']).toBe(String(built.length));
  expect(br.headers['vary']).toMatch(/accept-encoding/i);
  expect(br.headers['content-type']).toBe('application/wasm');
  expect(br.body.length).toBeLessThan(file.length / 2);
  expect(zlib.brotliDecompressSync(br.body).equals(file)).toBe(true);

  const gzip = await rawGet(url, 'gzip');
  expect(gzip.headers['content-encoding']).toBe('gzip');
  expect(zlib.gunzipSync(gzip.body).equals(file)).toBe(true);

  const plain = await rawGet(url, 'identity');
  expect(plain.headers['content-encoding']).toBeUndefined();
  expect(plain.body.equals(file)).toBe(true);
  console.log(`wasm: ${file.length} bytes; brotli ${br.body.length}, gzip ${gzip.body.length} over the wire`);
});

test('pages go out compressed to a browser that accepts it', async ({ baseURL }) => {
  const url = new URL('/login', baseURL).toString();
  const br = await rawGet(url, 'br, gzip');
  expect(br.status).toBe(200);
  expect(br.headers['content-encoding']).toBe('br');
  const html = zlib.brotliDecompressSync(br.body).toString();
  expect(html).toContain('<title>');
  const gzip = await rawGet(url, 'gzip');
  expect(gzip.headers['content-encoding']).toBe('gzip');
  expect(zlib.gunzipSync(gzip.body).toString()).toContain('<title>');
  const plain = await rawGet(url, 'identity');
  expect(plain.headers['content-encoding']).toBeUndefined();
  console.log(`sign-in page: ${plain.body.length} bytes; brotli ${br.body.length} over the wire`);
});
