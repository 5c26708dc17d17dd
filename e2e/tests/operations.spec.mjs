import { test, expect } from '@playwright/test';
import { PASSWORD, commit, poll, pollUntil, propose, signIn, simulatorUrl, verifyToken } from './helpers.mjs';

test('approved in the browser, committed by the agent: the proposal page shows the settled payment', async ({ page, request }) => {
  const proposal = await propose(request, { amount_minor: 34000 });
  expect(proposal.status).toBe('pending_approval');

  await signIn(page, 'ana');
  await page.goto(`/proposals/${proposal.id}`);
  await expect(page.locator('#payment')).toHaveCount(0);
  await page.click('#approve');
  await page.click('#confirm-approve');
  await expect(page.locator('#decided-notice')).toContainText('You approved this payment');
  await page.click('#decided-link');
  await expect(page.locator('.proposal-head .badge')).toHaveText('Approved');

  const approved = await poll(request, proposal.id);
  const claims = await verifyToken(request, approved.approval_token);
  expect(claims.pid).toBe(proposal.id);

  const committed = await commit(request, proposal.id, approved.approval_token);
  expect(['executing', 'succeeded']).toContain(committed.status);
  expect(committed.operation.idempotency_key).toBeTruthy();

  const done = await pollUntil(request, proposal.id, 'succeeded');
  expect(done.operation.status).toBe('succeeded');
  const reference = done.operation.rail_reference;
  expect(reference).toMatch(/^tr_/);

  await page.goto(`/proposals/${proposal.id}`);
  await expect(page.locator('.proposal-head .badge')).toHaveText('Paid');
  await expect(page.locator('#operation-status .badge')).toHaveText('Paid');
  await expect(page.locator('#rail-reference')).toHaveText(reference);
  await expect(page.locator('#operation-error')).toHaveCount(0);
  await expect(page.locator('#escalate')).toHaveCount(0);
  await page.screenshot({ path: 'artifacts/proposal-succeeded.png', fullPage: true });
});

test('the operations page renders for an admin and asks anyone else to sign in', async ({ page }) => {
  // Signed out: sign in first, then back to the operations page.
  await page.goto('/operations');
  await expect(page).toHaveURL(/\/login\?next=\/operations$/);
  await page.fill('input[name=username]', 'ada');
  await page.fill('input[name=password]', PASSWORD);
  await page.click('button[type=submit]');
  await expect(page).toHaveURL(/\/operations$/);
  await expect(page.locator('#signed-in-as')).toContainText('ada');

  await page.goto('/');
  await page.click('nav.who a[href="/operations"]');
  await expect(page).toHaveURL(/\/operations$/);
  await expect(page.locator('h1')).toHaveText('Operations needing review');
  await expect(page.locator('#needs-review')).toBeVisible();
  await expect(page.locator('#reconciling')).toBeVisible();
  await page.screenshot({ path: 'artifacts/operations.png', fullPage: true });
});

