import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { ExecutorError } from './errors.js';
import { assertWithinJsonLimits, PLAN_LIMITS } from './json-limits.js';
import { PlanInputSchema, PlanSchema, type Plan, type StepMeta } from './step.js';

/** Turns zod's issues into one sentence per problem, with the JSON path a person can find in their file. */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const where = issue.path.length ? issue.path.join('.') : '(top level)';
    return `${where}: ${issue.message}`;
  });
}

/**
 * Validates a plan as written by a person or agent, fills in ids and the proposer's identity, and returns a fully
 * validated Plan. Throws INVALID_PLAN naming every problem (or the first value over PLAN_LIMITS); nothing is half-accepted.
 */
export function parsePlan(
  input: unknown,
  defaults: { origin: StepMeta['origin']; client?: string; agent?: string; freshIds?: boolean },
): Plan {
  // Depth, size and number forms first: zod, hashing and storing all walk the plan, some of them recursively.
  assertWithinJsonLimits(input, PLAN_LIMITS, { code: 'INVALID_PLAN', subject: 'The plan' });
  const shaped = PlanInputSchema.safeParse(input);
  if (!shaped.success) {
    throw new ExecutorError('INVALID_PLAN', `The plan is not valid: ${describeIssues(shaped.error).join('; ')}`, {
      issues: describeIssues(shaped.error),
    });
  }
  // An agent's ids are the host's: one it chose could collide with a step it cannot see, and the refusal would say that step exists.
  const planId = (defaults.freshIds ? undefined : shaped.data.planId) ?? `plan-${randomUUID()}`;
  const candidate = {
    planId,
    purpose: shaped.data.purpose,
    ...(shaped.data.consentExpirySeconds !== undefined ? { consentExpirySeconds: shaped.data.consentExpirySeconds } : {}),
    steps: shaped.data.steps.map((step) => {
      // Who proposed a step is the channel's word, never the plan's: an agent cannot label its step as the person's or as another client's.
      const { origin: _claimedOrigin, client: _claimedClient, agent: _claimedAgent, ...ownMeta } = step.meta ?? {};
      return {
        ...step,
        id: (defaults.freshIds ? undefined : step.id) ?? `step-${randomUUID()}`,
        planId,
        meta: {
          ...ownMeta,
          origin: defaults.origin,
          ...(defaults.client ? { client: defaults.client } : {}),
          ...(defaults.agent ? { agent: defaults.agent } : {}),
        },
      };
    }),
  };
  const parsed = PlanSchema.safeParse(candidate);
  if (!parsed.success) {
    throw new ExecutorError('INVALID_PLAN', `The plan is not valid: ${describeIssues(parsed.error).join('; ')}`, {
      issues: describeIssues(parsed.error),
    });
  }
  // A skill's use is approved by the skill's pin and written by the skill itself: a plan could otherwise name a version or hash of its own choosing.
  const skillUse = parsed.data.steps.find((step) => step.action === 'runSkill');
  if (skillUse?.action === 'runSkill')
    throw new ExecutorError(
      'INVALID_PLAN',
      `The plan is not valid: step ${skillUse.id} is a runSkill, which is never proposed in a plan; use the skill's own tool (skill_${skillUse.args.skill}) or \`executor skills use ${skillUse.args.skill}\`.`,
      { stepId: skillUse.id },
    );
  const ids = new Set<string>();
  for (const step of parsed.data.steps) {
    if (ids.has(step.id)) throw new ExecutorError('INVALID_PLAN', `The plan uses step id ${step.id} twice.`, { stepId: step.id });
    ids.add(step.id);
  }
  return parsed.data;
}
