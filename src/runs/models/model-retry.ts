/**
 * How a model call is retried and timed, for every provider: 429, 408, 409 and 5xx and dropped
 * connections are retried with exponential backoff and jitter, waiting at least what Retry-After
 * asks; each attempt has its own timeout; the run's Cancel stops the call, or the wait between
 * calls, at once. The SDKs' own retries are switched off (maxRetries 0) so the attempts counted
 * here are the attempts made, and so a cancel during a backoff wait is not left sleeping.
 */
import { ExecutorError } from '../../domain/errors.js';
import { redactKey, serverWords } from './key-redaction.js';

/** The longest Retry-After Executor waits out; a server asking for more is reported, not waited for. */
export const RETRY_AFTER_CAP_MS = 60_000;
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 20_000;

export const DEFAULT_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_RETRIES = 3;

export interface RetryOptions {
  /** The endpoint as named in messages (endpointLabel). */
  endpoint: string;
  apiKey: string | undefined;
  signal: AbortSignal;
  /** How long an attempt may wait for the model to start answering, or fall silent mid-stream. */
  timeoutMs: number;
  maxRetries: number;
  /** For tests of the backoff's shape; Math.random otherwise. */
  random?: () => number;
}

/** What an attempt sees: its own signal (timeout or cancel), and a way to say the model is still talking. */
export interface Attempt {
  signal: AbortSignal;
  /** Restarts the silence timer: a streamed answer that keeps arriving is not timed out. */
  stillTalking(): void;
  number: number;
}

/** What went wrong with one attempt, as the provider's SDK reported it. */
export type AttemptFailure =
  | { kind: 'status'; status: number; headers: Headers | undefined; serverMessage: string }
  | { kind: 'connection'; message: string }
  | { kind: 'answer'; message: string };

/** The SDKs (both generated the same way) throw errors carrying `status`, `headers` and the parsed body. */
export function describeSdkFailure(error: unknown): AttemptFailure {
  const e = error as { status?: unknown; headers?: unknown; error?: unknown; message?: unknown; name?: string } | null;
  if (typeof e?.status === 'number') {
    return {
      kind: 'status',
      status: e.status,
      headers: e.headers instanceof Headers ? e.headers : undefined,
      serverMessage: bodyMessage(e.error) ?? String(e.message ?? ''),
    };
  }
  if (error instanceof ExecutorError) return { kind: 'answer', message: error.message };
  // A body that is not what the API sends (a web page at the address, a cut-off answer) will not improve on retry.
  if (error instanceof SyntaxError) return { kind: 'answer', message: error.message };
  return { kind: 'connection', message: error instanceof Error ? error.message : String(error) };
}

function bodyMessage(body: unknown): string | undefined {
  if (body == null) return undefined;
  if (typeof body === 'string') return body;
  const b = body as { error?: unknown; message?: unknown };
  if (typeof b.message === 'string') return b.message;
  if (typeof b.error === 'string') return b.error;
  if (b.error && typeof (b.error as { message?: unknown }).message === 'string') return (b.error as { message: string }).message;
  return JSON.stringify(body);
}

function retryable(failure: AttemptFailure): boolean {
  if (failure.kind === 'connection') return true;
  if (failure.kind === 'answer') return false;
  return failure.status === 408 || failure.status === 409 || failure.status === 429 || failure.status >= 500;
}

/** Retry-After (delta-seconds or an HTTP date) or OpenAI's retry-after-ms, in ms; undefined when absent or unreadable. */
export function retryAfterMs(headers: Headers | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Number(ms);
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Number(value) * 1000;
  // An HTTP date names its month and weekday; Date.parse alone would take "-3" as a year.
  if (!/[a-z]{3}/i.test(value)) return undefined;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Full-jitter exponential backoff, never shorter than what the server asked. */
export function backoffMs(retryNumber: number, asked: number | undefined, random: () => number): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** retryNumber);
  const jittered = ceiling / 2 + random() * (ceiling / 2);
  if (asked === undefined) return jittered;
  // At least what was asked; a little jitter on top so many runs do not return in the same instant.
  return asked + random() * Math.min(1000, asked * 0.1);
}

function cancelled(endpoint: string): ExecutorError {
  return new ExecutorError('RUN_CANCELLED', `The model call to ${endpoint} was cancelled.`, { endpoint });
}

