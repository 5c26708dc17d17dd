import { test, expect } from '@playwright/test';
import { INJECTION, poll, propose, signIn, verifyToken } from './helpers.mjs';

test('an approver approves an agent proposal; the agent receives a token that verifies', async ({ page, request }) => {
  const proposal = await propose(request);
  expect(proposal.status).toBe('pending_approval');

  // The injected "instruction" must stay inert text: a dialog would be a failure.
  page.on('dialog', () => { throw new Error('the reference executed as code'); });

  await signIn(page, 'ana');
  const row = page.locator(`tr[data-proposal="${proposal.id}"]`);
  await expect(row).toBeVisible();
  await row.locator('a').click();

  const sentence = `Pay Northwind Traders GmbH, invoice ${proposal.canonical_request.invoice_id}, 250.00 USD, for vendor, from acct_…1234`;
  await expect(page.locator('h1.sentence')).toHaveText(sentence);
  await expect(page.locator('#agent-reference')).toHaveText(INJECTION);
  await expect(page.locator('.untrusted')).toContainText('Untrusted text written by the agent');
  await expect(page.locator('code.hash').first()).toHaveText(proposal.request_hash);
  await page.screenshot({ path: 'artifacts/proposal-detail.png', fullPage: true });

  await page.click('#approve');
  await expect(page.locator('#confirm-sentence')).toHaveText(sentence);
  await page.screenshot({ path: 'artifacts/confirm-approval.png', fullPage: true });
  await page.click('#confirm-approve');
  // On to what waits next (flow.spec.mjs), with a notice linking back.
  await expect(page.locator('#decided-notice')).toContainText('You approved this payment');
  await expect(page.locator('#decided-link')).toHaveText(sentence);
  await page.click('#decided-link');
  await expect(page.locator('.proposal-head .badge')).toHaveText('Approved');

  const polled = await poll(request, proposal.id);
  expect(polled.status).toBe('approved');
  expect(polled.approval_token).toBeTruthy();
  const claims = await verifyToken(request, polled.approval_token);
  expect(claims.pid).toBe(proposal.id);
  expect(claims.rh).toBe(proposal.request_hash);
  expect(claims.azp).toBe('payout-bot');
  expect(claims.aud).toBe('countersign:commit');
  expect(claims.amr).toEqual(['pwd']);
  expect(new Date(polled.approval_expires_at).getTime() / 1000).toBe(claims.exp);
});

test('a rejection needs a reason and ends the proposal', async ({ page, request }) => {
  const proposal = await propose(request, { amount_minor: 31000 });
  await signIn(page, 'ben');
  await page.goto(`/proposals/${proposal.id}`);
  await page.fill('textarea[name=reason]', 'Invoice already paid by wire');
  await page.click('#reject');
  await expect(page.locator('#decided-notice')).toContainText('You rejected this payment');
  await page.click('#decided-link');
  await expect(page.locator('.proposal-head .badge')).toHaveText('Rejected');
  const polled = await poll(request, proposal.id);
  expect(polled.status).toBe('rejected');
  expect(polled.approvals[0].reason).toBe('Invoice already paid by wire');
  expect(polled.approval_token).toBeNull();
});

test('a viewer sees no approve button and the API refuses them', async ({ page, request }) => {
  const proposal = await propose(request, { amount_minor: 32000 });
  await signIn(page, 'vic');
  await page.goto(`/proposals/${proposal.id}`);
  await expect(page.locator('h1.sentence')).toBeVisible();
  await expect(page.locator('#approve')).toHaveCount(0);
  await expect(page.locator('#reject')).toHaveCount(0);

  // Same session, straight at the JSON API, with a valid CSRF token.
  const csrf = await page.locator('input[name=csrf_token]').first().inputValue();
  const response = await page.request.post(`/api/v1/proposals/${proposal.id}/approvals`, {
    headers: { 'X-CSRF-Token': csrf, Origin: new URL(page.url()).origin },
    data: { decision: 'approve' },
  });
  expect(response.status()).toBe(403);
  expect((await response.json()).error.code).toBe('forbidden');
  expect((await poll(request, proposal.id)).status).toBe('pending_approval');
});

test('new proposals appear in the queue without a reload', async ({ page, request }) => {
  await signIn(page, 'ana');
  await expect(page.locator('.home')).toHaveAttribute('data-hydrated', 'true');
  const proposal = await propose(request, { amount_minor: 33000 });
  await expect(page.locator(`tr[data-proposal="${proposal.id}"]`)).toBeVisible({ timeout: 15_000 });
});
