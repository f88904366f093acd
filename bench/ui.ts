// The audit view on a big log, each figure a ratio to the same view on 1,000 records measured in the same run:
//  1. time to first rows: from pressing "3" (open the audit view) until the first record rows are drawn;
//  2. a scripted scroll: 4 s of steady scrolling (one screen every 3 frames) down the table, then a jump
//     to the middle of the log; frame intervals from requestAnimationFrame, frames over 33 ms count as dropped,
//     and the share of frames that showed "Loading…" rows (the table waiting for a page).
// Both logs are real signed logs (SignedAuditLog, 1,000 records per transaction), served by the real
// `executor serve`, drawn by the built renderer in Debian's Chromium.
// Run: npx tsx bench/ui.ts   (or npm run bench:ui; BENCH_UI_BIG=200000 for a quicker run)
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { SignedAuditLog } from '../src/audit/log/audit-log.js';
import type { EventKind } from '../src/domain/audit-event.js';
import { FileKeyStore } from '../src/audit/keys/key-store.js';
import { openDatabase } from '../src/store/database.js';

const BIG = Number(process.env.BENCH_UI_BIG ?? 1_000_000);
const SMALL = 1000;
const BATCH = 1000;
const REPO = path.resolve(import.meta.dirname, '..');
const CLI = path.join(REPO, 'bin', 'executor.js');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// BENCH_UI_DIR keeps the generated logs there and reuses them on the next run (writing a million signed records takes minutes).
const keptDir = process.env.BENCH_UI_DIR;
const root = keptDir ? (fs.mkdirSync(keptDir, { recursive: true }), keptDir) : fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-ui-'));
const actor = { user: 'bench', channel: 'mcp' as const, client: 'bench-agent 1.0' };
const ACTIONS: EventKind[] = ['step.proposed', 'step.evaluated', 'step.approved', 'step.execution_started', 'step.executed'];

