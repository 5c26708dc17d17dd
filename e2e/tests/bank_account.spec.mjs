// A payee's new bank account (docs/PAYABLES.md, "Bank-account changes"):
// one admin proposes it; it applies only when a second admin records the
// call-back that verified it (here on a phone); the old account is then
// refused, and the first payment to the new one needs two approvals and
// shows the "Bank account changed" signal.
import { test, expect } from '@playwright/test';
import { AGENT_KEY, poll, propose, signIn } from './helpers.mjs';

test('a new bank account applies once a second admin records the call-back; its first payment needs two approvals', async ({ browser, request }) => {
  const suffix = Date.now().toString(36);
  const [oldAccount, newAccount, name] = [`ba_e2eold${suffix}`, `ba_e2enew${suffix}`, `E2E Vendor ${suffix}`];
  const ada = await browser.newPage();
  await signIn(ada, 'ada');
  await ada.goto('/admin');
  await ada.fill('form[action="/admin/payees"] input[name=id]', oldAccount);
  await ada.fill('form[action="/admin/payees"] input[name=legal_name]', name);
  await ada.click('form[action="/admin/payees"] button');
  await expect(ada.locator('#admin-flash')).toContainText('saved');
  await ada.fill('form[action="/admin/payees/account"] input[name=payee]', oldAccount);
  await ada.fill('form[action="/admin/payees/account"] input[name=new_account]', newAccount);
  await ada.click('form[action="/admin/payees/account"] button');
  await expect(ada.locator('#admin-flash')).toContainText('call the payee back');
  const mine = ada.locator('.pending-change[data-kind=payee_account]', { hasText: name });
  await expect(mine).toContainText('instead of');
  await expect(mine.locator('form.call-back')).toHaveCount(0); // the proposer cannot confirm
  await ada.close();

  // Nothing changed yet: the new account is no payee.
  const early = await request.post('/api/v1/proposals', {
    headers: { Authorization: `Bearer ${AGENT_KEY}` },
    data: { run_id: `bank-${suffix}-0`, amount_minor: 5000, currency: 'USD', source_account: 'acct_demo000000001234',
      destination: newAccount, purpose_code: 'vendor' },
  });
  expect(early.status()).toBe(422);

  const abe = await browser.newPage({ viewport: { width: 390, height: 844 } });
  await signIn(abe, 'abe');
  await abe.goto('/admin');
  const change = abe.locator('.pending-change[data-kind=payee_account]', { hasText: name });
  const form = change.locator('form.call-back');
  await expect(form).toContainText('never one that came with the request');
  await form.locator('input[name=spoke_to]').fill('Jo Park, accounts receivable');
  await form.locator('input[name=phone]').fill('+49 30 1234 5678');
  await form.locator('input[name=number_source]').fill('the vendor master file');
  await form.locator('input[name=confirmed]').check();
  expect(await abe.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
  await abe.screenshot({ path: 'artifacts/bank-account-call-back-phone.png', fullPage: true });
  await form.locator('button[type=submit]').click();
  await expect(abe.locator('#admin-flash')).toContainText('Change confirmed');

  // The old account is refused; the first payment to the new one needs two approvals.
  const old = await request.post('/api/v1/proposals', {
    headers: { Authorization: `Bearer ${AGENT_KEY}` },
    data: { run_id: `bank-${suffix}-1`, amount_minor: 5000, currency: 'USD', source_account: 'acct_demo000000001234',
      destination: oldAccount, purpose_code: 'vendor' },
  });
  expect(old.status()).toBe(403);
  expect((await old.json()).error.details[0].rule).toBe('payee_account_replaced');
  const first = await propose(request, { amount_minor: 5000, destination: newAccount });
  expect(first.policy.required_approvals).toBe(2);
  expect(first.policy.reasons.map((r) => r.rule)).toContain('account_changed');
  await abe.goto(`/proposals/${first.id}`);
  await expect(abe.locator('#facts-card [data-signal=account_changed]')).toHaveText('Bank account changed');
  await expect(abe.locator('#signals')).toContainText('verified by a call-back');
  expect((await poll(request, first.id)).status).toBe('pending_approval');
  await abe.close();
});
