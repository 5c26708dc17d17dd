// Passkeys bound to the payment and consent that cannot be
// manufactured, in Chromium with its virtual authenticator (CDP
// `WebAuthn`, works on localhost): a session alone cannot register a
// passkey; two admins issue ana a one-time enrolment code, she registers
// her first passkey with it on the account page, an admin who did not see
// the code confirms it (cutting its cool-off), she approves with a step-up,
// and a tampered challenge, a replayed assertion and a removed passkey are
// refused; removing it takes an assertion by it. (Adding a second passkey
// with an assertion by the first is tested on the API, `consent.rs`: one
// virtual authenticator cannot hold both, as `excludeCredentials` refuses
// a second registration on the authenticator holding the first.)
//
// Every ceremony is also written to artifacts/webauthn.json with what the
// server made of it, and `e2e/webauthn_check.py` verifies the same bytes
// with the independent py_webauthn library (`make test` runs it after the
// browser tests): both must agree on each.
//
// The demo server has no `policy.step_up_at_minor`: whoever holds a usable
// passkey steps up from the dual-approval amount (10,000.00 USD), and below
// it approves as before. The passkeys are removed at the end (and on
// failure), so the other specs' approvals by ana are unaffected.
import { test, expect } from '@playwright/test';
import { writeFileSync } from 'node:fs';
import { lowContrast, poll, propose, signIn, verifyToken } from './helpers.mjs';

