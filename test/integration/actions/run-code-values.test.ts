import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { Executor } from '../../../src/executor/executor.js';
import { openExecutor } from '../../helpers/open-executor.js';

const AGENT = actorFor('mcp', 'test-agent');

function open(): Executor {
  return openExecutor({ autoApprove: 'LOW', lightSandbox: { warmWorkers: 0 } }).executor;
}

function depthOf(value: unknown): number {
  let depth = 0;
  let current = value;
  while (current !== null && typeof current === 'object') {
    depth += 1;
    current = Array.isArray(current) ? current[0] : Object.values(current)[0];
  }
  return depth;
}

describe('runCode values that cannot be recorded as they are', () => {
  it('records a value nested far deeper than 64 levels, cut and flagged, instead of failing the step', async () => {
    const executor = open();
    const [record] = await executor.propose(
      { steps: [{ action: 'runCode', args: { code: 'let v = 1; for (let i = 0; i < 20000; i++) v = [v]; return v;' } }] },
      AGENT,
    );
    expect(record!.status).toBe('executed');
    expect(record!.result).toMatchObject({ ok: true, truncated: true });
    expect(depthOf(record!.result!.value)).toBeLessThanOrEqual(32);
    expect(JSON.stringify(record!.result!.value)).toContain('nested deeper than');
    expect(record!.preview).toMatchObject({ kind: 'codeRun', result: { ok: true, truncated: true } });
    const audit = executor.getAudit({ filters: { stepId: record!.step.id } });
    expect(JSON.stringify(audit)).toContain('nested deeper than');
  });

  it('holds at just past the audit limit (65 levels), and when the code has tampered with WeakMap and JSON first', async () => {
    const executor = open();
    const codes = [
      'let v = 1; for (let i = 0; i < 65; i++) v = [v]; return v;',
      'WeakMap.prototype.get = () => { throw new Error("x"); }; WeakMap.prototype.has = () => false; JSON.stringify = () => "[]"; let v = {}; for (let i = 0; i < 3000; i++) v = {v}; return v;',
    ];
    for (const code of codes) {
      const [record] = await executor.propose({ steps: [{ action: 'runCode', args: { code } }] }, AGENT);
      expect(record!.status, code).toBe('executed');
      expect(record!.result).toMatchObject({ ok: true, truncated: true });
      expect(depthOf(record!.result!.value)).toBe(32);
    }
  });

  it('cuts objects as well as arrays, and leaves a shallow value alone and unflagged', async () => {
    const executor = open();
    const [deep] = await executor.propose(
      {
        steps: [
          { action: 'runCode', args: { code: 'let v = {leaf: "x"}; for (let i = 0; i < 100; i++) v = {child: v, n: i}; return v;' } },
        ],
      },
      AGENT,
    );
    expect(deep!.status).toBe('executed');
    expect(deep!.result).toMatchObject({ ok: true, truncated: true });
    expect((deep!.result!.value as { n: number }).n).toBe(99);
    const [shallow] = await executor.propose(
      { steps: [{ action: 'runCode', args: { code: 'let v = 1; for (let i = 0; i < 20; i++) v = {a: v}; return v;' } }] },
      AGENT,
    );
    expect(shallow!.status).toBe('executed');
    expect(shallow!.result!.truncated).toBeUndefined();
    expect(depthOf(shallow!.result!.value)).toBe(20);
  });

  it('records lone surrogates in the value, its keys and the logs as U+FFFD instead of failing the step', async () => {
    const executor = open();
    const code = 'console.log("log \\uD800 end"); return { ["k\\uDC00"]: "v\\uD83D", ok: "fine 😀" };';
    const [record] = await executor.propose({ steps: [{ action: 'runCode', args: { code } }] }, AGENT);
    expect(record!.status).toBe('executed');
    expect(record!.result).toMatchObject({
      ok: true,
      truncated: true,
      value: { 'k\uFFFD': 'v\uFFFD', ok: 'fine 😀' },
      logs: ['log \uFFFD end'],
    });
  });

  it('keeps an error message with a lone surrogate as a failed step with its own code', async () => {
    const executor = open();
    const [record] = await executor.propose({ steps: [{ action: 'runCode', args: { code: 'throw new Error("bad \\uD800")' } }] }, AGENT);
    expect(record!.status).toBe('failed');
    expect(record!.error).toMatchObject({ code: 'EXECUTION_ERROR' });
    expect(record!.error!.message).toContain('bad \uFFFD');
  });
});
