import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StepRecord } from '../../../../src/domain/step-record.js';
import {
  handleKey,
  initialWatchState,
  keysOf,
  selectedStep,
  tick,
  withRecord,
  type WatchKey,
  type WatchState,
} from '../../../../src/cli/watch/watch-queue.js';
import { renderWatch } from '../../../../src/cli/watch/watch-screen.js';

function waiting(id: string, previewHash: string, createdAt = '2026-11-27T10:00:00.000Z'): StepRecord {
  return {
    step: {
      id,
      planId: `plan-${id}`,
      action: 'writeFile',
      args: { path: `/ws/${id}.txt`, content: 'x\n' },
      meta: { origin: 'agent', client: 'Claude Code · session abc · folder /ws', agent: 'agent-aaaaaaaaaaaaaaaaaaaa' },
    },
    status: 'awaiting_consent',
    position: 0,
    previewHash,
    stepHash: `step-hash-${id}`,
    preview: null,
    approval: null,
    createdAt,
    evaluation: { risk: 'MEDIUM', consent: 'confirm', reasons: [`Writes ${id}.txt`], mitigations: [] },
  } as unknown as StepRecord;
}

const char = (text: string): WatchKey => ({ kind: 'char', char: text });
const press = (state: WatchState, ...keys: WatchKey[]) => {
  let effects: ReturnType<typeof handleKey>['effects'] = [];
  for (const key of keys) {
    const next = handleKey(state, key, 1_000);
    state = next.state;
    effects = [...effects, ...next.effects];
  }
  return { state, effects };
};

describe('the terminal queue state', () => {
  const two = withRecord(withRecord(initialWatchState(0), waiting('aa-1', 'h1')), waiting('bb-2', 'h2', '2026-11-27T10:00:01.000Z'));

  it('y approves as a does (the keys `executor run` asks with); e asks the shell to edit the step on screen, bound to its hash', () => {
    const approved = press(two, char('y'));
    expect(approved.effects).toEqual([
      { kind: 'send', decision: expect.objectContaining({ stepId: 'aa-1', kind: 'approve', previewHash: 'h1' }) },
    ]);
    const edit = press(two, char('j'), char('e'));
    expect(edit.effects).toEqual([{ kind: 'edit', stepId: 'bb-2', stepHash: 'step-hash-bb-2' }]);
    expect(press(initialWatchState(0), char('e')).effects).toEqual([]);
  });

  it('lists steps in the order they came and approves the one on screen with the preview hash shown', () => {
    expect(selectedStep(two)?.step.id).toBe('aa-1');
    const reversed = withRecord(withRecord(initialWatchState(0), waiting('bb-2', 'h2', '2026-11-27T10:00:01.000Z')), waiting('aa-1', 'h1'));
    expect(reversed.waiting.map((record) => record.step.id)).toEqual(['aa-1', 'bb-2']);
    const { effects } = press(two, char('a'));
    expect(effects).toEqual([{ kind: 'send', decision: expect.objectContaining({ stepId: 'aa-1', kind: 'approve', previewHash: 'h1' }) }]);
  });

  it('a preview that changed on screen is what the next approval binds to', () => {
    const changed = withRecord(two, waiting('aa-1', 'h1-new'));
    expect(press(changed, char('a')).effects[0]).toMatchObject({ decision: { previewHash: 'h1-new' } });
  });

  it('rejects only with a reason, and Esc keeps the step', () => {
    const empty = press(two, char('r'), { kind: 'enter' });
    expect(empty.effects).toEqual([]);
    expect(empty.state.message).toMatch(/needs a reason/);
    expect(press(two, char('r'), char('n'), char('o'), { kind: 'escape' }).effects).toEqual([]);
    const given = press(two, char('r'), ...[...'too wide'].map(char), { kind: 'backspace' }, { kind: 'enter' });
    expect(given.effects[0]).toMatchObject({ decision: { stepId: 'aa-1', kind: 'reject', reason: 'too wid' } });
  });

  it('a short id prefix selects a step only when it names one', () => {
    expect(selectedStep(press(two, char('/'), char('b'), { kind: 'enter' }).state)?.step.id).toBe('bb-2');
    const both = withRecord(two, waiting('bb-3', 'h3', '2026-11-27T10:00:02.000Z'));
    const ambiguous = press(both, char('/'), char('b'), { kind: 'enter' });
    expect(ambiguous.state.message).toMatch(/2 waiting steps start with "b"/);
    expect(selectedStep(ambiguous.state)?.step.id).toBe('aa-1');
  });

  it('holds a decision for the undo time: u takes it back, the clock sends it, quitting sends what is held', () => {
    const slow = { ...two, undoMs: 5_000 };
    const held = press(slow, char('a'));
    expect(held.effects).toEqual([]);
    expect(selectedStep(held.state)?.step.id).toBe('bb-2');
    expect(tick(held.state, 5_999).effects).toEqual([]);
    expect(tick(held.state, 6_000).effects).toHaveLength(1);
    expect(selectedStep(press(held.state, char('u')).state)?.step.id).toBe('aa-1');
    expect(press(held.state, char('q')).effects.map((effect) => effect.kind)).toEqual(['send', 'quit']);
  });

  it('a step decided elsewhere leaves the queue; the selection moves to its neighbour', () => {
    const gone = withRecord(two, { ...waiting('aa-1', 'h1'), status: 'executed' } as StepRecord);
    expect(selectedStep(gone)?.step.id).toBe('bb-2');
    const approvedEarlier = withRecord(two, { ...waiting('bb-2', 'h2'), approval: {} } as unknown as StepRecord);
    expect(approvedEarlier.waiting.map((record) => record.step.id)).toEqual(['aa-1']);
  });
});

describe('the screen', () => {
  it('fits the terminal, keeps the key line, and escapes what a step says', () => {
    const hostile = waiting('aa-1', 'h1');
    (hostile.evaluation as { reasons: string[] }).reasons = ['\u001b[2Jcleared'];
    const lines = renderWatch(withRecord(initialWatchState(0), hostile), { rows: 12, columns: 60 });
    expect(lines).toHaveLength(12);
    expect(lines.every((line) => [...line].length <= 60)).toBe(true);
    expect(lines.at(-1)).toMatch(/^a\/y approve/);
    expect(lines.join('\n')).not.toContain('\u001b');
  });
});

describe('keys from terminal bytes', () => {
  it('reads arrows, Enter, Backspace and Ctrl-C, and never makes letters of an escape sequence', () => {
    expect(keysOf('\u001b[Aa\r\u007f\u0003\u001b[15~x')).toEqual([
      { kind: 'up' },
      char('a'),
      { kind: 'enter' },
      { kind: 'backspace' },
      { kind: 'interrupt' },
      char('x'),
    ]);
  });

  it('any printable text is its characters, one key each', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme-ascii' }).filter((text) => !/[\u0000-\u001f\u007f]/.test(text)),
        (text) => {
          expect(keysOf(text)).toEqual([...text].map(char));
        },
      ),
    );
  });
});
