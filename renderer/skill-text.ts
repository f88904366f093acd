import type { SkillExampleResult, SkillRecord } from '../src/domain/skill.js';
import { formatTime } from './time-format.js';

/*
 * A skill's state as the person reads it in the Skills view (views/skills-view.tsx): where it is in its
 * pipeline and, when it stopped, why, in the words the CLI's `skills show` also uses for the reasons.
 */

type StateFacts = Pick<SkillRecord, 'state' | 'reason' | 'trial'>;

/** One line: "in quarantine", "awaiting your approval", "in trial: 12 of 50 uses, until …", "disabled: why". */
export function skillStateWords(skill: StateFacts, format: (iso: string) => string = formatTime): string {
  switch (skill.state) {
    case 'draft':
      // Back in draft only when the stop switch cut its check short: the host says so and what to do.
      // No reason (or an empty one): a new draft, about to be checked.
      return skill.reason?.trim() ? skill.reason : 'in quarantine';
    case 'quarantine':
    case 'validation':
      return 'in quarantine';
    case 'awaiting_owner':
      return 'awaiting your approval';
    case 'trial': {
      const uses = `in trial: ${skill.trial.uses} of ${skill.trial.required} use${skill.trial.required === 1 ? '' : 's'}`;
      return skill.trial.untilAt ? `${uses}, until ${format(skill.trial.untilAt)}` : uses;
    }
    case 'active':
      return 'active';
    case 'rejected': {
      // The pipeline writes its own rejections as "quarantine: …" or "validation: …"; the person's reason is said as theirs.
      const failed = /^(quarantine|validation): (.*)$/s.exec(skill.reason ?? '');
      if (failed) return `failed ${failed[1]}: ${failed[2]}`;
      return `rejected: ${skill.reason ?? 'no reason given'}`;
    }
    case 'disabled':
      return `disabled: ${skill.reason ?? 'no reason given'}`;
    case 'superseded':
      // The host says "superseded by v2" itself; other reasons are said after the state.
      return skill.reason?.startsWith('superseded') ? skill.reason : `superseded: ${skill.reason ?? 'a newer version took its place'}`;
  }
}

/** The tone a state's badge takes: waiting for the person, usable, or stopped. */
export function skillStateTone(state: SkillRecord['state']): 'waiting' | 'usable' | 'stopped' | 'busy' {
  // A draft is one whose check the stop switch stopped: it waits for the person to check it again.
  if (state === 'awaiting_owner' || state === 'draft') return 'waiting';
  if (state === 'trial' || state === 'active') return 'usable';
  if (state === 'quarantine' || state === 'validation') return 'busy';
  return 'stopped';
}

export interface CallsAgainstDeclared {
  /** Each distinct call the examples made, `tool target`, with whether it was within what the skill declared. */
  made: { call: string; declared: boolean; times: number }[];
  /** What the skill declared, in words. */
  declared: string[];
}

/** What the examples called in quarantine against what the skill declared: the validation the person checks before approving. */
export function callsAgainstDeclared(skill: Pick<SkillRecord, 'capabilities' | 'exampleResults'>): CallsAgainstDeclared {
  const hosts = (skill.capabilities.fetch?.hosts ?? []).map((host) => host.toLowerCase());
  const declared = [
    ...hosts.map((host) => `fetch ${host}`),
    ...(skill.capabilities.readFile ? ['readFile (inside the workspace roots)'] : []),
    ...(skill.capabilities.kbSearch ? ['kbSearch'] : []),
  ];
  const made = new Map<string, { call: string; declared: boolean; times: number }>();
  for (const result of skill.exampleResults) {
    for (const call of result.calls) {
      const key = `${call.tool} ${call.target}`;
      const seen = made.get(key);
      if (seen) seen.times += 1;
      else made.set(key, { call: key, declared: callDeclared(call, skill.capabilities, hosts), times: 1 });
    }
  }
  return { made: [...made.values()], declared };
}

function callDeclared(call: SkillExampleResult['calls'][number], capabilities: SkillRecord['capabilities'], hosts: string[]): boolean {
  if (call.tool === 'fetch') {
    const host = hostOf(call.target);
    return host !== null && hosts.includes(host);
  }
  if (call.tool === 'readFile') return capabilities.readFile === true;
  if (call.tool === 'kbSearch') return capabilities.kbSearch === true;
  return false;
}

function hostOf(target: string): string | null {
  const url = /https?:\/\/\S+/.exec(target)?.[0];
  if (!url) return null;
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return null;
  }
}

/** A value from an example or its result, short enough for one table cell. */
export function compactJson(value: unknown, max = 400): string {
  let text: string;
  try {
    text = value === undefined ? 'undefined' : JSON.stringify(value);
  } catch {
    text = String(value);
  }
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** A name for a new skill from a step's purpose: lowercase words joined by "_", as skill names must be. */
export function skillNameFrom(purpose: string | null | undefined): string {
  const words = (purpose ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim()
    .split(' ')
    .filter(Boolean)
    .slice(0, 5);
  const name = words.join('_').replace(/^[0-9_]+/, '');
  return (name || 'saved_code').slice(0, 48).replace(/_+$/, '');
}
