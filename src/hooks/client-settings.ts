import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ExecutorError } from '../domain/errors.js';
import type { HookClientName } from './tool-calls.js';

/*
 * `executor connect` / `disconnect`: Executor's hook entry and its MCP server entry, merged into a
 * client's own settings files, and taken out again. What is there already is kept as it is; a copy
 * of each file as it was is kept beside it before the first change; the hook entry is found again by
 * its command (Executor's CLI running `hook <client>`), so disconnect removes exactly what connect added.
 */

/** Seconds a step waits for the person by default: long enough to read a diff and decide. */
export const HOOK_WAIT_SECONDS = 870;
/** The client gives the hook this much longer than it waits, so the hook always answers before the client would kill it (a killed hook fails open in both clients). */
export const HOOK_ANSWER_MARGIN_SECONDS = 30;

export interface ConnectCommands {
  /** The hook command line, as a shell runs it. */
  hook: string;
  /** How long the hook waits for the person (its `--wait-seconds`); the client's timeout is this plus the margin. */
  waitSeconds: number;
  /** The MCP server entry (`executor mcp`). */
  mcp: { command: string; args: string[] };
}

export type ConnectScope = { project: string } | { user: true };

interface SettingsChange {
  file: string;
  before: string | null;
  after: string | null;
  changes: string[];
}

type Json = Record<string, unknown>;
const OUR_HOOK = /executor[^\n]*\bhook (claude-code|gemini-cli)\b/;
const isOurMcp = (entry: unknown) =>
  !!entry &&
  typeof entry === 'object' &&
  JSON.stringify((entry as Json).args ?? []).includes('"mcp"') &&
  JSON.stringify(entry).includes('executor');

function readJson(file: string): { text: string | null; value: Json } {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { text: null, value: {} };
    throw new ExecutorError('STORAGE_FAILED', `Cannot read ${file}: ${(error as Error).message}`, { file });
  }
  try {
    const value = text.trim() === '' ? {} : (JSON.parse(text) as unknown);
    if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('it is not a JSON object');
    return { text, value: value as Json };
  } catch (error) {
    // Never overwrite a file we cannot read whole: the person's other settings are in it.
    throw new ExecutorError(
      'INVALID_INPUT',
      `${file} is not valid JSON (${(error as Error).message}); fix it by hand, then connect again. Nothing was changed.`,
      {
        file,
      },
    );
  }
}

interface ClientFiles {
  settings: string;
  mcp: string;
  event: 'PreToolUse' | 'BeforeTool';
  matcher: string;
  /** Gemini CLI counts hook timeouts in milliseconds, Claude Code in seconds. */
  timeoutUnit: 's' | 'ms';
}

function filesOf(client: HookClientName, scope: ConnectScope, home = os.homedir()): ClientFiles {
  if (client === 'claude-code') {
    return 'user' in scope
      ? {
          settings: path.join(home, '.claude', 'settings.json'),
          mcp: path.join(home, '.claude.json'),
          event: 'PreToolUse',
          matcher: '*',
          timeoutUnit: 's',
        }
      : {
          settings: path.join(scope.project, '.claude', 'settings.local.json'),
          mcp: path.join(scope.project, '.mcp.json'),
          event: 'PreToolUse',
          matcher: '*',
          timeoutUnit: 's',
        };
  }
  const settings = 'user' in scope ? path.join(home, '.gemini', 'settings.json') : path.join(scope.project, '.gemini', 'settings.json');
  return { settings, mcp: settings, event: 'BeforeTool', matcher: '.*', timeoutUnit: 'ms' };
}

const isObject = (value: unknown): value is Json => !!value && typeof value === 'object' && !Array.isArray(value);

/**
 * Settings whose hooks or MCP servers are not in the shape the client reads would be overwritten by
 * a merge: refused whole instead, as a file that is not JSON is, so nothing of the person's is lost.
 */
function assertMergeable(file: string, settings: Json, event: string, checkHooks: boolean, checkMcp: boolean): void {
  const wrong = (what: string) => {
    throw new ExecutorError(
      'INVALID_INPUT',
      `${file}: ${what}, which is not the shape the agent reads; fix it by hand, then connect again. Nothing was changed.`,
      { file },
    );
  };
  if (checkHooks && settings.hooks !== undefined) {
    if (!isObject(settings.hooks)) wrong('"hooks" is not an object');
    const groups = (settings.hooks as Json)[event];
    if (groups !== undefined && !Array.isArray(groups)) wrong(`"hooks.${event}" is not a list`);
    if (Array.isArray(groups) && groups.some((group) => !isObject(group))) wrong(`"hooks.${event}" holds an entry that is not an object`);
  }
  if (checkMcp && settings.mcpServers !== undefined && !isObject(settings.mcpServers)) wrong('"mcpServers" is not an object');
}