test('an operation the rail lost needs review; an admin resolves it in the browser', async ({ page, request }) => {
  // The rail answers the next transfer with a 500 and records nothing; with
  // the resubmit window at 0 (playwright.config.mjs) reconciliation hands it to a human.
  const fault = await request.post(`${simulatorUrl()}/_sim/faults`, { data: { mode: 'error_500', count: 1 } });
  expect(fault.status()).toBe(200);
  const proposal = await propose(request, { amount_minor: 4200, destination: 'acct_acme0000000001' });
  expect(proposal.status).toBe('approved');
  const token = proposal.approval_token || (await poll(request, proposal.id)).approval_token;
  const committed = await commit(request, proposal.id, token);
  expect(committed.status).toBe('unknown');
  const review = await pollUntil(request, proposal.id, 'needs_review');
  const op = review.operation;
  expect(op.error.code).toBe('no_rail_record');
  const card = page.locator(`article[data-operation="${op.id}"]`);

  // An approver sees it, read-only.
  await signIn(page, 'ana');
  await page.goto('/operations');
  await expect(card).toBeVisible();
  await expect(card.locator('a', { hasText: 'Resolve' })).toHaveCount(0);
  await page.click('nav.who button[type=submit]');

  // The admin sees why, the key to look up at the rail, and a way to resolve it.
  await signIn(page, 'ada');
  await page.goto('/operations');
  await expect(card).toBeVisible();
  // Why, in words; the code is for scripts (a data attribute), not on screen.
  await expect(card.locator('.why')).toContainText('The rail has no record under this key');
  await expect(card.locator('.why')).toHaveAttribute('data-code', 'no_rail_record');
  await expect(page.locator('main')).not.toContainText('no_rail_record');
  await expect(card).toContainText(op.idempotency_key);
  await expect(card).toContainText('Pay Acme Supplies Ltd');
  await expect(card.locator('a.sentence')).toHaveAttribute('href', `/proposals/${proposal.id}`);
  await page.screenshot({ path: 'artifacts/operations-needs-review.png', fullPage: true });

  // The resolution page reads the rail: nothing under the key yet.
  await card.locator('a', { hasText: 'Resolve' }).click();
  await expect(page).toHaveURL(new RegExp(`/operations/${op.id}/resolve$`));
  await expect(page.locator('#no-rail-records')).toBeVisible();
  await expect(page.locator('.resolve-succeeded button')).toHaveCount(0);

  // The rail's support pushes the payment through under the operation's key.
  const pushed = await request.post(`${simulatorUrl()}/v1/transfers`, {
    headers: { 'Idempotency-Key': `support-${op.idempotency_key}` },
    form: {
      amount: '4200', currency: 'usd', destination: 'acct_acme0000000001',
      transfer_group: op.idempotency_key, 'metadata[source_account]': 'acct_demo000000001234',
    },
  });
  expect(pushed.status()).toBe(200);
  const reference = (await pushed.json()).id;
  // Past the simulator's settlement delay: the record is paid.
  const clock = await request.post(`${simulatorUrl()}/_sim/clock`, { data: { advance_secs: 5 } });
  expect(clock.status()).toBe(200);
  await page.reload();
  const record = page.locator(`tr[data-record="${reference}"]`);
  await expect(record).toContainText('Matches this operation');
  await page.screenshot({ path: 'artifacts/operations-resolve.png', fullPage: true });

  // Picking it without ticking the confirmation is refused by the browser's
  // required field; the server refuses it too (checked without the form).
  await record.locator('input[type=radio]').check();
  await page.locator('.resolve-succeeded input[name=confirm]').check();
  await page.locator('.resolve-succeeded button').click();
  await expect(page).toHaveURL(/\/operations\?result=succeeded$/);
  await expect(page.locator('.notice-ok')).toContainText('marked succeeded');
  await expect(card).toHaveCount(0);

  const settled = await poll(request, proposal.id);
  expect(settled.status).toBe('succeeded');
  expect(settled.operation.status).toBe('succeeded');
  expect(settled.operation.rail_reference).toBe(reference);
  await page.goto(`/proposals/${proposal.id}`);
  await expect(page.locator('#rail-reference')).toHaveText(reference);
});

test('the operations page is live: a payment the rail lost appears without a reload, in words', async ({ page, request }) => {
  await signIn(page, 'ada');
  // Hydrated, and its long-poll for changes waiting, before anything happens.
  const polling = page.waitForRequest(/\/console\/changes/);
  await page.goto('/operations');
  await expect(page.locator('#needs-review')).toBeVisible();
  await polling;

  const fault = await request.post(`${simulatorUrl()}/_sim/faults`, { data: { mode: 'error_500', count: 1 } });
  expect(fault.status()).toBe(200);
  const proposal = await propose(request, { amount_minor: 4300, destination: 'acct_acme0000000001' });
  const token = proposal.approval_token || (await poll(request, proposal.id)).approval_token;
  const committed = await commit(request, proposal.id, token);
  expect(committed.status).toBe('unknown');
  const review = await pollUntil(request, proposal.id, 'needs_review');

  // No reload: the card arrives by itself.
  const card = page.locator(`article[data-operation="${review.operation.id}"]`);
  await expect(card).toBeVisible({ timeout: 30_000 });
  await expect(card.locator('.why')).toContainText('a human must decide');
  await expect(page.locator('main')).not.toContainText('no_rail_record');
  // No raw timestamps anywhere on the page.
  await expect(page.locator('main')).not.toContainText(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d+ UTC/);
  await page.screenshot({ path: 'artifacts/operations-live.png', fullPage: true });
});
