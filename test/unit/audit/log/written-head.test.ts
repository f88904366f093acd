import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readWrittenHead, WRITTEN_HEAD_FILE, WrittenHeadFile } from '../../../../src/audit/log/written-head.js';
import { defer } from '../../../helpers/teardown.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

function headFile(dataDir: string, head: { seq: number; hash: string } | null, carried: Record<string, number> = {}) {
  let current = head;
  const errors: Error[] = [];
  const file = new WrittenHeadFile(
    dataDir,
    'log-1',
    () => current,
    (error) => errors.push(error),
    carried,
  );
  defer(() => file.close());
  return { file, errors, setHead: (next: { seq: number; hash: string } | null) => (current = next) };
}

describe('the head file beside the database', () => {
  it('names the committed head and the steps marked running, read back as written', () => {
    const dataDir = tempDir();
    const { file, setHead, errors } = headFile(dataDir, { seq: 7, hash: 'a'.repeat(64) });
    file.stepStarted('step-1');
    setHead({ seq: 9, hash: 'b'.repeat(64) });
    file.stepStarted('step-2');
    expect(readWrittenHead(dataDir)).toEqual({ v: 1, logId: 'log-1', seq: 9, hash: 'b'.repeat(64), started: { 'step-1': 7, 'step-2': 9 } });
    // executor.db holds everything up to 8: the first mark is no longer needed, the second is.
    file.durableUpTo(8);
    file.writeNow();
    expect(readWrittenHead(dataDir)?.started).toEqual({ 'step-2': 9 });
    expect(errors).toEqual([]);
  });

  it('overwrites a longer file left by an earlier run in place, leaving no tail of the old text', () => {
    const dataDir = tempDir();
    const many = Object.fromEntries(Array.from({ length: 50 }, (_, index) => [`step-with-a-long-name-${index}`, index]));
    fs.writeFileSync(path.join(dataDir, WRITTEN_HEAD_FILE), JSON.stringify({ v: 1, logId: 'log-1', seq: 3, hash: 'c', started: many }));
    const { file } = headFile(dataDir, { seq: 4, hash: 'd' });
    file.durableUpTo(Number.MAX_SAFE_INTEGER);
    file.writeNow();
    expect(readWrittenHead(dataDir)).toEqual({ v: 1, logId: 'log-1', seq: 4, hash: 'd', started: {} });
  });

  it('writes nothing while a transaction is open (its records may roll back), and the head after it once it is over', async () => {
    const dataDir = tempDir();
    const { file, setHead } = headFile(dataDir, null);
    file.writeNow();
    expect(fs.existsSync(path.join(dataDir, WRITTEN_HEAD_FILE))).toBe(false);
    setHead({ seq: 2, hash: 'e' });
    await expect.poll(() => readWrittenHead(dataDir)?.seq).toBe(2);
  });

  it('keeps the marks a killed run left, restamped at the head of this run until executor.db holds it', () => {
    const dataDir = tempDir();
    const { file } = headFile(dataDir, { seq: 20, hash: 'f' }, { 'old-step': 30 });
    expect([...file.startedSteps().keys()]).toEqual(['old-step']);
    file.restamp();
    expect(readWrittenHead(dataDir)?.started).toEqual({ 'old-step': 20 });
    file.durableUpTo(19);
    expect(file.startedSteps().size).toBe(1);
    file.durableUpTo(20);
    expect(file.startedSteps().size).toBe(0);
  });

  it.each([
    ['torn', '{"v":1,"logId":"log-1","seq":3,'],
    ['not this format', '{"v":2,"logId":"log-1","seq":3,"hash":"x","started":{}}'],
    ['a mark that is not a seq', '{"v":1,"logId":"log-1","seq":3,"hash":"x","started":{"a":"b"}}'],
  ])('claims nothing from a file that is %s', (_what, text) => {
    const dataDir = tempDir();
    fs.writeFileSync(path.join(dataDir, WRITTEN_HEAD_FILE), text);
    expect(readWrittenHead(dataDir)).toBeUndefined();
  });
});
