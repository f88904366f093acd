import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { runCliAsync } from './run-cli.js';
import { defer } from './teardown.js';
import { tempDir } from './temp-dirs.js';

/*
 * What the project-image tests (a dev container's image built by the engine) share: the images a test
 * builds removed after it, and a command proposed through the CLI and read back as the window shows it.
 */

/**
 * Removes, after the test, the project images built for `root` (the workspace it proposes in): they are cached on
 * the engine by content, and a test that needs a build to happen must not find the one an earlier run left. Only
 * this root's, by the label every project image carries: removing every image built since the test began also took
 * the one a test running beside it was about to run in ("no such image", seen in CI under Podman).
 */
export function removeProjectImagesBuiltFor(root: string): void {
  // The root's real path is read now, while it exists: read at teardown it threw for a root the test had removed
  // or moved, and the images were left.
  const roots = new Set([root, realPathOr(root)]);
  defer(() => {
    for (const labelled of roots) {
      const listed = spawnSync('docker', ['images', '-q', '--filter', `label=dev.executor.project-root=${labelled}`], { encoding: 'utf8' });
      for (const id of new Set(listed.stdout.split('\n').filter(Boolean))) spawnSync('docker', ['image', 'rm', '-f', id]);
    }
  });
}

function realPathOr(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    return dir;
  }
}

/** Proposes one command (step id `<planId>-cmd`) through the CLI, and returns the step as `steps show --json` gives it. */
export async function proposeCommandStep<T>(dataDir: string, planId: string, command: string): Promise<T> {
  const planFile = path.join(tempDir(), `${planId}.json`);
  fs.writeFileSync(planFile, JSON.stringify({ planId, steps: [{ id: `${planId}-cmd`, action: 'runCommand', args: { command } }] }));
  const proposed = await runCliAsync(['--data-dir', dataDir, 'propose', planFile, '--json'], { timeoutMs: 240_000 });
  // Exit 1: the step waits for the person (what every step of these tests does); anything else is a failure to propose.
  expect(proposed.status, proposed.stderr).toBe(1);
  const shown = await runCliAsync(['--data-dir', dataDir, '--json', 'steps', 'show', `${planId}-cmd`]);
  return shown.json<T>();
}
