// Browser-safe (no Node imports): the IPC client checks params with it before signing them, in the page too.
import { ExecutorError, type ErrorCode } from './errors.js';

/*
 * Input from outside (a plan file, an IPC frame, an MCP message) is canonicalized, hashed and
 * signed, and every one of those walks it recursively. So before any of that sees a value, this
 * one loop (an explicit stack, never recursion) checks what would break them or silently change
 * the value: nesting depth, how many values and items, numbers JSON cannot hold exactly, strings
 * with no UTF-8 form, and things that are not JSON data at all. The first problem in document
 * order is reported with its JSON path (`steps[0].args.content`), so a person can find it.
 */

export interface JsonLimits {
  /** Containers nested deeper than this many levels are refused (the top-level object is level 1). */
  maxDepth: number;
  /** Values in all (containers, strings, numbers, …): bounds the work of every later walk. */
  maxValues: number;
  /** Items of one array, or keys of one object. */
  maxItems: number;
  /** Refuse strings and keys holding a lone UTF-16 surrogate: it has no UTF-8 form, so a file or record would hold U+FFFD instead. */
  wellFormedStrings: boolean;
}

/** What the first value over a limit is, and where. */
export interface JsonLimitProblem {
  /** Path segments from the root: keys and array indexes. */
  at: (string | number)[];
  /** The path as a person reads it: `steps[0].args.content`, or `(top level)`. */
  path: string;
  /** What is wrong, in words, without the path: "is nested deeper than 32 levels". */
  problem: string;
  /** Which limit was crossed, and its value, for a caller that reports it in details. */
  limit: { name: 'maxDepth' | 'maxValues' | 'maxItems' | 'finiteNumber' | 'exactNumber' | 'wellFormedString' | 'jsonData'; value?: number };
}

/** Plans as people and agents write them: a plan is 7 levels deep at most, an argv 4,096 items long. */
export const PLAN_LIMITS: JsonLimits = { maxDepth: 32, maxValues: 1_000_000, maxItems: 10_000, wellFormedStrings: true };

/** Whole IPC and MCP messages: the envelope around a plan, with room to spare. A plan inside is also held to PLAN_LIMITS. */
export const MESSAGE_LIMITS: JsonLimits = { maxDepth: 64, maxValues: 2_000_000, maxItems: 100_000, wellFormedStrings: false };

/** Files a person keeps in the data directory (policy.json). */
export const FILE_LIMITS: JsonLimits = { maxDepth: 64, maxValues: 1_000_000, maxItems: 100_000, wellFormedStrings: true };

interface Frame {
  value: unknown;
  key: string | number | null;
  parent: Frame | null;
  level: number;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const MAX_KEY_SHOWN = 64;

/** False when the text holds a lone UTF-16 surrogate, which no UTF-8 file or canonical JSON can hold. */
export function wellFormed(text: string): boolean {
  const native = (text as { isWellFormed?: () => boolean }).isWellFormed;
  return typeof native === 'function' ? native.call(text) : !LONE_SURROGATE.test(text);
}

/** `steps[0].args["odd key"]`: identifiers after a dot, other keys quoted (and cut to 64 characters), indexes in brackets. */
export function formatJsonPath(at: readonly (string | number)[], prefix = ''): string {
  let out = prefix;
  for (const segment of at) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (IDENTIFIER.test(segment) && segment.length <= MAX_KEY_SHOWN) out += out ? `.${segment}` : segment;
    else {
      const shown = segment.length > MAX_KEY_SHOWN ? `${segment.slice(0, MAX_KEY_SHOWN)}…` : segment;
      // Escaped like JSON, with lone surrogates and controls as \u escapes so the path itself prints anywhere.
      out += `[${JSON.stringify(shown).replace(/[\u0000-\u001f\u007f-\u009f\uD800-\uDFFF\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)}]`;
    }
  }
  return out || '(top level)';
}

function pathOf(frame: Frame): (string | number)[] {
  const at: (string | number)[] = [];
  for (let current: Frame | null = frame; current && current.key !== null; current = current.parent) at.push(current.key);
  return at.reverse();
}

function kindOf(value: unknown): string {
  if (typeof value !== 'object' || value === null) return `a ${typeof value}`;
  const name = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  return typeof name === 'string' && name ? `a ${name}` : 'an object with a prototype';
}

/** Numbers as the message shows them: Infinity is what 1e400 becomes, so say both. */
function describeNumber(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return `${value < 0 ? '-' : ''}Infinity (a JSON number beyond ±1.8e308, like 1e400)`;
  return String(value);
}

/**
 * The first value of `value` that breaks `limits`, in document order, or null when all is within.
 * Never recursive and never throws (a getter that throws is reported as not JSON data): safe on a
 * value nested a million levels deep. `undefined`, functions and symbols are let through, as JSON
 * serialization drops them; a bigint or a non-plain object (Date, Map, a class) is refused.
 */
