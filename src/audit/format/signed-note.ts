import crypto from 'node:crypto';
import { ExecutorError } from '../../domain/errors.js';

/**
 * C2SP signed notes (c2sp.org/signed-note) and Ed25519 tlog cosignatures (c2sp.org/tlog-cosignature,
 * cosignature/v1): the wire format that witnesses, the Go sumdb and transparency-dev tools all speak,
 * so a checkpoint this log writes can be cosigned and checked by software we did not write.
 * Pure: no I/O, no clock unless a signer is given one.
 */

/** Signature type bytes (signed-note §Signature types). */
export const NOTE_ED25519 = 0x01;
export const NOTE_COSIGNATURE_V1 = 0x04;
export type NoteSignatureType = typeof NOTE_ED25519 | typeof NOTE_COSIGNATURE_V1;

/** The spec asks verifiers to accept at least 16 signatures; Go's note.Open stops at 100, and so do we. */
export const MAX_NOTE_SIGNATURES = 100;

const SIGNATURE_PREFIX = '\u2014 ';
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const COSIGNATURE_MAX_TIMESTAMP = 2n ** 63n - 1n;

/**
 * Why a note, key or signature was refused. `malformed`: not a note (the tlog-witness answer is 400);
 * `unverified`: no signature from a key we trust (403); `bad-signature`: a trusted key's signature
 * does not hold (403); `ambiguous-key`: two trusted keys share name and hash; `bad-key`: a key string
 * that does not parse or whose hash does not match.
 */
export type SignedNoteProblem = 'malformed' | 'unverified' | 'bad-signature' | 'ambiguous-key' | 'bad-key';

export class SignedNoteError extends ExecutorError {
  constructor(
    readonly problem: SignedNoteProblem,
    message: string,
    details: Record<string, unknown> = {},
  ) {
    super('INVALID_INPUT', message, { problem, ...details });
    this.name = 'SignedNoteError';
  }
}

/** One signature line: the key's name, its 32-bit key hash, and base64(keyHash ‖ signature) as written. */
export interface NoteSignature {
  name: string;
  keyHash: number;
  base64: string;
}

export interface NoteVerifier {
  name: string;
  keyHash: number;
  type: NoteSignatureType;
  /** The raw 32-byte Ed25519 public key. */
  publicKey: Buffer;
  /** The vkey string `name+hash+base64(type ‖ key)`. */
  vkey: string;
  /** Does `signature` (without its 4-byte key hash) sign the note text? */
  verify(text: Buffer, signature: Buffer): boolean;
}

export interface NoteSigner {
  name: string;
  keyHash: number;
  type: NoteSignatureType;
  publicKey: Buffer;
  vkey: string;
  /** The signature bytes (without the key hash) over the note text. */
  sign(text: Buffer): Buffer;
}

/** Key names: non-empty, no Unicode space, no '+' (Go's isValidName; JS \s plus NEL covers unicode.IsSpace). */
export function isValidKeyName(name: string): boolean {
  return name.length > 0 && isWellFormed(name) && !/[\s\u0085+]/u.test(name);
}

/** SHA-256(name ‖ 0x0A ‖ type ‖ public key)[:4], big-endian: the key ID every signature line starts with. */
export function noteKeyHash(name: string, typedPublicKey: Buffer): number {
  const digest = crypto.createHash('sha256').update(name, 'utf8').update('\n').update(typedPublicKey).digest();
  return digest.readUInt32BE(0);
}

export function formatVerifierKey(name: string, type: NoteSignatureType, publicKey: Buffer): string {
  if (!isValidKeyName(name)) throw badKey(`A note key name must be non-empty, without spaces or '+'; got ${JSON.stringify(name)}.`);
  if (publicKey.length !== 32) throw badKey(`An Ed25519 public key is 32 bytes; got ${publicKey.length}.`);
  const typed = Buffer.concat([Buffer.of(type), publicKey]);
  return `${name}+${hex8(noteKeyHash(name, typed))}+${typed.toString('base64')}`;
}

