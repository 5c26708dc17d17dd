import { test, expect } from '@playwright/test';
import { countersign, PASSWORD, signIn } from './helpers.mjs';

// Offboarding (docs/PEOPLE.md): an admin deactivates someone who is signed
// in elsewhere; their very next click lands on the sign-in page.
test('a signed-in user an admin deactivates is on the sign-in page at their next click', async ({ page, browser }) => {
  const username = `leaver-${Date.now().toString(36)}`;
  countersign(['user', 'add', '--tenant', 'demo', '--username', username, '--role', 'viewer'], {
    COUNTERSIGN_USER_PASSWORD: PASSWORD,
  });

  // The leaver, in a browser of their own, is reading the queue.
  const theirs = await browser.newContext();
  const leaver = await theirs.newPage();
  await signIn(leaver, username);
  await leaver.goto('/account');
  await expect(leaver.locator('#signed-in-as')).toContainText(username);

  // An admin deactivates them from their page.
  await signIn(page, 'ada');
  await page.goto(`/admin/users/${username}`);
  await expect(page.locator('#user-status')).toHaveText('Active');
  await expect(page.locator('#sessions tbody tr')).toHaveCount(1);
  await page.click('#deactivate');
  await expect(page.locator('#flash')).toContainText(`${username} deactivated: 1 session(s) ended`);
  await expect(page.locator('#user-status')).toContainText('Deactivated at');
  await expect(page.locator('#no-sessions')).toBeVisible();
  await expect(page.locator('#history')).toContainText('user.deactivated');
  await page.screenshot({ path: 'artifacts/offboarding-user-page.png', fullPage: true });

  // Their next click: the sign-in page, and signing in again is refused.
  await leaver.click('nav.who a[href="/"]');
  await expect(leaver).toHaveURL(/\/login/);
  await leaver.fill('form[action="/login"] input[name=username]', username);
  await leaver.fill('form[action="/login"] input[name=password]', PASSWORD);
  await leaver.click('form[action="/login"] button[type=submit]');
  await expect(leaver).toHaveURL(/\/login\?error=/);
  await leaver.screenshot({ path: 'artifacts/offboarding-signed-out.png', fullPage: true });
  await theirs.close();
});

test('everyone sees their own sessions and signs out everywhere', async ({ page, browser }) => {
  const username = `twice-${Date.now().toString(36)}`;
  countersign(['user', 'add', '--tenant', 'demo', '--username', username, '--role', 'viewer'], {
    COUNTERSIGN_USER_PASSWORD: PASSWORD,
  });
  const other = await browser.newContext();
  const elsewhere = await other.newPage();
  await signIn(elsewhere, username);
  await elsewhere.goto('/account');
  await signIn(page, username);
  await page.goto('/account/sessions');
  await expect(page.locator('#sessions tbody tr')).toHaveCount(2);
  await expect(page.locator('#sessions')).toContainText('(this one)');
  await page.click('#end-my-sessions');
  await expect(page).toHaveURL(/\/login$/);
  await elsewhere.click('nav.who a[href="/"]');
  await expect(elsewhere).toHaveURL(/\/login/);
  await other.close();
});
