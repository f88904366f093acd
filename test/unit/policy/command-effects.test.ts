import { describe, expect, it } from 'vitest';
import type { Evaluation } from '../../../src/domain/risk.js';
import type { CommandRunPreview, FileChangePreview } from '../../../src/domain/step-record.js';
import { limitNewFileMode, previewFileChange } from '../../../src/backup/file-changes.js';
import { rateChangeset, weighEffects } from '../../../src/policy/command-effects.js';
import { evaluateStep } from '../../../src/policy/evaluate-step.js';
import { defaultPolicy, PolicySchema, type Policy } from '../../../src/policy/policy-file.js';

function file(path: string, change: Partial<FileChangePreview> = {}): FileChangePreview {
  return {
    path,
    existedBefore: true,
    existsAfter: true,
    sizeBefore: 3,
    sizeAfter: 4,
    preHash: 'a',
    postHash: 'b',
    binary: false,
    diff: null,
    ...change,
  };
}
const added = (path: string, modeAfter = 0o644, sizeAfter = 4) =>
  file(path, { existedBefore: false, preHash: null, sizeBefore: 0, sizeAfter, modeBefore: null, modeAfter });
const deleted = (path: string) => file(path, { existsAfter: false, postHash: null, sizeAfter: 0 });

function changeset(files: FileChangePreview[], skipped: CommandRunPreview['skipped'] = []): Pick<CommandRunPreview, 'files' | 'skipped'> {
  return { files, skipped };
}

