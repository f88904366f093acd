export const RISK_LEVELS = ['LOW', 'MEDIUM', 'HIGH', 'CRITICAL'] as const;
export type Risk = (typeof RISK_LEVELS)[number];

export function riskRank(risk: Risk): number {
  return RISK_LEVELS.indexOf(risk);
}

export function maxRisk(...risks: Risk[]): Risk {
  return risks.reduce<Risk>((highest, risk) => (riskRank(risk) > riskRank(highest) ? risk : highest), 'LOW');
}

export type Consent = 'none' | 'confirm' | 'deny';

/** What the policy says about a step: the consent prompt shows reasons and mitigations verbatim. */
export interface Evaluation {
  allowed: boolean;
  risk: Risk;
  consent: Consent;
  reasons: string[];
  mitigations: string[];
  reversible: boolean;
  /** The remembered rules that let this step run without asking (their ids), when rules did. */
  approvedByRules?: string[];
  /** A skill's use (runSkill): the approved skill whose pin let it run without asking, and what the pin holds. */
  approvedBySkill?: SkillPinFacts;
}

/** Which skill approved a use: its id, version and the code hash the person's approval pinned, and who approved when. */
export interface SkillPinFacts {
  skillId: string;
  name: string;
  version: number;
  codeHash: string;
  approvedAt: string;
  approvedBy: string;
}
