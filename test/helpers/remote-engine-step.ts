import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import type { CliResult } from './run-cli.js';
import { tempDir, tempSetup } from './temp-dirs.js';

/*
 * What the remote-engine tests (SSH, TLS, a socket to another machine) do around one command step: a
 * workspace holding notes.txt ("one\n"), a plan of one runCommand step `cmd` proposed through the CLI
 * against that engine, and the step as `steps show --json` gives it (its dry run ran on the engine).
 */

/** `executor sandbox status --json`, as these tests read it. */
export interface EngineStatusJson {
  engine: {
    reachable: boolean;
    endpoint: string;
    errorCode?: string;
    error?: string;
    reason?: string;
    access?: Record<string, unknown>;
  };
  ready: boolean;
}

/** One CLI call against the engine under test (its DOCKER_HOST and credentials already in the environment). */
export type EngineCli = (args: string[]) => Promise<CliResult>;

export interface ProposedCommand {
  dataDir: string;
  workspace: string;
  notes: string;
  /** The step as `steps show cmd --json` shows it, waiting for the person. */
  shown: { status: string; previewHash: string; preview: { kind: string; stdout: { text: string } } };
}

/** Proposes `command` as step `cmd` in a fresh workspace holding notes.txt, and waits for its dry run on the engine. */
export async function proposeCommandOnEngine(cli: EngineCli, command: string): Promise<ProposedCommand> {
  const { dataDir, workspace } = tempSetup();
  const notes = path.join(workspace, 'notes.txt');
  fs.writeFileSync(notes, 'one\n');
  const planFile = path.join(tempDir(), 'plan.json');
  fs.writeFileSync(planFile, JSON.stringify({ steps: [{ id: 'cmd', action: 'runCommand', args: { command } }] }));
  const proposed = await cli(['--data-dir', dataDir, 'propose', planFile, '--json']);
  expect(JSON.parse(proposed.stdout), proposed.stderr).toMatchObject([{ status: 'awaiting_consent' }]);
  const shown = await cli(['--data-dir', dataDir, 'steps', 'show', 'cmd', '--json']);
  return { dataDir, workspace, notes, shown: JSON.parse(shown.stdout) as ProposedCommand['shown'] };
}

/** Approves the step `cmd` by the preview the person saw, and expects it ran. */
export async function approveCommandOnEngine(cli: EngineCli, proposed: ProposedCommand): Promise<void> {
  const approved = await cli(['--data-dir', proposed.dataDir, 'approve', 'cmd', '--preview-hash', proposed.shown.previewHash, '--json']);
  expect(approved.status, approved.stderr).toBe(0);
}