function buildLog(records: number): string {
  const dataDir = path.join(root, `log-${records}`);
  if (fs.existsSync(path.join(dataDir, 'executor.db'))) {
    process.stderr.write(`  ${records}: reusing ${dataDir}\n`);
    return dataDir;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [path.join(root, 'ws')] }));
  const db = openDatabase(dataDir);
  const started = Date.now();
  try {
    const log = SignedAuditLog.open(db, new FileKeyStore(dataDir), dataDir);
    for (let start = 0; start < records; start += BATCH) {
      db.transaction(() => {
        for (let index = start; index < Math.min(records, start + BATCH); index++) {
          log.append({
            kind: ACTIONS[index % ACTIONS.length]!,
            actor,
            planId: `plan-${Math.floor(index / 50)}`,
            stepId: `step-${Math.floor(index / 5)}`,
            detail: { path: `/home/me/project/src/file-${index % 997}.ts`, bytes: 1200 + (index % 500) },
          });
        }
      })();
      if (start % 100_000 === 0 && start > 0) process.stderr.write(`\r  ${records}: ${start} records written`);
    }
    db.transaction(() => log.checkpoint('shutdown'))();
    log.flushAnchor();
  } finally {
    db.close();
  }
  process.stderr.write(`\r  ${records}: ${records} records written in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return dataDir;
}

async function serve(dataDir: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [CLI, '--data-dir', dataDir, '--json', 'serve'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const info = await new Promise<{ url: string }>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      try {
        resolve(JSON.parse(out) as { url: string });
      } catch {
        /* not yet complete */
      }
    });
    child.once('exit', (code) => reject(new Error(`executor serve exited (${code})`)));
  });
  return { url: info.url, child };
}

interface Measured {
  firstRowsMs: number;
  frames: number;
  p50FrameMs: number;
  p95FrameMs: number;
  maxFrameMs: number;
  dropped: number;
  loadingFrames: number;
  jumpToRowsMs: number;
  /** Main-thread time Chromium spent during the scripted scroll (CDP Performance metrics), ms. */
  scriptMs: number;
  layoutMs: number;
  styleMs: number;
}

const SCROLL_SCRIPT = `(async () => {
  const scroller = document.querySelector('[data-testid="audit-scroll"]');
  const intervals = [];
  let loadingFrames = 0;
  let last = performance.now();
  const until = last + 4000;
  let frame = 0;
  await new Promise((resolve) => {
    const tick = (now) => {
      intervals.push(now - last);
      last = now;
      if (scroller.querySelector('.loading-row')) loadingFrames++;
      if (frame++ % 3 === 0) scroller.scrollTop += scroller.clientHeight;
      if (now < until) requestAnimationFrame(tick);
      else resolve();
    };
    requestAnimationFrame(tick);
  });
  const jumpStart = performance.now();
  scroller.scrollTop = scroller.scrollHeight / 2;
  await new Promise((resolve) => {
    const wait = () => (scroller.querySelector('.audit-row[data-seq]') && !scroller.querySelector('.loading-row') ? resolve() : requestAnimationFrame(wait));
    requestAnimationFrame(wait);
  });
  return { intervals: intervals.slice(1), loadingFrames, jumpToRowsMs: performance.now() - jumpStart };
})()`;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function measure(page: Page, url: string): Promise<Measured> {
  await page.goto(url);
  await page.getByRole('heading', { name: 'Queue' }).waitFor();
  const opened = Date.now();
  await page.keyboard.press('3');
  await page.locator('.audit-row[data-seq]').first().waitFor();
  const firstRowsMs = Date.now() - opened;
  // Scroll once verification has settled, so the frames measure the table, not a busy server.
  await page.getByTestId('verify-banner').filter({ hasNotText: 'Verifying' }).waitFor({ timeout: 600_000 });
  // What the page itself cost while scrolling: less at the mercy of a busy machine than frame timing.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const cpu = async () => {
    const { metrics } = (await cdp.send('Performance.getMetrics')) as { metrics: { name: string; value: number }[] };
    const value = (name: string) => (metrics.find((metric) => metric.name === name)?.value ?? 0) * 1000;
    return { script: value('ScriptDuration'), layout: value('LayoutDuration'), style: value('RecalcStyleDuration') };
  };
  const before = await cpu();
  // A script string, not a function: tsx's transform would add helpers the page does not have.
  const scroll = (await page.evaluate(SCROLL_SCRIPT)) as { intervals: number[]; loadingFrames: number; jumpToRowsMs: number };
  const after = await cpu();
  return {
    firstRowsMs,
    frames: scroll.intervals.length,
    p50FrameMs: percentile(scroll.intervals, 50),
    p95FrameMs: percentile(scroll.intervals, 95),
    maxFrameMs: Math.max(...scroll.intervals),
    dropped: scroll.intervals.filter((interval) => interval > 33.4).length,
    loadingFrames: scroll.loadingFrames,
    jumpToRowsMs: scroll.jumpToRowsMs,
    scriptMs: after.script - before.script,
    layoutMs: after.layout - before.layout,
    styleMs: after.style - before.style,
  };
}

async function main(): Promise<void> {
  console.log(`ui bench on ${os.cpus().length} core(s), Node ${process.versions.node}, Chromium at ${CHROMIUM}, in ${root}`);
  const build = spawnSync(process.execPath, [path.join(REPO, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--logLevel', 'warn'], {
    cwd: REPO,
    stdio: 'inherit',
  });
  if (build.status !== 0) throw new Error('vite build failed');
  const small = buildLog(SMALL);
  const big = buildLog(BIG);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking'],
  });
  const results: Record<string, Measured> = {};
  try {
    // Warm-up on the small log (first launch pays for compiling the bundle), then the measured runs.
    for (const [label, dataDir] of [
      ['warm-up', small],
      ['small', small],
      ['big', big],
    ] as const) {
      const host = await serve(dataDir);
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      try {
        results[label] = await measure(await context.newPage(), host.url);
      } finally {
        await context.close();
        host.child.kill('SIGTERM');
        await new Promise((resolve) => host.child.once('exit', resolve));
      }
    }
  } finally {
    await browser.close();
  }
  const s = results.small!;
  const b = results.big!;
  const row = (label: string, small: number, big: number, unit: string) =>
    console.log(
      `${label.padEnd(30)} ${SMALL.toLocaleString()}: ${small.toFixed(1).padStart(8)} ${unit}   ${BIG.toLocaleString()}: ${big.toFixed(1).padStart(8)} ${unit}   ratio ${(big / Math.max(small, 0.001)).toFixed(2)}×`,
    );
  console.log('');
  row('time to first rows', s.firstRowsMs, b.firstRowsMs, 'ms');
  row('scroll frame p50', s.p50FrameMs, b.p50FrameMs, 'ms');
  row('scroll frame p95', s.p95FrameMs, b.p95FrameMs, 'ms');
  row('scroll frame max', s.maxFrameMs, b.maxFrameMs, 'ms');
  row('jump to middle, rows drawn', s.jumpToRowsMs, b.jumpToRowsMs, 'ms');
  row('scroll: script per frame', s.scriptMs / s.frames, b.scriptMs / b.frames, 'ms');
  row('scroll: layout per frame', s.layoutMs / s.frames, b.layoutMs / b.frames, 'ms');
  row('scroll: style per frame', s.styleMs / s.frames, b.styleMs / b.frames, 'ms');
  console.log(
    `${'dropped frames (>33 ms)'.padEnd(30)} ${SMALL.toLocaleString()}: ${s.dropped}/${s.frames}   ${BIG.toLocaleString()}: ${b.dropped}/${b.frames}`,
  );
  console.log(
    `${'frames with Loading… rows'.padEnd(30)} ${SMALL.toLocaleString()}: ${s.loadingFrames}/${s.frames}   ${BIG.toLocaleString()}: ${b.loadingFrames}/${b.frames}`,
  );
  console.log(
    `\nfirst rows on ${BIG.toLocaleString()} records: ${b.firstRowsMs} ms (${b.firstRowsMs < 1000 ? 'under' : 'OVER'} the 1 s target)`,
  );
  if (!keptDir) fs.rmSync(root, { recursive: true, force: true });
}

await main();
