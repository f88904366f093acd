import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planSettings, writeSettings } from '../../../src/hooks/client-settings.js';
import type { HookClientName } from '../../../src/hooks/tool-calls.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * Whatever the person's settings hold, connect then disconnect gives them back as they were: the
 * grammar is any JSON object, with hook groups of any commands of theirs (Executor's entries are
 * found by their command alone). Empty hook lists connect filled are not kept: they said nothing.
 */

const commands = {
  hook: '/usr/bin/node /opt/executor/bin/executor.js hook claude-code --wait-seconds 870 || exit 2',
  waitSeconds: 870,
  mcp: { command: '/usr/bin/node', args: ['/opt/executor/bin/executor.js', 'mcp'] },
};
const hookEntry = fc.record(
  {
    type: fc.constant('command'),
    command: fc.string({ minLength: 1 }).filter((text) => !/executor/.test(text)),
    timeout: fc.option(fc.nat(), { nil: undefined }),
  },
  { requiredKeys: ['type', 'command'] },
);
const group = fc.record({ matcher: fc.string(), hooks: fc.array(hookEntry, { minLength: 1, maxLength: 3 }) });
const event = (name: string) =>
  fc.dictionary(fc.constantFrom(name, 'PostToolUse', 'AfterTool', 'SessionStart'), fc.array(group, { minLength: 1, maxLength: 3 }), {
    maxKeys: 3,
  });
const settings = (name: string) =>
  fc.record(
    {
      hooks: event(name).filter((value) => Object.keys(value).length > 0),
      mcpServers: fc.dictionary(
        fc.string({ minLength: 1 }).filter((key) => key !== 'executor' && key !== '__proto__'),
        fc.record({ command: fc.string(), args: fc.array(fc.string()) }),
        { minKeys: 1, maxKeys: 3 },
      ),
      other: fc.jsonValue(),
    },
    { requiredKeys: [] },
  );

describe('connect then disconnect', () => {
  it.each<[HookClientName, string, string[]]>([
    ['claude-code', 'PreToolUse', ['.claude/settings.local.json', '.mcp.json']],
    ['gemini-cli', 'BeforeTool', ['.gemini/settings.json']],
  ])('%s: gives back any settings as they were, with Executor first while connected', (client, eventName, files) => {
    fc.assert(
      fc.property(settings(eventName), (generated) => {
        // As JSON holds it (no -0, no undefined).
        const original = JSON.parse(JSON.stringify(generated)) as unknown;
        const project = tempDir('executor-settings-prop-');
        for (const file of files) {
          fs.mkdirSync(path.dirname(path.join(project, file)), { recursive: true });
          fs.writeFileSync(path.join(project, file), JSON.stringify(original));
        }
        writeSettings(planSettings(client, { project }, commands));
        const connected = JSON.parse(fs.readFileSync(path.join(project, files[0]!), 'utf8'));
        expect(connected.hooks[eventName][0].hooks[0].command).toBe(commands.hook);
        writeSettings(planSettings(client, { project }, null));
        for (const file of files) expect(JSON.parse(fs.readFileSync(path.join(project, file), 'utf8'))).toEqual(original);
        fs.rmSync(project, { recursive: true, force: true });
      }),
      { numRuns: 60 },
    );
  });
});
