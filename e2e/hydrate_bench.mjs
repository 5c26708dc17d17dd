// The queue's cold load on a slow phone link, for docs/BENCHMARKS.md:
// navigation start to hydrated (the queue's `data-hydrated`), over a
// 10 Mbit/s, 40 ms link with the CPU slowed four times (Chromium's own
// network and CPU emulation), nothing cached, the release build.
//   node e2e/hydrate_bench.mjs <countersign binary> [runs]
// (`scripts/bench.sh hydrate` builds the release and runs this.)
import { chromium } from '@playwright/test';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { recordHydration } from './tests/helpers.mjs';

const [bin, runsArg] = process.argv.slice(2);
if (!bin) {
  console.error('usage: node e2e/hydrate_bench.mjs <countersign binary> [runs]');
  process.exit(2);
}
const runs = Number(runsArg || 7);
const port = 18900 + Math.floor(Math.random() * 90);
const base = `http://localhost:${port}`;
const dataDir = mkdtempSync(path.join(tmpdir(), 'countersign-hydrate-'));
// From the repository root, where the built site is (target/site).
const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const server = spawn(bin, ['--data-dir', dataDir, 'serve', '--demo', '--listen', `127.0.0.1:${port}`], {
  cwd: repo,
  env: { ...process.env, COUNTERSIGN_PUBLIC_URL: base, COUNTERSIGN_LOG: 'warn' },
  stdio: ['ignore', 'ignore', 'inherit'],
});

async function ready() {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${base}/readyz`)).ok) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('the server did not become ready');
}

const LINK = { offline: false, latency: 40, downloadThroughput: (10 * 1000 * 1000) / 8, uploadThroughput: (10 * 1000 * 1000) / 8 };

try {
  await ready();
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
  });
  // Signed in once; each run is a fresh context with the cookie only.
  const first = await browser.newContext();
  const login = await first.newPage();
  await login.goto(`${base}/login`);
  await login.fill('input[name=username]', 'ana');
  await login.fill('input[name=password]', 'countersign-demo');
  await login.click('button[type=submit]');
  await login.waitForSelector('#signed-in-as');
  const state = await first.storageState();
  await first.close();

  const times = [];
  for (let i = 0; i < runs; i++) {
    const context = await browser.newContext({ storageState: state, viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    await cdp.send('Network.emulateNetworkConditions', LINK);
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: 4 });
    await page.addInitScript(recordHydration);
    const errors = [];
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${base}/`);
    try {
      await page.waitForFunction(() => window.__hydratedAt > 0, null, { timeout: 60_000 });
    } catch (e) {
      const home = await page.evaluate(() => (document.querySelector('.home') || document.body).outerHTML.slice(0, 300));
      throw new Error(`not hydrated within 60 s: ${home}\n${errors.join('\n')}`);
    }
    const t = await page.evaluate(() => {
      const wasm = performance.getEntriesByType('resource').find((r) => r.name.endsWith('.wasm'));
      return { hydrated: window.__hydratedAt, wasm: wasm ? wasm.encodedBodySize : 0 };
    });
    times.push(t);
    console.log(`run ${i + 1}: ${Math.round(t.hydrated)} ms to hydrated (wasm ${(t.wasm / 1024).toFixed(1)} KB over the wire)`);
    await context.close();
  }
  await browser.close();
  const sorted = times.map((t) => t.hydrated).sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  const verdict = median < 1000 ? 'met' : 'missed';
  console.log(
    `[${verdict}] queue cold load, 10 Mbit/s 40 ms, CPU ×4: median ${Math.round(median)} ms to hydrated ` +
      `(min ${Math.round(sorted[0])}, max ${Math.round(sorted[sorted.length - 1])}, ${runs} runs) (goal < 1000 ms)`,
  );
} finally {
  server.kill('SIGTERM');
}
