// Prints each failed browser test in a few lines: where it is, its title, and
// the first lines of its error; and each flaky one (failed, then passed on
// its retry) the same way, so a retry never hides a failure from the log.
// scripts/test.sh runs it after the browser tests, and last when they fail,
// because CI keeps only the end of the log.
//   node failures.mjs artifacts/results.json
import { readFileSync } from 'node:fs';

const strip = (s) => s.replace(/\u001b\[[0-9;]*m/g, '');
const report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const failed = [];
const flaky = [];
const walk = (suite, titles) => {
  for (const spec of suite.specs || []) {
    for (const test of spec.tests || []) {
      const results = test.results || [];
      const last = results[results.length - 1];
      const entry = { where: `${spec.file}:${spec.line}`, title: [...titles, spec.title].join(' › ') };
      if (last && !['passed', 'skipped'].includes(last.status)) {
        failed.push({ ...entry, result: last });
      } else if (results.some((r) => r.status === 'failed' || r.status === 'timedOut')) {
        flaky.push({ ...entry, result: results.find((r) => r.status !== 'passed') });
      }
    }
  }
  for (const child of suite.suites || []) walk(child, child.title && !child.title.endsWith('.mjs') ? [...titles, child.title] : titles);
};
for (const suite of report.suites || []) walk(suite, []);
const print = (heading, list) => {
  if (list.length === 0) return;
  console.log(`==== ${list.length} browser test(s) ${heading}`);
  for (const { where, title, result } of list) {
    console.log(`---- ${where} › ${title} (${result.status}, ${result.duration} ms)`);
    for (const error of result.errors || []) {
      console.log(strip(error.message || String(error.value || '')).split('\n').slice(0, 14).join('\n'));
    }
  }
};
print('flaky (failed once, passed on the retry)', flaky);
print('failed', failed);
