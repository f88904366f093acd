import { maxRisk, riskRank, type Evaluation, type Risk } from '../domain/risk.js';
import type { Policy } from './policy-file.js';

/** What an action module says about one step before the policy weighs it. */
export interface RiskHints {
  risk: Risk;
  reasons: string[];
  mitigations: string[];
  /** A hard no from a rule (path outside every root, denied program): the step can never run. */
  deny?: boolean;
}

/**
 * The policy's verdict: CRITICAL or denied steps are refused outright; otherwise the
 * auto-approve level decides whether the person is asked.
 */
export function evaluateStep(hints: RiskHints, policy: Policy, reversible: boolean): Evaluation {
  const risk = hints.deny ? 'CRITICAL' : maxRisk(hints.risk);
  const reasons = [...hints.reasons];
  const mitigations = [...hints.mitigations];
  if (!reversible) reasons.push('This step cannot be reverted once it has run.');
  if (risk === 'CRITICAL') {
    return { allowed: false, risk, consent: 'deny', reasons, mitigations, reversible };
  }
  const autoApproved = policy.autoApprove !== 'none' && riskRank(risk) <= riskRank(policy.autoApprove);
  if (autoApproved) mitigations.push(`Approved without asking: the policy auto-approves steps up to ${policy.autoApprove} risk.`);
  return { allowed: true, risk, consent: autoApproved ? 'none' : 'confirm', reasons, mitigations, reversible };
}
