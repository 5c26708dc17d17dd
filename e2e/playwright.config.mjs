// Playwright drives Debian's Chromium (never a downloaded browser) against a
// real countersign server with the demo data, started by `webServer` below.
// scripts/test.sh sets COUNTERSIGN_BIN, E2E_PORT and E2E_DATA_DIR.
import { defineConfig } from '@playwright/test';

const port = process.env.E2E_PORT || '3917';
const bin = process.env.COUNTERSIGN_BIN || '../target/debug/countersign';
const dataDir = process.env.E2E_DATA_DIR || 'artifacts/data';

export default defineConfig({
  testDir: './tests',
  outputDir: './artifacts/test-results',
  timeout: 60_000,
  workers: 1,
  // One retry: the tests share one server and its background workers, and a
  // rare timing failure should not sink a CI run. A test that fails twice
  // fails; one that passed only on its retry is printed as flaky by
  // failures.mjs at the end of `make test` (docs/DECISIONS.md).
  retries: 1,
  // The list for people; the JSON for scripts/test.sh's summary of failures.
  reporter: [['list'], ['json', { outputFile: 'artifacts/results.json' }]],
  use: {
    baseURL: `http://localhost:${port}`,
    screenshot: 'only-on-failure',
    trace: 'off',
    launchOptions: {
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
      ],
    },
  },
  webServer: {
    command: `${bin} --data-dir ${dataDir} serve --demo --listen 127.0.0.1:${port}`,
    cwd: '..',
    url: `http://127.0.0.1:${port}/readyz`,
    timeout: 60_000,
    reuseExistingServer: false,
    stdout: 'ignore',
    stderr: 'pipe',
    env: {
      COUNTERSIGN_PUBLIC_URL: `http://localhost:${port}`,
      COUNTERSIGN_LOG: 'warn',
      // Never resubmit a lost transfer: an operation whose rail call failed
      // without a record goes straight to needs_review (operations.spec.mjs).
      // Commits whose rail answer arrives are unaffected.
      COUNTERSIGN_RAIL__RESUBMIT_WINDOW_SECS: '0',
      // The demo agent's webhook goes to a receiver on loopback (ui.spec.mjs).
      COUNTERSIGN_WEBHOOKS__ALLOW_HTTP_LOOPBACK: 'true',
      // Web Push goes to the push service stand-in on loopback (push.spec.mjs).
      COUNTERSIGN_NOTIFICATIONS__PUSH__ALLOWED_HOSTS: '["127.0.0.1"]',
    },
  },
});
