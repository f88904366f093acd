import { describe, expect, it } from 'vitest';
import { ExecutorError, toErrorShape } from '../../../src/domain/errors.js';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('toErrorShape', () => {
  it('keeps typed errors as they are', () => {
    expect(toErrorShape(new ExecutorError('NOT_FOUND', 'gone', { id: 1 }))).toEqual({
      code: 'NOT_FOUND',
      message: 'gone',
      details: { id: 1 },
    });
  });

  it('says a full disk, a read-only directory or an I/O error in words a person can act on', () => {
    expect(toErrorShape(withCode('database or disk is full', 'SQLITE_FULL'))).toMatchObject({
      code: 'STORAGE_FULL',
      message: expect.stringContaining('full'),
      details: { sqlite: 'SQLITE_FULL' },
    });
    expect(toErrorShape(withCode('attempt to write a readonly database', 'SQLITE_READONLY_DBMOVED'))).toMatchObject({
      code: 'STORAGE_FAILED',
      message: expect.stringContaining('read-only'),
    });
    expect(toErrorShape(withCode('disk I/O error', 'SQLITE_IOERR_WRITE'))).toMatchObject({ code: 'STORAGE_FAILED' });
    expect(toErrorShape(withCode('EROFS: read-only file system', 'EROFS'))).toMatchObject({
      code: 'STORAGE_FAILED',
      details: { errno: 'EROFS' },
    });
    expect(toErrorShape(withCode('ENOSPC: no space left', 'ENOSPC'))).toMatchObject({
      code: 'STORAGE_FULL',
      message: expect.stringContaining('full'),
    });
  });

  it('leaves other failures INTERNAL with their message', () => {
    expect(toErrorShape(withCode('constraint failed', 'SQLITE_CONSTRAINT_UNIQUE'))).toEqual({
      code: 'INTERNAL',
      message: 'constraint failed',
    });
    expect(toErrorShape(null)).toEqual({ code: 'INTERNAL', message: 'null' });
    expect(toErrorShape('plain')).toEqual({ code: 'INTERNAL', message: 'plain' });
  });
});
