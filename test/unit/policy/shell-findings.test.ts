import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { splitReason } from '../../../src/domain/reason-detail.js';
import { analyseCommand, describeUnknowable } from '../../../src/policy/command-policy.js';
import { UNKNOWABLE_CONSEQUENCES, UNKNOWABLE_KINDS, type UnknowableKind } from '../../../src/policy/shell-findings.js';
import { loadShellParser } from '../../../src/policy/shell-parser.js';

beforeAll(async () => {
  await loadShellParser();
});

const POLICY = path.resolve(import.meta.dirname, '../../../src/policy');

/** Every kind the policy's code raises, read from its source: a new kind raised without a consequence fails here. */
function kindsRaisedInSource(): Set<string> {
  const kinds = new Set<string>();
  for (const file of fs.readdirSync(POLICY).filter((name) => name.endsWith('.ts'))) {
    const text = fs.readFileSync(path.join(POLICY, file), 'utf8');
    for (const match of text.matchAll(/flag\(\s*'([a-z-]+)'|kind: '([a-z-]+)',\s*reason:/g)) kinds.add(match[1] ?? match[2]!);
  }
  return kinds;
}

/** A line that raises each kind, and only it. */
const LINE_OF_KIND: Record<UnknowableKind, string> = {
  unparsable: 'echo "unterminated',
  'computed-name': '$CMD x',
  'runs-code': 'sh -c "ls"',
  wrapper: 'timeout 5 ls',
  'multi-call': 'busybox rm x',
  'changes-lookup': ': $((PATH=1))',
  'file-by-path': './run.sh',
  'unseen-effect': 'find . -delete',
  'shell-dependent': "$'rm' x",
};

describe('what a finding means for the person', () => {
  it('every kind the analysis raises has a consequence in plain words', () => {
    const raised = kindsRaisedInSource();
    expect(raised.size).toBeGreaterThanOrEqual(UNKNOWABLE_KINDS.length);
    for (const kind of raised) expect(UNKNOWABLE_KINDS, kind).toContain(kind);
    for (const kind of UNKNOWABLE_KINDS) {
      const consequence = UNKNOWABLE_CONSEQUENCES[kind];
      expect(consequence.length, kind).toBeGreaterThan(10);
      // The analysis's own terms stay in the detail: no code, no variable names, no shell jargon.
      expect(consequence, kind).not.toMatch(/`|PATH|arithmetic|expansion|substitution|argv|builtin/);
    }
  });

  it('each reason leads with the consequence and keeps the detail after it, for every kind', () => {
    for (const kind of UNKNOWABLE_KINDS) {
      const unknowable = analyseCommand(LINE_OF_KIND[kind]).unknowable;
      expect(
        unknowable.map((entry) => entry.kind),
        kind,
      ).toContain(kind);
      const reason = describeUnknowable(unknowable);
      const { headline, detail } = splitReason(reason);
      expect(headline, kind).toContain(`This command could run any program: ${UNKNOWABLE_CONSEQUENCES[kind]}`);
      expect(headline, kind).not.toContain('`');
      expect(detail, kind).toBe(`${unknowable.map((entry) => entry.reason).join('; ')}.`);
    }
  });

  it('says each consequence once, however many findings share it, and the policy sentence with it', () => {
    const unknowable = analyseCommand('timeout 5 ls; xargs rm < list').unknowable;
    expect(unknowable.filter((entry) => entry.kind === 'wrapper').length).toBeGreaterThan(1);
    const { headline } = splitReason(describeUnknowable(unknowable, 'The policy denies "rm", so you decide.'));
    expect(headline).toBe(
      'This command could run any program: it starts programs named in its arguments. The policy denies "rm", so you decide.',
    );
  });

  it('never folds a reason it did not build: a step text holding the mark stays whole', () => {
    const reason = 'Writes a. In detail: nothing inside the workspace root /w.';
    expect(splitReason(reason)).toEqual({ headline: reason, detail: null });
  });
});
