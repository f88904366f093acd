import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExecutorError } from '../../../src/domain/errors.js';
import { loadPolicy } from '../../../src/policy/policy-file.js';
import { checkWorkspaceRoot, expandHome, policyWithRoot } from '../../../src/policy/workspace-root.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/** A home with a project, a file, a data directory and a symlink to /etc in it. */
function layout() {
  const home = tempDir('executor-home-');
  const project = path.join(home, 'projects', 'site');
  fs.mkdirSync(project, { recursive: true });
  fs.writeFileSync(path.join(home, 'notes.txt'), 'x');
  const dataDir = path.join(home, '.local', 'share', 'executor');
  fs.mkdirSync(dataDir, { recursive: true });
  fs.symlinkSync('/etc', path.join(home, 'etc-link'));
  fs.symlinkSync(project, path.join(home, 'site-link'));
  return { home, project, dataDir };
}

function refusal(input: string, dataDir: string, home: string): ExecutorError {
  try {
    checkWorkspaceRoot(input, dataDir, { home });
  } catch (error) {
    expect(error).toBeInstanceOf(ExecutorError);
    expect((error as ExecutorError).code).toBe('ROOT_REFUSED');
    return error as ExecutorError;
  }
  throw new Error(`${input} was accepted`);
}

describe('checkWorkspaceRoot', () => {
  it('expands ~ on the host and answers the real folder', () => {
    const { home, project, dataDir } = layout();
    expect(checkWorkspaceRoot('~/projects/site', dataDir, { home })).toBe(project);
    expect(checkWorkspaceRoot('  ~/projects/site/  ', dataDir, { home })).toBe(project);
    expect(checkWorkspaceRoot(`${home}/projects/../projects/site`, dataDir, { home })).toBe(project);
    // A symlink is taken at its target.
    expect(checkWorkspaceRoot('~/site-link', dataDir, { home })).toBe(project);
    expect(expandHome('~', home)).toBe(home);
    expect(expandHome('~other/x', home)).toBe('~other/x');
  });

  it.each([
    ['', /No folder was given/],
    ['   ', /No folder was given/],
    ['projects/site', /is not a full path/],
    ['~other/site', /is not a full path/],
    ['~/nope', /does not exist/],
    ['~/notes.txt', /is a file, not a folder/],
    ['/', /is the whole disk/],
    ['~', /holds your whole home folder/],
    ['~/..', /holds your whole home folder/],
    ['/etc', /is a system folder \(\/etc\)/],
    ['/usr/share', /is a system folder \(\/usr\)/],
    ['~/etc-link', /is a system folder \(\/etc\)/],
    ['/var', /is a system folder/],
    ['~/.local/share/executor', /is Executor's data directory/],
    ['~/.local/share/executor/blobs', /inside Executor's data directory/],
    ['~/.local', /holds Executor's data directory/],
    ['bad\0name', /NUL character/],
  ])('refuses %j in words (ROOT_REFUSED)', (input, words) => {
    const { home, dataDir } = layout();
    fs.mkdirSync(path.join(dataDir, 'blobs'), { recursive: true });
    expect(refusal(input, dataDir, home).message).toMatch(words);
  });

  it('adds a root to the policy once, keeping the others', () => {
    const { home, project, dataDir } = layout();
    const other = path.join(home, 'other');
    fs.mkdirSync(other);
    const base = loadPolicy(dataDir);
    const once = policyWithRoot(base, project);
    expect(once.workspaceRoots).toEqual([project]);
    expect(policyWithRoot(once, project)).toBe(once);
    expect(policyWithRoot(once, other).workspaceRoots).toEqual([project, other]);
  });
});

describe('checkWorkspaceRoot: folders other users share', () => {
  /** A folder made in a fresh temp dir with these permission bits (set after creation: the umask does not apply). */
  function folderWithMode(parent: string, name: string, mode: number): string {
    const folder = path.join(parent, name);
    fs.mkdirSync(folder);
    fs.chmodSync(folder, mode);
    return folder;
  }
  const me = process.getuid!();
  const NOBODY = 65534;
  /** Owned by another user: really (chown) where this test runs as root, else by telling the check it is someone else. */
  function foreign(folder: string): { uid: number } {
    if (me === 0) {
      fs.chownSync(folder, NOBODY, NOBODY);
      return { uid: me };
    }
    return { uid: me + 1 };
  }

  it('refuses a world-writable folder, sticky or not, for every user including root, saying why and what to do', () => {
    const { home, dataDir } = layout();
    for (const mode of [0o777, 0o1777, 0o773, 0o757]) {
      const shared = folderWithMode(home, `shared-${mode.toString(8)}`, mode);
      for (const uid of [me, 0]) {
        const error = (() => {
          try {
            checkWorkspaceRoot(shared, dataDir, { home, uid });
          } catch (caught) {
            return caught as ExecutorError;
          }
          throw new Error(`${shared} (mode ${mode.toString(8)}) was accepted`);
        })();
        expect(error.code).toBe('ROOT_REFUSED');
        expect(error.message).toContain(`${shared} can be written by every user of this computer`);
        expect(error.message).toContain('Pick a folder of your own');
        expect(error.message).toContain(`chmod o-w ${shared}`);
        expect(error.details).toMatchObject({ path: shared, worldWritable: shared });
      }
      expect(refusal(shared, dataDir, home).message).toMatch(
        mode & 0o1000 ? /\(a shared folder like \/tmp\)/ : /computer: anyone could put files/,
      );
    }
  });

  it('refuses a folder inside a world-writable folder without the sticky bit, even one of your own', () => {
    const { home, dataDir } = layout();
    const open = folderWithMode(home, 'open', 0o777);
    const mine = folderWithMode(open, 'mine', 0o755);
    const deeper = path.join(mine, 'a', 'b');
    fs.mkdirSync(deeper, { recursive: true });
    for (const folder of [mine, deeper]) {
      const error = refusal(folder, dataDir, home);
      expect(error.message).toContain(
        `is inside ${open}, which every user of this computer can write to: anyone could rename ${mine} away`,
      );
      expect(error.details).toMatchObject({ worldWritable: open });
    }
  });

  it('refuses a folder inside a sticky shared folder when another user owns it or a folder on the way, and accepts your own', () => {
    const { home, dataDir } = layout();
    const sticky = folderWithMode(home, 'tmp-like', 0o1777);
    const mine = folderWithMode(sticky, 'mine', 0o700);
    expect(checkWorkspaceRoot(mine, dataDir, { home, uid: me })).toBe(mine);

    const theirs = folderWithMode(sticky, 'theirs', 0o755);
    const inTheirs = path.join(theirs, 'project');
    fs.mkdirSync(inTheirs);
    const as = foreign(theirs);
    const direct = (() => {
      try {
        checkWorkspaceRoot(theirs, dataDir, { home, ...as });
      } catch (caught) {
        return caught as ExecutorError;
      }
      throw new Error(`${theirs} was accepted`);
    })();
    expect(direct.code).toBe('ROOT_REFUSED');
    expect(direct.message).toMatch(
      new RegExp(`is inside ${sticky}, which every user of this computer can write to, and it belongs to another user \\(uid \\d+\\)`),
    );
    expect(() => checkWorkspaceRoot(inTheirs, dataDir, { home, ...as })).toThrow(new RegExp(`and ${theirs} belongs to another user`));
  });

  it('takes a link to a shared folder at its target, and leaves a private folder in a private home alone', () => {
    const { home, project, dataDir } = layout();
    const shared = folderWithMode(home, 'shared', 0o1777);
    fs.symlinkSync(shared, path.join(home, 'innocent-name'));
    expect(refusal('~/innocent-name', dataDir, home).message).toContain(`${shared} can be written by every user`);
    expect(checkWorkspaceRoot(project, dataDir, { home, uid: me })).toBe(project);
  });

  /** Account files where the folders' group (this process's own gid) has the given other members. */
  function accounts(otherMembers: string[], { primaryOf = [] as string[] } = {}) {
    const dir = tempDir('executor-accounts-');
    const gid = process.getgid!();
    const passwd = [
      `me:x:${me}:${me === gid ? 424242 : gid}:me:/home/me:/bin/sh`,
      ...primaryOf.map((name, index) => `${name}:x:${5000 + index}:${gid}::/home/${name}:/bin/sh`),
    ];
    fs.writeFileSync(path.join(dir, 'passwd'), passwd.join('\n') + '\n');
    fs.writeFileSync(path.join(dir, 'group'), `staff:x:${gid}:${['me', ...otherMembers].join(',')}\n`);
    return { passwd: path.join(dir, 'passwd'), group: path.join(dir, 'group') };
  }

  it('refuses a folder its group may write to when the group has other members, listed or by primary group', () => {
    const { home, dataDir } = layout();
    const teamFolder = folderWithMode(home, 'team', 0o770);
    for (const files of [accounts(['alice', 'bob']), accounts([], { primaryOf: ['carol'] })]) {
      let error: ExecutorError | undefined;
      try {
        checkWorkspaceRoot(teamFolder, dataDir, { home, uid: me, accounts: files });
      } catch (caught) {
        error = caught as ExecutorError;
      }
      expect(error?.code).toBe('ROOT_REFUSED');
      expect(error?.message).toMatch(/other members of its group \(gid \d+: (alice, bob|carol)\) can write to/);
      expect(error?.message).toContain(`chmod g-w ${teamFolder}`);
      expect(error?.details).toMatchObject({ groupWritable: teamFolder });
    }
  });

  it("accepts a group-writable folder whose group is the person's own private group, and refuses one inside a shared group folder", () => {
    const { home, dataDir } = layout();
    const privateGroup = folderWithMode(home, 'mine-775', 0o775);
    expect(checkWorkspaceRoot(privateGroup, dataDir, { home, uid: me, accounts: accounts([]) })).toBe(privateGroup);
    const inside = folderWithMode(privateGroup, 'project', 0o755);
    let error: ExecutorError | undefined;
    try {
      checkWorkspaceRoot(inside, dataDir, { home, uid: me, accounts: accounts(['mallory']) });
    } catch (caught) {
      error = caught as ExecutorError;
    }
    expect(error?.message).toContain(`is inside ${privateGroup}, which other members of its group`);
    expect(error?.message).toContain('any of them could rename');
  });

  it('takes a group the account files do not list as shared', () => {
    const { home, dataDir } = layout();
    const folder = folderWithMode(home, 'unknown-group', 0o770);
    const dir = tempDir('executor-accounts-');
    fs.writeFileSync(path.join(dir, 'passwd'), `me:x:${me}:1:me:/:/bin/sh\n`);
    fs.writeFileSync(path.join(dir, 'group'), 'other:x:1:\n');
    expect(() =>
      checkWorkspaceRoot(folder, dataDir, {
        home,
        uid: me,
        accounts: { passwd: path.join(dir, 'passwd'), group: path.join(dir, 'group') },
      }),
    ).toThrow(/which this computer's account files do not list/);
  });
});
