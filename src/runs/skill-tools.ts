import { toErrorShape } from '../domain/errors.js';
import type { Actor } from '../domain/actor.js';
import type { SkillRecord, SkillUseResult } from '../domain/skill.js';
import type { ModelTool } from './model-client.js';
import type { StepOutcome } from './step-outcome.js';

/** What a run's skill tools use of the Executor (a part of RunsExecutorPort). */
export interface RunSkillsPort {
  usableSkills(): SkillRecord[];
  proposeSkill(input: unknown, actor: Actor): Promise<SkillRecord>;
  useSkill(name: string, input: unknown, actor: Actor): Promise<SkillUseResult>;
}

export const PROPOSE_SKILL_TOOL = 'propose_skill';
const SKILL_TOOL_PREFIX = 'skill_';

const PROPOSE_SKILL: ModelTool = {
  name: PROPOSE_SKILL_TOOL,
  description:
    'Make JavaScript you keep writing into a skill: {name, purpose, code (reads `input`, returns the output), inputSchema (JSON Schema, type object), outputSchema, capabilities?, budget? {timeMs, calls}, examples (at least 3 inputs)}. ' +
    'Executor runs the examples in quarantine, checks its calls against what it declared, then the person approves it; an approved skill becomes the tool skill_<name> and runs without asking.',
  parameters: {
    type: 'object',
    properties: {
      name: { type: 'string' },
      purpose: { type: 'string' },
      code: { type: 'string' },
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object' },
      capabilities: { type: 'object' },
      budget: { type: 'object' },
      examples: { type: 'array', minItems: 3 },
    },
    required: ['name', 'purpose', 'code', 'inputSchema', 'outputSchema', 'examples'],
  },
};

/**
 * The skill tools of a run that may run code (it offers run_code): propose_skill, and one tool per
 * usable skill, asked for at every turn, so a skill the person approves mid-run is offered at the
 * next turn and one disabled is gone.
 */
export function skillModelTools(port: RunSkillsPort): ModelTool[] {
  return [
    PROPOSE_SKILL,
    ...port.usableSkills().map((skill) => ({
      name: `${SKILL_TOOL_PREFIX}${skill.name}`,
      description: `${skill.purpose} (skill v${skill.version}, ${skill.state}; runs without asking in the light sandbox, audited)`,
      parameters: skill.inputSchema,
    })),
  ];
}

export function isSkillToolCall(name: string): boolean {
  return name === PROPOSE_SKILL_TOOL || name.startsWith(SKILL_TOOL_PREFIX);
}

/** One skill tool call, as the outcome the model is told: never a throw. */
export async function skillToolCall(port: RunSkillsPort, name: string, rawArguments: string, actor: Actor): Promise<StepOutcome> {
  let args: unknown;
  try {
    args = rawArguments.trim() === '' ? {} : JSON.parse(rawArguments);
  } catch (error) {
    return {
      outcome: 'ERROR',
      result: `The arguments of ${name} are not valid JSON (${(error as Error).message}).`,
      errorCode: 'TOOL_BAD_JSON',
    };
  }
  try {
    if (name === PROPOSE_SKILL_TOOL) {
      const skill = await port.proposeSkill(args, actor);
      return skill.state === 'rejected'
        ? { outcome: 'FAILED', result: `REJECTED: skill ${skill.name} v${skill.version}: ${skill.reason}`, errorCode: 'SKILL_REJECTED' }
        : {
            outcome: 'EXECUTED',
            result: `AWAITING_OWNER: skill ${skill.name} v${skill.version} (${skill.skillId}) passed quarantine and validation; the person decides.`,
            errorCode: null,
          };
    }
    // Each use is a runSkill step of its own: the call keeps its id, so the run's steps list it.
    const used = await port.useSkill(name.slice(SKILL_TOOL_PREFIX.length), args, actor);
    const disabled = used.state === 'disabled' && used.reason ? ` The skill is now disabled: ${used.reason}` : '';
    return used.ok
      ? { outcome: 'EXECUTED', result: JSON.stringify(used.output ?? null), errorCode: null, stepId: used.stepId }
      : {
          outcome: 'FAILED',
          result: `${used.code}: ${used.message}${disabled}`,
          errorCode: used.code ?? 'SKILL_FAILED',
          stepId: used.stepId,
        };
  } catch (error) {
    const shaped = toErrorShape(error);
    // A refused use (a changed skill) is recorded as a denied step too.
    const stepId = typeof shaped.details?.stepId === 'string' ? shaped.details.stepId : undefined;
    return { outcome: 'FAILED', result: `${shaped.code}: ${shaped.message}`, errorCode: shaped.code, ...(stepId ? { stepId } : {}) };
  }
}
