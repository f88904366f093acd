/*
 * The states of a skill without zod, so the CLI's command definitions can list them while
 * `executor --help` loads nothing but commander. src/domain/skill.ts re-exports them beside the schemas.
 */
export const SKILL_STATES = [
  'draft',
  'quarantine',
  'validation',
  'awaiting_owner',
  'trial',
  'active',
  'rejected',
  'disabled',
  'superseded',
] as const;
export type SkillState = (typeof SKILL_STATES)[number];
