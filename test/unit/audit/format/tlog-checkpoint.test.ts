import { describe, expect, it } from 'vitest';
import { SignedNoteError } from '../../../../src/audit/format/signed-note.js';
import { EMPTY_TREE_ROOT, formatCheckpointText, parseCheckpointText } from '../../../../src/audit/format/tlog-checkpoint.js';

// golang.org/x/mod/sumdb/tlog note_test.go: FormatTree/ParseTree golden text (RecordHash("hello world")).
const GOLDEN = 'go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n';

describe('tlog checkpoints', () => {
  it('formats and parses the Go sumdb tree head', () => {
    const parsed = parseCheckpointText(GOLDEN);
    expect(parsed).toMatchObject({ origin: 'go.sum database tree', size: 123456789012, extensions: [] });
    expect(parsed.rootHash.toString('base64')).toBe('TszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=');
    expect(formatCheckpointText(parsed)).toBe(GOLDEN);
  });

  it('keeps extension lines and refuses empty ones', () => {
    const withExtensions = `${GOLDEN}JOE\nfoo bar\n`;
    expect(parseCheckpointText(withExtensions).extensions).toEqual(['JOE', 'foo bar']);
    expect(formatCheckpointText(parseCheckpointText(withExtensions))).toBe(withExtensions);
    expect(() => parseCheckpointText(`${GOLDEN}\nJOE\n`)).toThrow(SignedNoteError);
  });

  it('refuses what is not a checkpoint', () => {
    const bad = [
      'go.sum database tree\n0xabcdef\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n',
      'go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBTOOBIG=\n',
      'go.sum database tree\n0123\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n',
      'go.sum database tree\n-1\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n',
      'go.sum database tree\n123\nTszzRgjTG6xce-z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n',
      'go.sum database tree\n123\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0\n',
      '\n123\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n',
      'go.sum database tree\n123\n',
      GOLDEN.slice(0, -1),
      'origin\n99999999999999999999\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n',
    ];
    for (const text of bad) expect(() => parseCheckpointText(text), text).toThrow(SignedNoteError);
  });

  it('an empty tree must carry the empty root', () => {
    expect(formatCheckpointText({ origin: 'o', size: 0, rootHash: EMPTY_TREE_ROOT, extensions: [] })).toBe(
      'o\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n',
    );
    expect(() => formatCheckpointText({ origin: 'o', size: 0, rootHash: Buffer.alloc(32), extensions: [] })).toThrow(SignedNoteError);
    expect(() => formatCheckpointText({ origin: 'two\nlines', size: 1, rootHash: Buffer.alloc(32), extensions: [] })).toThrow(
      SignedNoteError,
    );
  });
});