/** A vkey (`name+hash+base64(type ‖ key)`) of type 0x01 (Ed25519 note signatures) or 0x04 (cosignature/v1). */
export function parseVerifierKey(vkey: string): NoteVerifier {
  const parts = cutPlus(vkey, 3);
  if (parts === null) throw badKey('A verifier key has three parts joined by "+": name, 8 hex digits of key hash, base64 key.', vkey);
  const [name, hash16, key64] = parts as [string, string, string];
  const keyHash = parseKeyHash(hash16);
  const typed = decodeBase64Strict(key64);
  if (!isValidKeyName(name) || keyHash === null || typed === null || typed.length === 0) {
    throw badKey('This verifier key does not parse: it should read name+8 hex digits+base64.', vkey);
  }
  if (noteKeyHash(name, typed) !== keyHash)
    throw badKey("This verifier key's hash does not match its name and key: it was mistyped or altered.", vkey);
  const type = typed[0]!;
  const publicKey = typed.subarray(1);
  if (type !== NOTE_ED25519 && type !== NOTE_COSIGNATURE_V1) {
    throw badKey(
      `Unsupported verifier key type 0x${type.toString(16).padStart(2, '0')}: only Ed25519 (0x01) and cosignature/v1 (0x04) are known.`,
      vkey,
    );
  }
  if (publicKey.length !== 32) throw badKey('An Ed25519 verifier key holds 32 bytes of public key.', vkey);
  const keyObject = crypto.createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, publicKey]), format: 'der', type: 'spki' });
  const verify =
    type === NOTE_ED25519
      ? (text: Buffer, signature: Buffer) => signature.length === 64 && crypto.verify(null, text, keyObject, signature)
      : (text: Buffer, signature: Buffer) => {
          const timestamp = timestampOf(signature);
          return timestamp !== null && crypto.verify(null, cosignatureMessage(text, timestamp), keyObject, signature.subarray(8));
        };
  return { name, keyHash, type, publicKey: Buffer.from(publicKey), vkey, verify };
}

export interface SignerOptions {
  /**
   * Sign as a cosignature/v1 cosigner (type 0x04) rather than as a plain Ed25519 note key. The same
   * skey serves (as Go's NewSignerForCosignatureV1 takes an Ed25519 skey); the key hash changes.
   */
  cosigner?: boolean;
  /** Seconds since 1970 for cosignature timestamps (default: the system clock). */
  now?: () => number;
}

/** An skey `PRIVATE+KEY+name+hash+base64(0x01 ‖ 32-byte seed)`, as golang.org/x/mod/sumdb/note writes them. */
export function parseSignerKey(skey: string, options: SignerOptions = {}): NoteSigner {
  const parts = cutPlus(skey, 5);
  if (parts === null || parts[0] !== 'PRIVATE' || parts[1] !== 'KEY') {
    throw badKey('A signer key reads PRIVATE+KEY+name+8 hex digits+base64 seed.');
  }
  const [, , name, hash16, key64] = parts as [string, string, string, string, string];
  const keyHash = parseKeyHash(hash16);
  const typed = decodeBase64Strict(key64);
  if (!isValidKeyName(name) || keyHash === null || typed === null || typed.length !== 33) {
    throw badKey('This signer key does not parse: it should read PRIVATE+KEY+name+8 hex digits+base64 of 33 bytes.');
  }
  const type = typed[0]!;
  if (type !== NOTE_ED25519 && type !== NOTE_COSIGNATURE_V1) throw badKey(`Unsupported signer key type 0x${type.toString(16)}.`);
  const privateKey = crypto.createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519_PREFIX, typed.subarray(1)]),
    format: 'der',
    type: 'pkcs8',
  });
  const publicKey = crypto.createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(-32);
  if (noteKeyHash(name, Buffer.concat([Buffer.of(type), publicKey])) !== keyHash) {
    throw badKey("This signer key's hash does not match its name and key: it was mistyped or altered.");
  }
  const signType: NoteSignatureType = options.cosigner ? NOTE_COSIGNATURE_V1 : (type as NoteSignatureType);
  const vkey = formatVerifierKey(name, signType, publicKey);
  const signHash = parseVerifierKey(vkey).keyHash;
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const sign =
    signType === NOTE_ED25519
      ? (text: Buffer) => crypto.sign(null, text, privateKey)
      : (text: Buffer) => {
          const timestamp = BigInt(Math.floor(now()));
          // The spec forbids a zero timestamp in a witness's answer; a clock that says 1970 is broken.
          if (timestamp <= 0n || timestamp > COSIGNATURE_MAX_TIMESTAMP)
            throw new ExecutorError('INTERNAL', 'The clock gave no usable time for a cosignature.');
          const stamp = Buffer.alloc(8);
          stamp.writeBigUInt64BE(timestamp);
          return Buffer.concat([stamp, crypto.sign(null, cosignatureMessage(text, timestamp), privateKey)]);
        };
  return { name, keyHash: signHash, type: signType, publicKey, vkey, sign };
}

