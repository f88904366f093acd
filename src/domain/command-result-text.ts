import { durationText } from './run-step-facts.js';

/*
 * What a model is told a command did, in a few tokens: how it ended, which files it changed, then its
 * output. The rest of the result (image digest, sandbox run id, egress, how it was carried out) is
 * for the person and the audit log, kept in the step record; a model reasons on none of it.
 */

/** The most characters of stdout and stderr together; the step record keeps all the sandbox kept. */
const MAX_OUTPUT_CHARACTERS = 6_000;

interface Excerpt {
  text?: unknown;
  truncated?: unknown;
}

function streamText(value: unknown): { text: string; truncated: boolean } {
  if (typeof value === 'string') return { text: value, truncated: false };
  const excerpt = (value ?? {}) as Excerpt;
  return { text: typeof excerpt.text === 'string' ? excerpt.text : '', truncated: excerpt.truncated === true };
}

/** A runCommand step's result as a model reads it; null when the result is not one (the caller says it another way). */
export function commandResultText(result: Record<string, unknown> | null | undefined): string | null {
  if (!result || (typeof result.exitCode !== 'number' && result.timedOut !== true && result.oomKilled !== true)) return null;
  const took = typeof result.durationMs === 'number' ? ` after ${durationText(result.durationMs)}` : '';
  const ending =
    result.timedOut === true
      ? `timed out${took}`
      : result.oomKilled === true
        ? `killed at the memory limit${took} (exit ${String(result.exitCode)})`
        : `exit ${String(result.exitCode)}${took}`;
  const files = Array.isArray(result.files)
    ? (result.files as { path?: unknown; change?: unknown }[]).map((file) => `${String(file.path)} (${String(file.change)})`)
    : [];
  const lines = [`${ending}; ${files.length === 0 ? 'no file changed' : `files changed: ${files.join(', ')}`}`];
  let room = MAX_OUTPUT_CHARACTERS;
  for (const name of ['stdout', 'stderr'] as const) {
    const { text, truncated } = streamText(result[name]);
    if (text === '') continue;
    const kept = text.length > room ? text.slice(text.length - room) : text;
    room -= kept.length;
    const cut = truncated || kept.length < text.length;
    lines.push(`${name}:${cut ? ' (only its end)' : ''}\n${kept.replace(/\n$/, '')}`);
  }
  if (lines.length === 1) lines.push('(no output)');
  return lines.join('\n');
}
