// A lapsed approval is never lost: when the agent does not
// commit before the approval token expires, the proposal comes back first in
// the reviewer's queue and the title's count, with a one-tap "Approve
// again"; the agent sees the new status and, approved again, pays.
// (The Slack message to the approvers: tests/api slack.rs.)
import { test, expect } from '@playwright/test';
import { commit, expireApprovalToken, poll, pollUntil, propose, signIn } from './helpers.mjs';

test('a lapsed approval comes first in the queue and is approved again in one tap', async ({ page, request }) => {
  const older = await propose(request, { amount_minor: 39_000 });
  const lapsing = await propose(request, { amount_minor: 40_500 });
  await signIn(page, 'ben');
  await page.goto(`/proposals/${lapsing.id}/approve`);
  await page.click('#confirm-approve');
  await expect(page).toHaveURL(/[?&]done=approved/); // the redirect lands before the next goto
  await expect.poll(async () => (await poll(request, lapsing.id)).status).toBe('approved');

  // The agent never commits; the token's expiry passes.
  expect(expireApprovalToken(lapsing.id)).toBe(1);
  const lapsed = await pollUntil(request, lapsing.id, 'approval_expired', 30_000);
  expect(lapsed.approval_token ?? null).toBeNull();

  await page.goto('/');
  const rows = page.locator('tbody tr[data-proposal]');
  await expect(rows.first()).toHaveAttribute('data-proposal', lapsing.id);
  await expect(rows.first().locator('[data-status=approval_expired]')).toBeVisible();
  // Still waiting, and counted: it is listed before the older pending one.
  const order = await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.proposal));
  expect(order.indexOf(lapsing.id)).toBeLessThan(order.indexOf(older.id));
  await expect(page).toHaveTitle(/^\(\d+\) /);
  for (const size of [{ width: 1440, height: 900 }, { width: 390, height: 844 }]) {
    await page.setViewportSize(size);
    await expect(rows.first().locator('button.again')).toBeVisible();
    await page.screenshot({ path: `artifacts/queue-lapsed-${size.width}.png` });
  }

  await rows.first().locator('button.again').click();
  await expect.poll(async () => (await poll(request, lapsing.id)).status).toBe('approved');
  const again = await poll(request, lapsing.id);
  // A new round: the agent gets a fresh token and pays with it.
  await commit(request, lapsing.id, again.approval_token);
  await pollUntil(request, lapsing.id, 'succeeded');
});
