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
  await expect(page.locator('.proposal-head .badge')).toHaveText('approved');
  expect((await poll(request, toApprove.id)).status).toBe('approved');

  await page.goto(`/proposals/${toReject.id}`);
  await page.fill('textarea[name=reason]', 'Duplicate of an earlier invoice');
  await page.click('#reject');
  await expect(page.locator('.proposal-head .badge')).toHaveText('rejected');
  expect((await poll(request, toReject.id)).status).toBe('rejected');
});
