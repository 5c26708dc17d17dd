// Links from Slack, email or a chat land signed in. The
// session cookie is SameSite=Lax, so a cross-site top-level GET carries it;
// a form posted from another site does not, and is refused (no cookie, no
// CSRF token, a foreign origin), so nothing is decided.
import { test, expect } from '@playwright/test';
import { poll, propose, signIn } from './helpers.mjs';

// Another site: a page Playwright serves in place of the network.
const ELSEWHERE = 'http://chat.elsewhere.example/';

test('a link from another site arrives signed in; a form posted from another site decides nothing', async ({ page, request, baseURL }) => {
  const proposal = await propose(request, { amount_minor: 45100 });
  await signIn(page, 'ben');
  const target = new URL(`/proposals/${proposal.id}`, baseURL).href;
  const decision = new URL(`/proposals/${proposal.id}/decision`, baseURL).href;
  await page.route(ELSEWHERE, (route) => route.fulfill({
    contentType: 'text/html',
    body: `<!doctype html><title>Team chat</title>
      <p><a id="link" href="${target}">Review the payment</a></p>
      <form id="forged" method="post" action="${decision}">
        <input name="decision" value="approve"><button id="post">Approve it for me</button>
      </form>`,
  }));

  await page.goto(ELSEWHERE);
  const [arrival] = await Promise.all([page.waitForResponse(target), page.click('#link')]);
  expect(arrival.status()).toBe(200);
  expect(await arrival.request().headerValue('cookie')).toContain('countersign_session=');
  await expect(page).toHaveURL(target);
  await expect(page.locator('.proposal-head .badge')).toHaveText('Waiting for approval');
  await expect(page.locator('#approve')).toBeVisible();

  await page.goto(ELSEWHERE);
  const [posted] = await Promise.all([page.waitForResponse(decision), page.click('#post')]);
  expect(await posted.request().headerValue('cookie') || '').not.toContain('countersign_session=');
  expect([401, 403]).toContain(posted.status());
  expect((await poll(request, proposal.id)).status).toBe('pending_approval');
});
