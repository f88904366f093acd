import { canonicalText } from '../../domain/canonical-text.js';
import { ExecutorError } from '../../domain/errors.js';
import {
  describeJsonLimitProblem,
  findJsonLimitProblem,
  MESSAGE_LIMITS,
  PLAN_LIMITS,
  type JsonLimitProblem,
} from '../../domain/json-limits.js';

/*
 * The signed envelope every transport carries (Electron IPC, the local socket, the loopback
 * WebSocket). This module runs in Node, in the preload and in the browser: no Node imports. No zod
 * either: the hook an outside agent runs before every tool call signs with it, and zod's load is most
 * of a cold start (the envelopes' schemas are in envelope-schemas.ts, their hand checks in envelope-checks.ts).
 *
 *   request   {v, kid, id, ts, nonce, method, params, sig}
 *   response  {v, id, ok, result | error, sig}
 *   event     {v, topic, seq, data, sig}
 *
 * sig = base64url(HMAC-SHA256(sessionKey, PURPOSE + body)), where body is the message without sig
 * as its sender serialized it: the exact text sent, up to the appended sig member (signText). A
 * receiver also accepts the canonical JSON (RFC 8785) of the message as body, for senders that
 * serialize some other way. PURPOSE differs per message kind so a signed response can never pass
 * as a request or an event.
 */

export { canonicalText };

export const PROTOCOL_VERSION = 1;
/** How far a request's timestamp may be from the server's clock; nonces are kept at least twice this long. */
export const CLOCK_SKEW_MS = 30_000;
/** Default cap on one request. A plan may carry a 16 MiB file, so the cap sits above that. */
export const DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024;
/** Cap on one response or event the clients accept: a long listSteps with large diffs fits. */
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

export type SignedKind = 'request' | 'response' | 'event';
const PURPOSE: Record<SignedKind, string> = {
  request: 'executor-ipc-request\n',
  response: 'executor-ipc-response\n',
  event: 'executor-ipc-event\n',
};

/** The HMAC under one session key. Node and WebCrypto each provide one (message-mac-*.ts). */
export interface MessageMac {
  /** base64url HMAC-SHA256 of the UTF-8 bytes of the parts, in order (parts spare copying a large text). */
  sign(...parts: string[]): Promise<string>;
}

export const SESSION_KEY_LABEL = 'executor-session\n';

export function sessionKeyInput(clientNonce: string, serverNonce: string): string {
  return `${SESSION_KEY_LABEL}${clientNonce}\n${serverNonce}`;
}

export const HELLO_PROOF_LABEL = 'executor-hello\n';

/**
 * What a hello's proof is an HMAC of. A hello that carries it is admitted to capacity held back for
 * clients that hold a secret (a flood of hellos without one cannot use it up), and its connection
 * counts as authenticated from then on. Its own label keeps it apart from every session key.
 */
export function helloProofInput(credential: string, clientNonce: string, ts: number): string {
  return `${HELLO_PROOF_LABEL}${credential}\n${clientNonce}\n${ts}`;
}

/**
 * Serializes and signs a message. The wire text is the message without sig as JSON.stringify
 * writes it, with the sig member appended last, and the HMAC covers exactly those bytes: the
 * receiver checks it over the text it got (see verifyText), and nobody canonicalizes a large
 * result. Canonicalizing a 30 KiB page cost three times its JSON.stringify (bench/ipc.ts), for
 * bytes no receiver needs rebuilt.
 */
export async function signText(mac: MessageMac, kind: SignedKind, message: Record<string, unknown>): Promise<string> {
  if ('sig' in message) throw new TypeError('a message to sign must not carry a sig yet');
  // What is signed is what is sent, so a value JSON has no form for (NaN becomes null) is signed as
  // the receiver reads it; requests are checked for such values before they are signed (requestInputRefusal).
  const body = JSON.stringify(message) as string | undefined;
  if (body === undefined || body.length < 3 || !body.endsWith('}')) throw new TypeError('only non-empty objects are signed');
  const sig = await mac.sign(PURPOSE[kind], body);
  return `${body.slice(0, -1)},"sig":"${sig}"}`;
}

/** A message as sent, unsigned: for the refusals of requests that could not be attributed to a session. */
export function unsignedText(message: Record<string, unknown>): string {
  return JSON.stringify({ ...message, sig: '' });
}

function constantTimeEqual(left: string, right: string): boolean {
  if (left.length !== right.length) return false;
  let difference = 0;
  for (let index = 0; index < left.length; index++) difference |= left.charCodeAt(index) ^ right.charCodeAt(index);
  return difference === 0;
}

/**
 * Whether `parsed` (the JSON.parse of `text`) carries a valid sig. Fast path: the sender's own
 * layout (its body as signed, sig appended last; signText) lets the HMAC run over the received
 * bytes; any other layout is canonicalized, for a sender that signed the canonical JSON instead.
 * The fast path is sound because the body the HMAC covers is an object text only a key holder
 * produced, and the appended member sits at its top level.
 */