/** A new Ed25519 note key pair as skey/vkey strings (the vkey of type 0x04 when `cosigner`). */
export function generateSignerKey(name: string, options: { cosigner?: boolean } = {}): { skey: string; vkey: string } {
  if (!isValidKeyName(name)) throw badKey(`A note key name must be non-empty, without spaces or '+'; got ${JSON.stringify(name)}.`);
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ed25519');
  const rawPublic = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32);
  const typedPublic = Buffer.concat([Buffer.of(NOTE_ED25519), rawPublic]);
  const skey = `PRIVATE+KEY+${name}+${hex8(noteKeyHash(name, typedPublic))}+${Buffer.concat([Buffer.of(NOTE_ED25519), seed]).toString('base64')}`;
  return { skey, vkey: formatVerifierKey(name, options.cosigner ? NOTE_COSIGNATURE_V1 : NOTE_ED25519, rawPublic) };
}

/** The message an Ed25519 cosigner signs: "cosignature/v1\ntime T\n" then the whole note text. */
export function cosignatureMessage(text: Buffer | string, timestamp: bigint | number): Buffer {
  return Buffer.concat([Buffer.from(`cosignature/v1\ntime ${BigInt(timestamp).toString()}\n`, 'utf8'), Buffer.from(text)]);
}

/** The POSIX seconds a cosignature/v1 signature line claims (the 8 bytes after its key hash). */
export function cosignatureTimestamp(signature: NoteSignature): number {
  const raw = decodeBase64Strict(signature.base64);
  const timestamp = raw === null || raw.length !== 4 + 8 + 64 ? null : timestampOf(raw.subarray(4));
  if (timestamp === null)
    throw new SignedNoteError('malformed', 'This is not a cosignature/v1 signature (4-byte key hash, 8-byte time, 64-byte signature).');
  return Number(timestamp);
}

export function formatSignatureLine(signature: NoteSignature): string {
  return `${SIGNATURE_PREFIX}${signature.name} ${signature.base64}\n`;
}

/**
 * The note text followed by a blank line and signature lines: those of `existing` that no signer
 * replaces, then one per signer (as Go's note.Sign orders them).
 */
export function signNote(text: string, signers: readonly NoteSigner[], existing: readonly NoteSignature[] = []): string {
  assertNoteText(text);
  const textBytes = Buffer.from(text, 'utf8');
  const replaced = new Set(signers.map((signer) => nameHashKey(signer.name, signer.keyHash)));
  const lines: string[] = [];
  for (const signature of existing) {
    if (!isValidKeyName(signature.name))
      throw new SignedNoteError('malformed', `A signature's key name is not valid: ${JSON.stringify(signature.name)}.`);
    if (replaced.has(nameHashKey(signature.name, signature.keyHash))) continue;
    const raw = decodeBase64Strict(signature.base64);
    if (raw === null || raw.length < 5 || raw.readUInt32BE(0) !== signature.keyHash) {
      throw new SignedNoteError('malformed', `The signature of ${signature.name} does not start with its key hash.`);
    }
    lines.push(formatSignatureLine(signature));
  }
  for (const signer of signers) {
    const hash = Buffer.alloc(4);
    hash.writeUInt32BE(signer.keyHash);
    lines.push(
      formatSignatureLine({
        name: signer.name,
        keyHash: signer.keyHash,
        base64: Buffer.concat([hash, signer.sign(textBytes)]).toString('base64'),
      }),
    );
  }
  return `${text}\n${lines.join('')}`;
}

export interface ParsedNote {
  /** The text, ending in its newline, without the blank line that ends it. */
  text: string;
  signatures: NoteSignature[];
}

/** Split a note into text and signature lines, checking only the syntax. Never trust the text of this. */
export function parseNote(message: Buffer | string): ParsedNote {
  const note = typeof message === 'string' ? message : decodeUtf8(message);
  if (note === null || !isWellFormed(note)) throw malformed('A signed note must be valid UTF-8.');
  if (/[\u0000-\u0009\u000b-\u001f]/u.test(note)) throw malformed('A signed note may hold no control characters other than newline.');
  const split = note.lastIndexOf('\n\n');
  if (split < 0) throw malformed('A signed note ends with a blank line and its signature lines; this has no blank line.');
  const text = note.slice(0, split + 1);
  const block = note.slice(split + 2);
  if (block.length === 0 || !block.endsWith('\n'))
    throw malformed('A signed note must end with signature lines, each ending in a newline.');
  const signatures: NoteSignature[] = [];
  for (const line of block.slice(0, -1).split('\n')) {
    if (!line.startsWith(SIGNATURE_PREFIX)) throw malformed('Every line after the blank line must be a signature line: "— name base64".');
    const rest = line.slice(SIGNATURE_PREFIX.length);
    const space = rest.indexOf(' ');
    const name = space < 0 ? rest : rest.slice(0, space);
    const base64 = space < 0 ? '' : rest.slice(space + 1);
    const raw = decodeBase64Strict(base64);
    if (!isValidKeyName(name) || raw === null || raw.length < 5)
      throw malformed('A signature line reads "— name base64(key hash ‖ signature)"; this one does not.');
    signatures.push({ name, keyHash: raw.readUInt32BE(0), base64 });
    if (signatures.length > MAX_NOTE_SIGNATURES) throw malformed(`A note may carry at most ${MAX_NOTE_SIGNATURES} signatures.`);
  }
  return { text, signatures };
}

