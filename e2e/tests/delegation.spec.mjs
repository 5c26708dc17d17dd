// Delegation while away in the browser (docs/DELEGATION.md):
// ana delegates to ben on her account page (whole days in the browser's time
// zone), ben sees "Approve for ana…" on a payment, the confirmation says for
// whom, and the approval is listed as "ben for ana". The rules themselves
// (lower limit, both people's duties, counting once, four eyes, commit) are
// tested in server/tests/api/delegation.rs. The delegation is ended at the
// end: the tests share one server.
import { test, expect } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { propose, signIn } from './helpers.mjs';

/** `YYYY-MM-DD` of today plus `days`, in the browser's (and this process's) zone. */
function day(days) {
  const d = new Date();
  d.setDate(d.getDate() + days);
  const two = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
}

test('ana delegates to ben while away, and ben approves for her', async ({ page, request }) => {
  await signIn(page, 'ana');
  await page.goto('/account');
  await expect(page.locator('#delegation-list')).toContainText('Nobody approves for you');
  await page.fill('#delegation-from', day(0));
  await page.fill('#delegation-until', day(2));
  // A delegate who cannot approve is refused, by name.
  await page.fill('#delegation-to', 'vic');
  await page.click('#delegation-save');
  await expect(page.locator('#delegation-status')).toContainText('Not delegated: vic is not an approver');

  await page.fill('#delegation-to', 'ben');
  await page.click('#delegation-save');
  await expect(page.locator('#delegation-status')).toContainText('ben can approve for you');
  const item = page.locator('#delegation-list li[data-status=active]');
  await expect(item).toContainText('ben approves for you');
  await expect(item).toContainText('(in force)');
  await page.setViewportSize({ width: 390, height: 844 });
  const sideways = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(sideways).toBeLessThanOrEqual(0);
  await page.locator('#delegation').screenshot({ path: 'artifacts/account-delegation-390.png' });
  const axe = await new AxeBuilder({ page }).analyze();
  expect(axe.violations).toEqual([]);
  await page.setViewportSize({ width: 1440, height: 900 });

  try {
    const proposal = await propose(request, { amount_minor: 41_200 });
    await page.context().clearCookies();
    await signIn(page, 'ben');
    await page.goto(`/proposals/${proposal.id}`);
    await expect(page.locator('#delegations')).toContainText('ben approves for ana until');
    await page.click('[data-approve-for=ana]');
    await expect(page.locator('#approving-for')).toContainText('You are approving for ana');
    await page.click('#confirm-approve');
    // On to the next payment waiting for ben, or the queue, with the notice.
    await expect(page).toHaveURL(/[?&]done=approved/);
    await page.goto(`/proposals/${proposal.id}`);
    await expect(page.locator('#approvals')).toContainText('ben for ana');
  } finally {
    await page.context().clearCookies();
    await signIn(page, 'ana');
    await page.goto('/account');
    await page.locator('#delegation-list li[data-status=active] button').click();
    await expect(page.locator('#delegation-status')).toContainText('Ended');
    await expect(page.locator('#delegation-list')).toContainText('Nobody approves for you');
  }
});
