import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExecutorError } from '../../../src/domain/errors.js';
import {
  assertWithinJsonLimits,
  findJsonLimitProblem,
  formatJsonPath,
  MESSAGE_LIMITS,
  PLAN_LIMITS,
  type JsonLimits,
} from '../../../src/domain/json-limits.js';

function nestedArrays(levels: number, leaf: unknown = 1): unknown {
  let value: unknown = leaf;
  for (let index = 0; index < levels; index++) value = [value];
  return value;
}

function nestedObjects(levels: number, key = 'a'): unknown {
  let value: unknown = 1;
  for (let index = 0; index < levels; index++) value = { [key]: value };
  return value;
}

const SMALL: JsonLimits = { maxDepth: 4, maxValues: 50, maxItems: 5, wellFormedStrings: true };

describe('findJsonLimitProblem', () => {
  it('accepts ordinary JSON within the limits', () => {
    expect(
      findJsonLimitProblem(
        { steps: [{ action: 'writeFile', args: { path: '/a', content: 'x' }, meta: { confidence: 0.5 } }] },
        PLAN_LIMITS,
      ),
    ).toBeNull();
    expect(findJsonLimitProblem(null, PLAN_LIMITS)).toBeNull();
    expect(findJsonLimitProblem('😀', PLAN_LIMITS)).toBeNull();
    expect(findJsonLimitProblem(-0, PLAN_LIMITS)).toBeNull();
    expect(findJsonLimitProblem(Number.MAX_SAFE_INTEGER, PLAN_LIMITS)).toBeNull();
  });

  it('names the place where arrays nest deeper than the limit, from a value a million levels deep, without recursion', () => {
    const found = findJsonLimitProblem({ steps: nestedArrays(1_000_000) }, PLAN_LIMITS);
    expect(found?.limit).toEqual({ name: 'maxDepth', value: 32 });
    // The top object is level 1, steps level 2, so the 31st [0] is level 33.
    expect(found?.path).toBe(`steps${'[0]'.repeat(31)}`);
    expect(found?.problem).toBe('is nested deeper than 32 levels');
  });

  it('names the place where objects nest deeper than the limit, 5000 levels deep', () => {
    const found = findJsonLimitProblem({ steps: [{ args: nestedObjects(5000) }] }, PLAN_LIMITS);
    expect(found?.limit.name).toBe('maxDepth');
    expect(found?.path.startsWith('steps[0].args.a.a.')).toBe(true);
  });

  it('refuses numbers JSON reads as Infinity, and numbers too large to hold exactly', () => {
    expect(findJsonLimitProblem(JSON.parse('{"meta":{"confidence":1e400}}'), PLAN_LIMITS)).toMatchObject({
      path: 'meta.confidence',
      limit: { name: 'finiteNumber' },
    });
    expect(findJsonLimitProblem(JSON.parse('[0, -1e400]'), PLAN_LIMITS)).toMatchObject({ path: '[1]', limit: { name: 'finiteNumber' } });
    expect(findJsonLimitProblem(Number.NaN, PLAN_LIMITS)?.problem).toContain('NaN');
    expect(findJsonLimitProblem(JSON.parse('{"t":9007199254740993}'), PLAN_LIMITS)).toMatchObject({
      path: 't',
      limit: { name: 'exactNumber' },
    });
    expect(findJsonLimitProblem(JSON.parse('{"t":-1e300}'), PLAN_LIMITS)).toMatchObject({ path: 't', limit: { name: 'exactNumber' } });
    expect(findJsonLimitProblem(JSON.parse('{"meta":{"confidence":1e400}}'), PLAN_LIMITS)?.problem).toContain('1e400');
  });

  it('refuses lone surrogates in strings and keys when asked, and lets them through otherwise', () => {
    expect(findJsonLimitProblem({ content: 'ok \uD83D' }, PLAN_LIMITS)).toMatchObject({
      path: 'content',
      limit: { name: 'wellFormedString' },
    });
    expect(findJsonLimitProblem({ content: '\uDE00 first' }, PLAN_LIMITS)?.path).toBe('content');
    const badKey = findJsonLimitProblem({ ok: 1, ['k\uDC00']: 1 }, PLAN_LIMITS);
    expect(badKey?.limit.name).toBe('wellFormedString');
    expect(badKey?.path).toBe('["k\\udc00"]');
    expect(findJsonLimitProblem({ content: 'a \uD800' }, MESSAGE_LIMITS)).toBeNull();
  });

  it('refuses wide arrays and objects, and too many values in all', () => {
    expect(findJsonLimitProblem({ list: [1, 2, 3, 4, 5, 6] }, SMALL)).toMatchObject({
      path: 'list',
      limit: { name: 'maxItems', value: 5 },
    });
    expect(findJsonLimitProblem({ a: 1, b: 1, c: 1, d: 1, e: 1, f: 1 }, SMALL)).toMatchObject({
      path: '(top level)',
      limit: { name: 'maxItems' },
    });
    const many = Array.from({ length: 20 }, () => [1, 2, 3]);
    expect(findJsonLimitProblem({ many: many.slice(0, 5), more: many.slice(5, 10), again: many.slice(10, 15) }, SMALL)?.limit.name).toBe(
      'maxValues',
    );
    expect(findJsonLimitProblem({ steps: new Array(2_000_000).fill(0) }, PLAN_LIMITS)).toMatchObject({
      path: 'steps',
      limit: { name: 'maxItems' },
    });
  });

  it('refuses what is not JSON data: bigints, class instances, Maps, Dates', () => {
    expect(findJsonLimitProblem({ n: 1n }, PLAN_LIMITS)).toMatchObject({ path: 'n', limit: { name: 'jsonData' } });
    expect(findJsonLimitProblem({ when: new Date() }, PLAN_LIMITS)?.problem).toBe('is a Date, not plain JSON data');
    expect(findJsonLimitProblem([new Map()], PLAN_LIMITS)?.path).toBe('[0]');
    expect(findJsonLimitProblem(Object.create(null) as object, PLAN_LIMITS)).toBeNull();
    expect(findJsonLimitProblem({ dropped: undefined, fn: () => 1 }, PLAN_LIMITS)).toBeNull();
  });

  it('never throws, even on an object whose getter throws', () => {
    const hostile = {};
    Object.defineProperty(hostile, 'boom', {
      enumerable: true,
      get: () => {
        throw new Error('boom');
      },
    });
    expect(findJsonLimitProblem({ hostile }, PLAN_LIMITS)).toMatchObject({ limit: { name: 'jsonData' } });
  });

  it('reports the first problem in document order', () => {
    expect(findJsonLimitProblem({ a: [1, 1e400], b: 1e400 }, PLAN_LIMITS)?.path).toBe('a[1]');
    expect(findJsonLimitProblem(JSON.parse('[{"x":1},{"y":1e999},{"z":1e999}]'), PLAN_LIMITS)?.path).toBe('[1].y');
  });

  it('keeps a "__proto__" key a key, and quotes keys a person could not type after a dot', () => {
    const parsed = JSON.parse('{"__proto__":{"x":1e400}}') as unknown;
    expect(findJsonLimitProblem(parsed, PLAN_LIMITS)?.path).toBe('__proto__.x');
    expect(formatJsonPath(['steps', 0, 'odd key', 'x'])).toBe('steps[0]["odd key"].x');
    expect(formatJsonPath(['k'.repeat(100)])).toBe(`["${'k'.repeat(64)}…"]`);
    expect(formatJsonPath(['line\nbreak\u202e'])).toBe('["line\\nbreak\u202e"]');
    expect(formatJsonPath([])).toBe('(top level)');
    expect(formatJsonPath(['plan'], 'params')).toBe('params.plan');
  });

  it('holds every value fast-check makes within the limits (but for integers past 2^53), and never throws on anything', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 10 }), (value) => {
        const found = findJsonLimitProblem(value, MESSAGE_LIMITS);
        expect(found === null || found.limit.name === 'exactNumber').toBe(true);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(
        fc.anything({
          withBigInt: true,
          withDate: true,
          withMap: true,
          withSet: true,
          withTypedArray: true,
          withNullPrototype: true,
          withObjectString: true,
          withSparseArray: true,
        }),
        (value) => {
          const found = findJsonLimitProblem(value, PLAN_LIMITS);
          if (found) expect(typeof found.path).toBe('string');
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('assertWithinJsonLimits', () => {
  it('throws the given code with the place, the problem and the limit', () => {
    let thrown: unknown;
    try {
      assertWithinJsonLimits({ steps: nestedArrays(5000) }, PLAN_LIMITS, { code: 'INVALID_PLAN', subject: 'The plan' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ExecutorError);
    const error = thrown as ExecutorError;
    expect(error.code).toBe('INVALID_PLAN');
    expect(error.message).toMatch(/^The plan is not valid: steps(\[0\])+ is nested deeper than 32 levels\. Nothing was stored/);
    expect(error.details).toMatchObject({ limit: { name: 'maxDepth', value: 32 }, issues: [expect.stringContaining('steps[0]')] });
  });
});