export function findJsonLimitProblem(value: unknown, limits: JsonLimits): JsonLimitProblem | null {
  const problem = (frame: Frame, text: string, limit: JsonLimitProblem['limit']): JsonLimitProblem => {
    const at = pathOf(frame);
    return { at, path: formatJsonPath(at), problem: text, limit };
  };
  const stack: Frame[] = [{ value, key: null, parent: null, level: 0 }];
  let values = 0;
  try {
    while (stack.length > 0) {
      const frame = stack.pop()!;
      const item = frame.value;
      if (++values > limits.maxValues) {
        return problem(frame, `is past the limit of ${limits.maxValues.toLocaleString('en-US')} values in all`, {
          name: 'maxValues',
          value: limits.maxValues,
        });
      }
      switch (typeof item) {
        case 'string':
          if (limits.wellFormedStrings && !wellFormed(item)) {
            return problem(frame, 'holds a lone UTF-16 surrogate (half of an emoji or other character), which has no UTF-8 form', {
              name: 'wellFormedString',
            });
          }
          continue;
        case 'number':
          if (!Number.isFinite(item))
            return problem(frame, `is ${describeNumber(item)}, which is not a finite number`, { name: 'finiteNumber' });
          if (Math.abs(item) > Number.MAX_SAFE_INTEGER) {
            return problem(frame, `is ${item}, beyond ±${Number.MAX_SAFE_INTEGER}, where numbers cannot be held exactly`, {
              name: 'exactNumber',
              value: Number.MAX_SAFE_INTEGER,
            });
          }
          continue;
        case 'bigint':
          return problem(frame, 'is a bigint, which JSON cannot hold', { name: 'jsonData' });
        case 'object':
          break;
        default:
          // undefined, functions, symbols: JSON serialization leaves them out.
          continue;
      }
      if (item === null) continue;
      const level = frame.level + 1;
      if (level > limits.maxDepth) {
        return problem(frame, `is nested deeper than ${limits.maxDepth} levels`, { name: 'maxDepth', value: limits.maxDepth });
      }
      if (Array.isArray(item)) {
        if (item.length > limits.maxItems) {
          return problem(
            frame,
            `has ${item.length.toLocaleString('en-US')} items; the limit is ${limits.maxItems.toLocaleString('en-US')}`,
            { name: 'maxItems', value: limits.maxItems },
          );
        }
        // Pushed last to first, so the first problem found is the first in the text.
        for (let index = item.length - 1; index >= 0; index--) stack.push({ value: item[index], key: index, parent: frame, level });
        continue;
      }
      const prototype = Object.getPrototypeOf(item) as unknown;
      if (prototype !== Object.prototype && prototype !== null) {
        return problem(frame, `is ${kindOf(item)}, not plain JSON data`, { name: 'jsonData' });
      }
      const keys = Object.keys(item);
      if (keys.length > limits.maxItems) {
        return problem(frame, `has ${keys.length.toLocaleString('en-US')} keys; the limit is ${limits.maxItems.toLocaleString('en-US')}`, {
          name: 'maxItems',
          value: limits.maxItems,
        });
      }
      if (limits.wellFormedStrings) {
        const badKey = keys.find((key) => !wellFormed(key));
        if (badKey !== undefined) {
          return problem(
            { value: undefined, key: badKey, parent: frame, level },
            'is a key holding a lone UTF-16 surrogate (half of an emoji or other character), which has no UTF-8 form',
            { name: 'wellFormedString' },
          );
        }
      }
      for (let index = keys.length - 1; index >= 0; index--) {
        const key = keys[index]!;
        stack.push({ value: (item as Record<string, unknown>)[key], key, parent: frame, level });
      }
    }
  } catch {
    // Only an in-process caller's exotic object (a throwing getter, a revoked proxy) gets here.
    return { at: [], path: '(top level)', problem: 'could not be read as JSON data', limit: { name: 'jsonData' } };
  }
  return null;
}

/** One line for a message: `steps[0].meta.confidence is Infinity (…), which is not a finite number`. */
export function describeJsonLimitProblem(found: JsonLimitProblem, prefix = ''): string {
  return `${formatJsonPath(found.at, prefix)} ${found.problem}`;
}

/**
 * Throws `code` naming the first value over the limits: "<subject> is not valid: <path> <problem>."
 * Details carry the same line in `issues` (as zod's problems are reported), the path and the limit.
 */
export function assertWithinJsonLimits(
  value: unknown,
  limits: JsonLimits,
  refusal: { code: ErrorCode; subject: string; prefix?: string; details?: Record<string, unknown>; advice?: string },
): void {
  const found = findJsonLimitProblem(value, limits);
  if (!found) return;
  const line = describeJsonLimitProblem(found, refusal.prefix);
  throw new ExecutorError(
    refusal.code,
    `${refusal.subject} is not valid: ${line}. ${refusal.advice ?? 'Nothing was stored; change that value and try again.'}`,
    {
      ...refusal.details,
      issues: [line],
      path: formatJsonPath(found.at, refusal.prefix),
      limit: found.limit,
    },
  );
}
