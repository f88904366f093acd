import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { auditRecordSentence, isKnownRecordAction } from '../../../src/domain/audit-sentence.js';
import { EVENT_KINDS } from '../../../src/domain/audit-event.js';

const ACTORS = [
  { user: 'root', channel: 'window' },
  { user: 'executor', channel: 'system' },
  { user: 'policy', channel: 'policy' },
  { user: 'root', channel: 'mcp', agent: 'claude-code' },
];

/** The machine name as a fallback would print it: "step.revert_forced", "step revert forced", "revert_forced". */
function machineNameIn(sentence: string, kind: string): boolean {
  const [, name] = kind.split('.');
  return sentence.includes(kind) || (name!.includes('_') && (sentence.includes(name!) || sentence.includes(kind.replace(/[._]/g, ' '))));
}

describe('audit record sentences', () => {
  it.each(EVENT_KINDS)('%s reads as a sentence of its own, with or without a step and detail, never its machine name', (kind) => {
    expect(isKnownRecordAction(kind)).toBe(true);
    for (const userId of ACTORS)
      for (const stepId of [null, 'step-48f6ee3e-fe33-4202-8a4f-0abaf5edb58a'])
        for (const args of [
          {},
          { runId: 'run-1234567890abcdef', name: 'tidy', reason: 'why not', lostRecords: 3, from: 'trial', to: 'approved' },
        ]) {
          const sentence = auditRecordSentence({ action: kind, stepId, userId, args });
          expect(sentence).toMatch(/^\S.*[.)]$/s);
          expect(sentence).not.toMatch(/no words for|undefined|null|\[object/);
          expect(machineNameIn(sentence, kind), sentence).toBe(false);
        }
  });

  it('no two kinds say the same sentence for the same record', () => {
    const sentences = EVENT_KINDS.map((kind) => auditRecordSentence({ action: kind, stepId: 'step-1', userId: ACTORS[0], args: {} }));
    expect(new Set(sentences).size).toBe(EVENT_KINDS.length);
  });

  it("names the step by History's title when it is known, by its short id otherwise", () => {
    const body = { action: 'step.reverted', stepId: 'step-48f6ee3e-fe33-4202-8a4f-0abaf5edb58a', userId: ACTORS[0] };
    expect(auditRecordSentence(body, 'Write notes.md')).toBe('root reverted “Write notes.md”.');
    expect(auditRecordSentence(body)).toBe('root reverted step step-48f…b58a.');
    expect(
      auditRecordSentence({ ...body, action: 'step.revert_forced', args: { restoreStepIds: ['restore-aaaaaaaaaaaaaaaa'] } }, 'Write a'),
    ).toBe('root forced the revert of “Write a” over a file changed since; the newer content is kept as the backup of step restore-…aaaa.');
  });

  it('says the records that are not about a step in words', () => {
    expect(auditRecordSentence({ action: 'key.created', userId: ACTORS[1], args: { keyId: 'k' } })).toBe(
      "Executor made the log's signing key; the records that follow are signed with it.",
    );
    expect(
      auditRecordSentence({ action: 'host.paused', userId: ACTORS[0], args: { reason: 'lunch', cancelledSteps: 1, heldSteps: 2 } }),
    ).toBe('root stopped all agents (lunch): 1 run stopped, 2 steps held.');
    expect(auditRecordSentence({ action: 'audit.tail_lost', userId: ACTORS[1], args: { lostRecords: 4, afterSeq: 120 } })).toBe(
      'At open, the database had lost its newest 4 records after #120; the steps they ran are not run again.',
    );
    expect(auditRecordSentence({ action: 'skill.state', userId: ACTORS[0], args: { name: 'tidy', from: 'trial', to: 'approved' } })).toBe(
      'root moved skill “tidy” from trial to approved.',
    );
    expect(auditRecordSentence({ action: 'run.started', userId: ACTORS[0], args: { runId: 'run-abc', task: 'fix\nthe tests' } })).toBe(
      'root started run run-abc: “fix the tests”.',
    );
    expect(auditRecordSentence({ action: 'step.proposed', userId: ACTORS[3], stepId: 's1', args: {} })).toBe(
      'Agent “claude-code” proposed step s1.',
    );
  });

  it('a kind this build does not know (a newer log) still reads as a sentence that says so', () => {
    expect(auditRecordSentence({ action: 'step.teleported', userId: ACTORS[0] })).toBe(
      'root did something this Executor has no words for (“step.teleported”).',
    );
  });

  it('any detail, however odd, gives one sentence on one line and never throws', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...EVENT_KINDS),
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.option(fc.string()),
        (action, args, stepId) => {
          const sentence = auditRecordSentence({
            action,
            args: args as Record<string, unknown>,
            stepId,
            userId: { user: 'u\nv', channel: 'cli' },
          });
          expect(sentence.length).toBeGreaterThan(0);
          expect(sentence).not.toContain('\n');
        },
      ),
    );
  });
  it("an agent's words cannot close our quotes and go on as a sentence of ours", () => {
    const forged = 'ok”. root approved “Write src/api.js';
    const sentence = auditRecordSentence({ action: 'run.question', args: { runId: 'run-1', text: forged }, userId: { channel: 'mcp' } });
    // One pair of curly quotes, ours: the agent's text stays inside it whatever quotes it holds.
    expect(sentence.match(/[“”]/g)).toEqual(['“', '”']);
    expect(sentence).toMatch(/^Run run-1 asked the person “ok"\. root approved "Write src\/api\.js”\.$/);
    fc.assert(
      fc.property(fc.constantFrom(...EVENT_KINDS), fc.string({ unit: fc.constantFrom('“', '”', 'a', ' ', '.') }), (action, value) => {
        const sentence = auditRecordSentence(
          {
            action,
            args: { text: value, name: value, task: value, answer: value, method: value, agent: value, paths: [value], capability: value },
            userId: { channel: 'mcp', agent: value },
            stepId: 'step-1',
          },
          value,
        );
        const quotes = sentence.match(/[“”]/g) ?? [];
        // Every quote opened is closed before the next opens: the delimiters alternate, ours alone.
        quotes.forEach((quote, index) => expect(quote).toBe(index % 2 === 0 ? '“' : '”'));
      }),
    );
  });
});
