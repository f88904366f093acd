import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
// Imported here, not inside the test: a teardown first loaded while a test runs registers its hooks too late
// to run, and the directories stayed in /tmp (three per CI run).
import { tempDir } from '../../helpers/temp-dirs.js';

describe('the shell parser', () => {
  it('is unknowable until loaded, loads once, then parses synchronously', async () => {
    vi.resetModules();
    const parser = await import('../../../src/policy/shell-parser.js');
    const { analyseCommandLine } = await import('../../../src/policy/shell-analysis.js');
    const { checkCommandPrograms } = await import('../../../src/policy/command-policy.js');
    expect(parser.shellParserReady()).toBe(false);
    expect(parser.parseShell('ls')).toEqual({ ok: false, reason: 'the shell parser is not loaded yet' });
    // Before loading, a line is never named: with a deny list it is not denied outright but it is unknowable.
    expect(analyseCommandLine('rm x').unknowable).toEqual([{ kind: 'unparsable', reason: 'the shell parser is not loaded yet' }]);
    expect(checkCommandPrograms('ls', { allow: ['ls'], deny: [] }).allowed).toBe(false);
    const first = parser.loadShellParser();
    const second = parser.loadShellParser();
    expect(second).toBe(first);
    await first;
    expect(parser.shellParserReady()).toBe(true);
    const parsed = parser.parseShell('ls | wc -l');
    expect(parsed.ok).toBe(true);
    if (parsed.ok) {
      expect(parsed.tree.rootNode.type).toBe('program');
      parsed.tree.delete();
    }
  });

  it('refuses a text longer than any step may hold', async () => {
    const parser = await import('../../../src/policy/shell-parser.js');
    await parser.loadShellParser();
    expect(parser.parseShell('x'.repeat(parser.MAX_SHELL_TEXT + 1))).toMatchObject({
      ok: false,
      reason: expect.stringContaining('longer than'),
    });
  });

  it('finds both WebAssembly files', () => {
    return import('../../../src/policy/shell-parser.js').then(({ shellWasmPaths }) => {
      const paths = shellWasmPaths();
      expect(fs.existsSync(paths.runtime) && paths.runtime.endsWith('tree-sitter.wasm')).toBe(true);
      expect(fs.existsSync(paths.grammar) && paths.grammar.endsWith('tree-sitter-bash.wasm')).toBe(true);
    });
  });

  it("prefers the copy next to the bundled module, and reads a packaged app's copy from app.asar.unpacked", async () => {
    const { locateWasm } = await import('../../../src/policy/shell-parser.js');
    const bundle = tempDir();
    fs.writeFileSync(path.join(bundle, 'tree-sitter-bash.wasm'), 'x');
    expect(locateWasm('tree-sitter-bash.wasm', 'tree-sitter-bash/tree-sitter-bash.wasm', bundle)).toBe(
      path.join(bundle, 'tree-sitter-bash.wasm'),
    );
    const app = tempDir();
    fs.mkdirSync(path.join(app, 'app.asar.unpacked', 'dist-electron'), { recursive: true });
    fs.writeFileSync(path.join(app, 'app.asar.unpacked', 'dist-electron', 'tree-sitter.wasm'), 'x');
    expect(locateWasm('tree-sitter.wasm', 'web-tree-sitter/tree-sitter.wasm', path.join(app, 'app.asar', 'dist-electron'))).toBe(
      path.join(app, 'app.asar.unpacked', 'dist-electron', 'tree-sitter.wasm'),
    );
    // Without a copy beside the module, the package's own file is used.
    expect(locateWasm('tree-sitter.wasm', 'web-tree-sitter/tree-sitter.wasm', tempDir())).toMatch(
      /node_modules[\\/]web-tree-sitter[\\/]tree-sitter\.wasm$/,
    );
  });

  it('survives deep nesting without a stack overflow, and refuses it', async () => {
    const parser = await import('../../../src/policy/shell-parser.js');
    const { analyseCommandLine } = await import('../../../src/policy/shell-analysis.js');
    await parser.loadShellParser();
    const deep = `${'$('.repeat(3000)}rm x${')'.repeat(3000)}`;
    expect(analyseCommandLine(deep).unknowable.map((entry) => entry.kind)).toContain('unparsable');
    const subshells = `${'('.repeat(5000)}rm x${')'.repeat(5000)}`;
    expect(analyseCommandLine(subshells).unknowable.map((entry) => entry.kind)).toContain('unparsable');
    const nestedStrings = Array.from({ length: 12 }).reduce<string>((code) => `sh -c ${JSON.stringify(code)}`, 'rm x');
    expect(analyseCommandLine(nestedStrings).unknowable.map((entry) => entry.kind)).toContain('unparsable');
  });
});
