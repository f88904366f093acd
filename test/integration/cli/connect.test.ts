import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

/*
 * `executor connect` / `disconnect` as a person runs them, on real files: merged with what the
 * person has, a copy kept, every change printed, exactly Executor's entries taken out again, and a
 * settings file Executor cannot merge into refused whole, not overwritten.
 */

const read = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, any>;
const write = (file: string, value: unknown) => {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, typeof value === 'string' ? value : `${JSON.stringify(value, null, 4)}\n`);
};

const personsSettings = {
  permissions: { allow: ['Bash(npm test)'], deny: ['Read(./secrets/**)'] },
  hooks: {
    PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'my-linter --check', timeout: 5 }] }],
    PostToolUse: [{ matcher: 'Write', hooks: [{ type: 'command', command: 'prettier --write' }] }],
  },
  model: 'opus',
};
const personsMcp = { mcpServers: { github: { command: 'gh-mcp', args: ['serve'] } } };

function setup() {
  const { dataDir, workspace } = tempSetup();
  const home = tempDir('executor-connect-home-');
  const cli = (args: string[]) => runCli(['--data-dir', dataDir, ...args], { env: { HOME: home } });
  return { dataDir, workspace, home, cli };
}

describe('executor connect / disconnect', () => {
  it('claude-code --project merges with the settings there, keeps a copy, prints the changes, and disconnect restores them exactly', () => {
    const { workspace, dataDir, cli } = setup();
    const settingsFile = path.join(workspace, '.claude', 'settings.local.json');
    const mcpFile = path.join(workspace, '.mcp.json');
    write(settingsFile, personsSettings);
    write(mcpFile, personsMcp);
    const originalText = fs.readFileSync(settingsFile, 'utf8');

    const connected = cli(['connect', 'claude-code', '--project', workspace]);
    expect(connected.status, connected.stderr).toBe(0);
    expect(connected.stdout).toContain(`${settingsFile}: \n  added the PreToolUse hook`);
    expect(connected.stdout).toContain('(timeout 900 s)');
    expect(connected.stdout).toContain(`${mcpFile}: \n  added the MCP server "executor"`);
    expect(connected.stdout).toContain(`kept the file as it was in ${settingsFile}.before-executor`);
    expect(fs.readFileSync(`${settingsFile}.before-executor`, 'utf8')).toBe(originalText);

    const settings = read(settingsFile);
    expect(settings.permissions).toEqual(personsSettings.permissions);
    expect(settings.model).toBe('opus');
    expect(settings.hooks.PostToolUse).toEqual(personsSettings.hooks.PostToolUse);
    // Executor's group first, so it decides before the person's own hooks could let a call through.
    expect(settings.hooks.PreToolUse).toHaveLength(2);
    expect(settings.hooks.PreToolUse[0].matcher).toBe('*');
    const ours = settings.hooks.PreToolUse[0].hooks[0];
    expect(ours.timeout).toBe(900);
    expect(ours.command).toMatch(/ hook claude-code --data-dir .* --wait-seconds 870 \|\| exit 2$/);
    expect(ours.command).toContain(dataDir);
    expect(settings.hooks.PreToolUse[1]).toEqual(personsSettings.hooks.PreToolUse[0]);
    const mcp = read(mcpFile);
    expect(mcp.mcpServers.github).toEqual(personsMcp.mcpServers.github);
    expect(mcp.mcpServers.executor.args).toContain('mcp');

    // Connecting again changes nothing and adds no second entry.
    const again = cli(['connect', 'claude-code', '--project', workspace]);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toContain(`${settingsFile}: nothing to change`);
    expect(read(settingsFile).hooks.PreToolUse).toHaveLength(2);

    const disconnected = cli(['disconnect', 'claude-code', '--project', workspace]);
    expect(disconnected.status, disconnected.stderr).toBe(0);
    expect(disconnected.stdout).toContain('removed the PreToolUse hook');
    expect(disconnected.stdout).toContain('removed the MCP server "executor"');
    expect(read(settingsFile)).toEqual(personsSettings);
    expect(read(mcpFile)).toEqual(personsMcp);
  });

  it('gemini-cli puts the BeforeTool hook (timeout in ms) and the MCP server into one .gemini/settings.json', () => {
    const { workspace, cli } = setup();
    const file = path.join(workspace, '.gemini', 'settings.json');
    write(file, { theme: 'Dracula', mcpServers: { other: { command: 'x' } } });
    const connected = cli(['connect', 'gemini-cli', '--project', workspace, '--wait-seconds', '60']);
    expect(connected.status, connected.stderr).toBe(0);
    expect(connected.stdout).toContain('(timeout 90000 ms)');
    const settings = read(file);
    expect(settings.theme).toBe('Dracula');
    expect(settings.hooks.BeforeTool[0]).toMatchObject({ matcher: '.*', hooks: [{ type: 'command', timeout: 90_000 }] });
    expect(settings.hooks.BeforeTool[0].hooks[0].command).toMatch(/ hook gemini-cli .*--wait-seconds 60 \|\| exit 2$/);
    expect(Object.keys(settings.mcpServers).sort()).toEqual(['executor', 'other']);
    expect(cli(['disconnect', 'gemini-cli', '--project', workspace]).status).toBe(0);
    expect(read(file)).toEqual({ theme: 'Dracula', mcpServers: { other: { command: 'x' } } });
  });

  it('--print shows the entries and writes nothing', () => {
    const { workspace, cli } = setup();
    const printed = cli(['connect', 'claude-code', '--project', workspace, '--print']);
    expect(printed.status, printed.stderr).toBe(0);
    expect(printed.stdout).toContain('would have added the PreToolUse hook');
    expect(printed.stdout).toContain('"PreToolUse"');
    expect(fs.readdirSync(workspace)).toEqual([]);
  });

  it('--user writes the user files under HOME and not the project; --user with --project is refused', () => {
    const { workspace, home, cli } = setup();
    const connected = cli(['connect', 'claude-code', '--user']);
    expect(connected.status, connected.stderr).toBe(0);
    expect(read(path.join(home, '.claude', 'settings.json')).hooks.PreToolUse).toHaveLength(1);
    expect(read(path.join(home, '.claude.json')).mcpServers.executor).toBeDefined();
    expect(fs.readdirSync(workspace)).toEqual([]);
    expect(cli(['connect', 'gemini-cli', '--user']).status).toBe(0);
    expect(read(path.join(home, '.gemini', 'settings.json')).hooks.BeforeTool).toHaveLength(1);
    const both = cli(['connect', 'gemini-cli', '--user', '--project', workspace]);
    expect(both.status).not.toBe(0);
    expect(both.stderr).toContain('--project DIR or --user, not both');
  });

  it.each([
    ['not JSON', '{ "permissions": { "allow": [ } '],
    ['a list, not an object', '[1, 2]'],
    ['hooks that are not an object', '{"hooks": "all"}'],
    ['a PreToolUse that is not a list', '{"hooks": {"PreToolUse": {"matcher": "*"}}}'],
  ])('a settings file that is %s gets a clear error, and nothing is written', (_name, text) => {
    const { workspace, cli } = setup();
    const settingsFile = path.join(workspace, '.claude', 'settings.local.json');
    write(settingsFile, text);
    const connected = cli(['connect', 'claude-code', '--project', workspace]);
    expect(connected.status).not.toBe(0);
    expect(connected.stderr).toContain(settingsFile);
    expect(connected.stderr).toContain('Nothing was changed');
    expect(connected.stderr).not.toMatch(/\n\s+at /);
    expect(fs.readFileSync(settingsFile, 'utf8')).toBe(text);
    expect(fs.existsSync(`${settingsFile}.before-executor`)).toBe(false);
    expect(fs.existsSync(path.join(workspace, '.mcp.json'))).toBe(false);
  });

  it('a malformed second file stops the whole connect before the first file is touched', () => {
    const { workspace, cli } = setup();
    const settingsFile = path.join(workspace, '.claude', 'settings.local.json');
    write(settingsFile, personsSettings);
    const before = fs.readFileSync(settingsFile, 'utf8');
    write(path.join(workspace, '.mcp.json'), '{"mcpServers": []}');
    const connected = cli(['connect', 'claude-code', '--project', workspace]);
    expect(connected.status).not.toBe(0);
    expect(connected.stderr).toContain('"mcpServers" is not an object');
    expect(fs.readFileSync(settingsFile, 'utf8')).toBe(before);
  });

  it('--wait-seconds takes whole seconds only', () => {
    const { workspace, cli } = setup();
    for (const bad of ['0', '-5', '1.5', 'soon', '100000']) {
      const result = cli(['connect', 'claude-code', '--project', workspace, '--wait-seconds', bad]);
      expect(result.status, bad).not.toBe(0);
      expect(result.stderr).toContain('--wait-seconds takes whole seconds');
    }
    expect(fs.readdirSync(workspace)).toEqual([]);
  });
  it("a link planted at the copy's name in a cloned project is replaced, never written through", () => {
    const { workspace, home, cli } = setup();
    const settingsFile = path.join(workspace, '.claude', 'settings.local.json');
    write(settingsFile, personsSettings);
    const victim = path.join(home, '.bashrc');
    fs.writeFileSync(victim, 'export PATH=precious\n');
    fs.symlinkSync(victim, `${settingsFile}.before-executor`);
    const connected = cli(['connect', 'claude-code', '--project', workspace]);
    expect(connected.status, connected.stderr).toBe(0);
    expect(fs.readFileSync(victim, 'utf8')).toBe('export PATH=precious\n');
    expect(fs.lstatSync(`${settingsFile}.before-executor`).isSymbolicLink()).toBe(false);
    expect(read(`${settingsFile}.before-executor`)).toEqual(personsSettings);
  });

  it('a settings file that is a link (dotfiles) is merged where it points, the link and the file mode kept', () => {
    const { home, cli } = setup();
    const real = path.join(home, 'dotfiles', 'gemini-settings.json');
    write(real, { theme: 'dark' });
    fs.chmodSync(real, 0o644);
    const settingsFile = path.join(home, '.gemini', 'settings.json');
    fs.mkdirSync(path.dirname(settingsFile), { recursive: true });
    fs.symlinkSync(real, settingsFile);
    const connected = cli(['connect', 'gemini-cli', '--user']);
    expect(connected.status, connected.stderr).toBe(0);
    expect(fs.lstatSync(settingsFile).isSymbolicLink()).toBe(true);
    expect(read(real).theme).toBe('dark');
    expect(read(real).hooks.BeforeTool[0].hooks[0].command).toContain('hook gemini-cli');
    expect(fs.statSync(real).mode & 0o777).toBe(0o644);
    expect(fs.readdirSync(path.dirname(real))).toEqual(['gemini-settings.json']);
    const disconnected = cli(['disconnect', 'gemini-cli', '--user']);
    expect(disconnected.status, disconnected.stderr).toBe(0);
    expect(fs.lstatSync(settingsFile).isSymbolicLink()).toBe(true);
    expect(read(real)).toEqual({ theme: 'dark' });
  });

  it('a read-only settings file is refused with a clear error, and no file of the pair is changed', () => {
    const { workspace, cli } = setup();
    const settingsFile = path.join(workspace, '.claude', 'settings.local.json');
    const mcpFile = path.join(workspace, '.mcp.json');
    write(settingsFile, personsSettings);
    write(mcpFile, personsMcp);
    fs.chmodSync(mcpFile, 0o444);
    const before = fs.readFileSync(settingsFile, 'utf8');
    const connected = cli(['connect', 'claude-code', '--project', workspace]);
    expect(connected.status).not.toBe(0);
    expect(connected.stderr).toContain('is read-only');
    expect(connected.stderr).not.toMatch(/\n\s+at /);
    expect(fs.readFileSync(settingsFile, 'utf8')).toBe(before);
    expect(read(mcpFile)).toEqual(personsMcp);
    expect(fs.existsSync(`${settingsFile}.before-executor`)).toBe(false);
  });
});
