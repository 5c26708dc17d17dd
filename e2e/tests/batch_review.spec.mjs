// Batches in the browser (docs/PAYABLES.md "Batches"), at phone size: the
// agent proposes a vendor run with a line that fails its checks; an
// approver opens the batch from the top bar, sees the totals by currency and
// by payee, the line held back by the checks and why, each line's invoice
// match; holds back another line (the batch changes); approves; the agent
// commits with the batch's one token; every included line shows paid.
import { test, expect } from '@playwright/test';
import { AGENT_KEY, signIn } from './helpers.mjs';

const PHONE = { width: 390, height: 844 };
const HEADER = 'number,vendor,account,amount,currency,due_date,status,amount_paid,note';

function line(amount_minor, destination, invoice_id) {
  return {
    amount_minor, currency: 'USD', source_account: 'acct_demo000000001234', destination,
    reference: `Invoice ${invoice_id}`, purpose_code: 'vendor', invoice_id,
  };
}

async function agentBatch(request, id) {
  const r = await request.get(`/api/v1/batches/${id}`, { headers: { Authorization: `Bearer ${AGENT_KEY}` } });
  expect(r.status()).toBe(200);
  return r.json();
}

test('an approver reviews a batch on a phone, holds a line back and approves; the agent commits; lines show paid', async ({ browser, request }) => {
  const stamp = `${Date.now()}`;
  // One of the run's invoices is registered: its line shows the match.
  const admin = await browser.newPage();
  await signIn(admin, 'ada');
  await admin.goto('/admin');
  await admin.fill('textarea[name=csv]', `${HEADER}\nB1-${stamp},Northwind Traders GmbH,ba_northwind0007,120.00,USD,2026-12-01,open,,\n`);
  await admin.click('form[aria-label="Import invoices"] button[type=submit]');
  await expect(admin.locator('#admin-flash')).toContainText('1 new');
  await admin.close();

  const proposed = await request.post('/api/v1/batches', {
    headers: { Authorization: `Bearer ${AGENT_KEY}` },
    data: {
      run_id: `e2e-batch-${stamp}`,
      label: 'December vendor run',
      lines: [
        line(12_000, 'ba_northwind0007', `B1-${stamp}`),
        line(4_500, 'acct_acme0000000001', `B2-${stamp}`),
        line(30_000, 'ba_northwind0007', `B3-${stamp}`),
        line(1_000, 'ba_nobody0000001', `B4-${stamp}`),
      ],
    },
  });
  expect(proposed.status()).toBe(201);
  const batch = await proposed.json();
  expect(batch.lines.map((l) => l.status)).toEqual(['included', 'included', 'included', 'held']);

  const page = await browser.newPage({ viewport: PHONE });
  await signIn(page, 'ben');
  await page.click('#batches-link');
  await expect(page).toHaveURL(/\/batches$/);
  await page.click(`[data-batch="${batch.id}"] a`);
  await expect(page).toHaveURL(new RegExp(`/batches/${batch.id}$`));
  await expect(page.locator('#batch-status')).toHaveText('Pending approval');
  // Totals first: 465.00 USD over three payments; by payee, Northwind's 420.00.
  await expect(page.locator('#totals-currency')).toContainText('465.00 USD');
  await expect(page.locator('#totals-currency')).toContainText('3 payments');
  await expect(page.locator('#totals-payee')).toContainText('Northwind Traders GmbH');
  await expect(page.locator('#totals-payee')).toContainText('420.00 USD');
  await expect(page.locator('#totals-currency')).toBeInViewport();
  // The line the checks held back, and why, in plain words.
  const held = page.locator('[data-line="4"]');
  await expect(held).toHaveAttribute('data-status', 'held');
  await expect(held).toContainText('Held back by the checks at intake');
  await expect(held).toContainText("is not in the tenant's payee registry");
  // Each line's payee, masked account and invoice match.
  const first = page.locator('[data-line="1"]');
  await expect(first).toContainText('Northwind Traders GmbH');
  await expect(first).toContainText('ba_…0007');
  await expect(first.locator('[data-verdict]')).toHaveAttribute('data-verdict', 'matches');
  await expect(first).toContainText(`Matches invoice B1-${stamp}`);
  expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
  await page.screenshot({ path: 'artifacts/batch-review-phone.png', fullPage: true });

  // Holding back line 3 changes the batch.
  const third = page.locator('[data-line="3"]');
  await third.locator('input[name=reason]').fill('Vendor asked us to wait until January');
  await third.locator('button[type=submit]').click();
  await expect(page.locator('#batch-notice')).toContainText('The line was held back');
  await expect(page.locator('[data-line="3"]')).toHaveAttribute('data-status', 'held');
  await expect(page.locator('[data-line="3"]')).toContainText('Held back by a reviewer');
  await expect(page.locator('[data-line="3"]')).toContainText('Vendor asked us to wait until January');
  await expect(page.locator('#totals-currency')).toContainText('165.00 USD');
  const changed = await agentBatch(request, batch.id);
  expect(changed.batch_hash).not.toBe(batch.batch_hash);

  await page.click('#approve-batch');
  await expect(page.locator('#batch-notice')).toContainText('Your approval was recorded');
  await expect(page.locator('#batch-status')).toHaveText('Approved');

  // The agent commits with the batch's one token.
  const approved = await agentBatch(request, batch.id);
  expect(approved.status).toBe('approved');
  const commit = await request.post(`/api/v1/batches/${batch.id}/commit`, {
    headers: { Authorization: `Bearer ${AGENT_KEY}` },
    data: { approval_token: approved.approval_token },
  });
  expect(commit.status()).toBe(200);
  const committed = await commit.json();
  expect(committed.lines.map((l) => l.status)).toEqual(['committed', 'committed', 'held', 'held']);

  // The page shows each included line paid (once the rail settles).
  await expect(async () => {
    await page.reload();
    await expect(page.locator('[data-payment="succeeded"]')).toHaveCount(2, { timeout: 1_000 });
  }).toPass({ timeout: 30_000 });
  await expect(page.locator('#batch-status')).toHaveText('Committed');
  await page.screenshot({ path: 'artifacts/batch-paid-phone.png', fullPage: true });
});