export interface OpenedNote {
  text: string;
  /** Signatures by the given keys that hold (one per key; repeats dropped). */
  verified: NoteSignature[];
  /** Signatures by keys not given (one per distinct line). */
  unverified: NoteSignature[];
}

/**
 * Parse and check a note against the keys we trust, as Go's note.Open: signatures by unknown keys
 * are set aside, a trusted key's bad signature refuses the whole note, and a note no trusted key
 * signed is refused (`unverified`).
 */
export function openNote(message: Buffer | string, verifiers: readonly NoteVerifier[]): OpenedNote {
  const { text, signatures } = parseNote(message);
  const byKey = new Map<string, NoteVerifier[]>();
  for (const verifier of verifiers) {
    const key = nameHashKey(verifier.name, verifier.keyHash);
    byKey.set(key, [...(byKey.get(key) ?? []), verifier]);
  }
  const textBytes = Buffer.from(text, 'utf8');
  const verified: NoteSignature[] = [];
  const unverified: NoteSignature[] = [];
  const seen = new Set<string>();
  const seenUnverified = new Set<string>();
  for (const signature of signatures) {
    const key = nameHashKey(signature.name, signature.keyHash);
    const candidates = byKey.get(key);
    if (!candidates) {
      const line = `${signature.name} ${signature.base64}`;
      if (!seenUnverified.has(line)) unverified.push(signature);
      seenUnverified.add(line);
      continue;
    }
    if (candidates.length > 1)
      throw new SignedNoteError('ambiguous-key', `Two trusted keys are named ${signature.name}+${hex8(signature.keyHash)}; remove one.`);
    if (seen.has(key)) continue;
    seen.add(key);
    const raw = decodeBase64Strict(signature.base64)!;
    if (!candidates[0]!.verify(textBytes, raw.subarray(4))) {
      throw new SignedNoteError(
        'bad-signature',
        `The signature of ${signature.name}+${hex8(signature.keyHash)} does not hold for this note: it was altered or forged.`,
        { key: signature.name },
      );
    }
    verified.push(signature);
  }
  if (verified.length === 0) {
    throw new SignedNoteError('unverified', 'No key we trust signed this note.', {
      signers: unverified.map((signature) => `${signature.name}+${hex8(signature.keyHash)}`),
    });
  }
  return { text, verified, unverified };
}

/** Standard base64 (RFC 4648 §4) that re-encodes to itself: Buffer.from alone accepts junk, URL-safe letters and missing padding. */
export function decodeBase64Strict(text: string): Buffer | null {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : null;
}

export function hex8(value: number): string {
  return value.toString(16).padStart(8, '0');
}

function assertNoteText(text: string): void {
  if (!text.endsWith('\n') || !isWellFormed(text) || /[\u0000-\u0009\u000b-\u001f]/u.test(text)) {
    throw malformed('Note text must be UTF-8 ending in a newline, with no control characters other than newline.');
  }
}

function timestampOf(signature: Buffer): bigint | null {
  if (signature.length !== 8 + 64) return null;
  const timestamp = signature.readBigUInt64BE(0);
  return timestamp > COSIGNATURE_MAX_TIMESTAMP ? null : timestamp;
}

/** Split at the first count-1 pluses: the base64 key at the end may itself hold '+'. */
function cutPlus(text: string, count: number): string[] | null {
  const parts: string[] = [];
  let rest = text;
  for (let i = 1; i < count; i += 1) {
    const plus = rest.indexOf('+');
    if (plus < 0) return null;
    parts.push(rest.slice(0, plus));
    rest = rest.slice(plus + 1);
  }
  parts.push(rest);
  return parts;
}

function parseKeyHash(hash16: string): number | null {
  return /^[0-9a-f]{8}$/i.test(hash16) ? Number.parseInt(hash16, 16) : null;
}

function nameHashKey(name: string, keyHash: number): string {
  return `${name}+${hex8(keyHash)}`;
}

function decodeUtf8(bytes: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

function isWellFormed(text: string): boolean {
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);
}

function malformed(message: string): SignedNoteError {
  return new SignedNoteError('malformed', message);
}

function badKey(message: string, key?: string): SignedNoteError {
  return new SignedNoteError('bad-key', message, key === undefined ? {} : { key });
}
