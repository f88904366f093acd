import { describe, expect, it } from 'vitest';
import { appendChunk, LIVE_TAIL_BYTES, LIVE_TAIL_LINES, trimTail, type TailChunk } from '../../../src/domain/live-output.js';

const text = (chunks: TailChunk[]) => chunks.map((chunk) => chunk.text).join('');
const lines = (count: number, from = 1) => Array.from({ length: count }, (_, index) => `line ${index + from}\n`).join('');

describe('the live tail', () => {
  it('keeps the last 50 lines, cut at a line start', () => {
    const tail = trimTail([{ stream: 'stdout', text: lines(120) }]);
    expect(text(tail).split('\n').filter(Boolean)).toEqual(lines(LIVE_TAIL_LINES, 71).split('\n').filter(Boolean));
  });

  it('keeps at most 8 KiB, whatever the lines are', () => {
    const tail = trimTail([{ stream: 'stdout', text: 'x'.repeat(100_000) }]);
    expect(text(tail)).toHaveLength(LIVE_TAIL_BYTES);
  });

  it('keeps the order of stdout and stderr, dropping whole old chunks first', () => {
    const tail: TailChunk[] = [];
    appendChunk(tail, { stream: 'stdout', text: lines(40) });
    appendChunk(tail, { stream: 'stderr', text: 'warn\n' });
    appendChunk(tail, { stream: 'stdout', text: lines(20, 41) });
    appendChunk(tail, { stream: 'stdout', text: 'and more\n' });
    trimTail(tail);
    expect(tail.map((chunk) => chunk.stream)).toEqual(['stdout', 'stderr', 'stdout']);
    expect(text(tail).split('\n').filter(Boolean)).toHaveLength(LIVE_TAIL_LINES);
    expect(tail[1]!.text).toBe('warn\n');
    expect(tail[2]!.text.endsWith('line 60\nand more\n')).toBe(true);
  });

  it('leaves a short tail alone and never holds an empty chunk', () => {
    expect(trimTail([{ stream: 'stdout', text: 'a\n' }])).toEqual([{ stream: 'stdout', text: 'a\n' }]);
    expect(trimTail([{ stream: 'stdout', text: '\n'.repeat(60) }]).every((chunk) => chunk.text.length > 0)).toBe(true);
  });
});
