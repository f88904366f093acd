import type { RunToolCallTrace, RunTraceEntry } from '../../src/domain/run.js';
import type { StepSummary } from '../../src/domain/step-summary.js';
import { durationText } from '../../src/domain/run-step-facts.js';
import { markedPlainText } from '../components/marked-text.js';
import { MarkedText } from '../components/marked-text.js';
import { STATUS_LABEL } from '../step-text.js';
import { formatTime } from '../time-format.js';
import { PagedText } from './paged-text.js';
import { callStateText, plural } from './run-text.js';
import { stepHref } from './step-links.js';

/*
 * A run as a timeline: each iteration is a model turn (its model, latency, tokens, why it stopped,
 * the text it wrote) and the tool calls it made, each with its arguments as the model sent them, the
 * step it became (a link into the queue or History, its state live), and what the model was told
 * back. Everything the model wrote is untrusted text: shown through MarkedText, bounded and paged.
 */

/** Arguments as the model sent them, laid out when they are JSON (a parse, never an eval); raw otherwise. */
export function argumentsText(raw: string): string {
  if (raw.length > 200_000) return raw;
  try {
    const parsed: unknown = JSON.parse(raw);
    return typeof parsed === 'object' && parsed !== null ? JSON.stringify(parsed, null, 2) : raw;
  } catch {
    return raw;
  }
}

function StepOfCall({ stepId, step }: { stepId: string; step: StepSummary | undefined }) {
  return (
    <p className="call-step" data-testid={`call-step-${stepId}`}>
      Became step{' '}
      <a href={stepHref(stepId, step?.status)} className="step-link">
        {step ? (
          <MarkedText text={step.title} />
        ) : (
          <code>
            <MarkedText text={stepId} />
          </code>
        )}
      </a>
      {step ? (
        <>
          {' '}
          <span className={`status status-${step.status}`} data-testid={`call-step-status-${stepId}`}>
            {STATUS_LABEL[step.status]}
          </span>
        </>
      ) : null}
    </p>
  );
}

/**
 * How long a call took, with the time it waited for the person kept apart from the time its step ran:
 * "ran 84 ms, after 51 s waiting for you", never "51.1 s" as if it all ran. Without a step (or before
 * it ran), the call's whole time.
 */
export function callDurationText(callMs: number, step: Pick<StepSummary, 'startedAt' | 'finishedAt'> | undefined): string {
  const ranMs = step?.startedAt && step.finishedAt ? Date.parse(step.finishedAt) - Date.parse(step.startedAt) : NaN;
  if (!Number.isFinite(ranMs) || ranMs < 0) return `took ${durationText(callMs)}`;
  const waitedMs = callMs - ranMs;
  // Under a second of difference is the host's own bookkeeping, not a person's wait.
  return waitedMs >= 1000 ? `ran ${durationText(ranMs)}, after ${durationText(waitedMs)} waiting for you` : `ran ${durationText(ranMs)}`;
}

function ToolCall({ call, steps }: { call: RunToolCallTrace; steps: ReadonlyMap<string, StepSummary> }) {
  const state = callStateText(call);
  return (
    <li
      className={`tool-call outcome-${(call.outcome ?? 'pending').toLowerCase()}`}
      data-testid={`tool-call-${call.callId}`}
      aria-label={`Tool call ${markedPlainText(call.name)}: ${state}`}
    >
      <header className="tool-call-head">
        <code className="tool-name">
          <MarkedText text={call.name} />
        </code>
        <span className="call-outcome" data-testid="call-outcome">
          {state}
        </span>
        {call.durationMs !== null ? (
          <span className="muted small" data-testid="call-duration">
            {callDurationText(call.durationMs, call.stepId ? steps.get(call.stepId) : undefined)}
          </span>
        ) : null}
      </header>
      <PagedText text={argumentsText(call.arguments)} label={`Arguments of ${markedPlainText(call.name)}`} className="call-arguments" />
      {call.stepId ? <StepOfCall stepId={call.stepId} step={steps.get(call.stepId)} /> : null}
      {call.result !== null ? (
        <>
          <p className="call-result-head">
            What the model was told
            {call.outcome ? (
              <>
                {' '}
                (<code>{call.outcome}</code>)
              </>
            ) : null}
          </p>
          <PagedText
            text={call.result}
            label={`What the model was told about ${markedPlainText(call.name)}`}
            className="call-result"
            testId={`call-result-${call.callId}`}
          />
        </>
      ) : null}
    </li>
  );
}

/** The host's mark at the end of a shortened text: "… (12000 more characters not shown)". */
const CUT_NOTE = /\n… \(\d+ more characters not shown\)$/;

/** Whether the host shortened any text of this iteration (its detail and events carry short versions). */
export function isShortened(entry: RunTraceEntry): boolean {
  return (
    CUT_NOTE.test(entry.text) ||
    entry.toolCalls.some((call) => CUT_NOTE.test(call.arguments) || (call.result !== null && CUT_NOTE.test(call.result)))
  );
}

export function IterationCard({
  entry,
  steps,
  whole,
  onLoadWhole,
}: {
  entry: RunTraceEntry;
  steps: ReadonlyMap<string, StepSummary>;
  whole: boolean;
  onLoadWhole(): void;
}) {
  return (
    <li className="iteration" data-testid={`iteration-${entry.iteration}`}>
      <header className="iteration-head">
        <h3 className="iteration-title">Iteration {entry.iteration}</h3>
        <span className="muted small">
          <MarkedText text={entry.model} /> · {durationText(entry.latencyMs)} · {plural(entry.inputTokens, 'token')} in,{' '}
          {plural(entry.outputTokens, 'token')} out · {formatTime(entry.startedAt)}
        </span>
      </header>
      {entry.text ? (
        <PagedText
          text={entry.text}
          label={`What the model wrote in iteration ${entry.iteration}`}
          className="model-text"
          testId={`model-text-${entry.iteration}`}
        />
      ) : (
        <p className="muted small">{entry.toolCalls.length ? 'The model wrote no text, only tool calls.' : 'The model wrote nothing.'}</p>
      )}
      {entry.toolCalls.length ? (
        <ol className="tool-calls" aria-label={`Tool calls of iteration ${entry.iteration}`}>
          {entry.toolCalls.map((call) => (
            <ToolCall key={call.callId} call={call} steps={steps} />
          ))}
        </ol>
      ) : null}
      {!whole && isShortened(entry) ? (
        <p className="paged-text-more">
          <span className="muted small">Parts of this iteration are shortened here.</span>
          <button
            type="button"
            className="small"
            onClick={onLoadWhole}
            aria-label={`Show iteration ${entry.iteration} as the trace keeps it`}
          >
            Show it as the trace keeps it
          </button>
        </p>
      ) : null}
      <p className="muted small iteration-proof">
        Recorded in the audit log{entry.auditSeq !== null ? ` as record #${entry.auditSeq}` : ''} (request{' '}
        <code title={entry.requestHash}>{entry.requestHash.slice(0, 12)}…</code>, response{' '}
        <code title={entry.responseHash}>{entry.responseHash.slice(0, 12)}…</code>); it stopped because:{' '}
        <MarkedText text={entry.finishReason} />.
      </p>
    </li>
  );
}