/** Waits `ms`, or rejects with RUN_CANCELLED the moment the run is cancelled. */
export function abortableWait(ms: number, signal: AbortSignal, endpoint: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(cancelled(endpoint));
    const onAbort = () => {
      clearTimeout(timer);
      reject(cancelled(endpoint));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function statusPhrase(failure: AttemptFailure): string {
  if (failure.kind === 'status') return `answered HTTP ${failure.status}`;
  if (failure.kind === 'connection') return 'could not be reached';
  return 'sent an answer Executor cannot read';
}

/**
 * Runs `attempt` until it succeeds, a failure is not worth retrying, or the retries are spent.
 * Every error thrown is an ExecutorError whose message and details never hold the key.
 */
export async function withModelRetries<T>(options: RetryOptions, attempt: (a: Attempt) => Promise<T>): Promise<T> {
  const { endpoint, apiKey, signal } = options;
  const random = options.random ?? Math.random;
  const safe = (text: string) => serverWords(text, apiKey);
  for (let number = 0; ; number++) {
    if (signal.aborted) throw cancelled(endpoint);
    const controller = new AbortController();
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, options.timeoutMs);
    };
    const onCancel = () => controller.abort();
    signal.addEventListener('abort', onCancel, { once: true });
    arm();
    let failure: AttemptFailure;
    try {
      return await attempt({ signal: controller.signal, stillTalking: arm, number: number + 1 });
    } catch (error) {
      // Which of our own reasons stopped the attempt comes first: the SDK reports both as an abort.
      if (signal.aborted) throw cancelled(endpoint);
      if (timedOut) {
        throw new ExecutorError(
          'MODEL_TIMEOUT',
          `The model at ${endpoint} did not answer within ${Math.round(options.timeoutMs / 1000)} s (attempt ${number + 1}). Try again, or give it more time (model.timeoutMs in the policy).`,
          { endpoint, timeoutMs: options.timeoutMs, attempts: number + 1 },
        );
      }
      if (error instanceof ExecutorError && error.code !== 'INTERNAL') throw redactError(error, apiKey);
      failure = describeSdkFailure(error);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onCancel);
    }

    const words = failure.kind === 'status' ? failure.serverMessage : failure.message;
    const details = {
      endpoint,
      ...(failure.kind === 'status' ? { status: failure.status } : {}),
      attempts: number + 1,
      serverMessage: safe(words),
    };
    if (!retryable(failure)) {
      if (failure.kind === 'status') {
        throw new ExecutorError(
          'MODEL_REFUSED',
          `The model at ${endpoint} refused the request (HTTP ${failure.status}): ${safe(words) || 'no reason given'}. ${refusalHint(failure.status)}`,
          details,
        );
      }
      throw new ExecutorError('MODEL_UNAVAILABLE', `The model at ${endpoint} ${statusPhrase(failure)}: ${safe(words)}`, details);
    }
    const asked = failure.kind === 'status' ? retryAfterMs(failure.headers) : undefined;
    if (asked !== undefined && asked > RETRY_AFTER_CAP_MS) {
      throw new ExecutorError(
        'MODEL_UNAVAILABLE',
        `The model at ${endpoint} ${statusPhrase(failure)} and asked to wait ${Math.ceil(asked / 1000)} s, longer than Executor waits (${RETRY_AFTER_CAP_MS / 1000} s). Try again later.`,
        { ...details, retryAfterMs: asked },
      );
    }
    if (number >= options.maxRetries) {
      throw new ExecutorError(
        'MODEL_UNAVAILABLE',
        `The model at ${endpoint} ${statusPhrase(failure)}${words ? ` (${safe(words)})` : ''}${number ? `, ${number + 1} times; gave up after ${number} retr${number === 1 ? 'y' : 'ies'}` : ''}. Check that it is running, or try again later.`,
        details,
      );
    }
    await abortableWait(backoffMs(number, asked, random), signal, endpoint);
  }
}

function refusalHint(status: number): string {
  if (status === 401 || status === 403) return 'Check the API key (executor model set-key, or Settings → Model).';
  if (status === 404) return 'Check the address and the model name.';
  return 'Check the model settings.';
}

/** An ExecutorError from inside an attempt, with the key taken out of its words. */
function redactError(error: ExecutorError, apiKey: string | undefined): ExecutorError {
  if (!apiKey) return error;
  const details =
    error.details === undefined ? undefined : (JSON.parse(redactKey(JSON.stringify(error.details), apiKey)) as Record<string, unknown>);
  return new ExecutorError(error.code, redactKey(error.message, apiKey), details);
}
