import { describe, expect, it } from 'vitest';
import { summarizeReport } from '../../../src/audit/verify/verify-audit.js';

type VerifyReport = Parameters<typeof summarizeReport>[0];

const intact = (records: number, headSeq: number) =>
  ({ ok: true, problem: null, records, headSeq, checkpoints: 1, anchor: null, unsealedTail: 0, warnings: [] }) as unknown as VerifyReport;

describe('summarizeReport: the range words', () => {
  it('an export of records 10..30 says 21 records (seq 10..30), not 1..30', () => {
    expect(summarizeReport(intact(21, 30))).toMatch(/^audit log intact: 21 records \(seq 10\.\.30\),/);
  });

  it('a whole log starts at 1; an empty range says no records', () => {
    expect(summarizeReport(intact(30, 30))).toMatch(/30 records \(seq 1\.\.30\)/);
    expect(summarizeReport(intact(0, 9))).toMatch(/^audit log intact: no records,/);
  });
});
