import { clampLightTimeout } from '../../domain/run-step-facts.js';

/** Hard limits of isolated code. The policy may tighten the per-run ones; these bounds never move. */
export const MAX_CODE_BYTES = 50 * 1024;
export const MAX_RESULT_BYTES = 32 * 1024;
export const MAX_LOG_BYTES = 32 * 1024;
/** Arguments of one tool call; a call is a request, not a data channel. */
export const MAX_TOOL_ARGS_BYTES = 64 * 1024;
/**
 * Workers running code at once, across every step and skill use of this process; more runs wait
 * their turn (their time budget starts when they get one). The budget's runs per minute may be high
 * or off: without this a hundred uses at once were a hundred Node processes.
 */
export const MAX_CONCURRENT_RUNS = 8;
/** What a crashed worker's stderr may contribute to its error message. */
export const MAX_STDERR_BYTES = 4 * 1024;

/** Out-of-range timeouts are clamped, not rejected: an agent asking for 10 minutes gets 5 seconds. */
export const clampTimeout = clampLightTimeout;

/** Cuts a string to at most maxBytes of UTF-8 without splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): { text: string; truncated: boolean } {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return { text, truncated: false };
  const cut = Buffer.from(text, 'utf8').subarray(0, maxBytes).toString('utf8');
  // A cut inside a multi-byte character decodes to U+FFFD: drop it rather than show garbage.
  return { text: cut.endsWith('\uFFFD') ? cut.slice(0, -1) : cut, truncated: true };
}
