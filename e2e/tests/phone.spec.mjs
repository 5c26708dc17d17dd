// Deciding on a phone, at 390×844 and 360×740: the
// facts and the Approve/Reject bar on the first screen, the bar kept in
// reach while scrolling, technical details folded, touch targets of at
// least 24 px (WCAG 2.5.8), a header of two lines at most, the Sort label
// beside its select, and the queue's columns a reviewer compares.
import { test, expect } from '@playwright/test';
import { propose, signIn } from './helpers.mjs';

const PHONES = [{ width: 390, height: 844 }, { width: 360, height: 740 }];

for (const size of PHONES) {
  test(`${size.width}×${size.height}: the proposal's facts and decision come first and stay in reach`, async ({ page, request }) => {
    await page.setViewportSize(size);
    // A twin of its invoice, so it carries a signal whatever ran before.
    const invoice = `PH-${Date.now()}-${size.width}`;
    await propose(request, { amount_minor: 31_000, currency: 'EUR', invoice_id: invoice });
    const proposal = await propose(request, { amount_minor: 31_000, currency: 'EUR', invoice_id: invoice });
    await signIn(page, 'ben');
    await page.goto(`/proposals/${proposal.id}`);
    const facts = page.locator('#facts-card');
    await expect(facts).toContainText('Northwind Traders GmbH');
    await expect(facts).toContainText(/ba_…0007 #[0-9a-z]{4}/);
    await expect(facts).toContainText('310.00 EUR');
    await expect(facts.locator('[data-signal]').first()).toBeVisible();
    await expect(facts.locator('#expires')).toContainText(/in 2[34] h/);
    const approve = page.locator('#decision-bar #approve');
    const reject = page.locator('#decision-bar #reject-jump');
    for (const button of [approve, reject]) {
      const box = await button.boundingBox();
      expect(box.y + box.height, 'on the first screen').toBeLessThanOrEqual(size.height);
      expect(box.height, 'a touch target of 24 px').toBeGreaterThanOrEqual(24);
    }
    // Technical details are folded away.
    await expect(page.locator('#technical code.hash')).toBeHidden();
    await page.screenshot({ path: `artifacts/phone-proposal-${size.width}.png` });
    // Scrolled to the end, the decision is still in view.
    await page.locator('.timeline').scrollIntoViewIfNeeded();
    await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    await expect(approve).toBeInViewport();
    await expect(reject).toBeInViewport();
    await page.click('#technical summary');
    await expect(page.locator('#technical code.hash')).toHaveText(proposal.request_hash);
    // Reject… leads to the reason.
    await reject.click();
    await expect(page.locator('#reject-form textarea[name=reason]')).toBeInViewport();
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
  });

  test(`${size.width}×${size.height}: the queue gives the list the screen, with reachable controls and the columns that matter`, async ({ page, request }) => {
    await page.setViewportSize(size);
    const invoice = `PQ-${Date.now()}-${size.width}`;
    await propose(request, { amount_minor: 32_500, invoice_id: invoice });
    const proposal = await propose(request, { amount_minor: 32_500, invoice_id: invoice });
    await signIn(page, 'ben');
    await page.goto('/?order=newest');
    const header = await page.locator('header.topbar').boundingBox();
    expect(header.height, 'two lines at most').toBeLessThanOrEqual(72);
    const signOut = await page.locator('header.topbar button', { hasText: 'Sign out' }).boundingBox();
    expect(signOut.y + signOut.height).toBeLessThanOrEqual(header.y + header.height);
    // The Sort label sits beside its select, whole.
    const label = await page.locator('label[for=order]').boundingBox();
    const select = await page.locator('#order').boundingBox();
    expect(Math.abs(label.y + label.height / 2 - (select.y + select.height / 2))).toBeLessThan(8);
    expect(label.x + label.width).toBeLessThanOrEqual(select.x);
    expect(label.x).toBeGreaterThanOrEqual(0);
    // The first proposal starts within the top 40 % of the screen.
    const row = page.locator(`tr[data-proposal="${proposal.id}"]`);
    await expect(page.locator('tbody tr[data-proposal]').first()).toHaveAttribute('data-proposal', proposal.id);
    const first = await row.boundingBox();
    expect(first.y, 'page chrome above the list').toBeLessThan(size.height * 0.4);
    const tick = await row.locator('input[type=checkbox]').boundingBox();
    expect(Math.min(tick.width, tick.height)).toBeGreaterThanOrEqual(24);
    // Payee and tag, invoice, amount, signals, expires in, approvals.
    await expect(row.locator('.c-payee')).toContainText(/Northwind Traders GmbH ba_…0007 #[0-9a-z]{4}/);
    await expect(row.locator('.c-invoice')).toHaveText(proposal.canonical_request.invoice_id);
    await expect(row.locator('.c-amount')).toHaveText('325.00 USD');
    await expect(row.locator('.c-signals .tag').first()).toBeVisible();
    await expect(row.locator('.c-expires')).toContainText(/in 2[34] h/);
    await expect(row.locator('.c-approvals')).toContainText('0/1');
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await page.screenshot({ path: `artifacts/phone-queue-${size.width}.png` });
  });
}
