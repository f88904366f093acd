import { describe, expect, it } from 'vitest';
import { PolicySchema } from '../../../src/policy/policy-file.js';

const vkey = 'witness.test/w+1a2b3c4d+BOvN63jn/bLvkieywe8R6UYAtVtNbZpXh34x7onlmtw2';

describe('witnesses in the policy', () => {
  it('takes http and git witnesses, and none by default', () => {
    expect(PolicySchema.parse({}).witnesses).toEqual([]);
    const parsed = PolicySchema.parse({
      witnesses: [
        { kind: 'http', name: 'w1', url: 'https://w.example/x', vkey },
        { kind: 'git', name: 'team/audit', remote: 'git@host:t/a.git', branch: 'executor-audit' },
      ],
    });
    expect(parsed.witnesses).toHaveLength(2);
  });

  it('refuses what would be unsafe or ambiguous', () => {
    const bad = [
      [{ kind: 'http', name: 'w', url: 'file:///etc/passwd', vkey }],
      [{ kind: 'http', name: 'w', url: 'https://w.example', vkey: 'not a key' }],
      [{ kind: 'http', name: '../w', url: 'https://w.example', vkey }],
      [{ kind: 'http', name: 'has space', url: 'https://w.example', vkey }],
      [{ kind: 'git', name: 'g', remote: '--upload-pack=touch /tmp/x', branch: 'main' }],
      [{ kind: 'git', name: 'g', remote: 'r', branch: '-b' }],
      [{ kind: 'git', name: 'g', remote: 'r', branch: 'a..b' }],
      [
        { kind: 'git', name: 'same', remote: 'r', branch: 'main' },
        { kind: 'http', name: 'same', url: 'https://w.example', vkey },
      ],
      [{ kind: 'ftp', name: 'x' }],
    ];
    for (const witnesses of bad) expect(PolicySchema.safeParse({ witnesses }).success, JSON.stringify(witnesses)).toBe(false);
  });
});
