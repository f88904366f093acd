import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { encodeForwardSecurePublicKey, encodePublicKey } from '../../../src/audit/keys/audit-keys.js';
import { logVerifierKey } from '../../../src/audit/format/checkpoint-note.js';
import { ExecutorError } from '../../../src/domain/errors.js';
import { parseProofKeys } from '../../../src/audit/export/record-proof-check.js';

const raw = () => crypto.randomBytes(32);

describe('parseProofKeys: the keys `audit verify-proof --key` takes', () => {
  it('takes the epk2- key `keys export-verification` prints today, as its log key (the one that signs notes)', () => {
    const logKey = raw();
    const keys = parseProofKeys(encodeForwardSecurePublicKey('0123456789abcdef', logKey, raw()));
    expect([...keys.logPublicKeys]).toEqual([['0123456789abcdef', logKey]]);
    expect(keys.vkeys).toEqual([]);
  });

  it('still takes epk1- keys of older chains, and log vkeys, mixed with commas or spaces', () => {
    const older = raw();
    const newer = raw();
    const keys = parseProofKeys(
      `${encodePublicKey('aaaaaaaaaaaaaaaa', older)}, ${encodeForwardSecurePublicKey('bbbbbbbbbbbbbbbb', newer, raw())} ${logVerifierKey('log-1', raw())}`,
    );
    expect(keys.logPublicKeys.get('aaaaaaaaaaaaaaaa')).toEqual(older);
    expect(keys.logPublicKeys.get('bbbbbbbbbbbbbbbb')).toEqual(newer);
    expect(keys.vkeys).toHaveLength(1);
  });

  it('refuses a mangled epk2- key with INVALID_INPUT that shows the expected form', () => {
    let thrown: unknown;
    try {
      parseProofKeys('epk2-0123456789abcdef-short-short');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ExecutorError);
    expect((thrown as ExecutorError).code).toBe('INVALID_INPUT');
    expect((thrown as ExecutorError).message).toMatch(/epk2-<keyId>/);
  });
});
