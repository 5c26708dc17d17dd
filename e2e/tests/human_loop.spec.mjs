// The human loop page: an admin sees decisions and
// expiries per day and the time to decide by channel, as SVG charts drawn
// by the server (no chart library in the wasm), readable on a phone.
import { test, expect } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { poll, propose, signIn } from './helpers.mjs';

test('an admin reads the human loop as charts at both sizes', async ({ page, request }) => {
  const proposal = await propose(request, { amount_minor: 33_000 });
  await signIn(page, 'ben');
  await page.goto(`/proposals/${proposal.id}/approve`);
  await page.click('#confirm-approve');
  // The form's redirect lands before the next sign-in navigates (else the
  // two navigations race).
  await expect(page).toHaveURL(/[?&]done=approved/);
  await expect.poll(async () => (await poll(request, proposal.id)).status).toBe('approved');

  // Another person: a fresh browser context signs ada in.
  await page.context().clearCookies();
  await signIn(page, 'ada');
  await page.goto('/admin');
  await page.click('a[href="/admin/loop"]');
  await expect(page).toHaveURL(/\/admin\/loop$/);
  await expect(page.locator('h1')).toHaveText('Human loop');
  const today = new Date().toISOString().slice(0, 10);
  const row = page.locator(`#per-day tr[data-day="${today}"]`);
  await expect(row.locator('.approvals')).not.toHaveText('0');
  await expect(page.locator('#per-day-chart rect.bar.approved').first()).toBeVisible();
  await expect(page.locator('#decision-times [data-channel="console"]')).toHaveCount(1);
  await expect(page.locator('#decision-times')).toHaveAttribute('aria-label', /^console: median /);
  for (const size of [{ width: 1440, height: 900 }, { width: 390, height: 844 }]) {
    await page.setViewportSize(size);
    const sideways = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(sideways).toBeLessThanOrEqual(0);
    const chart = await page.locator('#per-day-chart').boundingBox();
    expect(chart.width).toBeLessThanOrEqual(size.width);
    await page.screenshot({ path: `artifacts/human-loop-${size.width}.png`, fullPage: true });
  }
  const axe = await new AxeBuilder({ page }).analyze();
  expect(axe.violations).toEqual([]);
});
