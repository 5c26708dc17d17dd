// One invoice is paid once: two copies of an invoice are
// never approved together; the detail page sets the twins side by side with
// a one-click "Reject as duplicate"; approving a copy of an approved invoice
// asks why it is not a duplicate. The server refuses the same (tests/api).
import { test, expect } from '@playwright/test';
import { poll, propose, signIn } from './helpers.mjs';

const unique = (prefix) => `${prefix}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;

for (const [name, size] of [['desktop', { width: 1440, height: 900 }], ['phone', { width: 390, height: 844 }]]) {
  test(`${name}: a bulk approval with both copies of an invoice is refused until one is dropped`, async ({ page, request }) => {
    await page.setViewportSize(size);
    const invoice = unique('DUP');
    const copy = await propose(request, { amount_minor: 32_000, invoice_id: invoice });
    const twin = await propose(request, { amount_minor: 32_000, invoice_id: invoice });
    const others = [];
    for (const amount of [31_000, 33_000, 34_000]) {
      others.push(await propose(request, { amount_minor: amount }));
    }
    await signIn(page, 'ben');
    const listed = [copy, others[0], twin, others[1], others[2]];
    await page.goto(`/bulk?${listed.map((p) => `id=${p.id}`).join('&')}`);
    await expect(page.locator('#bulk-twins')).toContainText('same invoice twice');
    await expect(page.locator('#bulk-approve')).toHaveCount(0);
    await expect(page.locator(`li[data-proposal="${copy.id}"] .twin-of`)).toContainText(twin.id);
    await expect(page.locator(`li[data-proposal="${twin.id}"] .twin-of`)).toContainText(copy.id);
    await expect(page.locator(`li[data-proposal="${others[0].id}"] .twin-of`)).toHaveCount(0);
    await page.screenshot({ path: `artifacts/bulk-twins-${name}.png`, fullPage: true });

    await page.locator(`li[data-proposal="${twin.id}"] a.drop`).click();
    await expect(page.locator('.bulk-list li')).toHaveCount(4);
    await expect(page.locator('#bulk-twins')).toHaveCount(0);
    await expect(page.locator('#bulk-approve')).toHaveText('Approve 4 payments: 1,300.00 USD');
    await page.click('#bulk-approve');
    for (const p of [copy, ...others]) {
      await expect(page.locator(`li[data-proposal="${p.id}"]`)).toHaveAttribute('data-outcome', 'approved');
    }
    expect((await poll(request, twin.id)).status).toBe('pending_approval');
  });
}

test('the twin is beside the proposal; a copy of an approved invoice needs a statement, or is rejected in one click', async ({ page, request }) => {
  const invoice = unique('TWIN');
  const first = await propose(request, { amount_minor: 32_000, invoice_id: invoice });
  const copy = await propose(request, { amount_minor: 32_000, invoice_id: invoice });
  const third = await propose(request, { amount_minor: 32_000, invoice_id: invoice });
  await signIn(page, 'ben');
  await page.goto(`/proposals/${first.id}`);
  await page.click('#approve');
  await page.click('#confirm-approve');
  await expect(page).toHaveURL(/[?&]done=approved/); // the redirect lands before the next goto
  await expect.poll(async () => (await poll(request, first.id)).status).toBe('approved');

  for (const size of [{ width: 1440, height: 900 }, { width: 390, height: 844 }]) {
    await page.setViewportSize(size);
    await page.goto(`/proposals/${copy.id}`);
    const twins = page.locator('#twins');
    await expect(twins).toContainText(`Invoice ${invoice}: 3 proposals for this payee`);
    await expect(twins.locator(`a[data-twin="${first.id}"]`)).toBeVisible();
    await expect(twins.locator('#twin-paid')).toContainText('already approved or paid');
    await expect(twins.locator('tbody tr').first()).toContainText('Approved');
    // Nothing is cut sideways at either size.
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await page.screenshot({ path: `artifacts/proposal-twins-${size.width}.png`, fullPage: true });
  }

  // Approving the copy asks why it is not a duplicate, and says one more
  // approver will be needed.
  await page.click('#approve');
  await expect(page.locator('#duplicate-warning')).toContainText('one more approver');
  await page.click('#confirm-approve');
  // The statement is required: the form is not sent without it.
  await expect(page).toHaveURL(new RegExp(`/proposals/${copy.id}/approve$`));
  await page.fill('#not-duplicate', 'A second delivery billed under the same invoice');
  await page.click('#confirm-approve');
  await expect(page).not.toHaveURL(/\/approve$/);
  const after = await poll(request, copy.id);
  expect(after.status).toBe('pending_approval');
  expect(after.policy.required_approvals).toBe(2);
  expect(after.approvals[0].reason).toBe('A second delivery billed under the same invoice');

  // The third copy: rejected as a duplicate in one click.
  await page.goto(`/proposals/${third.id}`);
  await page.click('#reject-duplicate');
  await expect.poll(async () => (await poll(request, third.id)).status).toBe('rejected');
  const rejected = await poll(request, third.id);
  expect(rejected.approvals[0].reason).toBe(`Duplicate of ${first.id} (invoice ${invoice}).`);
});
