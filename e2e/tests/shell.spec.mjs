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
  await expect(page.locator('section.home')).toHaveAttribute('data-hydrated', 'true');
  await page.screenshot({ path: 'artifacts/home.png', fullPage: true });
});

test('every response carries the anti-clickjacking headers', async ({ page }) => {
  const response = await page.request.get('/');
  const headers = response.headers();
  expect(headers['x-frame-options']).toBe('DENY');
  expect(headers['referrer-policy']).toBe('no-referrer');
  expect(headers['x-content-type-options']).toBe('nosniff');
});
