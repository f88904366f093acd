import { describe, expect, it } from 'vitest';
import { ExecutorError } from '../../../src/domain/errors.js';
import { parsePlan } from '../../../src/domain/plan-parse.js';
import { MAX_CONTENT_BYTES, stepHash } from '../../../src/domain/step.js';

const parse = (input: unknown) => parsePlan(input, { origin: 'user' });

function codeOf(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (error) {
    if (error instanceof ExecutorError) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected an error');
}

describe('parsePlan', () => {
  it.each([
    ['a character outside the alphabet', 'aGk*'],
    ['missing padding', 'aGk'],
    ['padding in the middle', 'aG==aGk='],
    ['whitespace', 'aGk= '],
    ['URL-safe alphabet', 'a-_='],
    ['three pads', 'a==='],
    ['leftover bits under one pad (decodes to "hello" like aGVsbG8=)', 'aGVsbG9='],
    ['leftover bits under two pads (decodes to "h" like aA==)', 'aB=='],
  ])('refuses base64 content with %s, naming the field', (_label, content) => {
    const refused = codeOf(() => parse({ steps: [{ action: 'writeFile', args: { path: 'a.bin', content, encoding: 'base64' } }] }));
    expect(refused.code).toBe('INVALID_PLAN');
    expect(refused.message).toMatch(/content is not valid base64/);
  });

  it('accepts exact base64, including empty content', () => {
    for (const content of ['', 'aGk=', 'aGVsbG8gd29ybGQ=', Buffer.from([0, 255, 1, 254]).toString('base64')]) {
      const plan = parse({ steps: [{ action: 'writeFile', args: { path: 'a.bin', content, encoding: 'base64' } }] });
      expect(plan.steps).toHaveLength(1);
    }
  });

  it('fills in plan and step ids and the proposer origin', () => {
    const plan = parse({ steps: [{ action: 'writeFile', args: { path: 'a.txt', content: 'x' } }] });
    expect(plan.planId).toMatch(/^plan-/);
    expect(plan.steps[0]!.id).toMatch(/^step-/);
    expect(plan.steps[0]!.planId).toBe(plan.planId);
    expect(plan.steps[0]!.meta.origin).toBe('user');
  });

  it('rejects an unknown action, naming where', () => {
    const error = codeOf(() => parse({ steps: [{ action: 'formatDisk', args: {} }] }));
    expect(error.code).toBe('INVALID_PLAN');
    expect(error.message).toContain('steps.0');
  });

  it('rejects missing fields and unknown extra fields', () => {
    expect(codeOf(() => parse({ steps: [{ action: 'writeFile', args: { path: 'a' } }] })).message).toContain('content');
    expect(codeOf(() => parse({ steps: [{ action: 'deleteFile', args: { path: 'a', recursive: true } }] })).code).toBe('INVALID_PLAN');
  });

  it('rejects content over the size limit', () => {
    const content = 'x'.repeat(MAX_CONTENT_BYTES + 1);
    expect(codeOf(() => parse({ steps: [{ action: 'writeFile', args: { path: 'a', content } }] })).message).toContain('larger than');
  });

  it("keeps a plan's own consent expiry, and refuses one that is not a whole number of seconds from 1 to a year", () => {
    const step = { action: 'deleteFile', args: { path: 'a' } };
    expect(parse({ consentExpirySeconds: 90, steps: [step] }).consentExpirySeconds).toBe(90);
    expect(parse({ steps: [step] }).consentExpirySeconds).toBeUndefined();
    for (const bad of [0, -5, 1.5, Infinity, Number.NaN, 400 * 24 * 3600, '60', null]) {
      const refusal = codeOf(() => parse({ consentExpirySeconds: bad, steps: [step] }));
      expect(refusal.code).toBe('INVALID_PLAN');
      expect(refusal.message).toContain('consentExpirySeconds');
    }
  });

  it('rejects an empty plan and duplicate step ids', () => {
    expect(codeOf(() => parse({ steps: [] })).code).toBe('INVALID_PLAN');
    const step = { id: 'same', action: 'deleteFile', args: { path: 'a' } };
    expect(codeOf(() => parse({ steps: [step, step] })).message).toContain('twice');
  });

  it('gives a different hash for any change to the step', () => {
    const plan = parse({ planId: 'p', steps: [{ id: 's', action: 'writeFile', args: { path: 'a', content: 'x' } }] });
    const step = plan.steps[0]!;
    const changed = { ...step, args: { ...step.args, content: 'y' } } as typeof step;
    expect(stepHash(step)).toMatch(/^[0-9a-f]{64}$/);
    expect(stepHash(changed)).not.toBe(stepHash(step));
    expect(stepHash({ ...step, meta: { origin: 'agent' } })).not.toBe(stepHash(step));
  });

  it("takes the proposer's origin and client from the channel, never from the plan", () => {
    const claimed = {
      steps: [{ action: 'deleteFile', args: { path: 'a' }, meta: { origin: 'user', client: 'the-person', purpose: 'tidy' } }],
    };
    const fromAgent = parsePlan(claimed, { origin: 'agent', client: 'agent-x 1.0' }).steps[0]!.meta;
    expect(fromAgent).toEqual({ origin: 'agent', client: 'agent-x 1.0', purpose: 'tidy' });
    // An agent that gave no name cannot borrow one either.
    expect(parsePlan(claimed, { origin: 'agent' }).steps[0]!.meta).toEqual({ origin: 'agent', purpose: 'tidy' });
  });
});

describe('parsePlan before anything walks the plan', () => {
  const deepSteps = () => JSON.parse(`{"steps": ${'['.repeat(5000)}${']'.repeat(5000)}}`) as unknown;

  it('refuses {"steps": [[[…5000 deep…]]]} with INVALID_PLAN naming the place and the limit', () => {
    const refused = codeOf(() => parse(deepSteps()));
    expect(refused.code).toBe('INVALID_PLAN');
    expect(refused.message).toMatch(/^The plan is not valid: steps(\[0\]){31} is nested deeper than 32 levels/);
  });

  it('refuses "confidence": 1e400 with INVALID_PLAN naming steps[0].meta.confidence', () => {
    const plan = JSON.parse(
      '{"steps":[{"action":"writeFile","args":{"path":"a.txt","content":"x"},"meta":{"confidence":1e400}}]}',
    ) as unknown;
    const refused = codeOf(() => parse(plan));
    expect(refused.code).toBe('INVALID_PLAN');
    expect(refused.message).toContain('steps[0].meta.confidence is Infinity');
  });

  it('refuses a deep value in a key zod would only call unrecognized, and a lone surrogate in content', () => {
    let deep: unknown = 1;
    for (let index = 0; index < 100_000; index++) deep = { x: deep };
    expect(codeOf(() => parse({ steps: [{ action: 'writeFile', args: { path: 'a', content: 'x', extra: deep } }] })).message).toMatch(
      /steps\[0\]\.args\.extra(\.x)+ is nested deeper/,
    );
    expect(codeOf(() => parse({ steps: [{ action: 'writeFile', args: { path: 'a', content: 'half \uD83D' } }] })).message).toContain(
      'steps[0].args.content holds a lone UTF-16 surrogate',
    );
  });

  it('refuses two million steps by their count, before zod makes an issue of each', () => {
    const steps = new Array(2_000_000).fill(0);
    const started = performance.now();
    const refused = codeOf(() => parse({ steps }));
    expect(refused.message).toContain('steps has 2,000,000 items; the limit is 10,000');
    // Counted, not walked: far below what one issue per item would take, even on a busy machine.
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
