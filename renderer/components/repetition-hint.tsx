import type { Step } from '../../src/domain/step.js';
import { useApi } from '../api.js';
import { repetitionAgentOf, useRepetitionNotices, useRepetitionOf } from '../repetition.js';

/** The link to "Save as skill": the form opens in Skills, prefilled from that executed step. */
export function saveAsSkillHref(stepId: string): string {
  return `#skills?${new URLSearchParams({ save: stepId }).toString()}`;
}

/**
 * "Seen N times from this agent: save as a skill?" beside a runCode step whose code (normalised) this
 * agent ran before; nothing for other steps, so the host's notices are read only where they can apply.
 */
export function RepetitionHint({ step }: { step: Step }) {
  if (step.action !== 'runCode' || !repetitionAgentOf(step)) return null;
  return <RunCodeRepetition step={step} />;
}

function RunCodeRepetition({ step }: { step: Step }) {
  const notices = useRepetitionNotices(useApi());
  const notice = useRepetitionOf(step, notices);
  if (!notice) return null;
  return (
    <p className="notice repetition-hint" role="note" data-testid="repetition-hint">
      Seen {notice.times} times from this agent: <a href={saveAsSkillHref(notice.lastStepId)}>save as a skill?</a>
    </p>
  );
}
