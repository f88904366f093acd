import type { ErrorShape } from '../../domain/errors.js';
import { PROTOCOL_VERSION } from './protocol.js';

/*
 * The envelopes a client receives (responses, events, the hello's reply), checked by hand: exactly
 * what envelope-schemas.ts accepts (strict objects: no member more, none missing, each of its type),
 * without loading zod, whose load is most of the cold start of the hook an outside agent runs before
 * every tool call. test/unit/ipc/envelope-checks.property.test.ts holds the two equal.
 */

type Json = Record<string, unknown>;

export type ResponseEnvelope =
  | { v: typeof PROTOCOL_VERSION; id: string | null; ok: true; result?: unknown; sig: string }
  | { v: typeof PROTOCOL_VERSION; id: string | null; ok: false; error: ErrorShape; sig: string };
export interface EventEnvelope {
  v: typeof PROTOCOL_VERSION;
  topic: string;
  seq: number;
  data?: unknown;
  sig: string;
}
export type HelloReply =
  | { v: typeof PROTOCOL_VERSION; welcome: { kid: string; serverNonce: string; channel: string; methods: string[] } }
  | { v: typeof PROTOCOL_VERSION; id: null; ok: false; error: ErrorShape; sig: string };

const isPlainObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;
/** Exactly these members (optional ones may be absent or undefined), no others. */
const hasOnly = (value: Json, required: readonly string[], optional: readonly string[] = []) =>
  Object.keys(value).every((key) => required.includes(key) || optional.includes(key)) && required.every((key) => key in value);
const isString = (value: unknown): value is string => typeof value === 'string';
const isId = (value: unknown) => value === null || (isString(value) && value.length >= 1 && value.length <= 128);

function isErrorShape(value: unknown): value is ErrorShape {
  return (
    isPlainObject(value) &&
    hasOnly(value, ['code', 'message'], ['details']) &&
    isString(value.code) &&
    isString(value.message) &&
    (value.details === undefined || isPlainObject(value.details))
  );
}

export function isResponseEnvelope(value: unknown): value is ResponseEnvelope {
  if (!isPlainObject(value) || value.v !== PROTOCOL_VERSION || !isId(value.id) || !isString(value.sig)) return false;
  if (value.ok === true) return hasOnly(value, ['v', 'id', 'ok', 'sig'], ['result']);
  return value.ok === false && hasOnly(value, ['v', 'id', 'ok', 'error', 'sig']) && isErrorShape(value.error);
}

export function isEventEnvelope(value: unknown): value is EventEnvelope {
  return (
    isPlainObject(value) &&
    hasOnly(value, ['v', 'topic', 'seq', 'sig'], ['data']) &&
    value.v === PROTOCOL_VERSION &&
    isString(value.topic) &&
    Number.isSafeInteger(value.seq) &&
    (value.seq as number) >= 0 &&
    isString(value.sig)
  );
}

export function isHelloReply(value: unknown): value is HelloReply {
  if (!isPlainObject(value) || value.v !== PROTOCOL_VERSION) return false;
  if ('welcome' in value) {
    const welcome = value.welcome;
    return (
      hasOnly(value, ['v', 'welcome']) &&
      isPlainObject(welcome) &&
      hasOnly(welcome, ['kid', 'serverNonce', 'channel', 'methods']) &&
      isString(welcome.kid) &&
      isString(welcome.serverNonce) &&
      isString(welcome.channel) &&
      Array.isArray(welcome.methods) &&
      welcome.methods.every(isString)
    );
  }
  return (
    hasOnly(value, ['v', 'id', 'ok', 'error', 'sig']) &&
    value.id === null &&
    value.ok === false &&
    isErrorShape(value.error) &&
    isString(value.sig)
  );
}