export async function verifyText(
  mac: MessageMac,
  kind: SignedKind,
  text: string,
  parsed: Record<string, unknown>,
  early?: EarlyCheck,
): Promise<boolean> {
  const sig = parsed.sig;
  if (typeof sig !== 'string' || sig.length === 0) return false;
  if (early && early.sig === sig && (await early.holds)) return true;
  const suffix = `,"sig":"${sig}"}`;
  if (!early && text.endsWith(suffix)) {
    if (constantTimeEqual(await mac.sign(PURPOSE[kind], text.slice(0, -suffix.length), '}'), sig)) return true;
  }
  const { sig: _omitted, ...rest } = parsed;
  let body: string;
  try {
    body = canonicalText(rest);
  } catch {
    return false;
  }
  return constantTimeEqual(await mac.sign(PURPOSE[kind], body), sig);
}

/**
 * Whether `text` carries a valid sig in the sender's own layout (body as signed, sig appended last),
 * without parsing or canonicalizing anything: for a message whose content must not be walked.
 */
export async function verifyTextAsSent(mac: MessageMac, kind: SignedKind, text: string, sig: unknown): Promise<boolean> {
  if (typeof sig !== 'string' || sig.length === 0) return false;
  const suffix = `,"sig":"${sig}"}`;
  if (!text.endsWith(suffix)) return false;
  return constantTimeEqual(await mac.sign(PURPOSE[kind], text.slice(0, -suffix.length), '}'), sig);
}

/**
 * The refusal a request earns before anything canonicalizes, signs or validates it, or null: the
 * first value over the limits (json-limits.ts), by where it sits. In a propose's plan it is
 * INVALID_PLAN, held to PLAN_LIMITS and named from the plan (`steps[0].args`); elsewhere in the
 * params IPC_INVALID_PARAMS; in the envelope itself IPC_MALFORMED. The client runs it before it
 * signs (canonicalizing would overflow the stack), the server before it reads the message.
 */
export function requestInputRefusal(message: Record<string, unknown>): ExecutorError | null {
  const params = message.params;
  if (message.method === 'propose' && typeof params === 'object' && params !== null && !Array.isArray(params) && 'plan' in params) {
    const found = findJsonLimitProblem((params as { plan: unknown }).plan, PLAN_LIMITS);
    if (found) return limitRefusal('INVALID_PLAN', 'The plan is not valid', found);
  }
  const found = findJsonLimitProblem(message, MESSAGE_LIMITS);
  if (!found) return null;
  if (found.at[0] === 'params') {
    const method = typeof message.method === 'string' ? message.method.slice(0, 128) : 'this method';
    return limitRefusal('IPC_INVALID_PARAMS', `Bad params for ${method}`, found);
  }
  return limitRefusal('IPC_MALFORMED', 'The message is not valid', found);
}

function limitRefusal(code: 'INVALID_PLAN' | 'IPC_INVALID_PARAMS' | 'IPC_MALFORMED', lead: string, found: JsonLimitProblem): ExecutorError {
  const line = describeJsonLimitProblem(found);
  return new ExecutorError(code, `${lead}: ${line}. Nothing was stored; change that value and try again.`, {
    issues: [line],
    path: found.path,
    limit: found.limit,
  });
}

/** The fast-path check of a message's sig, started before the message is parsed. */
export interface EarlyCheck {
  sig: string;
  holds: Promise<boolean>;
}

const SIG_TAIL = /,"sig":"([A-Za-z0-9_-]{1,128})"\}$/;

/**
 * Starts checking the sig of a text in the sender's own layout before it is parsed, so that an
 * asynchronous MAC (WebCrypto, or Node's for large texts, on a thread pool) runs while this thread
 * parses and validates the message. Nothing is trusted until verifyText(…, early) says so.
 */
export function verifyTextEarly(mac: MessageMac, kind: SignedKind, text: string): EarlyCheck | undefined {
  const match = SIG_TAIL.exec(text.slice(-200));
  if (!match) return undefined;
  const sig = match[1]!;
  const holds = mac.sign(PURPOSE[kind], text.slice(0, -match[0].length), '}').then(
    (computed) => constantTimeEqual(computed, sig),
    () => false,
  );
  return { sig, holds };
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

export function base64url(bytes: Uint8Array): string {
  let out = '';
  let index = 0;
  for (; index + 2 < bytes.length; index += 3) {
    const n = (bytes[index]! << 16) | (bytes[index + 1]! << 8) | bytes[index + 2]!;
    out += BASE64URL[(n >> 18) & 63]! + BASE64URL[(n >> 12) & 63]! + BASE64URL[(n >> 6) & 63]! + BASE64URL[n & 63]!;
  }
  const left = bytes.length - index;
  if (left === 1) {
    const n = bytes[index]! << 16;
    out += BASE64URL[(n >> 18) & 63]! + BASE64URL[(n >> 12) & 63]!;
  } else if (left === 2) {
    const n = (bytes[index]! << 16) | (bytes[index + 1]! << 8);
    out += BASE64URL[(n >> 18) & 63]! + BASE64URL[(n >> 12) & 63]! + BASE64URL[(n >> 6) & 63]!;
  }
  return out;
}

export function fromBase64url(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new TypeError('not base64url');
  const bytes: number[] = [];
  let buffer = 0;
  let bits = 0;
  for (const char of text) {
    buffer = (buffer << 6) | BASE64URL.indexOf(char);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push((buffer >> bits) & 0xff);
    }
  }
  return Uint8Array.from(bytes);
}

/** Random base64url text from the platform CSPRNG (Node 20 and browsers both have globalThis.crypto). */
export function randomToken(byteCount = 32): string {
  return base64url(globalThis.crypto.getRandomValues(new Uint8Array(byteCount)));
}

/** Parses a JSON object text; anything else is null (never throws). */
export function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