function policy(effects: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Policy {
  return PolicySchema.parse({ commands: { effects }, ...extra });
}

const autoApproved: Evaluation = {
  allowed: true,
  risk: 'HIGH',
  consent: 'none',
  reasons: ['Runs `x`.'],
  mitigations: ['Runs in a throwaway container.', 'Approved without asking: the policy auto-approves steps up to HIGH risk.'],
  reversible: true,
};

describe('commands.effects in the policy', () => {
  it('defaults to asking about secrets, .git, permissions and new executables, denying nothing, with no size limits', () => {
    expect(defaultPolicy().commands.effects).toEqual({
      deny: [],
      ask: ['secret', 'git', 'hostCode', 'permission', 'executable'],
      maxFiles: null,
      maxBytes: null,
    });
  });

  it('refuses an effect kind it does not know, and negative limits', () => {
    expect(PolicySchema.safeParse({ commands: { effects: { deny: ['remove'] } } }).success).toBe(false);
    expect(PolicySchema.safeParse({ commands: { effects: { maxFiles: -1 } } }).success).toBe(false);
    expect(PolicySchema.safeParse({ commands: { effects: { surprise: true } } }).success).toBe(false);
  });
});

describe('rateChangeset', () => {
  it('names each kind of effect once, with all its files', () => {
    const rating = rateChangeset(changeset([deleted('victim.txt'), deleted('b.txt'), added('new.txt'), file('edit.txt')]), policy());
    expect(rating.findings.map((f) => [f.kind, f.paths])).toEqual([
      ['delete', ['victim.txt', 'b.txt']],
      ['create', ['new.txt']],
      ['modify', ['edit.txt']],
    ]);
    expect(rating.findings[0]!.says).toBe('it deletes victim.txt and b.txt');
    expect(rating.risk).toBe('MEDIUM');
    expect(rating.denialReasons).toEqual([]);
  });

  it('denies a deletion in words that name the file and the policy key', () => {
    const rating = rateChangeset(changeset([deleted('victim.txt')]), policy({ deny: ['delete'] }));
    expect(rating.risk).toBe('CRITICAL');
    expect(rating.denialReasons).toEqual(['It deletes victim.txt, and the policy denies deletions (commands.effects.deny).']);
  });

  it('lists at most five paths and counts the rest', () => {
    const many = Array.from({ length: 8 }, (_, i) => deleted(`f${i}`));
    expect(rateChangeset(changeset(many), policy()).findings[0]!.says).toBe('it deletes f0, f1, f2, f3, f4 and 3 more');
  });

  it('sees a new executable, an executable bit added, and a permission change, but not a rewrite of a script that was executable already', () => {
    const rating = rateChangeset(
      changeset([
        added('py', 0o755),
        file('tool.sh', { preHash: 'same', postHash: 'same', modeBefore: 0o644, modeAfter: 0o755 }),
        file('build.sh'),
        added('notes.txt', 0o644),
      ]),
      policy(),
    );
    const byKind = Object.fromEntries(rating.findings.map((f) => [f.kind, f]));
    expect(byKind.executable?.paths).toEqual(['py', 'tool.sh']);
    expect(byKind.permission?.paths).toEqual(['tool.sh']);
    expect(byKind.permission?.says).toBe('it changes the permissions of tool.sh (0644 → 0755)');
    expect(rating.risk).toBe('HIGH');
    expect(rating.asked.map((f) => f.kind).sort()).toEqual(['executable', 'permission']);
    expect(rating.reasons).toContain(
      'It makes py and tool.sh executable, and the policy asks you about new executables (commands.effects.ask).',
    );
  });

  it('counts a set-uid bit the sandbox asked for as a permission effect, also when nothing else changed', () => {
    const asked = rateChangeset(changeset([{ ...added('py', 0o755), dropped: ['set-uid bit dropped'] }]), policy({ deny: ['permission'] }));
    expect(asked.denied.map((f) => f.kind)).toEqual(['permission']);
    expect(asked.denialReasons[0]).toMatch(
      /set-uid, set-gid or sticky bits on py \(dropped: only 0777 bits are applied\).*commands\.effects\.deny/,
    );
    const onlyTheBit = rateChangeset(changeset([], [{ path: 'tool', reason: 'set-gid bit dropped; nothing else changed' }]), policy());
    expect(onlyTheBit.findings.map((f) => f.kind)).toEqual(['permission']);
    // A hard link note is not a permission effect.
    expect(
      rateChangeset(
        changeset([{ ...added('copy'), dropped: ['hard link not recreated: comes back as a file of its own'] }]),
        policy(),
      ).findings.map((f) => f.kind),
    ).toEqual(['create']);
  });

  it('rates files under secret patterns and under .git at any depth and in any case as HIGH, naming them', () => {
    const rating = rateChangeset(
      changeset([file('app/.env.local'), file('.git/config'), added('sub/.GIT/hooks/pre-commit'), file('src/gitignore.txt')]),
      policy({ ask: [] }),
    );
    const byKind = Object.fromEntries(rating.findings.map((f) => [f.kind, f.paths]));
    // A repository's config holds remote URLs with tokens: it is a secret path as well as a git one.
    expect(byKind.secret).toEqual(['app/.env.local', '.git/config']);
    expect(byKind.git).toEqual(['.git/config', 'sub/.GIT/hooks/pre-commit']);
    expect(rating.risk).toBe('HIGH');
    expect(rating.reasons.join(' ')).toContain('app/.env.local (secret pattern ".env*")');
    expect(rating.reasons.join(' ')).toContain('inside a .git directory');
  });

  it('rates files this machine runs later (start-up files, build files, editor tasks) as the hostCode effect, asked about by default', () => {
    const rating = rateChangeset(
      changeset([file('.bashrc'), added('Makefile'), file('.vscode/tasks.json'), file('src/app.ts'), file('.git/hooks/pre-commit')]),
      policy(),
    );
    const byKind = Object.fromEntries(rating.findings.map((f) => [f.kind, f.paths]));
    expect(byKind.hostCode).toEqual(['.bashrc', 'Makefile', '.vscode/tasks.json']);
    expect(rating.asked.map((f) => f.kind)).toContain('hostCode');
    expect(rating.reasons.join(' ')).toMatch(/runs or obeys later/);
    expect(rateChangeset(changeset([file('.bashrc')]), policy({ deny: ['hostCode'] })).denied).toHaveLength(1);
  });

  it("uses the policy's own secret patterns", () => {
    const rating = rateChangeset(changeset([file('config/prod.yaml')]), policy({}, { secretGlobs: ['config/prod.*'] }));
    expect(rating.findings.map((f) => f.kind)).toContain('secret');
  });

  it('turns too many files or bytes into the size effect only when a limit is set', () => {
    const files = [added('a', 0o644, 600), added('b', 0o644, 600), deleted('c')];
    expect(rateChangeset(changeset(files), policy()).findings.map((f) => f.kind)).not.toContain('size');
    const tooMany = rateChangeset(changeset(files), policy({ maxFiles: 2, deny: ['size'] }));
    expect(tooMany.denialReasons[0]).toBe(
      'It changes 3 files, more than commands.effects.maxFiles (2), and the policy denies changes this large (commands.effects.deny).',
    );
    const tooBig = rateChangeset(changeset(files), policy({ maxBytes: 1000 }));
    expect(tooBig.findings.find((f) => f.kind === 'size')?.says).toBe('it writes 1200 bytes, more than commands.effects.maxBytes (1000)');
  });

  it('always denies a changeset with an entry that lands outside, whatever the lists say', () => {
    const rating = rateChangeset(
      changeset(
        [added('ok.txt')],
        [
          {
            path: 'sshdir/config',
            reason: '/ws/sshdir/config lands through a symbolic link on /ws/.ssh/config, which matches the secret pattern ".ssh/**".',
            blocksChangeset: true,
          },
        ],
      ),
      policy({ deny: [], ask: [] }),
    );
    expect(rating.risk).toBe('CRITICAL');
    expect(rating.refused.map((r) => r.path)).toEqual(['sshdir/config']);
    expect(rating.denialReasons[0]).toMatch(/^It writes sshdir\/config, which .*\.ssh\/config.*never applied\.$/);
  });

  it('does not count plain skipped entries (symlinks, ignored paths) as refusals', () => {
    const rating = rateChangeset(changeset([], [{ path: 'link', reason: 'symbolic links are not carried back' }]), policy());
    expect(rating.findings).toEqual([]);
    expect(rating.denialReasons).toEqual([]);
  });
});

/** The preview the host makes of one existing file changing from `before` to `after`. */
function rewritten(path: string, before: string | Buffer, after: string | Buffer | null): FileChangePreview {
  const bytes = (content: string | Buffer) => (typeof content === 'string' ? Buffer.from(content) : content);
  return previewFileChange({
    absolutePath: `/ws/${path}`,
    displayPath: path,
    before: bytes(before),
    after: after === null ? null : bytes(after),
    mode: 0o644,
  });
}

/** The preview of a new file a command left with `requested` permission bits, under the person's umask. */
function created(path: string, requested: number, umask = 0o022): FileChangePreview {
  return previewFileChange(
    limitNewFileMode(
      { absolutePath: `/ws/${path}`, displayPath: path, before: null, after: Buffer.from('x\n'), mode: null, modeAfter: requested },
      umask,
    ),
  );
}

const kindsOf = (files: FileChangePreview[], effects: Record<string, unknown> = {}) =>
  rateChangeset(changeset(files), policy(effects)).findings.map((f) => f.kind);
const keepMe = 'keep me\n';
const tenLines = Array.from({ length: 10 }, (_, i) => `line ${i} of the person's notes\n`).join('');

describe('content that is lost: emptied is a deletion, replaced wholesale is `replace`', () => {
  // Every way a command can take a file's content away while its name stays.
  const cases: [string, string | Buffer, string | Buffer, string[]][] = [
    [': > victim.txt (0 bytes)', keepMe, '', ['delete', 'modify']],
    ['echo > victim.txt (a newline left)', keepMe, '\n', ['delete', 'modify']],
    ["printf ' \\t\\r\\n' > victim.txt (white space left)", keepMe, ' \t\r\n', ['delete', 'modify']],
    ['truncate -s 0 on a binary file', Buffer.from([0, 1, 2, 3]), Buffer.alloc(0), ['delete', 'modify']],
    ['head -c 8 /dev/zero > victim.txt (NUL bytes left)', keepMe, Buffer.alloc(8), ['delete', 'modify']],
    ['truncate -s 100 on an emptied copy (a hole of NULs)', tenLines, Buffer.alloc(100), ['delete', 'modify']],
    ['echo x > victim.txt', keepMe, 'x\n', ['replace', 'modify']],
    ['cp other.txt victim.txt', tenLines, 'something else entirely\nand more\n', ['replace', 'modify']],
    ['ls > victim.txt', keepMe, 'a.txt\nb.txt\nvictim.txt\n', ['replace', 'modify']],
    ['head -n 1 of ten lines (most of it cut away)', tenLines, tenLines.split('\n')[0] + '\n', ['replace', 'modify']],
    ['a binary file rewritten', Buffer.from([0, 1, 2, 3]), Buffer.from([0, 0xff, 0xfe, 7]), ['replace', 'modify']],
    ['one line of ten edited', tenLines, tenLines.replace('line 3', 'LINE 3'), ['modify']],
    ['lines appended', keepMe, `${keepMe}more\n`, ['modify']],
    ['line endings changed to CRLF', tenLines, tenLines.replace(/\n/g, '\r\n'), ['modify']],
    ['lines reordered (sort)', tenLines, tenLines.split('\n').reverse().join('\n'), ['modify']],
    ['a blank file filled', '\n\n', 'content\n', ['modify']],
  ];
  it.each(cases)('%s', (_name, before, after, kinds) => {
    expect(kindsOf([rewritten('victim.txt', before, after)]).sort()).toEqual([...kinds].sort());
  });

  it('denies emptying under effects.deny ["delete"], in words that say the file is emptied', () => {
    const rating = rateChangeset(changeset([rewritten('victim.txt', keepMe, '')]), policy({ deny: ['delete'] }));
    expect(rating.risk).toBe('CRITICAL');
    expect(rating.denialReasons).toEqual(['It empties victim.txt, and the policy denies deletions (commands.effects.deny).']);
    const both = rateChangeset(changeset([deleted('a.txt'), rewritten('victim.txt', keepMe, '\n')]), policy({ deny: ['delete'] }));
    expect(both.denialReasons).toEqual([
      'It deletes a.txt, and empties victim.txt, and the policy denies deletions (commands.effects.deny).',
    ]);
  });

  it('counts emptying by size alone, even in a preview that carries no contentLoss', () => {
    expect(kindsOf([file('victim.txt', { sizeBefore: 8, sizeAfter: 0 })])).toContain('delete');
  });

  it('denies wholesale replacement only when the policy names `replace`, saying how much remains', () => {
    const replaced = [
      rewritten('victim.txt', keepMe, 'x\n'),
      rewritten('notes.md', tenLines, tenLines.split('\n').slice(0, 3).join('\n')),
      rewritten('logo.png', Buffer.from([0, 1]), Buffer.from([0, 2])),
    ];
    expect(rateChangeset(changeset(replaced), policy({ deny: ['delete'] })).denied).toEqual([]);
    const rating = rateChangeset(changeset(replaced), policy({ deny: ['replace'] }));
    expect(rating.denialReasons).toEqual([
      'It replaces the content of victim.txt (none of its old lines remain), notes.md (30% of its old content remains) and logo.png (binary: what remains of it cannot be shown), and the policy denies replacing the content of existing files (commands.effects.deny).',
    ]);
    expect(PolicySchema.parse({ commands: { effects: { ask: ['replace'] } } }).commands.effects.ask).toEqual(['replace']);
  });

  it('does not call a deleted or untouched file emptied or replaced', () => {
    expect(kindsOf([rewritten('victim.txt', keepMe, null)])).toEqual(['delete']);
    expect(rewritten('victim.txt', keepMe, keepMe).contentLoss).toBeUndefined();
    expect(rewritten('empty.txt', '', 'now some\n').contentLoss).toBeUndefined();
  });
});

describe("new files are never more open than the person's umask allows", () => {
  it('creates a file that asked for 0666 under umask 022 as 0644, says what was dropped, and rates it a permission effect', () => {
    const preview = created('new.txt', 0o666);
    expect(preview).toMatchObject({ modeBefore: null, modeAfter: 0o644, modeRequested: 0o666 });
    expect(preview.dropped).toEqual(['group write, others write dropped: the command asked for 0666, your umask 0022 makes it 0644']);
    const rating = rateChangeset(changeset([preview, created('d/f', 0o666)]), policy());
    const permission = rating.findings.find((f) => f.kind === 'permission')!;
    expect(permission.paths).toEqual(['new.txt', 'd/f']);
    expect(permission.says).toBe(
      'it asks for wider permissions than your umask gives new files on new.txt (0666, created 0644) and d/f (0666, created 0644); dropped: group write, others write',
    );
    // permission is in the default ask list: an auto-approval is taken away.
    expect(rating.asked.map((f) => f.kind)).toEqual(['permission']);
    expect(weighEffects(autoApproved, rating).consent).toBe('confirm');
  });

  it('honours a stricter umask too (077 keeps group and others out), and an executable asked for stays executable for the owner', () => {
    expect(created('script.sh', 0o777, 0o077)).toMatchObject({ modeAfter: 0o700, modeRequested: 0o777 });
    expect(created('readme', 0o644, 0o077).modeAfter).toBe(0o600);
  });

  it('says nothing when the command asked for no more than the umask gives', () => {
    const preview = created('ok.txt', 0o644);
    expect(preview.modeRequested).toBeUndefined();
    expect(preview.dropped).toBeUndefined();
    expect(kindsOf([preview])).toEqual(['create']);
  });

  it('denies a world-writable file outright under effects.deny ["permission"]', () => {
    const rating = rateChangeset(changeset([created('new.txt', 0o777)]), policy({ deny: ['permission'] }));
    expect(rating.denialReasons[0]).toMatch(
      /^It asks for wider permissions than your umask gives new files on new\.txt \(0777, created 0755\); dropped: group write, others write, and the policy denies permission changes/,
    );
  });

  it('names a file left without read or write for the person, new or changed', () => {
    const rating = rateChangeset(
      changeset([
        created('locked', 0o000),
        file('notes.txt', { preHash: 's', postHash: 's', modeBefore: 0o644, modeAfter: 0o444 }),
        created('ro.txt', 0o444),
      ]),
      policy(),
    );
    const permission = rating.findings.find((f) => f.kind === 'permission')!;
    expect(permission.says).toContain(
      'it leaves locked (0000), notes.txt (0444) and ro.txt (0444) without read or write permission for you',
    );
    // A mode change that leaves the owner's read and write alone is not called that.
    expect(
      rateChangeset(changeset([file('a', { preHash: 's', postHash: 's', modeBefore: 0o600, modeAfter: 0o640 })]), policy()).findings[0]!
        .says,
    ).toBe('it changes the permissions of a (0600 → 0640)');
  });

  it("does not call git's read-only objects a lock-out: they are the git effect's, said in git words; a 0000 object still is", () => {
    const objectPath = `.git/objects/ab/${'c'.repeat(38)}`;
    const rating = rateChangeset(
      changeset([created(objectPath, 0o444), created('.git/objects/de/f0', 0o000), created('ro.txt', 0o444)]),
      policy(),
    );
    const permission = rating.findings.find((f) => f.kind === 'permission')!;
    expect(permission.paths).toEqual(['.git/objects/de/f0', 'ro.txt']);
    const git = rating.findings.find((f) => f.kind === 'git')!;
    expect(git.says).toMatch(/^git in \.git: 2 new objects; 2 files inside \.git in all; it changes /);
  });
});

describe('weighEffects', () => {
  it('denies a step whose changeset has a denied effect, keeping the reasons in words', () => {
    const weighed = weighEffects(autoApproved, rateChangeset(changeset([deleted('victim.txt')]), policy({ deny: ['delete'] })));
    expect(weighed).toMatchObject({ allowed: false, consent: 'deny', risk: 'CRITICAL' });
    expect(weighed.reasons).toContain('It deletes victim.txt, and the policy denies deletions (commands.effects.deny).');
  });

  it('takes away an auto-approval when an effect is one the policy asks about, and drops the "approved without asking" line', () => {
    const weighed = weighEffects(autoApproved, rateChangeset(changeset([file('.git/config')]), policy()));
    expect(weighed).toMatchObject({ allowed: true, consent: 'confirm', risk: 'HIGH' });
    expect(weighed.mitigations).toEqual(['Runs in a throwaway container.']);
    expect(weighed.reasons.at(-1)).toMatch(/what it changes needs your consent/);
  });

  it('takes away an auto-approval when the effects are riskier than the command line', () => {
    const medium: Evaluation = { ...autoApproved, risk: 'MEDIUM' };
    const weighed = weighEffects(medium, rateChangeset(changeset([file('.git/config')]), policy({ ask: [] })));
    expect(weighed).toMatchObject({ consent: 'confirm', risk: 'HIGH' });
  });

  it("takes away an approval a remembered rule or autoApprove gave, with the policy's own wording", () => {
    const hints = { risk: 'HIGH' as const, reasons: ['Runs `npm test`.'], mitigations: [] };
    const rule = {
      id: 'r1',
      kind: 'command' as const,
      prefix: ['npm', 'test'],
      root: '/ws',
      maxRisk: 'HIGH' as const,
      createdAt: '2026-01-01T00:00:00Z',
      proposer: { kind: 'person' as const },
    };
    const byRule = evaluateStep(hints, defaultPolicy(), true, [rule]);
    const byLevel = evaluateStep(hints, PolicySchema.parse({ autoApprove: 'HIGH' }), true);
    for (const evaluation of [byRule, byLevel]) {
      expect(evaluation.consent).toBe('none');
      const weighed = weighEffects(evaluation, rateChangeset(changeset([added('.git/hooks/pre-commit', 0o755)]), policy()));
      expect(weighed.consent).toBe('confirm');
      expect(weighed.mitigations.join(' ')).not.toMatch(/without asking/);
    }
  });

  it('leaves an auto-approval for effects the policy lets through', () => {
    const weighed = weighEffects(autoApproved, rateChangeset(changeset([file('edit.txt'), added('new.txt')]), policy()));
    expect(weighed).toEqual(autoApproved);
  });

  it('keeps a step that already needs consent at confirm, and a denied step denied', () => {
    const confirm: Evaluation = { ...autoApproved, consent: 'confirm', mitigations: [] };
    expect(weighEffects(confirm, rateChangeset(changeset([file('.git/config')]), policy())).consent).toBe('confirm');
    const denied: Evaluation = { ...autoApproved, allowed: false, consent: 'deny', risk: 'CRITICAL' };
    expect(weighEffects(denied, rateChangeset(changeset([]), policy()))).toBe(denied);
  });
});
