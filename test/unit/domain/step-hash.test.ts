import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hashedContent } from '../../../src/backup/content-bytes.js';
import { canonicalJson } from '../../../src/domain/canonical-json.js';
import { summarizeLargeValues } from '../../../src/domain/large-values.js';
import { stepHash, stepHashHolds, type Step } from '../../../src/domain/step.js';
import { DIGEST_KEPT_FROM_CHARS } from '../../../src/domain/text-digest.js';

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const write = (content: string, extra: Partial<{ encoding: 'utf8' | 'base64'; path: string; id: string }> = {}): Step =>
  ({
    id: extra.id ?? 's1',
    planId: 'p1',
    action: 'writeFile',
    args: { path: extra.path ?? 'big.txt', content, ...(extra.encoding ? { encoding: extra.encoding } : {}) },
    meta: { origin: 'agent' },
  }) as Step;
/** The hash as it was taken before long contents were bound by their digest: the whole step made canonical. */
const wholeFormHash = (step: Step) =>
  sha256(canonicalJson({ id: step.id, planId: step.planId, action: step.action, args: step.args, meta: step.meta }));
/** A fresh string of the same text (not the same object): equal contents must hash alike however they were made. */
const fresh = (text: string) => Buffer.from(text, 'utf8').toString('utf8');
const long = (seed: string) => `${seed}\n`.repeat(Math.ceil(DIGEST_KEPT_FROM_CHARS / (seed.length + 1)) + 1);

describe('stepHash of a long write (its content bound by its sha256)', () => {
  it('changes with any one character of the content, and with every other field, and is the same for an equal text', () => {
    const base = long('line of text');
    const hash = stepHash(write(base));
    expect(stepHash(write(fresh(base)))).toBe(hash);
    fc.assert(
      fc.property(fc.nat({ max: base.length - 1 }), fc.string({ minLength: 1, maxLength: 1 }), (at, char) => {
        fc.pre(base[at] !== char);
        const changed = base.slice(0, at) + char + base.slice(at + 1);
        expect(stepHash(write(changed))).not.toBe(hash);
      }),
      { numRuns: 50 },
    );
    expect(stepHash(write(base, { path: 'other.txt' }))).not.toBe(hash);
    expect(stepHash(write(base, { id: 's2' }))).not.toBe(hash);
    expect(stepHash(write(base, { encoding: 'utf8' }))).not.toBe(hash);
    expect(stepHash({ ...write(base), meta: { origin: 'user' } } as Step)).not.toBe(hash);
  });

  it('is never the hash of a short write whose content is the long one digest, nor the whole form of the same step', () => {
    const base = long('abc');
    const step = write(base);
    // The digest form names the digest under a key no step's whole form has: no text that spells it out collides.
    expect(stepHash(write(`sha256:${sha256(base)}`))).not.toBe(stepHash(step));
    expect(stepHash(write(sha256(base)))).not.toBe(stepHash(step));
    expect(stepHash(step)).not.toBe(wholeFormHash(step));
  });

  it('is the same whether the content was hashed first by its blob (content-bytes.ts) or by the step itself', () => {
    const first = long('hashed by the blob first');
    const second = long('hashed by the step first');
    const blobHash = hashedContent(first, 'utf8').sha256;
    expect(blobHash).toBe(sha256(Buffer.from(first)));
    const byStepAfterBlob = stepHash(write(first));
    const byStepFirst = stepHash(write(second));
    hashedContent(second, 'utf8');
    expect(stepHash(write(fresh(second)))).toBe(byStepFirst);
    // Recomputed from scratch (no kept digest can answer for another text): the same hash.
    expect(byStepAfterBlob).toBe(
      sha256(
        canonicalJson({
          id: 's1',
          planId: 'p1',
          action: 'writeFile',
          args: { path: 'big.txt' },
          meta: { origin: 'agent' },
          contentSha256: blobHash,
        }),
      ),
    );
    expect(summarizeLargeValues({ content: first })).toEqual({ content: `sha256:${blobHash} (${Buffer.byteLength(first)} bytes)` });
  });

  it('keeps the whole form for a text with a lone surrogate, whose UTF-8 two different texts share', () => {
    const one = long('x') + '\uD800';
    const other = long('x') + '\uD801';
    expect(Buffer.from(one).equals(Buffer.from(other))).toBe(true);
    expect(stepHash(write(one))).not.toBe(stepHash(write(other)));
    expect(stepHash(write(one))).toBe(wholeFormHash(write(one)));
  });

  it('holds for an approval given under the whole form (before this change), and for no other step', () => {
    const step = write(long('approved before the upgrade'));
    expect(stepHashHolds(step, wholeFormHash(step))).toBe(true);
    expect(stepHashHolds(step, stepHash(step))).toBe(true);
    const other = write(long('approved before the upgrade') + '!');
    expect(stepHashHolds(other, wholeFormHash(step))).toBe(false);
    expect(stepHashHolds(other, stepHash(step))).toBe(false);
    // A short step has one form only.
    const short = write('short');
    expect(stepHash(short)).toBe(wholeFormHash(short));
    expect(stepHashHolds(write('short!'), stepHash(short))).toBe(false);
  });
});
