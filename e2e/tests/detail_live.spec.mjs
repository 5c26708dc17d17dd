// The proposal page is live and speaks the reader's time.
import { test, expect } from '@playwright/test';
import { propose, signIn } from './helpers.mjs';

function uniqueInvoice() {
  return `LIVE-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
}

test('times are in the reader\'s zone, with how long until the proposal expires', async ({ browser, request }) => {
  const context = await browser.newContext({ timezoneId: 'Asia/Kolkata' });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await signIn(page, 'ben');
  const proposal = await propose(request, { amount_minor: 28_000, invoice_id: uniqueInvoice() });
  await page.goto(`/proposals/${proposal.id}`);
  const expires = page.locator('#expires time');
  // The server renders UTC; the browser then shows its own zone.
  await expect(expires).toContainText('UTC+5:30');
  // Loaded whole, the page's scripts (the wasm, and the plain ones every
  // page carries) run without an error.
  await expect(page.locator('#reaching-approvers')).toBeVisible();
  expect(errors).toEqual([]);
  await expect(expires).toContainText(/\(in 2[34] h\)/);
  await expect(expires).toHaveAttribute('datetime', proposal.expires_at);
  await context.close();
});

test('another approver\'s decision appears without a reload; a reason being typed survives other changes', async ({ browser, request }) => {
  // 20,000.00 USD: two approvals, from ana and ben (demo tenant).
  const proposal = await propose(request, { amount_minor: 2_000_000, invoice_id: uniqueInvoice() });
  const anaContext = await browser.newContext({ timezoneId: 'Europe/Berlin' });
  const ana = await anaContext.newPage();
  await signIn(ana, 'ana');
  await ana.goto(`/proposals/${proposal.id}`);
  await expect(ana.locator('#expires time')).toContainText('UTC+1'); // hydrated
  await expect(ana.locator('#still-needed')).toHaveText('2 more approvals needed, from: ana or ben.');

  // Ana starts typing a reason; an unrelated proposal arrives meanwhile.
  await ana.fill('textarea[name=reason]', 'Checking with the supplier first');
  await propose(request, { amount_minor: 29_000, invoice_id: uniqueInvoice() });
  await ana.waitForTimeout(1500);
  await expect(ana.locator('textarea[name=reason]')).toHaveValue('Checking with the supplier first');

  // Ben approves in his own session: ana's page follows.
  const benContext = await browser.newContext();
  const ben = await benContext.newPage();
  await signIn(ben, 'ben');
  await ben.goto(`/proposals/${proposal.id}/approve`);
  await ben.click('#confirm-approve');
  await expect(ana.locator('#approvals')).toContainText('ben');
  await expect(ana.locator('#still-needed')).toHaveText('1 more approval needed, from: ana.');
  await ana.screenshot({ path: 'artifacts/proposal-live-update.png', fullPage: true });
  await anaContext.close();
  await benContext.close();
});