function invoice() {
  return `PK-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
}

async function virtualAuthenticator(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  cdp.authenticatorId = authenticatorId;
  return cdp;
}

/**
 * Records the passkey ceremonies of `page`: the options the server handed
 * out (their challenges), what the browser sent back, and the verdict. The
 * expected challenges are filled in when saved, once every answer is read.
 */
async function recorder(page) {
  const ceremonies = [];
  const options = new Map(); // challenge_id -> options as the server sent them
  const reading = []; // answers whose bodies are still being read
  let registration = null; // the last registration body sent
  let decision = null; // the last step-up decision form sent
  const state = { tamper: null }; // a test's rewrite of the next options, if any
  // The options are read as they pass (a response's body is gone once the
  // page navigates), and handed on, rewritten if a test asks.
  const hand = async (route) => {
    const response = await route.fetch();
    if (response.status() !== 201) return route.fulfill({ response });
    const body = await response.json();
    options.set(body.challenge_id, body);
    const rewrite = state.tamper;
    state.tamper = null;
    await route.fulfill({ response, json: rewrite ? rewrite({ ...body }) : body });
  };
  await page.route('**/api/v1/me/passkeys/challenges', hand);
  await page.route('**/api/v1/proposals/*/step-up', hand);
  page.on('response', (response) => {
    const url = response.url();
    if (response.request().method() !== 'POST') return;
    if (/\/api\/v1\/me\/passkeys$/.test(url) && registration) {
      const body = registration;
      registration = null;
      const accepted = response.status() === 201;
      reading.push(
        (accepted ? Promise.resolve(null) : response.json().catch(() => null)).then((refusal) => {
          // Only what WebAuthn itself decides is compared with py_webauthn: a
          // registration refused for want of a code or an assertion is not.
          const cryptographic = refusal && (refusal.error.details || []).some((d) => d.field === 'credential');
          if (!accepted && !cryptographic) return;
          ceremonies.push({
            kind: 'registration',
            challenge_id: body.challenge_id,
            client_data_json: body.client_data_json,
            attestation_object: body.attestation_object,
            server: accepted ? 'accepted' : 'refused',
          });
        }),
      );
    } else if (/\/proposals\/[^/]+\/decision$/.test(url) && decision) {
      const fields = decision;
      decision = null;
      // A post the test captured (answered 204 in the browser): the server
      // never saw it; its replays are recorded with the server's verdicts.
      if (response.status() === 204) return;
      const location = response.headers()['location'] || '';
      ceremonies.push(assertion(fields, /error=/.test(location) ? 'refused' : 'accepted', 'step-up of an approval'));
    }
  });
  page.on('requestfailed', (request) => {
    if (/\/proposals\/[^/]+\/decision$/.test(request.url())) decision = null;
  });
  page.on('request', (request) => {
    if (request.method() !== 'POST') return;
    const url = request.url();
    if (/\/api\/v1\/me\/passkeys$/.test(url)) registration = request.postDataJSON();
    if (/\/proposals\/[^/]+\/decision$/.test(url)) {
      const fields = new URLSearchParams(request.postData() || '');
      if (fields.get('step_up_challenge_id')) decision = fields;
    }
  });
  return {
    /** A step-up made outside the page (a replayed form post). */
    replayed(body, verdict) {
      ceremonies.push(assertion(new URLSearchParams(body), verdict, 'step-up of an approval (replayed form post)'));
    },
    /** Has the next options the page receives rewritten by `rewrite`. */
    tamperNext(rewrite) {
      state.tamper = rewrite;
    },
    async save(origin) {
      await Promise.all(reading);
      const complete = ceremonies.map((c) => {
        const offered = options.get(c.challenge_id);
        return { ...c, expected_challenge: offered && offered.challenge, rp_id: offered && offered.rp_id };
      });
      writeFileSync('artifacts/webauthn.json', JSON.stringify({ origin, ceremonies: complete }, null, 2));
    },
  };
}

/** An assertion carried by a decision form's `step_up_*` fields. */
function assertion(fields, verdict, what) {
  return {
    kind: 'assertion',
    what,
    challenge_id: fields.get('step_up_challenge_id'),
    credential_id: fields.get('step_up_credential_id'),
    authenticator_data: fields.get('step_up_authenticator_data'),
    client_data_json: fields.get('step_up_client_data_json'),
    signature: fields.get('step_up_signature'),
    server: verdict,
  };
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

/**
 * The form post an approval sends, captured and kept from the server. It is
 * answered 204 No Content, so the browser stays on the page: an aborted
 * navigation left Chromium on an error page that could navigate again on
 * its own, interrupting the test's next `goto` (a rare failure in CI).
 */
async function captureApproval(page, id) {
  let body = null;
  await page.route('**/proposals/*/decision', async (route) => {
    body = route.request().postData();
    await route.fulfill({ status: 204 });
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
    // The console's origin comes from the config.
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: test.info().project.use.baseURL },
    data: body,
    maxRedirects: 0,
  });
  expect(response.status()).toBe(303);
  return response.headers()['location'];
}

/** A signed-in page of its own for `username` (another browser). */
async function asUser(browser, username) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await signIn(page, username);
  return page;
}

test('a passkey enrolled with two admins\' code and confirmed early signs the exact payment, once', async ({ page, request, browser }) => {
  test.setTimeout(120_000);
  const laptop = await virtualAuthenticator(page);
  const record = await recorder(page);
  await signIn(page, 'ana');
  const ada = await asUser(browser, 'ada');
  const abe = await asUser(browser, 'abe');
  try {
    let code;
    await test.step('a session alone cannot register a passkey', async () => {
      await page.goto('/account');
      await expect(page.locator('#passkey-list')).toHaveAttribute('data-ready', '1');
      await page.fill('#passkey-register input[name=name]', 'Thief key');
      await page.click('#passkey-register-button');
      await expect(page.locator('#passkey-status')).toContainText('Not registered');
      await expect(page.locator('#passkey-status')).toContainText('enrolment code');
      await expect(page.locator('#no-passkeys')).toBeVisible();
    });

    await test.step('two admins issue a one-time enrolment code', async () => {
      await ada.goto('/admin');
      await ada.fill('#admin-passkeys input[name=username]', 'ana');
      await ada.click('#admin-passkeys button:has-text("Propose an enrolment code")');
      await expect(ada.locator('#admin-flash')).toContainText('Another admin must confirm the enrolment code');
      await abe.goto('/admin');
      const change = abe.locator('.pending-change[data-kind=passkey_enrolment]').last();
      await expect(change).toContainText('one-time code with which ana can register a passkey');
      await change.locator('button', { hasText: 'Confirm' }).click();
      code = (await abe.locator('#one-time-secret').textContent()).trim();
      expect(code).toMatch(/^[0-9a-z]{4}(-[0-9a-z]{4}){7}$/);
      await abe.screenshot({ path: 'artifacts/admin-enrolment-code.png', fullPage: true });
    });

    await test.step('a registration over a tampered challenge is refused, and does not spend the code', async () => {
      record.tamperNext((options) => ({ ...options, challenge: Buffer.alloc(32, 9).toString('base64url') }));
      await page.goto('/account');
      await page.fill('#passkey-register input[name=name]', 'Tampered');
      await page.fill('#passkey-register input[name=enrolment_code]', code);
      await page.click('#passkey-register-button');
      await expect(page.locator('#passkey-status')).toContainText('Not registered');
      await expect(page.locator('#no-passkeys')).toBeVisible();
    });

    await test.step('ana registers her first passkey with the code; it cools off', async () => {
      await page.goto('/account');
      await expect(page.locator('#notice-count')).toHaveText('1'); // the code was issued for her
      await page.fill('#passkey-register input[name=name]', 'Virtual key');
      await page.fill('#passkey-register input[name=enrolment_code]', code);
      await page.click('#passkey-register-button');
      await expect(page.locator('#passkey-status')).toContainText('Passkey “Virtual key” registered. It can approve payments from');
      await expect(page.locator('#passkey-list li.passkey')).toHaveCount(1);
      await expect(page.locator('#passkey-list')).toContainText('can approve from');
      await expect(page.locator('#notice-list')).toContainText('was added to your account');
      await page.screenshot({ path: 'artifacts/account-passkeys.png', fullPage: true });
      // The listed passkey's Remove is readable (it was white on white).
      await expect(page.locator('[data-passkey-remove]')).toBeVisible();
      expect(await lowContrast(page)).toEqual([]);
      // Cooling off, it signs nothing yet: below any step-up threshold ana
      // approves as before she had it (a password approval).
      const proposal = await propose(request, { amount_minor: 30_500, invoice_id: invoice() });
      await page.goto(`/proposals/${proposal.id}/approve`);
      await page.click('#confirm-approve');
      await page.waitForURL(/done=approved/);
      const after = await poll(request, proposal.id);
      expect((await verifyToken(request, after.approval_token)).amr).toEqual(['pwd']);
    });

    await test.step('an admin who did not see the code confirms it early', async () => {
      // Abe was shown the code: he may not.
      await abe.goto('/admin');
      await expect(abe.locator('#admin-passkeys tr', { hasText: 'Virtual key' }).locator('.blocker')).toContainText(
        'shown the enrolment code',
      );
      await ada.goto('/admin');
      await ada.locator('#admin-passkeys tr', { hasText: 'Virtual key' }).locator('button', { hasText: 'Confirm' }).click();
      await expect(ada.locator('#admin-flash')).toContainText('confirmed');
      await ada.screenshot({ path: 'artifacts/admin-passkeys.png', fullPage: true });
    });

    await test.step('below the dual-approval amount a passkey holder approves without it', async () => {
      // A passkey on one device must not block a small approval from another.
      const proposal = await propose(request, { amount_minor: 31_000, invoice_id: invoice() });
      await page.goto(`/proposals/${proposal.id}/approve`);
      await page.click('#confirm-approve');
      await page.waitForURL(/done=approved/);
      const after = await poll(request, proposal.id);
      expect((await verifyToken(request, after.approval_token)).amr).toEqual(['pwd']);
    });

    await test.step('approve with a step-up: the token says passkey', async () => {
      // 10,000.00 USD: two approvals, ana's with her passkey, ben's without.
      const proposal = await propose(request, { amount_minor: 1_000_000, invoice_id: invoice() });
      await page.goto(`/proposals/${proposal.id}/approve`);
      await page.click('#confirm-approve');
      await page.waitForURL(/done=approval_recorded/);
      const ben = await asUser(browser, 'ben');
      await ben.goto(`/proposals/${proposal.id}/approve`);
      await ben.click('#confirm-approve');
      await ben.waitForURL(/done=approved/);
      await ben.context().close();
      const after = await poll(request, proposal.id);
      expect(after.status).toBe('approved');
      const claims = await verifyToken(request, after.approval_token);
      expect(claims.amr).toEqual(['passkey', 'pwd']);
    });

    await test.step('the passkey signs ana in on the sign-in page, no username typed', async () => {
      // Another browser with the same passkey (copied from this one's authenticator).
      const { credentials } = await laptop.send('WebAuthn.getCredentials', { authenticatorId: laptop.authenticatorId });
      expect(credentials).toHaveLength(1);
      const context = await browser.newContext();
      const other = await context.newPage();
      const cdp = await virtualAuthenticator(other);
      await cdp.send('WebAuthn.addCredential', { authenticatorId: cdp.authenticatorId, credential: credentials[0] });
      await other.goto('/login?next=/account');
      await expect(other.locator('#passkey-sign-in')).toBeVisible();
      await other.click('#passkey-sign-in');
      await expect(other).toHaveURL(/\/account$/);
      await expect(other.locator('#signed-in-as')).toContainText('ana');
      await other.screenshot({ path: 'artifacts/passkey-signed-in.png' });
      await context.close();
    });

    await test.step('on a device without the passkey, the page says what to do instead of looping', async () => {
      const proposal = await propose(request, { amount_minor: 1_100_000, invoice_id: invoice() });
      const phone = await asUser(browser, 'ana');
      await phone.setViewportSize({ width: 390, height: 844 });
      await virtualAuthenticator(phone); // an authenticator holding none of ana's passkeys
      await phone.goto(`/proposals/${proposal.id}/approve`);
      await phone.click('#confirm-approve');
      const help = phone.locator('#step-up-help');
      await expect(help).toContainText('Nothing was sent');
      await expect(help).toContainText('use a phone or tablet');
      await expect(help.locator('a[href="/account"]')).toBeVisible();
      await expect(phone).toHaveURL(new RegExp(`/proposals/${proposal.id}/approve$`));
      await expect(phone.locator('#confirm-approve')).toBeEnabled();
      await phone.screenshot({ path: 'artifacts/step-up-other-device.png', fullPage: true });
      await phone.context().close();
      expect((await poll(request, proposal.id)).approvals).toHaveLength(0);
    });

    await test.step('a tampered challenge is refused', async () => {
      const proposal = await propose(request, { amount_minor: 1_200_000, invoice_id: invoice() });
      // The options the page receives carry a challenge that is not this payment's.
      record.tamperNext((options) => ({ ...options, challenge: Buffer.alloc(32, 7).toString('base64url') }));
      await page.goto(`/proposals/${proposal.id}/approve`);
      await page.click('#confirm-approve');
      await page.waitForURL(/error=passkey_refused/);
      await expect(page.locator('.notice-error')).toContainText('answer was refused');
      expect((await poll(request, proposal.id)).status).toBe('pending_approval');
    });

    await test.step('a replayed assertion is refused', async () => {
      // 15,000.00 USD needs two approvals: after ana's it still waits.
      const proposal = await propose(request, { amount_minor: 1_500_000, invoice_id: invoice() });
      const body = await captureApproval(page, proposal.id);
      expect(await replay(page, proposal.id, body)).toMatch(/done=approval_recorded/);
      record.replayed(body, 'accepted');
      expect(await replay(page, proposal.id, body)).toMatch(/error=passkey_refused/);
      record.replayed(body, 'refused');
      const after = await poll(request, proposal.id);
      expect(after.approvals.filter((a) => a.decision === 'approve')).toHaveLength(1);
    });

    await test.step('a passkey removed after signing is refused', async () => {
      const proposal = await propose(request, { amount_minor: 1_300_000, invoice_id: invoice() });
      const body = await captureApproval(page, proposal.id);
      await removeAll(page);
      await expect(page.locator('#no-passkeys')).toBeVisible();
      await expect(page.locator('#notice-list')).toContainText('was removed from your account');
      expect(await replay(page, proposal.id, body)).toMatch(/error=passkey_refused/);
      expect((await poll(request, proposal.id)).status).toBe('pending_approval');
    });
  } finally {
    await record.save(test.info().project.use.baseURL);
    await removeAll(page);
    await ada.context().close();
    await abe.context().close();
  }
});
