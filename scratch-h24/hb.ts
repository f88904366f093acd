import { openDatabase } from '../src/store/database.js';
import fs from 'node:fs';
const dir = fs.mkdtempSync('/tmp/h24cpu/hb-');
const db = openDatabase(dir);
db.prepare("INSERT INTO plans (plan_id, origin, created_at) VALUES ('p','user','x')").run();
const ins = db.prepare("INSERT INTO steps (step_id, plan_id, position, action, step_json, step_hash, status, created_at, updated_at) VALUES (?, 'p', ?, 'writeFile', '{}', 'h', ?, 'x', 'x')");
for (let i = 0; i < 300; i++) ins.run('s' + i, i, i < 150 ? 'executed' : 'approved');
const COLS = 'step_id, plan_id, position, status, rejected_reason, error_json, evaluation_json';
const HOLD = ['proposed', 'evaluated', 'awaiting_consent', 'approved', 'running'];
const BREAK = ['rejected', 'denied', 'failed', 'interrupted', 'expired', 'cancelled'];
const oldF = db.prepare(`SELECT ${COLS} FROM steps WHERE plan_id = ? AND position < ? AND status IN (${BREAK.map(() => '?')}) ORDER BY position LIMIT 1`);
const oldN = db.prepare(`SELECT ${COLS} FROM steps WHERE plan_id = ? AND position < ? AND status IN (${HOLD.map(() => '?')}) ORDER BY position DESC LIMIT 1`);
const one = (o: string) => `SELECT * FROM (SELECT ${COLS} FROM steps WHERE plan_id = ? AND status = ? AND position < ? ORDER BY position ${o} LIMIT 1)`;
const nb = (n: number, o: string) => db.prepare(`SELECT * FROM (${Array.from({ length: n }, () => one(o)).join(' UNION ALL ')}) ORDER BY position ${o} LIMIT 1`);
const newF = nb(BREAK.length, 'ASC'), newN = nb(HOLD.length, 'DESC');
for (const k of [150, 299]) {
  let t = performance.now();
  for (let i = 0; i < 2000; i++) { oldF.get('p', k, ...BREAK); oldN.get('p', k, ...HOLD); }
  const a = (performance.now() - t) / 2000;
  t = performance.now();
  for (let i = 0; i < 2000; i++) { newF.get(...BREAK.flatMap((s) => ['p', s, k])); newN.get(...HOLD.flatMap((s) => ['p', s, k])); }
  console.log('k', k, 'old µs', (a * 1000).toFixed(1), 'new µs', ((performance.now() - t) / 2000 * 1000).toFixed(1));
}
const sepD = db.prepare(`SELECT ${COLS} FROM steps WHERE plan_id = ? AND status = ? AND position < ? ORDER BY position DESC LIMIT 1`);
const sepA = db.prepare(`SELECT ${COLS} FROM steps WHERE plan_id = ? AND status = ? AND position < ? ORDER BY position ASC LIMIT 1`);
const posD = db.prepare(`SELECT max(position) FROM steps WHERE plan_id = ? AND status = ? AND position < ?`).pluck();
for (const k of [150, 299]) {
  let t = performance.now();
  for (let i = 0; i < 2000; i++) { for (const s of BREAK) sepA.get('p', s, k); for (const s of HOLD) sepD.get('p', s, k); }
  console.log('sep k', k, ((performance.now() - t) / 2000 * 1000).toFixed(1));
  t = performance.now();
  for (let i = 0; i < 2000; i++) { for (const s of HOLD) posD.get('p', s, k); }
  console.log('max k', k, ((performance.now() - t) / 2000 * 1000).toFixed(1));
}
console.log(db.prepare('EXPLAIN QUERY PLAN SELECT max(position) FROM steps WHERE plan_id = ? AND status = ? AND position < ?').all('p','a',1));
