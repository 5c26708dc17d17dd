// Web Push in Chromium: the console is installable (a
// manifest), the account page registers the service worker and subscribes
// this device, a proposal the person may approve is encrypted for it and
// posted to its push service, and the notification the service worker
// shows opens the proposal.
//
// What is not Chromium's own here: this machine has no internet, so
// Chromium's push service (Google's FCM) cannot be reached, and headless
// Chromium refuses PushManager.subscribe. The stand-in push service
// (e2e/push_service.py) plays that part: the page's PushManager.subscribe
// answers with one of its subscriptions, the server posts to it, and it
// verifies the VAPID signature (py_vapid) and decrypts the message
// (http_ece) as the real one would hand it to the browser. The decrypted
// message is then delivered to the real service worker through the
// DevTools protocol (ServiceWorker.deliverPushMessage), which is what the
// browser does with what its push service sends.
import { test, expect } from '@playwright/test';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { propose, signIn } from './helpers.mjs';

const e2eDir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

/** Starts the push service stand-in; resolves with its base URL and process. */
function startPushService() {
  const python = `${process.env.COUNTERSIGN_VENV || `${process.env.HOME}/.cache/countersign/venv`}/bin/python`;
  const child = spawn(python, [path.join(e2eDir, 'push_service.py')], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let seen = '';
    child.stdout.on('data', (chunk) => {
      seen += chunk;
      const found = /listening on (\d+)/.exec(seen);
      if (found) resolve({ base: `http://127.0.0.1:${found[1]}`, child });
    });
    child.on('exit', (code) => reject(new Error(`push_service.py exited (${code})`)));
  });
}

function standardBase64(b64url) {
  const text = b64url.replace(/-/g, '+').replace(/_/g, '/');
  return text + '='.repeat((4 - (text.length % 4)) % 4);
}

test('the console subscribes this device and a push notification opens the proposal', async ({ page, context, request, baseURL }) => {
  const service = await startPushService();
  try {
    const manifest = await (await request.get('/manifest.webmanifest')).json();
    expect(manifest).toMatchObject({ name: 'Countersign', start_url: '/', scope: '/', display: 'standalone' });
    expect(manifest.icons.length).toBeGreaterThan(0);

    const subscription = await (await fetch(`${service.base}/subscriptions`, { method: 'POST' })).json();
    await context.grantPermissions(['notifications'], { origin: baseURL });
    await context.addInitScript((sub) => {
      PushManager.prototype.getSubscription = async () => null;
      PushManager.prototype.subscribe = async function (options) {
        const key = new Uint8Array(options.applicationServerKey);
        window.__subscribedWith = { userVisibleOnly: options.userVisibleOnly, key: btoa(String.fromCharCode(...key)) };
        return { endpoint: sub.endpoint, toJSON: () => ({ endpoint: sub.endpoint, expirationTime: null, keys: sub.keys }) };
      };
    }, subscription);

    await signIn(page, 'ben');
    await page.goto('/account');
    await expect(page.locator('#push-subscribe')).toBeEnabled();
    await page.fill('#device-label', 'Test phone');
    await page.click('#push-subscribe');
    await expect(page.locator('#reach-status')).toContainText('This device will be notified');
    await expect(page.locator('#device-list')).toContainText('Test phone');
    await page.screenshot({ path: 'artifacts/account-notifications.png', fullPage: true });

    // The service worker is ours, for the whole console, and the
    // subscription was asked with the deployment's VAPID key.
    const worker = await page.evaluate(async () => {
      const registration = await navigator.serviceWorker.ready;
      return { script: registration.active.scriptURL, scope: registration.scope };
    });
    expect(worker).toEqual({ script: `${baseURL}/sw.js`, scope: `${baseURL}/` });
    const settings = await (await page.request.get('/api/v1/me/notifications')).json();
    const asked = await page.evaluate(() => window.__subscribedWith);
    expect(asked).toEqual({ userVisibleOnly: true, key: standardBase64(settings.vapid_public_key) });

    // A payment ben may approve: encrypted for this device, posted to its push service.
    const proposal = await propose(request, { amount_minor: 31_000 });
    let message;
    await expect
      .poll(async () => {
        const all = await (await fetch(`${service.base}/messages`)).json();
        message = all.find((m) => m.payload && m.payload.proposal_id === proposal.id);
        return message ? message.error ?? 'verified' : 'none yet';
      }, { timeout: 20_000 })
      .toBe('verified');
    expect(message.payload.title).toBe('Approve 310.00 USD to Northwind Traders GmbH?');
    expect(message.payload.url).toBe(`${baseURL}/proposals/${proposal.id}`);

    // The browser hands the message to the service worker, which shows it.
    await page.goto('/');
    const cdp = await context.newCDPSession(page);
    const registrations = [];
    cdp.on('ServiceWorker.workerRegistrationUpdated', (event) => registrations.push(...event.registrations));
    await cdp.send('ServiceWorker.enable');
    await expect.poll(() => registrations.filter((r) => !r.isDeleted).length).toBeGreaterThan(0);
    const registrationId = registrations.find((r) => r.scopeURL === `${baseURL}/`).registrationId;
    await cdp.send('ServiceWorker.deliverPushMessage', {
      origin: baseURL,
      registrationId,
      data: JSON.stringify(message.payload),
    });
    const shown = async () =>
      page.evaluate(async () => {
        const registration = await navigator.serviceWorker.ready;
        return (await registration.getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag }));
      });
    await expect.poll(shown).toEqual([{ title: message.payload.title, body: message.payload.body, tag: proposal.id }]);
    // Signals (or "No risk signals"), the invoice, the time left.
    expect(message.payload.body).toMatch(/ · invoice E2E-[\w-]+ · expires in 23 h 59 min$/);

    // A click on it opens the proposal in the console tab.
    const sw = context.serviceWorkers()[0] ?? (await context.waitForEvent('serviceworker'));
    await sw.evaluate(async () => {
      const [notification] = await self.registration.getNotifications();
      self.dispatchEvent(new NotificationEvent('notificationclick', { notification }));
    });
    await expect(page).toHaveURL(`${baseURL}/proposals/${proposal.id}`);
    await expect(page.locator('#decision-bar')).toBeVisible();
    await expect.poll(shown).toEqual([]);

    // Removed from the account page, the device gets nothing more.
    await page.goto('/account');
    await page.locator('#device-list li', { hasText: 'Test phone' }).getByRole('button', { name: 'Remove' }).click();
    await expect(page.locator('#device-list')).toContainText('No device gets push notifications yet.');
  } finally {
    service.child.kill();
  }
});
