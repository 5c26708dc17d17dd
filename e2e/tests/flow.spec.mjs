// The reviewer's flow. After a decision the next proposal
// waiting for you opens, with a notice naming what you did to which payment;
// when none is left, the queue says so. A deep link opened signed out comes
// back after sign-in; a failed sign-in keeps the username and focuses the
// password; titles carry the count of proposals waiting; a favicon.
import { test, expect } from '@playwright/test';
import { PASSWORD, poll, propose, signIn } from './helpers.mjs';

test.describe.configure({ mode: 'serial' });

const sentence = (p, amount) =>
  `Pay Northwind Traders GmbH, invoice ${p.canonical_request.invoice_id}, ${amount} USD, for vendor, from acct_…1234`;

/** The count in a title such as "(3) Approval queue · Countersign", 0 without one. */
const countIn = (title) => Number((/^\((\d+)\) /.exec(title) || [0, 0])[1]);

test('after approving, the next waiting proposal opens with a notice and a link back', async ({ page, request }) => {
  const first = await propose(request, { amount_minor: 61000 });
  const second = await propose(request, { amount_minor: 62000 });
  await signIn(page, 'ben');
  await page.goto(`/proposals/${first.id}`);
  await page.click('#approve');
  await page.click('#confirm-approve');

  // Somewhere else: the oldest proposal still waiting for ben (not the one just decided).
  await expect(page).toHaveURL(new RegExp(`/proposals/prop_\\w+\\?done=approved&decided=${first.id}$`));
  const next = /\/proposals\/(prop_\w+)\?/.exec(page.url())[1];
  expect(next).not.toBe(first.id);
  await expect(page.locator('.proposal-head .badge')).toHaveText('Waiting for approval');
  const notice = page.locator('#decided-notice');
  await expect(notice).toContainText('You approved this payment');
  await expect(page.locator('#decided-link')).toHaveText(sentence(first, '610.00'));
  await expect(notice).toContainText('Next: the oldest proposal still waiting for you.');
  await expect(page).toHaveTitle(/^\(\d+\) [\d,.]+ [A-Z]{3} · .+ · Countersign$/);
  await page.screenshot({ path: 'artifacts/flow-next-proposal.png', fullPage: true });

  // The link goes back to the approved one.
  await page.click('#decided-link');
  await expect(page).toHaveURL(new RegExp(`/proposals/${first.id}$`));
  await expect(page.locator('.proposal-head .badge')).toHaveText('Approved');
  expect((await poll(request, first.id)).status).toBe('approved');
  expect((await poll(request, second.id)).status).toBe('pending_approval');
});

test('working through the queue ends on the queue, clear', async ({ page, request }) => {
  test.setTimeout(120_000);
  // ada may approve up to 1,000.00 USD: reject whatever waits for her, in
  // the order the console offers it, until nothing does.
  const mine = await propose(request, { amount_minor: 7100 });
  await signIn(page, 'ada');
  await page.goto(`/proposals/${mine.id}`);
  let decided = 0;
  while (!new URL(page.url()).pathname.endsWith('/')) {
    expect(decided, 'the queue ends').toBeLessThan(60);
    await expect(page.locator('#reject')).toBeVisible();
    await page.fill('textarea[name=reason]', 'Clearing the queue in a browser test');
    await page.click('#reject');
    await page.waitForURL(/[?&]done=rejected&decided=prop_/);
    decided += 1;
  }
  expect(decided).toBeGreaterThan(0);
  const notice = page.locator('#decided-notice');
  await expect(notice).toContainText('You rejected this payment');
  await expect(notice).toContainText('Queue clear: nothing else is waiting for your approval.');
  await expect(page.locator('h1')).toHaveText('Approval queue');
  await expect(page).toHaveTitle('Approval queue · Countersign');
  await page.screenshot({ path: 'artifacts/flow-queue-clear.png', fullPage: true });
  expect((await poll(request, mine.id)).status).toBe('rejected');
});

test('a deep link opened signed out: sign in (after a typo), land on it', async ({ page, request }) => {
  const proposal = await propose(request, { amount_minor: 63000 });
  await page.goto(`/proposals/${proposal.id}`);
  await expect(page).toHaveURL(new RegExp(`/login\\?next=/proposals/${proposal.id}$`));
  await expect(page).toHaveTitle('Sign in · Countersign');
  await expect(page.locator('input[name=username]')).toBeFocused();

  // A wrong password: the username stays, the password is focused and empty.
  await page.fill('input[name=username]', 'ben');
  await page.fill('input[name=password]', 'not the password');
  await page.click('button[type=submit]');
  await expect(page.locator('.notice-error')).toHaveText('Wrong username or password.');
  await expect(page.locator('input[name=username]')).toHaveValue('ben');
  await expect(page.locator('input[name=password]')).toHaveValue('');
  await expect(page.locator('input[name=password]')).toBeFocused();

  // Only the password to type; then the page asked for.
  await page.keyboard.type(PASSWORD);
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(new RegExp(`/proposals/${proposal.id}$`));
  await expect(page.locator('h1.sentence')).toHaveText(sentence(proposal, '630.00'));
  await expect(page.locator('#signed-in-as')).toContainText('ben');
});

test('an address that leaves the site is not followed after sign-in', async ({ page }) => {
  await page.goto('/login?next=//example.com/');
  await page.fill('input[name=username]', 'ben');
  await page.fill('input[name=password]', PASSWORD);
  await page.click('button[type=submit]');
  await expect(page).toHaveURL(/^http:\/\/localhost:\d+\/$/);
  await expect(page.locator('#signed-in-as')).toContainText('ben');
});

test('the title counts what waits for you and follows the live queue', async ({ page, request }) => {
  await signIn(page, 'ben');
  await expect(page.locator('.home')).toHaveAttribute('data-hydrated', 'true');
  await expect(page).toHaveTitle(/Approval queue · Countersign$/);
  const before = countIn(await page.title());
  await propose(request, { amount_minor: 64000 });
  await expect.poll(async () => countIn(await page.title()), { timeout: 15_000 }).toBe(before + 1);
  await expect(page).toHaveTitle(`(${before + 1}) Approval queue · Countersign`);

  // A viewer has nothing to approve: a plain title.
  const viewer = await page.context().browser().newContext();
  const vic = await viewer.newPage();
  await signIn(vic, 'vic');
  await expect(vic).toHaveTitle('Approval queue · Countersign');
  await viewer.close();
});

test('the favicon', async ({ page, request }) => {
  await page.goto('/login');
  await expect(page.locator('link[rel=icon]')).toHaveAttribute('href', '/favicon.svg');
  await expect(page.locator('link[rel=icon]')).toHaveAttribute('type', 'image/svg+xml');
  const svg = await request.get('/favicon.svg');
  expect(svg.status()).toBe(200);
  expect(svg.headers()['content-type']).toBe('image/svg+xml');
  expect(await svg.text()).toContain('<svg');
  const ico = await request.get('/favicon.ico');
  expect(ico.status()).toBe(200); // followed to the SVG
  expect(ico.headers()['content-type']).toBe('image/svg+xml');
});
