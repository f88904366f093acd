import crypto from 'node:crypto';
import { RecordMac, SECRET_DIGEST_PREFIX } from '../format/record-format.js';

/**
 * How a secret is written in a record: `hmac-sha256:<salt>:<mac>`, where `salt` is 16 random bytes
 * drawn for that record (hex) and `mac` = HMAC-SHA256(installation secret, SECRET_DIGEST_PREFIX ‖
 * salt ‖ UTF-8 value) (hex). A fresh salt per record means the same secret in two records gives two
 * unrelated digests: nobody holding the log alone can tell that two steps wrote the same password,
 * and nobody can test a guess without the installation secret.
 *
 * Records written before salts were per record hold `hmac-sha256:<mac>` with mac = HMAC-SHA256(
 * installation secret, UTF-8 value); they are never rewritten (they are signed), and `audit hash`
 * still finds them.
 */
export const SALTED_DIGEST = /hmac-sha256:([0-9a-f]{32}):([0-9a-f]{64})/g;
export const RECORD_SALT_BYTES = 16;

export function saltedSecretDigest(installationSecret: Buffer, recordSalt: Buffer, value: string): string {
  const mac = crypto
    .createHmac('sha256', installationSecret)
    .update(SECRET_DIGEST_PREFIX)
    .update(recordSalt)
    .update(value, 'utf8')
    .digest('hex');
  return `hmac-sha256:${recordSalt.toString('hex')}:${mac}`;
}

/** The digest of records written before per-record salts (format 1): one HMAC per installation. */
export function legacySecretDigest(installationSecret: Buffer, value: string): string {
  return `hmac-sha256:${crypto.createHmac('sha256', installationSecret).update(value, 'utf8').digest('hex')}`;
}

/**
 * The digests of one record: every secret in it shares the record's salt, drawn on the first secret
 * (a record without secrets costs no random bytes).
 */
export class RecordSecretDigester {
  private salt: Buffer | undefined;

  constructor(private readonly installationSecret: Buffer) {}

  digest(value: string): string {
    this.salt ??= crypto.randomBytes(RECORD_SALT_BYTES);
    return saltedSecretDigest(this.installationSecret, this.salt, value);
  }
}

/**
 * The forms in which a value may stand in a record in place of a secret: the value itself, and, for
 * file content, its sha256 (a pre/post-image hash) and the summary a long string is cut to in a
 * step's arguments (`sha256:<hex> (<n> bytes)`, src/domain/large-values.ts).
 */
export function secretCandidates(value: string): string[] {
  const hex = crypto.createHash('sha256').update(value, 'utf8').digest('hex');
  return [value, hex, `sha256:${hex}`, `sha256:${hex} (${Buffer.byteLength(value, 'utf8')} bytes)`];
}

/**
 * Answers "does this record hold that value as a secret?" for one value across many records: per
 * record salt it recomputes the candidates' digests, once per distinct salt (a record's secrets
 * share one), and the legacy digests once for the whole log.
 */
export class SecretFinder {
  private readonly candidates: Buffer[];
  private readonly legacy: string[];
  /** HMAC under the installation secret with the secret prefix, its key pads prepared once: a big log asks it once per record salt. */
  private readonly mac: RecordMac;
  /** The digest `audit hash` prints: the legacy form, stable for one value on one installation. */
  readonly legacyDigest: string;

  constructor(installationSecret: Buffer, value: string) {
    const candidates = secretCandidates(value);
    this.candidates = candidates.map((candidate) => Buffer.from(candidate, 'utf8'));
    this.legacy = candidates.map((candidate) => legacySecretDigest(installationSecret, candidate));
    this.legacyDigest = this.legacy[0]!;
    this.mac = new RecordMac(installationSecret, SECRET_DIGEST_PREFIX);
  }

  /** Whether a record body holds the value, salted or in the legacy form. */
  heldBy(body: string): boolean {
    if (!body.includes('hmac-sha256:')) return false;
    for (const digest of this.legacy) if (body.includes(`${digest}"`)) return true;
    const macsBySalt = new Map<string, Set<string>>();
    for (const [, saltHex, macHex] of body.matchAll(SALTED_DIGEST)) {
      const macs = macsBySalt.get(saltHex!) ?? new Set<string>();
      macs.add(macHex!);
      macsBySalt.set(saltHex!, macs);
    }
    // A record's secrets share one salt: usually one salt, a few candidates, one HMAC each.
    for (const [saltHex, macs] of macsBySalt) {
      const salt = Buffer.from(saltHex, 'hex');
      for (const candidate of this.candidates) {
        if (macs.has(this.mac.mac(Buffer.concat([salt, candidate])).toString('hex'))) return true;
      }
    }
    return false;
  }
}
