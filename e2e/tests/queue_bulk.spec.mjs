// Find and act in bulk: search the queue, select several
// payments, confirm them on one page with their total, see each outcome.
import { test, expect } from '@playwright/test';
import { propose, signIn } from './helpers.mjs';

function unique(prefix) {
  return `${prefix}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
}

test('search by invoice, select two, approve both with one confirmation', async ({ page, request }) => {
  const batch = unique('BATCH');
  const first = await propose(request, { amount_minor: 41_000, invoice_id: `${batch}-1` });
  const second = await propose(request, { amount_minor: 42_000, invoice_id: `${batch}-2` });
  await signIn(page, 'ben');

  // The search form is a GET form: its fields land in the address.
  await page.goto('/');
  await page.locator('details.search summary').click();
  await page.fill('#q-invoice_id', `${batch}-1`);
  await page.click('#queue-search button[type=submit]');
  await expect(page).toHaveURL(/invoice_id=/);
  await expect(page.locator('tr[data-proposal]')).toHaveCount(1);
  await expect(page.locator(`tr[data-proposal="${first.id}"]`)).toBeVisible();

  // Sorted by amount, both of them, then select both.
  await page.goto('/?currency=USD&min=410.00&max=420.00&order=amount_desc');
  const rows = page.locator('tbody tr[data-proposal]');
  await expect(rows.first()).toHaveAttribute('data-proposal', second.id);
  await page.check(`tr[data-proposal="${first.id}"] input[type=checkbox]`);
  await page.check(`tr[data-proposal="${second.id}"] input[type=checkbox]`);
  await page.click('#bulk-review');

  await expect(page.locator('.bulk-list li')).toHaveCount(2);
  await expect(page.locator('#bulk-total')).toContainText('830.00 USD');
  await expect(page.locator('#bulk-approve')).toHaveText('Approve 2 payments: 830.00 USD');
  await page.screenshot({ path: 'artifacts/bulk-confirm.png', fullPage: true });
  await page.click('#bulk-approve');
  await expect(page.locator(`li[data-proposal="${first.id}"]`)).toHaveAttribute('data-outcome', 'approved');
  await expect(page.locator(`li[data-proposal="${second.id}"]`)).toHaveAttribute('data-outcome', 'approved');
  await page.screenshot({ path: 'artifacts/bulk-results.png', fullPage: true });
});

test('a bad search is explained on the page', async ({ page }) => {
  await signIn(page, 'ben');
  await page.goto('/?min=10');
  await expect(page.locator('#search-errors')).toContainText('needs a currency');
});
