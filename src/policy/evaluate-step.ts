import { maxRisk, riskRank, type Evaluation, type Risk } from '../domain/risk.js';
import { describeRule, type RememberedRule } from '../domain/remembered-rule.js';
import type { Policy } from './policy-file.js';

/** What an action module says about one step before the policy weighs it. */
export interface RiskHints {
  risk: Risk;
  reasons: string[];
  mitigations: string[];
  /** A hard no from a rule (path outside every root, denied program): the step can never run. */
  deny?: boolean;
  /**
   * Why the person must decide, whatever autoApprove or remembered rules say (a command that could
   * run a program the deny list forbids). Shown with the reasons.
   */
  mustAsk?: string[];
}

/**
 * The policy's verdict: CRITICAL or denied steps are refused outright; otherwise the
 * auto-approve level, or remembered rules that cover the step at its risk, decide whether the
 * person is asked. `rememberedRules` are the rules src/policy/remembered-rules.ts found allowing it.
 */
export function evaluateStep(
  hints: RiskHints,
  policy: Policy,
  reversible: boolean,
  rememberedRules: readonly RememberedRule[] | null = null,
): Evaluation {
  const risk = hints.deny ? 'CRITICAL' : maxRisk(hints.risk);
  const reasons = [...hints.reasons];
  const mitigations = [...hints.mitigations];
  if (!reversible) reasons.push('This step cannot be reverted once it has run.');
  if (risk === 'CRITICAL') {
    return { allowed: false, risk, consent: 'deny', reasons, mitigations, reversible };
  }
  if (hints.mustAsk && hints.mustAsk.length > 0) {
    for (const why of hints.mustAsk) if (!reasons.includes(why)) reasons.push(why);
    return { allowed: true, risk, consent: 'confirm', reasons, mitigations, reversible };
  }
  const autoApproved = policy.autoApprove !== 'none' && riskRank(risk) <= riskRank(policy.autoApprove);
  if (autoApproved) {
    mitigations.push(`Approved without asking: the policy auto-approves steps up to ${policy.autoApprove} risk.`);
    return { allowed: true, risk, consent: 'none', reasons, mitigations, reversible };
  }
  if (rememberedRules && rememberedRules.length > 0) {
    // One rule per command of the line: `ls; ls -a` names the rule `ls` twice, but it is said once.
    const distinct = [...new Map(rememberedRules.map((rule) => [rule.id, rule])).values()];
    for (const rule of distinct) mitigations.push(`Approved without asking by remembered rule ${rule.id}: ${describeRule(rule)}`);
    return { allowed: true, risk, consent: 'none', reasons, mitigations, reversible, approvedByRules: distinct.map((rule) => rule.id) };
  }
  return { allowed: true, risk, consent: 'confirm', reasons, mitigations, reversible };
}
