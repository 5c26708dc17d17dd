// An ended session never costs the reviewer their work:
// a form posted after the session ended goes to sign-in and back to the
// same page, what was typed put back; the page warns a minute before the
// idle timeout. (The server side, every form and each refusal: tests/api
// console_session.rs.)
import { test, expect } from '@playwright/test';
import { PASSWORD, poll, propose, signIn } from './helpers.mjs';

/** Signs the browser out behind the page's back, as another tab would. */
async function signOutElsewhere(page) {
  const csrf = await page.locator('input[name=csrf_token]').first().inputValue();
  const origin = new URL(page.url()).origin;
  const response = await page.context().request.delete('/api/v1/session', {
    headers: { 'X-CSRF-Token': csrf, Origin: origin },
  });
  expect(response.status()).toBe(204);
}

async function signInAgain(page, username) {
  await page.fill('input[name=username]', username);
  await page.fill('input[name=password]', PASSWORD);
  await page.click('button[type=submit]');
}

for (const [name, size] of [['desktop', { width: 1440, height: 900 }], ['phone', { width: 390, height: 844 }]]) {
  test(`${name}: a rejection reason typed before the session ended comes back after sign-in`, async ({ page, request }) => {
    await page.setViewportSize(size);
    const proposal = await propose(request, { amount_minor: 35_000 });
    await signIn(page, 'ben');
    await page.goto(`/proposals/${proposal.id}`);
    const reason = 'Wrong vendor: confirmed with accounts payable';
    await page.fill('textarea[name=reason]', reason);
    await signOutElsewhere(page);

    await page.click('#reject');
    await expect(page).toHaveURL(new RegExp(`/login\\?next=/proposals/${proposal.id}&expired=1$`));
    await expect(page.locator('#session-expired')).toContainText('nothing was done');
    await page.screenshot({ path: `artifacts/session-expired-sign-in-${name}.png`, fullPage: true });
    expect((await poll(request, proposal.id)).status).toBe('pending_approval');

    await signInAgain(page, 'ben');
    await expect(page).toHaveURL(new RegExp(`/proposals/${proposal.id}$`));
    await expect(page.locator('textarea[name=reason]')).toHaveValue(reason);
    await expect(page.locator('#draft-restored')).toContainText('What you typed is back');
    await page.screenshot({ path: `artifacts/session-draft-restored-${name}.png`, fullPage: true });
    await page.click('#reject');
    await expect.poll(async () => (await poll(request, proposal.id)).status).toBe('rejected');
    expect((await poll(request, proposal.id)).approvals[0].reason).toBe(reason);
    // Sent: the draft is gone, not put back on the next visit.
    await page.goto(`/proposals/${proposal.id}`);
    await expect(page.locator('#draft-restored')).toHaveCount(0);
  });
}

test('the bulk page comes back after sign-in with its reason', async ({ page, request }) => {
  const [a, b] = [await propose(request, { amount_minor: 36_000 }), await propose(request, { amount_minor: 37_000 })];
  await signIn(page, 'ben');
  const bulk = `/bulk?id=${a.id}&id=${b.id}`;
  await page.goto(bulk);
  await page.fill('form.reject textarea[name=reason]', 'Both sent in error');
  await signOutElsewhere(page);
  await page.click('#bulk-reject');
  await expect(page.locator('#session-expired')).toBeVisible();
  await signInAgain(page, 'ben');
  await expect(page).toHaveURL(new RegExp(`/bulk\\?id=${a.id}&id=${b.id}$`));
  await expect(page.locator('form.reject textarea[name=reason]')).toHaveValue('Both sent in error');
  await page.click('#bulk-reject');
  await expect(page.locator(`li[data-proposal="${a.id}"]`)).toHaveAttribute('data-outcome', 'rejected');
});

test('an admin form comes back after sign-in with what was typed', async ({ page }) => {
  await signIn(page, 'abe');
  await page.goto('/admin');
  const payee = page.locator('form[action="/admin/payees"]');
  await payee.locator('input[name=id]').fill('ba_keptdraft0001');
  await payee.locator('input[name=legal_name]').fill('Kept Draft GmbH');
  await signOutElsewhere(page);
  await payee.locator('button[type=submit]').click();
  await expect(page.locator('#session-expired')).toBeVisible();
  await signInAgain(page, 'abe');
  await expect(page).toHaveURL(/\/admin$/);
  await expect(payee.locator('input[name=legal_name]')).toHaveValue('Kept Draft GmbH');
  await expect(payee.locator('input[name=id]')).toHaveValue('ba_keptdraft0001');
});

test('a minute before the idle timeout the page warns; staying keeps the session, else it says it ended', async ({ page, request }) => {
  const proposal = await propose(request, { amount_minor: 38_000 });
  await page.clock.install();
  await signIn(page, 'ben');
  await page.goto(`/proposals/${proposal.id}`);
  // The demo's idle timeout is 30 minutes: the warning comes at 29.
  await expect(page.locator('meta[name="countersign-idle-secs"]')).toHaveAttribute('content', '1800');
  await page.clock.fastForward('28:50');
  await expect(page.locator('#idle-warning')).toHaveCount(0);
  await page.clock.fastForward('00:20');
  await expect(page.locator('#idle-warning')).toContainText('ends in about a minute');
  await page.screenshot({ path: 'artifacts/session-idle-warning.png', fullPage: true });
  const alive = page.waitForResponse((r) => r.url().endsWith('/session/alive'));
  await page.click('#stay-signed-in');
  expect((await alive).status()).toBe(204);
  await expect(page.locator('#idle-warning')).toHaveCount(0);

  await page.clock.fastForward('30:05');
  const ended = page.locator('#session-ended');
  await expect(ended).toContainText('Your session has ended');
  await expect(ended.locator('#sign-in-again')).toHaveAttribute(
    'href',
    `/login?next=${encodeURIComponent(`/proposals/${proposal.id}`)}&expired=1`,
  );
});
