import type { KeptRunOutput, RunSpan, StepRecord } from '../../src/domain/step-record.js';
import { runSpanText } from '../step-text.js';
import { MarkedText } from './marked-text.js';

/*
 * A run that did not finish (cancelled, failed, or stopped by a shutdown) loses its live tail the
 * moment it ends; the host keeps that tail with the run's span. This shows it in a step's detail,
 * in the queue and History, marked as partial: how much it printed, how much is kept, and why it stopped.
 */

type Phase = 'dryRun' | 'realRun';

export function bytesText(bytes: number): string {
  return bytes < 1024
    ? `${bytes} byte${bytes === 1 ? '' : 's'}`
    : bytes < 1024 * 1024
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** Why the run stopped, in words: the step's own error message where it says more (a cancel's "6.2 s into its run; …"). */
export function stoppedBecause(span: RunSpan, record: StepRecord, phase: Phase): string {
  const run = phase === 'dryRun' ? 'dry run' : 'run';
  const message = record.error?.message;
  switch (span.ended) {
    case 'cancelled':
      return record.status === 'cancelled' && message ? message : `Its ${run} was cancelled.`;
    case 'interrupted':
      return `Executor was shut down during its ${run}; its sandbox was stopped.`;
    case 'failed':
      return phase === 'realRun' && record.status === 'failed' && message
        ? `Its run failed: ${message}`
        : `Its ${run} failed before it finished.`;
    default:
      return `Its ${run} finished.`;
  }
}

/** "It printed 2.3 KiB (stdout 2.1 KiB, stderr 200 bytes); only the last 8.0 KiB are kept." */
export function printedText(output: KeptRunOutput): string {
  const total = output.bytes.stdout + output.bytes.stderr;
  if (total === 0) return 'It printed nothing before it stopped.';
  const split =
    output.bytes.stdout && output.bytes.stderr
      ? ` (stdout ${bytesText(output.bytes.stdout)}, stderr ${bytesText(output.bytes.stderr)})`
      : output.bytes.stderr
        ? ' (all on stderr)'
        : '';
  return `It printed ${bytesText(total)}${split} before it stopped${output.truncated ? '; only the last lines are kept' : ''}.`;
}

function StoppedRun({ record, phase, span, output }: { record: StepRecord; phase: Phase; span: RunSpan; output: KeptRunOutput }) {
  const name = phase === 'dryRun' ? 'dry run' : 'run';
  const label = `Partial output of its ${name}`;
  return (
    <section className="stopped-run" aria-label={label} data-testid={`stopped-run-${phase}`}>
      <h3>
        Output of its {name} <span className="partial-badge">partial</span>{' '}
        <span className="muted small">
          {span.ended} after {runSpanText({ ...span, ended: 'finished' })}
        </span>
      </h3>
      <p className="small" data-testid={`stopped-run-why-${phase}`}>
        <MarkedText text={stoppedBecause(span, record, phase)} /> {printedText(output)}
      </p>
      {output.inOrder ? (
        // As it came: stderr marked where it was printed, between the stdout lines around it.
        <pre className="output-excerpt" tabIndex={0} aria-label={`${label}, as printed`} data-testid={`stopped-run-output-${phase}`}>
          {output.inOrder.map((chunk, index) => (
            <span key={index} className={chunk.stream === 'stderr' ? 'stderr' : undefined}>
              <MarkedText text={chunk.text} />
            </span>
          ))}
        </pre>
      ) : null}
      {!output.inOrder && output.stdout ? (
        <pre className="output-excerpt" tabIndex={0} aria-label={`${label}, standard output`} data-testid={`stopped-run-stdout-${phase}`}>
          <MarkedText text={output.stdout} />
        </pre>
      ) : null}
      {!output.inOrder && output.stderr ? (
        <pre
          className="output-excerpt stderr"
          tabIndex={0}
          aria-label={`${label}, standard error`}
          data-testid={`stopped-run-stderr-${phase}`}
        >
          <MarkedText text={output.stderr} />
        </pre>
      ) : null}
    </section>
  );
}

/** The kept output of each of the step's runs that did not finish (its dry run, its real run), or nothing. */
export function StoppedRunOutput({ record }: { record: StepRecord }) {
  const runs = (['realRun', 'dryRun'] as const).flatMap((phase) => {
    const span = record.runTimes?.[phase];
    return span?.output && span.ended !== 'finished' ? [{ phase, span, output: span.output }] : [];
  });
  if (runs.length === 0) return null;
  return (
    <>
      {runs.map((run) => (
        <StoppedRun key={run.phase} record={record} {...run} />
      ))}
    </>
  );
}
