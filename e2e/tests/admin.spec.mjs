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

test('an admin links a user to a Slack user id and unlinks them', async ({ page }) => {
  await signIn(page, 'ada');
  await page.goto('/admin');
  const form = 'form[action="/admin/slack-links"]';
  const slackId = `U0E2E${Date.now().toString(36).toUpperCase()}`;
  await page.fill(`${form} input[name=username]`, 'vic');
  await page.fill(`${form} input[name=slack_user_id]`, slackId);
  await page.click(`${form} button`);
  await expect(page.locator('.notice')).toContainText(`linked to Slack user ${slackId}`);
  const vicRow = page.locator('table').first().locator('tr', { hasText: 'vic' });
  await expect(vicRow).toContainText(slackId);

  await page.fill(`${form} input[name=username]`, 'vic');
  await page.click(`${form} button`);
  await expect(page.locator('.notice')).toContainText('unlinked');
  await expect(vicRow).not.toContainText(slackId);

  // An unknown username is refused (users of other tenants are unknown here too).
  await page.fill(`${form} input[name=username]`, 'nobody-here');
  await page.fill(`${form} input[name=slack_user_id]`, 'U0NOBODY');
  await page.click(`${form} button`);
  await expect(page.locator('.notice')).toContainText('Not saved');
});
