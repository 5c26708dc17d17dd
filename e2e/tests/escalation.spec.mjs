// Escalation in the browser. `serve --demo` gives the demo
// tenant its default rule (docs/NOTIFICATIONS.md): remind after 10 minutes,
// escalate to treasury (ben) after 30. The queue counts down to the
// escalation, the proposal page says when the reminder and the escalation
// come and who has been told, and each person sets quiet hours in their own
// time zone on the account page. (Reminders and escalations actually sent,
// and quiet hours honoured, are tested against the push stand-in in
// server/tests/api/escalation.rs.)
import { test, expect } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { propose, signIn } from './helpers.mjs';

test('the queue and the proposal count down to the escalation', async ({ page, request }) => {
  const proposal = await propose(request, { amount_minor: 41_100 });
  await signIn(page, 'ben');
  await page.goto('/');
  const row = page.locator(`tbody tr[data-proposal="${proposal.id}"]`);
  await expect(row.locator('[data-reach=escalates]')).toHaveText(/^escalates in (29|30) min$/);

  await page.goto(`/proposals/${proposal.id}`);
  await expect(page.locator('#remind-at')).toContainText('Approvers reminded');
  await expect(page.locator('#remind-at')).toContainText(/in (9|10) min/);
  await expect(page.locator('#escalates-at')).toHaveAttribute('data-group', 'treasury');
  await expect(page.locator('#escalates-at')).toContainText(/Escalates to treasury .*in (29|30) min/);
  // Nobody subscribed a device or gave an address in the demo: it says so.
  await expect(page.locator('#nobody-notified')).toBeVisible();
  for (const size of [{ width: 1440, height: 900 }, { width: 390, height: 844 }]) {
    await page.setViewportSize(size);
    const sideways = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(sideways, `no sideways scroll at ${size.width}`).toBeLessThanOrEqual(0);
    await page.screenshot({ path: `artifacts/proposal-escalation-${size.width}.png`, fullPage: true });
  }
  const axe = await new AxeBuilder({ page }).analyze();
  expect(axe.violations).toEqual([]);
});

test('quiet hours are set in the browser\'s time zone, kept, and cleared', async ({ page }) => {
  await signIn(page, 'ana');
  await page.goto('/account');
  const zone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
  await expect(page.locator('#quiet-zone')).toHaveValue(zone);
  await expect(page.locator('#quiet-clear')).toBeHidden();

  // A zone the server does not know is refused, by name.
  await page.fill('#quiet-from', '22:00');
  await page.fill('#quiet-until', '07:00');
  await page.fill('#quiet-zone', 'Mars/Olympus');
  await page.click('#quiet-save');
  await expect(page.locator('#reach-status')).toContainText('Not saved: time_zone is not a time zone name');

  await page.fill('#quiet-zone', 'Europe/Paris');
  await page.click('#quiet-save');
  await expect(page.locator('#reach-status')).toContainText('Quiet from 22:00 until 07:00 (Europe/Paris)');
  await page.reload();
  await expect(page.locator('#quiet-from')).toHaveValue('22:00');
  await expect(page.locator('#quiet-until')).toHaveValue('07:00');
  await expect(page.locator('#quiet-zone')).toHaveValue('Europe/Paris');
  await page.setViewportSize({ width: 390, height: 844 });
  const sideways = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(sideways).toBeLessThanOrEqual(0);
  await page.locator('#reach').screenshot({ path: 'artifacts/account-quiet-hours-390.png' });

  await page.click('#quiet-clear');
  await expect(page.locator('#reach-status')).toContainText('No quiet hours');
  await page.reload();
  await expect(page.locator('#quiet-from')).toHaveValue('');
  await expect(page.locator('#quiet-clear')).toBeHidden();
});
