import { describe, expect, it } from 'vitest';
import { sedRunsCommands } from '../../../src/policy/program-kinds.js';

describe('sedRunsCommands', () => {
  it('finds the e command and the s///e flag, and nothing in plain substitutions', () => {
    expect(sedRunsCommands('s/hello/world/g')).toBe(false);
    expect(sedRunsCommands('s|e|E|g; /e/d; 1,3p')).toBe(false);
    expect(sedRunsCommands('/start/,/end/ { s/x/y/; }')).toBe(false);
    expect(sedRunsCommands('a\\\nsome text with e')).toBe(false);
    expect(sedRunsCommands('1e rm x')).toBe(true);
    expect(sedRunsCommands('s/a/rm x/e')).toBe(true);
    expect(sedRunsCommands('s/a/b/ge')).toBe(true);
    expect(sedRunsCommands('/x/e rm y')).toBe(true);
    expect(sedRunsCommands('s/unterminated')).toBe(true);
    expect(sedRunsCommands('$!{e ls\n}')).toBe(true);
  });
});
