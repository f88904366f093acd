import { ExecutorError } from '../domain/errors.js';
import type { ActionModule } from './action-module.js';

/** Why a runSkill step is never simulated or run as a proposed step: the skill's pin is its approval. */
function onlyThroughItsSkill(skill: string): ExecutorError {
  return new ExecutorError(
    'INVALID_INPUT',
    `A runSkill step is written by the skill ${skill} itself when it is used (its tool skill_${skill}, or \`executor skills use ${skill}\`); it is never proposed, previewed or run as a step of a plan.`,
  );
}

/**
 * runSkill: one use of an approved skill (docs/skills.md). The skills room writes the step already
 * approved by the skill's pin (code hash, capabilities and budget the person approved) and runs the
 * pinned code in the light sandbox itself, so this module only says what the step is: LOW, never
 * revertible (isolated code changes no file; what a granted host did with a request stays done, as
 * for runCode), and never simulated or run through a plan.
 */
export const runSkill: ActionModule<'runSkill'> = {
  action: 'runSkill',
  reversible: false,
  summarize: (args) => `Use skill ${args.skill} v${args.version}`,
  assess: (args) => ({
    risk: 'LOW',
    reasons: [
      `Uses skill ${args.skill} v${args.version}: code the person approved (sha256 ${args.codeHash.slice(0, 12)}…), with the capabilities and budget they pinned.`,
    ],
    mitigations: ['Refused if the stored code no longer hashes to the approved one; a misstep disables the skill.'],
  }),
  simulate: (args) => Promise.reject(onlyThroughItsSkill(args.skill)),
  run: (args) => Promise.reject(onlyThroughItsSkill(args.skill)),
};
