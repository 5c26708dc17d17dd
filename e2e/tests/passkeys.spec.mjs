// Passkeys bound to the payment (issue 15), in Chromium with its virtual
// authenticator (CDP `WebAuthn`, works on localhost): register a passkey on
// the account page, approve with a step-up, and see a tampered challenge, a
// replayed assertion and a removed passkey refused. The ceremonies run in
// /passkeys.js (plain JavaScript); the server verifies.
//
// The demo server has no `policy.step_up_at_minor`: whoever has a passkey
// steps up for every approval. The passkey is removed at the end (and on
// failure), so the other specs' approvals by ana are unaffected.
import { test, expect } from '@playwright/test';
import { poll, propose, signIn, verifyToken } from './helpers.mjs';

function invoice() {
  return `PK-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
}

async function virtualAuthenticator(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return cdp;
}

/** Removes every passkey the signed-in user has, through the account page. */
async function removeAll(page) {
  await page.goto('/account');
  await expect(page.locator('#passkey-list')).toHaveAttribute('data-ready', '1');
  while ((await page.locator('[data-passkey-remove]').count()) > 0) {
    const before = await page.locator('[data-passkey-remove]').count();
    await page.locator('[data-passkey-remove]').first().click();
    await expect(page.locator('[data-passkey-remove]')).toHaveCount(before - 1);
    await expect(page.locator('#passkey-status')).toHaveText('Passkey removed.');
  }
}

/** The form post an approval sends, captured and kept from the server. */
async function captureApproval(page, id) {
  let body = null;
  await page.route('**/proposals/*/decision', async (route) => {
    body = route.request().postData();
    await route.abort();
  });
  await page.goto(`/proposals/${id}/approve`);
  await page.click('#confirm-approve');
  await expect.poll(() => body).not.toBeNull();
  await page.unroute('**/proposals/*/decision');
  return body;
}

/** Posts a captured decision form again; returns the redirect's Location. */
async function replay(page, id, body) {
  const response = await page.request.post(`/proposals/${id}/decision`, {
    // The page itself may show Chromium's error page (the capture aborted
    // its navigation): the console's origin comes from the config.
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: test.info().project.use.baseURL },
    data: body,
    maxRedirects: 0,
  });
  expect(response.status()).toBe(303);
  return response.headers()['location'];
}

test('a passkey registered on the account page signs approvals of the exact payment, once', async ({ page, request }) => {
  await virtualAuthenticator(page);
  await signIn(page, 'ana');
  try {
    await test.step('register a passkey on the account page', async () => {
      await page.click('#account-link');
      await expect(page).toHaveURL(/\/account$/);
      await expect(page.locator('#passkey-list')).toHaveAttribute('data-ready', '1');
      await expect(page.locator('#no-passkeys')).toBeVisible();
      await page.fill('#passkey-register input[name=name]', 'Virtual key');
      await page.click('#passkey-register-button');
      await expect(page.locator('#passkey-status')).toHaveText('Passkey “Virtual key” registered.');
      await expect(page.locator('#passkey-list li.passkey')).toHaveCount(1);
      await expect(page.locator('#passkey-list')).toContainText('Virtual key');
      await page.screenshot({ path: 'artifacts/account-passkeys.png', fullPage: true });
    });

    await test.step('approve with a step-up: the token says passkey', async () => {
      const proposal = await propose(request, { amount_minor: 31_000, invoice_id: invoice() });
      await page.goto(`/proposals/${proposal.id}/approve`);
      await page.click('#confirm-approve');
      await page.waitForURL(/done=approved/);
      const after = await poll(request, proposal.id);
      expect(after.status).toBe('approved');
      const claims = await verifyToken(request, after.approval_token);
      expect(claims.amr).toEqual(['passkey']);
    });

    await test.step('a tampered challenge is refused', async () => {
      const proposal = await propose(request, { amount_minor: 32_000, invoice_id: invoice() });
      await page.route('**/api/v1/proposals/*/step-up', async (route) => {
        const response = await route.fetch();
        const options = await response.json();
        options.challenge = Buffer.alloc(32, 7).toString('base64url'); // not this payment's
        await route.fulfill({ response, json: options });
      });
      await page.goto(`/proposals/${proposal.id}/approve`);
      await page.click('#confirm-approve');
      await page.waitForURL(/error=passkey_refused/);
      await page.unroute('**/api/v1/proposals/*/step-up');
      await expect(page.locator('.notice-error')).toContainText('answer was refused');
      expect((await poll(request, proposal.id)).status).toBe('pending_approval');
    });

    await test.step('a replayed assertion is refused', async () => {
      // 15,000.00 USD needs two approvals: after ana's it still waits.
      const proposal = await propose(request, { amount_minor: 1_500_000, invoice_id: invoice() });
      const body = await captureApproval(page, proposal.id);
      expect(await replay(page, proposal.id, body)).toMatch(/done=approval_recorded/);
      expect(await replay(page, proposal.id, body)).toMatch(/error=passkey_refused/);
      const after = await poll(request, proposal.id);
      expect(after.approvals.filter((a) => a.decision === 'approve')).toHaveLength(1);
    });

    await test.step('a passkey removed after signing is refused', async () => {
      const proposal = await propose(request, { amount_minor: 33_000, invoice_id: invoice() });
      const body = await captureApproval(page, proposal.id);
      await removeAll(page);
      await expect(page.locator('#no-passkeys')).toBeVisible();
      expect(await replay(page, proposal.id, body)).toMatch(/error=passkey_refused/);
      expect((await poll(request, proposal.id)).status).toBe('pending_approval');
    });
  } finally {
    await removeAll(page);
  }
});
