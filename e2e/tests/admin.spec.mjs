import { test, expect } from '@playwright/test';
import { propose, signIn } from './helpers.mjs';

/** Signs `username` out (the top bar's form). */
async function signOut(page) {
  await page.click('nav.who button[type=submit]');
  await expect(page).toHaveURL(/\/login$/);
}

test('an admin proposes an agent; its key is shown once; a second admin confirms and it works', async ({ page, request }) => {
  await signIn(page, 'ada');
  await page.goto('/admin');
  await expect(page.locator('h1')).toHaveText('Administration');

  // An untrusted payee is saved at once.
  const suffix = Date.now().toString(36);
  await page.fill('form[action="/admin/payees"] input[name=id]', `acct_e2e${suffix}`);
  await page.fill('form[action="/admin/payees"] input[name=legal_name]', `E2E Payee ${suffix}`);
  await page.click('form[action="/admin/payees"] button');
  await expect(page.locator('#admin-flash')).toContainText('saved');
  await expect(page.locator('table').nth(2)).toContainText(`E2E Payee ${suffix}`);

  // An agent waits for a second admin; its key is in the form's own answer.
  await page.fill('form[action="/admin/agents"] input[name=id]', `bot-${suffix}`);
  await page.fill('form[action="/admin/agents"] input[name=acts_for]', 'maya');
  await page.fill('form[action="/admin/agents"] input[name=source_accounts]', 'acct_demo000000001234');
  await page.fill('form[action="/admin/agents"] input[name=purposes]', 'vendor');
  await page.click('form[action="/admin/agents"] button');
  const key = (await page.locator('#one-time-secret').textContent()).trim();
  expect(key).toMatch(/^cs_live_[A-Za-z0-9]{32}$/);
  await page.screenshot({ path: 'artifacts/admin-new-agent-key.png', fullPage: true });
  const before = await request.get('/api/v1/proposals', { headers: { Authorization: `Bearer ${key}` } });
  expect(before.status(), 'not before a second admin confirms').toBe(401);

  // Back on the admin page the key is gone; the change waits, and ada cannot confirm it.
  await page.goto('/admin');
  await expect(page.locator('#one-time-secret')).toHaveCount(0);
  const change = page.locator('.pending-change', { hasText: `bot-${suffix}` });
  await expect(change).toContainText(`Add agent bot-${suffix}, acting for maya`);
  await expect(change.locator('button', { hasText: 'Confirm' })).toHaveCount(0);
  await expect(change.locator('.blocker')).toContainText('another admin must confirm');
  // Her own change: she withdraws it, she does not "reject" it.
  await expect(change.locator('button.danger')).toHaveText('Withdraw');
  await signOut(page);

  await signIn(page, 'abe');
  await page.goto('/admin');
  await page.screenshot({ path: 'artifacts/admin-pending-change.png', fullPage: true });
  await expect(change.locator('button.danger')).toHaveText('Reject');
  await change.locator('button', { hasText: 'Confirm' }).click();
  await expect(page.locator('#admin-flash')).toContainText('Change confirmed');
  await expect(page.locator('table').nth(1)).toContainText(`bot-${suffix}`);
  await page.screenshot({ path: 'artifacts/admin.png', fullPage: true });

  const listing = await request.get('/api/v1/proposals', { headers: { Authorization: `Bearer ${key}` } });
  expect(listing.status()).toBe(200);
});

test('a non-admin cannot open the admin page', async ({ page }) => {
  await signIn(page, 'ana');
  await page.goto('/admin');
  await expect(page.locator('.notice-error')).toContainText('role does not allow');
});

test('a Slack link waits for a second admin; an unlink applies at once', async ({ page }) => {
  await signIn(page, 'ada');
  await page.goto('/admin');
  const form = 'form[action="/admin/slack-links"]';
  const slackId = `U0E2E${Date.now().toString(36).toUpperCase()}`;
  await page.fill(`${form} input[name=username]`, 'vic');
  await page.fill(`${form} input[name=slack_user_id]`, slackId);
  await page.click(`${form} button`);
  await expect(page.locator('#admin-flash')).toContainText('Proposed');
  const vicRow = page.locator('table').first().locator('tr', { hasText: 'vic' });
  await expect(vicRow).not.toContainText(slackId);
  await signOut(page);

  await signIn(page, 'abe');
  await page.goto('/admin');
  await page.locator('.pending-change', { hasText: slackId }).locator('button', { hasText: 'Confirm' }).click();
  await expect(page.locator('#admin-flash')).toContainText('Change confirmed');
  await expect(vicRow).toContainText(slackId);

  await page.fill(`${form} input[name=username]`, 'vic');
  await page.click(`${form} button`);
  await expect(page.locator('#admin-flash')).toContainText('unlinked');
  await expect(vicRow).not.toContainText(slackId);

  // An unknown username is refused (users of other tenants are unknown here too).
  await page.fill(`${form} input[name=username]`, 'nobody-here');
  await page.fill(`${form} input[name=slack_user_id]`, 'U0NOBODY');
  await page.click(`${form} button`);
  await expect(page.locator('#admin-flash')).toContainText('Not saved');
});

