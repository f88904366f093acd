import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SignedNoteError } from '../../../../src/audit/format/signed-note.js';
import {
  MAX_PROOF_LINES,
  formatAddCheckpointRequest,
  parseAddCheckpointRequest,
} from '../../../../src/audit/witness/add-checkpoint-request.js';

// The example request of c2sp.org/tlog-witness.
const SPEC_EXAMPLE = `old 20852014
PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=
jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=
5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=
/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=

example.com/behind-the-sofa
20852163
CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=

— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=
— example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=
`;

describe('add-checkpoint request bodies', () => {
  it('parses the spec example and formats it back byte for byte', () => {
    const parsed = parseAddCheckpointRequest(SPEC_EXAMPLE);
    expect(parsed.oldSize).toBe(20852014);
    expect(parsed.proof).toHaveLength(4);
    expect(parsed.note.startsWith('example.com/behind-the-sofa\n20852163\n')).toBe(true);
    expect(formatAddCheckpointRequest(parsed)).toBe(SPEC_EXAMPLE);
  });

  it('refuses what the spec answers with 400', () => {
    const note = SPEC_EXAMPLE.slice(SPEC_EXAMPLE.indexOf('\n\n') + 2);
    const hash = crypto.randomBytes(32).toString('base64');
    const bad = [
      '',
      'old\n\n' + note,
      'old -1\n\n' + note,
      'old 007\n\n' + note,
      'old 1 \n\n' + note,
      'Old 1\n\n' + note,
      `old 1\n${hash}`,
      `old 1\n${hash.slice(0, -4)}\n\n${note}`,
      `old 1\n${crypto.randomBytes(33).toString('base64')}\n\n${note}`,
      `old 1\n${`${hash}\n`.repeat(MAX_PROOF_LINES + 1)}\n${note}`,
      `old 99999999999999999999\n\n${note}`,
    ];
    for (const body of bad) expect(() => parseAddCheckpointRequest(body), JSON.stringify(body.slice(0, 40))).toThrow(SignedNoteError);
    expect(parseAddCheckpointRequest(`old 1\n${`${hash}\n`.repeat(MAX_PROOF_LINES)}\n${note}`).proof).toHaveLength(MAX_PROOF_LINES);
    expect(() => formatAddCheckpointRequest({ oldSize: 1, proof: Array.from({ length: 64 }, () => Buffer.alloc(32)), note })).toThrow(
      SignedNoteError,
    );
  });
});
