import { test, expect } from '@playwright/test';
import { signIn } from './helpers.mjs';

test('an admin adds a payee and an agent; the key is shown once and works', async ({ page, request }) => {
  await signIn(page, 'ada');
  await page.goto('/admin');
  await expect(page.locator('h1')).toHaveText('Administration');

  const suffix = Date.now().toString(36);
  await page.fill('form[action="/admin/payees"] input[name=id]', `acct_e2e${suffix}`);
  await page.fill('form[action="/admin/payees"] input[name=legal_name]', `E2E Payee ${suffix}`);
  await page.click('form[action="/admin/payees"] button');
  await expect(page.locator('.notice')).toContainText('saved');
  await expect(page.locator('table').nth(2)).toContainText(`E2E Payee ${suffix}`);

  await page.fill('form[action="/admin/agents"] input[name=id]', `bot-${suffix}`);
  await page.fill('form[action="/admin/agents"] input[name=acts_for]', 'maya');
  await page.fill('form[action="/admin/agents"] input[name=source_accounts]', 'acct_demo000000001234');
  await page.fill('form[action="/admin/agents"] input[name=purposes]', 'vendor');
  await page.click('form[action="/admin/agents"] button');
  const key = (await page.locator('#new-agent-key').textContent()).trim();
  expect(key).toMatch(/^cs_live_[A-Za-z0-9]{32}$/);
  await page.screenshot({ path: 'artifacts/admin.png', fullPage: true });

  // Shown once: a reload no longer shows it.
  await page.reload();
  await expect(page.locator('#new-agent-key')).toHaveCount(0);

  // The key authenticates the new agent.
  const listing = await request.get('/api/v1/proposals', { headers: { Authorization: `Bearer ${key}` } });
  expect(listing.status()).toBe(200);
});

test('a non-admin cannot open the admin page', async ({ page }) => {
  await signIn(page, 'ana');
  await page.goto('/admin');
  await expect(page.locator('.notice-error')).toContainText('role does not allow');
});
