import fs from 'node:fs';
import { ExecutorError } from '../domain/errors.js';
import { assertWithinJsonLimits, PLAN_LIMITS } from '../domain/json-limits.js';
import { withReason } from '../domain/sentence-text.js';

/** Larger plan files are refused before they are read: a plan carries intents, not data sets. */
export const MAX_PLAN_FILE_BYTES = 32 * 1024 * 1024;

export function readPlanFile(file: string): unknown {
  let size: number;
  try {
    size = fs.statSync(file).size;
  } catch (error) {
    throw new ExecutorError(
      'INVALID_PLAN',
      `Cannot read the plan file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`,
      { file },
    );
  }
  if (size > MAX_PLAN_FILE_BYTES) {
    throw new ExecutorError(
      'PLAN_TOO_LARGE',
      `The plan file ${file} is ${(size / 1024 / 1024).toFixed(1)} MiB; the limit is ${MAX_PLAN_FILE_BYTES / 1024 / 1024} MiB.`,
      { file, size },
    );
  }
  const text = fs.readFileSync(file, 'utf8');
  let plan: unknown;
  try {
    plan = JSON.parse(text);
  } catch (error) {
    throw new ExecutorError('INVALID_PLAN', withReason(`The plan file ${file} is not valid JSON`, (error as Error).message), { file });
  }
  // Here, before the plan is signed for the host (signing canonicalizes it, recursively) or handed to the Executor.
  assertWithinJsonLimits(plan, PLAN_LIMITS, { code: 'INVALID_PLAN', subject: `The plan in ${file}`, details: { file } });
  return plan;
}
