import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalText } from '../../../../src/audit/format/record-format.js';
import { recordableValue } from '../../../../src/audit/log/recordable-value.js';
import { RecordSecretDigester, SecretFinder, legacySecretDigest, saltedSecretDigest } from '../../../../src/audit/log/secret-digest.js';

const SECRET = Buffer.alloc(32, 7);
const PASSWORD = 'PASSWORD=hunter2\n';
const sha256 = (text: string) => crypto.createHash('sha256').update(text, 'utf8').digest('hex');

describe('secret digests salted per record', () => {
  it('is HMAC-SHA256(installation secret, "executor.audit.secret.v2\\0" ‖ salt ‖ value), written hmac-sha256:<salt>:<mac>', () => {
    const salt = Buffer.alloc(16, 0xab);
    const expected = crypto
      .createHmac('sha256', SECRET)
      .update(Buffer.concat([Buffer.from('executor.audit.secret.v2\0'), salt, Buffer.from(PASSWORD)]))
      .digest('hex');
    expect(saltedSecretDigest(SECRET, salt, PASSWORD)).toBe(`hmac-sha256:${'ab'.repeat(16)}:${expected}`);
  });

  it('gives the same secret two unrelated digests in two records, and one salt within a record', () => {
    const first = new RecordSecretDigester(SECRET);
    const second = new RecordSecretDigester(SECRET);
    const a = first.digest(PASSWORD);
    const b = second.digest(PASSWORD);
    expect(a).not.toBe(b);
    expect(a.slice(-64)).not.toBe(b.slice(-64));
    expect(first.digest('other').split(':')[1]).toBe(a.split(':')[1]);
  });

  it('finds a value held as a salted digest, as its sha256 (a pre/post image), as a long-content summary, and in the legacy form', () => {
    const finder = new SecretFinder(SECRET, PASSWORD);
    const digester = new RecordSecretDigester(SECRET);
    expect(finder.heldBy(`{"content":"${digester.digest(PASSWORD)}"}`)).toBe(true);
    expect(finder.heldBy(`{"postHash":"${new RecordSecretDigester(SECRET).digest(sha256(PASSWORD))}"}`)).toBe(true);
    expect(
      finder.heldBy(`{"content":"${new RecordSecretDigester(SECRET).digest(`sha256:${sha256(PASSWORD)} (${PASSWORD.length} bytes)`)}"}`),
    ).toBe(true);
    expect(finder.heldBy(`{"token":"${legacySecretDigest(SECRET, PASSWORD)}"}`)).toBe(true);
    // Another value, another installation, a record without digests: not held.
    expect(finder.heldBy(`{"content":"${new RecordSecretDigester(SECRET).digest('PASSWORD=hunter3\n')}"}`)).toBe(false);
    expect(finder.heldBy(`{"content":"${new RecordSecretDigester(Buffer.alloc(32, 8)).digest(PASSWORD)}"}`)).toBe(false);
    expect(finder.heldBy('{"content":"PASSWORD=hunter2"}')).toBe(false);
    // A record with several salts (hand-made) is still searched under each.
    const mixed = `{"a":"${new RecordSecretDigester(SECRET).digest('x')}","b":"${new RecordSecretDigester(SECRET).digest(PASSWORD)}"}`;
    expect(finder.heldBy(mixed)).toBe(true);
  });
});

describe('content of a secret path in a record', () => {
  const rules = (contentIsSecret: boolean) => {
    const digester = new RecordSecretDigester(SECRET);
    return { digest: (value: string) => digester.digest(value), contentIsSecret, secretPath: (p: string) => /(^|\/)\.env/.test(p) };
  };

  it('keeps content, diffs and every hash of a step that writes a secret path only as digests, and its path and facts in clear', () => {
    const recorded = recordableValue(
      {
        action: 'writeFile',
        args: { path: '.env.local', content: PASSWORD },
        stepHash: sha256('step'),
        edits: { proposedContentHash: sha256(PASSWORD), diff: `+${PASSWORD}` },
        from: 'approved',
        to: 'running',
      },
      rules(true),
    ) as Record<string, any>;
    const text = canonicalText(recorded);
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain(sha256(PASSWORD));
    expect(text).not.toContain(sha256('step'));
    expect(recorded.args.path).toBe('.env.local');
    expect(recorded.args.content).toMatch(/^hmac-sha256:[0-9a-f]{32}:[0-9a-f]{64}$/);
    expect(recorded).toMatchObject({ action: 'writeFile', from: 'approved', to: 'running' });
  });

  it('digests the hashes of each file entry whose path is a secret one, even when the step as a whole is not (a command changing .env)', () => {
    const recorded = recordableValue(
      {
        files: [
          { path: '/w/app/.ENV', preHash: sha256('a'), postHash: sha256('b') },
          { path: '/w/app/readme.md', preHash: sha256('c'), postHash: sha256('d') },
        ],
        stepHash: sha256('s'),
      },
      { ...rules(false), secretPath: (p: string) => /(^|\/)\.env/i.test(p) },
    ) as { files: Record<string, string>[]; stepHash: string };
    expect(recorded.files[0]!.preHash).toMatch(/^hmac-sha256:/);
    expect(recorded.files[0]!.postHash).toMatch(/^hmac-sha256:/);
    expect(recorded.files[1]).toMatchObject({ preHash: sha256('c'), postHash: sha256('d') });
    expect(recorded.stepHash).toBe(sha256('s'));
  });
});