test('on a phone the admin tables label every cell, and payees carry their account tag', async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await signIn(page, 'ada');
  await page.goto('/admin');
  const cell = page.locator('table.list td[data-label="Username"]').first();
  await expect(cell).toBeVisible();
  expect(await cell.evaluate((el) => getComputedStyle(el, '::before').content)).toContain('Username');
  // Two payees ending alike look different: the account's tag, as on proposals.
  await expect(page.locator('td.payee-account').first()).toHaveText(/…[0-9a-z]{4} #[0-9a-z]{4}$/i);
  await page.screenshot({ path: 'artifacts/admin-phone.png', fullPage: true });
});

for (const [name, size] of [['desktop', { width: 1440, height: 900 }], ['phone', { width: 390, height: 844 }]]) {
  test(`${name}: editing a user starts from what they have, says what saving changes, and a reduction that strands a payment applies at once and says so`, async ({ page, request }) => {
    await page.setViewportSize(size);
    // 62,000.00 USD: two approvals; only ben's limit covers it.
    const payroll = await propose(request, { amount_minor: 6_200_000, purpose_code: 'payroll' });
    await signIn(page, 'ada');
    await page.goto('/admin');
    await page.locator('tr[data-user=ben] a.edit-user').click();
    await expect(page).toHaveURL(/\/admin\?edit=ben#user-form$/);
    const form = page.locator('#user-form');
    await expect(form.locator('input[name=username]')).toHaveValue('ben');
    await expect(form.locator('input[name=username]')).toHaveAttribute('readonly', '');
    await expect(form.locator('input[name=role_approver]')).toBeChecked();
    await expect(form.locator('input[name=role_admin]')).not.toBeChecked();
    await expect(form.locator('input[name=limit_USD]')).toHaveValue('500,000.00');
    await expect(form.locator('input[name=slack_user_id]')).toHaveValue('U0DEMOBEN');
    await expect(page.locator('#user-changes')).toHaveText('Nothing changes yet.');

    // Deleting only the Slack id says only that.
    await form.locator('input[name=slack_user_id]').fill('');
    await expect(page.locator('#user-changes li')).toHaveText(['Unlink ben from Slack user U0DEMOBEN']);
    await form.locator('input[name=slack_user_id]').fill('U0DEMOBEN');
    // Emptying the USD limit is said before saving.
    await form.locator('input[name=limit_USD]').fill('');
    await expect(page.locator('#user-changes li')).toHaveText(["Remove ben's USD limit (500,000.00)"]);
    await page.screenshot({ path: `artifacts/admin-user-preview-${name}.png`, fullPage: true });
    await page.click('#save-user');

    // It leaves the payroll with nobody to approve it: applied at once all
    // the same (a reduction of authority never waits), and said.
    const flash = page.locator('#admin-flash');
    await expect(flash).toContainText('User ben saved');
    await expect(flash).toContainText(/Leaves \d+ waiting payments? without the approvers/);
    await expect(flash).toContainText(`62,000.00 USD to Northwind Traders GmbH (${payroll.id})`);
    await expect(page.locator('.pending-change', { hasText: payroll.id })).toHaveCount(0);
    await expect(page.locator('tr[data-user=ben]')).not.toContainText('500,000.00 USD');
    // Put back for the other tests: raising a limit waits for a second admin.
    await page.locator('tr[data-user=ben] a.edit-user').click();
    await form.locator('input[name=limit_USD]').fill('500,000.00');
    await page.click('#save-user');
    await expect(flash).toContainText('Another admin must confirm');
    await signOut(page);
    await signIn(page, 'abe');
    await page.goto('/admin');
    const raise = page.locator('.pending-change', { hasText: 'Give ben an approval limit of 500,000.00 USD' });
    await raise.locator('button', { hasText: 'Confirm' }).click();
    await expect(page.locator('#admin-flash')).toContainText('Change confirmed');
    await expect(page.locator('tr[data-user=ben]')).toContainText('500,000.00 USD');
  });
}
