import { test, expect } from '@playwright/test';

test('the console is server-rendered, then hydrates', async ({ page }) => {
  // With JavaScript off we still get the server-rendered page.
  const response = await page.request.get('/');
  expect(response.status()).toBe(200);
  const html = await response.text();
  expect(html).toContain('Countersign');
  expect(html).toContain('data-hydrated="false"');

  await page.goto('/');
  await expect(page.locator('h1')).toHaveText('Countersign');
  // The flag flips only when the wasm bundle runs in the browser.
  await expect(page.locator('.home')).toHaveAttribute('data-hydrated', 'true');
  await page.screenshot({ path: 'artifacts/home.png', fullPage: true });
});

test('every response carries the security headers, pages a nonce-based CSP', async ({ page }) => {
  const response = await page.request.get('/');
  const headers = response.headers();
  const csp = headers['content-security-policy'];
  expect(csp).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9_-]+' 'wasm-unsafe-eval'/);
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).not.toContain("'unsafe-eval'");
  const nonce = csp.match(/'nonce-([^']+)'/)[1];
  expect(await response.text()).toContain(`nonce="${nonce}"`);
  expect(headers['x-frame-options']).toBe('DENY');
  expect(headers['referrer-policy']).toBe('no-referrer');
  expect(headers['x-content-type-options']).toBe('nosniff');
});
