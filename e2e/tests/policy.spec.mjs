import { test, expect } from '@playwright/test';
import { propose, signIn } from './helpers.mjs';

// The TOML rules with no approval by policy alone: observed, it records
// every small payment to a trusted payee as a difference.
const NO_AUTO = `@id("scope")
permit (principal, action == Countersign::Action::"propose", resource);

@id("purpose_not_allowed")
@reason("Purpose \`{purpose}\` is not allowed for agent {agent}.")
forbid (principal, action == Countersign::Action::"propose", resource)
unless { principal.purposes.contains(resource.purpose) };

@id("dual_approval")
@reason("{amount} is at or above 10,000.00 USD: two distinct approvers required.")
permit (principal, action == Countersign::Action::"dual_approval", resource)
when { resource.currency == "USD" && resource.amount_minor >= 1000000 };
`;

test('an admin backtests a Cedar candidate, proposes to observe it, a second admin confirms seeing the backtest, and differences show', async ({ page, request }) => {
  // History: a small payment to the trusted payee, approved by policy alone.
  const auto = await propose(request, { amount_minor: 1500, destination: 'acct_acme0000000001' });
  expect(auto.policy.outcome).toBe('auto_approved');

  await signIn(page, 'ada');
  await page.goto('/admin');
  await page.click('#policy-link');
  await expect(page.locator('h1')).toHaveText('Payment policy');
  await expect(page.locator('#policy-enforced')).toHaveText('the TOML rules ([policy])');
  // The candidate starts as the TOML rules in Cedar.
  await expect(page.locator('#policy-text')).toHaveValue(/@id\("auto_approve_trusted_payee"\)/);

  // A candidate that does not validate is refused with its place.
  await page.fill('#policy-text', '@id("x")\npermit (principal, action, resource) when { resource.amount > 1 };');
  await page.click('#policy-backtest');
  await expect(page.locator('#policy-flash')).toContainText('does not validate: policy:2:');

  await page.fill('#policy-text', NO_AUTO);
  await page.click('#policy-backtest');
  await expect(page.locator('#policy-flash')).toContainText('Backtest done');
  await expect(page.locator('#backtest-result')).toContainText('auto_approved → needs_approval');
  await expect(page.locator('#backtest-result')).toContainText('USD:');
  await page.screenshot({ path: 'artifacts/policy-backtest.png', fullPage: true });

  // Proposed to observe: it waits for a second admin, with its backtest.
  await page.click('#policy-observe');
  await expect(page.locator('#policy-flash')).toContainText('Another admin must confirm the policy change');
  const change = page.locator('#pending-policy-changes .pending-change').last();
  await expect(change).toContainText('Observe Cedar policy sha256:');
  await expect(change.locator('.change-backtest')).toContainText('auto_approved → needs_approval');
  await expect(change.locator('button', { hasText: 'Confirm' })).toHaveCount(0);
  await page.click('nav.who button[type=submit]');
  await expect(page).toHaveURL(/\/login$/);

  await signIn(page, 'abe');
  await page.goto('/admin/policy');
  await expect(change.locator('.change-backtest')).toContainText('decided differently');
  await page.screenshot({ path: 'artifacts/policy-confirm.png', fullPage: true });
  await change.locator('button', { hasText: 'Confirm' }).click();
  await expect(page.locator('#admin-flash')).toContainText('Change confirmed: Observe Cedar policy');
  await expect(page.locator('#admin-flash')).toContainText('Backtest of Cedar policy');

  // Observed now, enforced as before: the next small payment is still
  // approved by policy, and the difference is shown.
  await page.goto('/admin/policy');
  await expect(page.locator('#policy-observed')).toContainText('Cedar policy sha256:');
  const next = await propose(request, { amount_minor: 1700, destination: 'acct_acme0000000001' });
  expect(next.status).toBe('approved');
  await page.reload();
  const row = page.locator('#observations tr.observation', { hasText: next.id });
  await expect(row).toContainText('auto_approved → needs_approval');
  await expect(row).toContainText('17.00 USD');
  await page.screenshot({ path: 'artifacts/policy-observed.png', fullPage: true });
});

test('an approver cannot open the policy page', async ({ page }) => {
  await signIn(page, 'ana');
  const response = await page.goto('/admin/policy');
  expect(response.status()).toBe(403);
});
