import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkpointFilePath, publishToGit, readGitWitness, splitCheckpointNotes } from '../../../../src/audit/witness/git-witness.js';
import { standingAgainstAll } from '../../../../src/audit/witness/witnessed-log.js';
import { memoryWitnessedLog } from '../../../helpers/memory-witnessed-log.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

function bareRepo(): string {
  const dir = path.join(tempDir(), 'team.git');
  execFileSync('git', ['init', '-q', '--bare', dir]);
  return dir;
}

function remoteFile(remote: string, branch: string, file: string): string {
  return execFileSync('git', ['--git-dir', remote, 'show', `${branch}:${file}`], { encoding: 'utf8' });
}

describe('a git remote as witness (a local bare repository)', () => {
  it('appends each checkpoint note to one file on the branch and pushes', async () => {
    const remote = bareRepo();
    const log = memoryWitnessedLog();
    const target = { name: 'team', remote, branch: 'audit', cloneDir: path.join(tempDir(), 'clone') };
    expect(await publishToGit(target, log)).toBeUndefined();
    log.append(3);
    expect(await publishToGit(target, log)).toEqual({ kind: 'published', size: 3 });
    expect(await publishToGit(target, log)).toEqual({ kind: 'up_to_date', size: 3 });
    log.append(4);
    expect(await publishToGit(target, log)).toEqual({ kind: 'published', size: 7 });
    const notes = splitCheckpointNotes(remoteFile(remote, 'audit', checkpointFilePath(log.origin)));
    expect(notes).toHaveLength(2);
    expect(notes[1]).toBe(log.newestCheckpoint()!.note);
    expect((await readGitWitness(target, log))?.newest?.checkpoint.size).toBe(7);
  });

  it('a push refused because the remote moved is fetched and checked, then appended on top, never forced', async () => {
    const remote = bareRepo();
    const log = memoryWitnessedLog();
    log.append(2);
    const first = { name: 'team', remote, branch: 'main', cloneDir: path.join(tempDir(), 'a') };
    expect(await publishToGit(first, log)).toMatchObject({ kind: 'published' });
    const meanwhile = log.copy();
    meanwhile.append(2);
    log.append(4);
    let refusedPushes = 0;
    // Between our commit and our push, another copy of this log pushes its own (consistent) checkpoint.
    const racing = {
      ...first,
      cloneDir: path.join(tempDir(), 'b'),
      beforePush: async () => {
        if (refusedPushes++ === 0) await publishToGit(first, meanwhile);
      },
    };
    expect(await publishToGit(racing, log)).toEqual({ kind: 'published', size: 6 });
    expect(refusedPushes).toBe(2);
    const sizes = splitCheckpointNotes(remoteFile(remote, 'main', checkpointFilePath(log.origin))).map((note) =>
      Number(note.split('\n')[1]),
    );
    expect(sizes).toEqual([2, 4, 6]);
  });

  it('a push refused because the remote moved to a fork is not retried over it', async () => {
    const remote = bareRepo();
    const log = memoryWitnessedLog();
    log.append(2);
    const first = { name: 'team', remote, branch: 'main', cloneDir: path.join(tempDir(), 'a') };
    await publishToGit(first, log);
    const fork = log.copy();
    fork.append(3, 'other');
    log.append(4);
    const racing = {
      ...first,
      cloneDir: path.join(tempDir(), 'b'),
      beforePush: async () => void (await publishToGit({ ...first, beforePush: undefined }, fork)),
    };
    expect(await publishToGit(racing, log)).toMatchObject({ kind: 'diverged', standing: 'forked' });
  });

  it('a rolled-back or forked copy of the log does not push, and says which', async () => {
    const remote = bareRepo();
    const log = memoryWitnessedLog();
    log.append(5);
    const target = { name: 'team', remote, branch: 'main', cloneDir: path.join(tempDir(), 'clone') };
    const older = log.copy();
    log.append(5);
    await publishToGit(target, log);
    expect(await publishToGit({ ...target, cloneDir: path.join(tempDir(), 'c') }, older)).toMatchObject({
      kind: 'diverged',
      standing: 'rolled_back',
    });
    const fork = log.copy();
    fork.cut(7);
    fork.append(6, 'fork');
    expect(await publishToGit(target, fork)).toMatchObject({ kind: 'diverged', standing: 'forked' });
    expect(splitCheckpointNotes(remoteFile(remote, 'main', checkpointFilePath(log.origin)))).toHaveLength(1);
  });

  it('a note on the branch that the log key did not sign is an error, not a checkpoint', async () => {
    const remote = bareRepo();
    const log = memoryWitnessedLog();
    log.append(2);
    const target = { name: 'team', remote, branch: 'main', cloneDir: path.join(tempDir(), 'clone') };
    await publishToGit(target, log);
    const impostor = memoryWitnessedLog(log.origin);
    impostor.append(9);
    const work = path.join(tempDir(), 'hand');
    execFileSync('git', ['clone', '-q', '--branch', 'main', remote, work]);
    fs.appendFileSync(path.join(work, checkpointFilePath(log.origin)), `${impostor.newestCheckpoint()!.note}\n`);
    execFileSync('git', ['-C', work, '-c', 'user.name=x', '-c', 'user.email=x@x', 'commit', '-qam', 'junk']);
    execFileSync('git', ['-C', work, 'push', '-q', 'origin', 'main']);
    const read = await readGitWitness(target, log);
    expect(read?.newestUnverified).toBe(true);
    expect(read?.notes.map((note) => note.checkpoint.size)).toEqual([2]);
    // Nothing is appended above a note that is not this log's.
    log.append(1);
    await expect(publishToGit(target, log)).rejects.toThrow(/does not verify/);
  });

  it('an unreachable remote fails with a message, without hanging', async () => {
    const log = memoryWitnessedLog();
    log.append(1);
    await expect(
      publishToGit(
        { name: 't', remote: path.join(tempDir(), 'nothing-here.git'), branch: 'main', cloneDir: path.join(tempDir(), 'c') },
        log,
      ),
    ).rejects.toThrow(/git ls-remote/);
    // git's several stderr lines become one report line: no newline for the report to escape as \\n.
    const error = await publishToGit(
      { name: 't', remote: path.join(tempDir(), 'nothing-here.git'), branch: 'main', cloneDir: path.join(tempDir(), 'c') },
      log,
    ).then(
      () => null,
      (thrown: unknown) => thrown as Error,
    );
    expect(error?.message).toMatch(/fatal: .*; /);
    expect(error?.message).not.toMatch(/\n/);
  });

  describe('a branch talked back with ordinary pushes still vouches for the largest note it ever held', () => {
    const hand = (remote: string, branch: string) => {
      const work = path.join(tempDir(), 'hand');
      execFileSync('git', ['clone', '-q', '--branch', branch, remote, work]);
      const commit = (message: string) => {
        execFileSync('git', ['-C', work, 'add', '-A']);
        execFileSync('git', ['-C', work, '-c', 'user.name=x', '-c', 'user.email=x@x', 'commit', '-qm', message]);
      };
      const push = () => execFileSync('git', ['-C', work, 'push', '-q', 'origin', `HEAD:${branch}`]);
      return { work, commit, push };
    };
    async function talkedBack(talk: (older: ReturnType<typeof memoryWitnessedLog>, remote: string, file: string) => void) {
      const remote = bareRepo();
      const log = memoryWitnessedLog();
      const target = { name: 'team', remote, branch: 'main', cloneDir: path.join(tempDir(), 'clone') };
      log.append(3);
      await publishToGit(target, log);
      const older = log.copy();
      log.append(6);
      await publishToGit(target, log);
      talk(older, remote, checkpointFilePath(log.origin));
      const read = await readGitWitness({ ...target, cloneDir: path.join(tempDir(), 'verify') }, older);
      return { read: read!, older, target, log };
    }

    it('the older copy appends its own newest note (a fast-forward): the branch still says 9 records', async () => {
      const { read, older, target } = await talkedBack((older, remote, file) => {
        const { work, commit, push } = hand(remote, 'main');
        fs.appendFileSync(path.join(work, file), `${older.newestCheckpoint()!.note}\n`);
        commit('talk back');
        push();
      });
      expect(read.newest?.checkpoint.size).toBe(3);
      const verdict = standingAgainstAll(older, read.notes, (note) => note.checkpoint);
      expect(verdict?.standing).toBe('rolled_back');
      expect(verdict?.against.checkpoint.size).toBe(9);
      // And the older copy's own publisher refuses to add to it.
      expect(await publishToGit({ ...target, cloneDir: path.join(tempDir(), 'older') }, older)).toMatchObject({
        kind: 'diverged',
        standing: 'rolled_back',
      });
    });

    it('a new commit that rewrites the file down to the older note: still 9', async () => {
      const { read, older } = await talkedBack((older, remote, file) => {
        const { work, commit, push } = hand(remote, 'main');
        fs.writeFileSync(path.join(work, file), `${older.newestCheckpoint()!.note}\n`);
        fs.writeFileSync(path.join(work, '.gitattributes'), '*.checkpoints binary -diff\n');
        commit('rewrite');
        push();
      });
      expect(standingAgainstAll(older, read.notes, (note) => note.checkpoint)?.standing).toBe('rolled_back');
    });

    it('a merge whose first parent is an orphan history holding only the older note: still 9', async () => {
      const { read, older } = await talkedBack((older, remote, file) => {
        const { work, commit, push } = hand(remote, 'main');
        execFileSync('git', ['-C', work, 'checkout', '-q', '--orphan', 'other']);
        execFileSync('git', ['-C', work, 'rm', '-rqf', '.']);
        fs.mkdirSync(path.dirname(path.join(work, file)), { recursive: true });
        fs.writeFileSync(path.join(work, file), `${older.newestCheckpoint()!.note}\n`);
        commit('orphan');
        execFileSync('git', [
          '-C',
          work,
          '-c',
          'user.name=x',
          '-c',
          'user.email=x@x',
          'merge',
          '-q',
          '-s',
          'ours',
          '--allow-unrelated-histories',
          '-m',
          'merge',
          'origin/main',
        ]);
        push();
      });
      expect(read.newest?.checkpoint.size).toBe(3);
      expect(standingAgainstAll(older, read.notes, (note) => note.checkpoint)?.standing).toBe('rolled_back');
    });

    it('the honest log itself is consistent with every note the branch holds, talked back or not', async () => {
      const { read, log } = await talkedBack((older, remote, file) => {
        const { work, commit, push } = hand(remote, 'main');
        fs.appendFileSync(path.join(work, file), `${older.newestCheckpoint()!.note}\n`);
        commit('talk back');
        push();
      });
      expect(standingAgainstAll(log, read.notes, (note) => note.checkpoint)).toMatchObject({ standing: 'consistent' });
      expect(read.notes.map((note) => note.checkpoint.size)).toEqual([3, 9]);
    });
  });
});
