// Deciding with everything in view: who can approve
// before anyone clicks, risk signals, payee and source context.
import { test, expect } from '@playwright/test';
import { propose, signIn } from './helpers.mjs';

function uniqueInvoice() {
  return `E2E-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
}

test('Approve is disabled with the reason when the reviewer cannot approve; the queue flags what no one can', async ({ page, request }) => {
  // 60,000.00 USD needs two approvals; in the demo tenant only ben's limit
  // covers it (ana's is 50,000.00, maya is the person the agent acts for).
  const proposal = await propose(request, { amount_minor: 6_000_000, invoice_id: uniqueInvoice() });
  await signIn(page, 'ana');
  await page.goto(`/proposals/${proposal.id}`);
  await expect(page.locator('#approve')).toHaveCount(0);
  await expect(page.locator('#approve-unavailable')).toBeDisabled();
  await expect(page.locator('#approve-blocker')).toHaveText('60,000.00 USD is above your approval limit of 50,000.00 USD.');
  await expect(page.locator('#reject')).toBeVisible(); // rejecting stays possible
  await expect(page.locator('#still-needed')).toContainText('but only ben can give one');
  // Not "no one": ben can give one of the two. It says exactly what is missing.
  await expect(page.locator('#no-approver')).toHaveText('Only ben can approve: 1 more approver with a USD limit needed.');
  await page.screenshot({ path: 'artifacts/proposal-cannot-approve.png', fullPage: true });

  await page.goto('/');
  const row = page.locator(`tr[data-proposal="${proposal.id}"]`);
  await expect(row.locator('[data-flag=no-approver]')).toHaveText('Only ben can approve: 1 more approver with a USD limit needed');

  // A payment within ana's limit names who may approve it, and she may.
  const small = await propose(request, { amount_minor: 40_000, invoice_id: uniqueInvoice() });
  await page.goto(`/proposals/${small.id}`);
  await expect(page.locator('#approve')).toBeVisible();
  await expect(page.locator('#still-needed')).toHaveText('1 more approval needed, from: ada, ana or ben.');
  await expect(page.locator(`tr[data-proposal="${small.id}"] [data-flag=no-approver]`)).toHaveCount(0);
});

test('risk signals are on the detail page, the confirmation and the queue', async ({ page, request }) => {
  const invoice = uniqueInvoice();
  const first = await propose(request, { amount_minor: 26_000, invoice_id: invoice });
  const again = await propose(request, { amount_minor: 26_000, invoice_id: invoice });
  await signIn(page, 'ben');
  await page.goto(`/proposals/${again.id}`);
  const duplicate = page.locator('#signals [data-signal=duplicate_invoice]');
  await expect(duplicate).toContainText('Duplicate invoice');
  // The twin is a link, not a raw id in the sentence.
  await expect(duplicate).not.toContainText(first.id);
  const twin = duplicate.locator(`a[data-related="${first.id}"]`);
  await expect(twin).toHaveText('Open the other (Waiting for approval)');
  await expect(page.locator('#payee-history')).toContainText('260.00 USD');
  await page.screenshot({ path: 'artifacts/proposal-risk-signals.png', fullPage: true });

  await page.click('#approve');
  await expect(page.locator('.confirm [data-signal=duplicate_invoice]')).toBeVisible();
  await page.goto(`/proposals/${again.id}`);
  await twin.click();
  await expect(page).toHaveURL(new RegExp(`/proposals/${first.id}$`));
  await expect(page.locator(`#signals a[data-related="${again.id}"]`)).toBeVisible();

  await page.goto('/');
  await expect(page.locator(`tr[data-proposal="${first.id}"] .tag`, { hasText: 'Duplicate invoice' })).toBeVisible();
});

test('the payee shows enough of its account to tell it apart, and the budget used today', async ({ page, request }) => {
  const proposal = await propose(request, { amount_minor: 27_000, invoice_id: uniqueInvoice() });
  await signIn(page, 'ben');
  await page.goto(`/proposals/${proposal.id}`);
  const facts = page.locator('dl.facts').first();
  await expect(facts).toContainText(/ba_…0007 #[0-9a-z]{4}/);
  await expect(facts).not.toContainText('northwind0007');
  await expect(page.locator('#budget-today')).toContainText('of 5,000,000.00 USD used today');
});