function withoutOurHooks(settings: Json, event: string, changes: string[]): Json {
  const hooks = (settings.hooks ?? {}) as Json;
  const groups = Array.isArray(hooks[event]) ? (hooks[event] as Json[]) : [];
  const kept = groups
    .map((group) => {
      const inner = Array.isArray(group.hooks) ? (group.hooks as Json[]) : [];
      const others = inner.filter((hook) => !(typeof hook.command === 'string' && OUR_HOOK.test(hook.command)));
      if (others.length !== inner.length)
        changes.push(`removed the ${event} hook ${JSON.stringify(inner.find((hook) => !others.includes(hook))?.command)}`);
      return others.length ? ({ ...group, hooks: others } as Json) : null;
    })
    .filter((group): group is Json => group !== null);
  const nextHooks: Json = { ...hooks };
  if (kept.length) nextHooks[event] = kept;
  else delete nextHooks[event];
  const next: Json = { ...settings };
  if (Object.keys(nextHooks).length) next.hooks = nextHooks;
  else delete next.hooks;
  return next;
}

function withoutOurMcp(settings: Json, changes: string[]): Json {
  const servers = settings.mcpServers as Json | undefined;
  if (!servers || !isOurMcp(servers.executor)) return settings;
  const { executor: _ours, ...others } = servers;
  changes.push('removed the MCP server "executor"');
  const next: Json = { ...settings };
  if (Object.keys(others).length) next.mcpServers = others;
  else delete next.mcpServers;
  return next;
}

/** What connect (or disconnect) would change, file by file, without writing. */
export function planSettings(
  client: HookClientName,
  scope: ConnectScope,
  commands: ConnectCommands | null,
  home?: string,
): SettingsChange[] {
  const files = filesOf(client, scope, home);
  const targets = [...new Set([files.settings, files.mcp])];
  return targets.map((file) => {
    const { text, value } = readJson(file);
    assertMergeable(file, value, files.event, file === files.settings, file === files.mcp);
    const changes: string[] = [];
    let next = value;
    if (file === files.settings) {
      next = withoutOurHooks(next, files.event, changes);
      if (commands) {
        const hooks = { ...((next.hooks ?? {}) as Json) };
        const groups = Array.isArray(hooks[files.event]) ? [...(hooks[files.event] as Json[])] : [];
        // First, so Executor decides before any other hook of the person's lets a call through.
        const seconds = commands.waitSeconds + HOOK_ANSWER_MARGIN_SECONDS;
        const timeout = files.timeoutUnit === 'ms' ? seconds * 1000 : seconds;
        groups.unshift({ matcher: files.matcher, hooks: [{ type: 'command', command: commands.hook, timeout }] });
        hooks[files.event] = groups;
        next = { ...next, hooks };
        changes.push(`added the ${files.event} hook ${JSON.stringify(commands.hook)} (timeout ${timeout} ${files.timeoutUnit})`);
      }
    }
    if (file === files.mcp) {
      next = withoutOurMcp(next, changes);
      if (commands) {
        next = { ...next, mcpServers: { ...((next.mcpServers ?? {}) as Json), executor: { ...commands.mcp } } };
        changes.push(`added the MCP server "executor" (${[commands.mcp.command, ...commands.mcp.args].join(' ')})`);
      }
    }
    // Removing what connect added and adding it again is no change at all.
    const after = `${JSON.stringify(next, null, 2)}\n`;
    const unchanged = text !== null && JSON.stringify(JSON.parse(text)) === JSON.stringify(next);
    return {
      file,
      before: text,
      after: unchanged ? text : text === null && Object.keys(next).length === 0 ? null : after,
      changes: unchanged ? [] : changes,
    };
  });
}

/**
 * Writes the planned files: a copy of each as it was first (`<file>.before-executor`), then the new
 * content whole. A settings file that is a symbolic link (dotfiles kept in one folder) is written
 * where it points, so the link stays. The copy and the temporary file are created fresh (O_EXCL):
 * a project folder is often someone else's clone, and a link planted at either name would
 * otherwise have connect overwrite whatever file it points to.
 */
export function writeSettings(changes: SettingsChange[]): string[] {
  // Every file is checked before any is written, so a refusal leaves all of them as they were.
  const writes = changes
    .filter((change) => change.changes.length > 0 && change.after !== change.before)
    .map((change) => {
      const target = change.before !== null ? fs.realpathSync(change.file) : change.file;
      const mode = change.before !== null ? fs.statSync(target).mode & 0o777 : undefined;
      if (mode !== undefined && (mode & 0o222) === 0) {
        throw new ExecutorError(
          'INVALID_INPUT',
          `${target} is read-only, so Executor leaves it as it is; make it writable, then connect again. Nothing was changed.`,
          { file: target },
        );
      }
      return { change, target, mode };
    });
  const kept: string[] = [];
  for (const { change, target, mode } of writes) {
    fs.mkdirSync(path.dirname(change.file), { recursive: true });
    if (change.before !== null) {
      const copy = `${change.file}.before-executor`;
      fs.rmSync(copy, { force: true });
      fs.writeFileSync(copy, change.before, { flag: 'wx', mode: mode ?? 0o600 });
      kept.push(copy);
    }
    const temporary = `${target}.executor-${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
    fs.writeFileSync(temporary, change.after ?? '{}\n', { flag: 'wx' });
    // The file keeps the person's mode (a new file's mode would be cut by Executor's private umask).
    if (mode !== undefined) fs.chmodSync(temporary, mode);
    fs.renameSync(temporary, target);
  }
  return kept;
}
