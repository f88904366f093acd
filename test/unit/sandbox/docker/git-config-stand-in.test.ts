import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gitConfigStandIn, isGitConfigPath } from '../../../../src/sandbox/docker/git-config-stand-in.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

const TOKEN = 'ghp_' + 'Z'.repeat(36);

/** A config as people's repositories hold them: credentials in a remote URL, a header, a helper, programs git runs. */
const REAL_CONFIG = `[core]
\trepositoryformatversion = 1
\tfilemode = true
\tbare = false
\tfsmonitor = /tmp/evil-monitor
\thooksPath = /tmp/evil-hooks
\tsshCommand = ssh -i ~/.ssh/${TOKEN}
[extensions]
\tobjectFormat = sha256
[remote "origin"]
\turl = https://x-access-token:${TOKEN}@github.com/o/r.git
\tfetch = +refs/heads/*:refs/remotes/origin/*
[http "https://github.com/"]
\textraheader = AUTHORIZATION: bearer ${TOKEN}
[credential]
\thelper = store --file /tmp/${TOKEN}
[include]
\tpath = /tmp/${TOKEN}.inc
[url "https://${TOKEN}@github.com/"]
\tinsteadOf = https://github.com/
[user]
\tname = "Pat Q. Person"
\temail = pat@example.com ; a comment
[core.sub]
\tname = ${TOKEN}
`;

function standInOf(text: string): string {
  const file = path.join(tempDir(), 'config');
  fs.writeFileSync(file, text);
  return gitConfigStandIn(file).toString('utf8');
}

describe('the .git/config stand-in a sandbox copy gets', () => {
  it('keeps what reads the repository and who commits, and nothing that holds a credential or runs a program', () => {
    const standIn = standInOf(REAL_CONFIG);
    expect(standIn).not.toContain(TOKEN);
    const settings = standIn.split('\n').filter((line) => !line.startsWith('#'));
    expect(settings.join('\n')).not.toMatch(/fsmonitor|hookspath|sshcommand|remote|url|credential|include|extraheader|insteadof/i);
    expect(standIn).toContain('\trepositoryformatversion = 1\n');
    expect(standIn).toContain('\tobjectformat = sha256\n');
    expect(standIn).toContain('\tname = "Pat Q. Person"\n');
    expect(standIn).toContain('\temail = pat@example.com\n');
    // The copy's own inodes and change times are not changes: only mtime (kept by the copy) and size count.
    expect(standIn).toContain('\tcheckstat = minimal\n');
  });

  it('is a config git reads: a sha256 repository opens with it, and git says who commits', () => {
    const repo = tempDir();
    const init = spawnSync('git', ['init', '-q', '--object-format=sha256', repo], { encoding: 'utf8' });
    expect(init.status, init.stderr).toBe(0);
    const config = path.join(repo, '.git/config');
    fs.appendFileSync(
      config,
      `[remote "origin"]\n\turl = https://${TOKEN}@example.com/r.git\n[user]\n\tname = Pat\n\temail = pat@example.com\n`,
    );
    fs.writeFileSync(config, gitConfigStandIn(config));
    const status = spawnSync('git', ['-C', repo, 'status', '--porcelain'], {
      encoding: 'utf8',
      env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' },
    });
    expect(status.status, status.stderr).toBe(0);
    const ident = spawnSync('git', ['-C', repo, 'var', 'GIT_AUTHOR_IDENT'], {
      encoding: 'utf8',
      env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' },
    });
    expect(ident.stdout).toMatch(/^Pat <pat@example\.com> /);
    expect(spawnSync('git', ['-C', repo, 'rev-parse', '--show-object-format'], { encoding: 'utf8' }).stdout.trim()).toBe('sha256');
  });

  it('whatever section, key, quoting or continuation a token sits in outside the kept keys, it never reaches the stand-in', () => {
    const section = fc.constantFrom(
      'core',
      'remote "origin"',
      'http',
      'credential',
      'url "x"',
      'include',
      'user "x"',
      'Core.sub',
      'alias',
      'filter "lfs"',
    );
    const key = fc.constantFrom(
      'url',
      'sshCommand',
      'fsmonitor',
      'helper',
      'extraheader',
      'path',
      'clean',
      'askpass',
      'editor',
      'pager',
      'x',
    );
    const line = fc
      .tuple(section, key, fc.constantFrom('', '"', '\\\n\t'))
      .map(([s, k, wrap]) => `[${s}]\n\t${k} = ${wrap}${TOKEN}${wrap === '"' ? '"' : ''}\n`);
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 6 }), (lines) => {
        expect(standInOf(`[core]\n\tbare = false\n${lines.join('')}`)).not.toContain(TOKEN);
      }),
      { numRuns: 100 },
    );
  });

  it('reads a hostile config (long runs of spaces in a header and in a value) in time linear in its length', { timeout: 5_000 }, () => {
    const run = ' '.repeat(150_000);
    // Patterns with two runs of \s* that can share the spaces took time in the square of the line's length (minutes here).
    const standIn = standInOf(`[core${run}x\n[core]\n\tbare = false${run}x\n[user]\n\tname = Pat${run}; a comment\n`);
    expect(standIn).toContain('name = Pat\n');
    expect(standIn).not.toContain('[core    ');
  });

  it("names the repository configs a copy leaves out: .git/config at any depth and a submodule's", () => {
    expect(isGitConfigPath('.git/config')).toBe(true);
    expect(isGitConfigPath('vendor/lib/.git/config')).toBe(true);
    expect(isGitConfigPath('.git/modules/lib/config')).toBe(true);
    expect(isGitConfigPath('.git/config.worktree')).toBe(false);
    expect(isGitConfigPath('config')).toBe(false);
    expect(isGitConfigPath('.github/config')).toBe(false);
  });
});
