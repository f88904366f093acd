import { createHash } from 'node:crypto';
import { ExecutorError } from '../../domain/errors.js';
import { redactInlineSecrets } from './inline-secrets.js';
import { SECRET_KEY_PATTERN } from './secret-names.js';
import { legacySecretDigest } from './secret-digest.js';

/** Objects under these keys hold environment values: every value is a possible secret. */
export const SECRET_CONTAINER_PATTERN = /^(?:env|environment)$/i;

export const SECRET_VALUE_PATTERNS: readonly RegExp[] = [
  /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/,
  /^(?:Bearer|Basic|Token)\s+\S{8,}/i,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/,
  /\bsk-[A-Za-z0-9_-]{16,}/,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/,
  /\bAIza[0-9A-Za-z_-]{35}\b/,
  /\bglpat-[A-Za-z0-9_-]{20,}/,
  /\bnpm_[A-Za-z0-9]{36}\b/,
];

/** Strings longer than this (file contents, snippets) are recorded by their digest, not in full. */
export const MAX_RECORDED_STRING = 4096;

/** Header names (Authorization, Cookie) travel as keys whose own values are the secrets. */
export function looksLikeSecretKey(key: string): boolean {
  return SECRET_KEY_PATTERN.test(key);
}

/** All value patterns as one alternation: one regex pass per string instead of eleven. */
const ANY_SECRET_VALUE = new RegExp(SECRET_VALUE_PATTERNS.map((pattern) => `(?:${pattern.source})`).join('|'), 'i');
const CASE_SENSITIVE = new RegExp(
  SECRET_VALUE_PATTERNS.filter((p) => !p.flags.includes('i'))
    .map((pattern) => `(?:${pattern.source})`)
    .join('|'),
);

export function looksLikeSecretValue(value: string): boolean {
  // The combined regex is a cheap, case-insensitive pre-filter; the exact patterns decide.
  if (!ANY_SECRET_VALUE.test(value)) return false;
  return CASE_SENSITIVE.test(value) || SECRET_VALUE_PATTERNS.some((pattern) => pattern.flags.includes('i') && pattern.test(value));
}

/** The installation-wide digest of records written before per-record salts (see secret-digest.ts). */
export function secretDigest(salt: Buffer, value: string): string {
  return legacySecretDigest(salt, value);
}

/**
 * Keys that hold a file's content or a hash of it (a hash of a short secret is as good as the secret:
 * sha256("PASSWORD=hunter2\n") is one guess away). In a record about a step that writes a secret
 * path, or in an object whose `path` is one, their values are stored as digests.
 */
export const CONTENT_KEY_PATTERN = /^(?:content|diff|patch)$|hash$/i;

/** What a record may hold in clear, decided once per record. */
export interface RecordingRules {
  /** The digest a secret is stored as: salted per record (RecordSecretDigester). */
  digest(value: string): string;
  /** The record is about a step that writes a path matching the secret patterns: all its content keys are secrets. */
  contentIsSecret?: boolean;
  /** Whether a file path matches the secret patterns: an object with such a `path` has its content keys digested. */
  secretPath?(path: string): boolean;
}

function rulesOf(rules: RecordingRules | Buffer): RecordingRules {
  if (!Buffer.isBuffer(rules)) return rules;
  return { digest: (value) => legacySecretDigest(rules, value) };
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const isWellFormed = (String.prototype as { isWellFormed?: () => boolean }).isWellFormed;

export function checkedString(text: string): string {
  if (isWellFormed ? !isWellFormed.call(text) : LONE_SURROGATE.test(text)) {
    throw new ExecutorError(
      'INVALID_INPUT',
      'An audit record cannot hold a string with a lone UTF-16 surrogate: it has no canonical form.',
    );
  }
  return text;
}

/**
 * Turns a value into what the log may hold: secrets become salted HMACs, long strings their
 * sha256, and numbers that are not safe integers their decimal text (RFC 8785 bodies here carry
 * integers only, so no two implementations can disagree on a float's digits).
 */
export function recordableValue(value: unknown, rules: RecordingRules | Buffer, secret = false, depth = 0): unknown {
  const resolved = rulesOf(rules);
  return recordable(value, resolved, secret, resolved.contentIsSecret ?? false, depth, false);
}

function recordable(
  value: unknown,
  rules: RecordingRules,
  secret: boolean,
  contentIsSecret: boolean,
  depth: number,
  content: boolean,
): unknown {
  if (depth > 64) throw new ExecutorError('INVALID_INPUT', 'An audit record value is nested deeper than 64 levels.');
  if (value === null || value === undefined) return null;
  const digest = rules.digest;
  switch (typeof value) {
    case 'string': {
      const text = checkedString(value);
      if (secret) return digest(text);
      // A secret inside a line of text (a command line, a header) is digested where it stands, the rest kept readable.
      // A file's content is not rewritten: its hashes name its bytes, so it is digested whole or kept whole.
      // A long string is kept as its sha256 alone, so nothing of it is in clear either way.
      const inline = content || text.length > MAX_RECORDED_STRING ? text : redactInlineSecrets(text, digest);
      if (looksLikeSecretValue(inline)) return digest(text);
      if (inline !== text)
        return inline.length > MAX_RECORDED_STRING
          ? { $sha256: createHash('sha256').update(text, 'utf8').digest('hex'), $length: text.length }
          : inline;
      if (text.length > MAX_RECORDED_STRING)
        return { $sha256: createHash('sha256').update(text, 'utf8').digest('hex'), $length: text.length };
      return text;
    }
    case 'number':
      if (secret) return digest(String(value));
      return Number.isSafeInteger(value) ? value : String(value);
    case 'boolean':
      return secret ? digest(String(value)) : value;
    case 'bigint':
      return secret ? digest(value.toString()) : value.toString();
    case 'object': {
      if (Array.isArray(value)) return value.map((item) => recordable(item, rules, secret, contentIsSecret, depth + 1, content));
      if (value instanceof Date) return value.toISOString();
      // Keys in canonical order as they are inserted, so canonicalText() writes the object without copying it.
      const out: Record<string, unknown> = {};
      const record = value as Record<string, unknown>;
      const secretFile = contentIsSecret || (typeof record.path === 'string' && rules.secretPath?.(record.path) === true);
      for (const key of Object.keys(record).sort()) {
        const item = record[key];
        if (item === undefined) continue;
        const name = checkedString(key);
        const secretHere =
          secret || looksLikeSecretKey(name) || SECRET_CONTAINER_PATTERN.test(name) || (secretFile && CONTENT_KEY_PATTERN.test(name));
        out[name] = recordable(item, rules, secretHere, contentIsSecret, depth + 1, CONTENT_KEY_PATTERN.test(name));
      }
      return out;
    }
    default:
      return String(value);
  }
}
