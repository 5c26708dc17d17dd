import { test, expect } from '@playwright/test';
import { poll, propose, signIn } from './helpers.mjs';

// Plain HTML forms: approving and rejecting work with JavaScript disabled.
test.use({ javaScriptEnabled: false });

test('approve and reject work without JavaScript', async ({ page, request }) => {
  const toApprove = await propose(request, { amount_minor: 41000 });
  const toReject = await propose(request, { amount_minor: 42000 });
  await signIn(page, 'ana');

  await page.goto(`/proposals/${toApprove.id}`);
  await page.click('#approve');
  await expect(page.locator('#confirm-sentence')).toContainText('410.00 USD');
  await page.click('#confirm-approve');
  // The form goes on to what waits next; the notice links back.
  await expect(page.locator('#decided-notice')).toContainText('You approved this payment');
  await page.click('#decided-link');
  await expect(page.locator('.proposal-head .badge')).toHaveText('Approved');
  expect((await poll(request, toApprove.id)).status).toBe('approved');

  await page.goto(`/proposals/${toReject.id}`);
  await page.fill('textarea[name=reason]', 'Duplicate of an earlier invoice');
  await page.click('#reject');
  await expect(page.locator('#decided-notice')).toContainText('You rejected this payment');
  await page.click('#decided-link');
  await expect(page.locator('.proposal-head .badge')).toHaveText('Rejected');
  expect((await poll(request, toReject.id)).status).toBe('rejected');
});

test('the status filter works without JavaScript', async ({ page, request }) => {
  const proposal = await propose(request, { amount_minor: 43000 });
  await signIn(page, 'ana');
  await expect(page.locator(`tr[data-proposal="${proposal.id}"]`)).toBeVisible();
  await page.selectOption('#status-filter', 'rejected');
  await page.click('form.filter button[type=submit]');
  await expect(page).toHaveURL(/[?&]status=rejected/);
  await expect(page.locator('#status-filter')).toHaveValue('rejected');
  await expect(page.locator(`tr[data-proposal="${proposal.id}"]`)).toHaveCount(0);
  await page.selectOption('#status-filter', 'pending_approval');
  await page.click('form.filter button[type=submit]');
  await expect(page.locator(`tr[data-proposal="${proposal.id}"] .badge`)).toHaveText('Waiting for approval');
});
