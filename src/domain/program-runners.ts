/*
 * Programs that run other programs. A remembered command rule is a prefix of argv words, and it
 * covers every command that starts with those words: `[timeout, 60]` covers `timeout 60 rm -rf .`,
 * `[busybox, sh, -c]` covers any shell line, `[git]` covers `git -c core.pager='rm -rf .' log`.
 * So a rule may name only a program that runs itself, and a command whose words make its program
 * run another one is never covered by a rule, whatever the prefix. This is the one list of them,
 * with the reason for each: the rule dialog, the policy schema and the rule matcher read it here,
 * and the shell analysis (src/policy/shell-analysis.ts) reads it too: any command this table says can
 * run another program counts there as "could run any program".
 *
 * Pure data and string checks: it runs in the window too. Erring on the side of refusal costs a
 * question to the person; erring the other way hands an agent every program, so the lists are
 * generous.
 */

import { SHELL_NAMES } from './shell-names.js';

/** Programs whose job is to run a program, a command line or code they are handed. */
export const RUNS_OTHER_PROGRAMS: Readonly<Record<string, string>> = Object.freeze({
  ...words('runs the command that follows it', [
    'env',
    'exec',
    'command',
    'builtin',
    'nice',
    'nohup',
    'time',
    'timeout',
    'stdbuf',
    'unbuffer',
    'setsid',
    'ionice',
    'chrt',
    'taskset',
    'numactl',
    'prlimit',
    'cpulimit',
    'flock',
    'chroot',
    'unshare',
    'nsenter',
    'setpriv',
    'runcon',
    'capsh',
    'chpst',
    'softlimit',
    'envdir',
    'fakeroot',
    'fakechroot',
    'proot',
    'bwrap',
    'firejail',
    'trickle',
    'torsocks',
    'proxychains',
    'proxychains4',
    'catchsegv',
    'strace',
    'ltrace',
    'valgrind',
    'perf',
    'gdb',
    'lldb',
    'watch',
    'hyperfine',
    'entr',
    'watchexec',
    'nodemon',
    'concurrently',
    'xvfb-run',
    'dbus-launch',
    'dbus-run-session',
    'ssh-agent',
    'systemd-run',
    'start-stop-daemon',
    'daemonize',
    'script',
    'expect',
    'tmux',
    'screen',
    'at',
    'batch',
    'crontab',
    'coproc',
    'sg',
    'newgrp',
    'caffeinate',
    'faketime',
    'sshpass',
    // container entrypoints, privilege droppers, supervisors and job runners (issue 23 red team: none of these was known)
    'gosu',
    'su-exec',
    'tini',
    'dumb-init',
    'catatonit',
    'cgexec',
    's6-setuidgid',
    's6-envuidgid',
    's6-applyuidgid',
    's6-envdir',
    's6-softlimit',
    's6-setsid',
    'with-contenv',
    'setlock',
    'pgrphack',
    'lckdo',
    'chronic',
    'ifne',
    'pee',
    'mispipe',
    'sem',
    'timelimit',
    'run0',
    'please',
    'pseudo',
    'rlwrap',
    'nsjail',
    'minijail0',
    'schroot',
    'systemd-nspawn',
    'machinectl',
    'flatpak-spawn',
    'distrobox-enter',
    'toolbox',
    'tsp',
    'nq',
    'pueue',
    'mpirun',
    'mpiexec',
    'srun',
    'dtach',
    'abduco',
    'direnv',
    'asdf',
    'mise',
    'rtx',
    'pyenv',
    'rbenv',
    'nodenv',
    'dotenv',
    'env-cmd',
    'cross-env',
    'lerna',
    'tcpserver',
    'websocketd',
    'execlineb',
    'xterm',
    'x-terminal-emulator',
    'gnome-terminal',
    'konsole',
    'alacritty',
    'kitty',
    'wezterm',
    'foot',
    'tilix',
    'terminator',
    'urxvt',
    'rxvt',
    'lxterminal',
    'xfce4-terminal',
    'sudoedit',
    'vipe',
    'run-mailcap',
    // util-linux and glibc tools, and the busybox applets of the sandbox image that start the program after their own words
    'linux32',
    'linux64',
    'setarch',
    'i386',
    'x86_64',
    'uname26',
    'cttyhack',
    'envuidgid',
    'setuidgid',
    'switch_root',
    'run-init',
    'openvt',
    'uevent',
    'choom',
    'uclampset',
    'sotruss',
    'memusage',
    'xtrace',
    'ld.so',
    'tcpsvd',
    'udpsvd',
    'bootchartd',
    'scriptlive',
  ]),
  ...words('may run the program it is asked about (its loader, or the program itself)', ['ldd']),
  ...words(
    'runs the scripts, hooks or helper programs that a file, a directory or its configuration names (which the command line does not show)',
    [
      'run-parts',
      'runsv',
      'runsvdir',
      'sv',
      'svc',
      'svlogd',
      'mim',
      'crond',
      'init',
      'linuxrc',
      'httpd',
      'inetd',
      'telnetd',
      'getty',
      'agetty',
      'login',
      'sulogin',
      'ifup',
      'ifdown',
      'ifplugd',
      'udhcpc',
      'udhcpc6',
      'udhcpd',
      'zcip',
      'inotifyd',
      'acpid',
      'mdev',
      'modprobe',
      'lpd',
      'ntpd',
      'fsck',
      'mount',
      'mkfs',
      'sendmail',
      'popmaildir',
      'reformime',
      'dpkg',
      'apt',
      'apt-get',
      'aptitude',
      'installkernel',
      'invoke-rc.d',
      'service',
      'update-rc.d',
      'systemctl',
      'editor',
      'sensible-editor',
      'sensible-pager',
      'sensible-browser',
      'select-editor',
      'xdg-open',
      'pydoc',
      'corepack',
      'nix-shell',
      'nix-build',
      'adduser',
      'useradd',
    ],
  ),
  ...words('runs a command as another user', ['sudo', 'doas', 'su', 'runuser', 'pkexec']),
  ...words('runs the commands it builds from its input or arguments', ['xargs', 'parallel']),
  ...words('is a multi-call binary: its first argument picks any of its programs, shells included', ['busybox', 'toybox']),
  ...words('runs the shell code it is given', ['eval', 'source', '.', 'trap']),
  ...words('is a shell: it runs any command line it is given', [...SHELL_NAMES, 'pwsh', 'powershell', 'cmd']),
  ...words('is an interpreter: its arguments can be any code (-c, -e, a script, a module)', [
    'python',
    'pypy',
    'ipython',
    'node',
    'nodejs',
    'deno',
    'bun',
    'ts-node',
    'tsx',
    'esno',
    'perl',
    'ruby',
    'irb',
    'php',
    'lua',
    'luajit',
    'tclsh',
    'wish',
    'java',
    'jshell',
    'groovy',
    'scala',
    'kotlin',
    'rscript',
    'r',
    'julia',
    'erl',
    'escript',
    'elixir',
    'iex',
    'guile',
    'racket',
    'sbcl',
    'clisp',
    'ghci',
    'runghc',
    'runhaskell',
    'swift',
    'osascript',
    'jjs',
    'tcc',
    'octave',
    'scsh',
    'ocaml',
    'gforth',
  ]),
  ...words('runs a program text given as an argument, which can start other programs', [
    'awk',
    'gawk',
    'mawk',
    'nawk',
    'sed',
    'gsed',
    'm4',
    'dc',
    'ed',
    'ex',
    'vi',
    'vim',
    'nvim',
    'view',
    'emacs',
  ]),
  ...words('fetches and runs any package it is named', ['npx', 'pnpx', 'bunx', 'uvx', 'pipx']),
  ...words('runs a program elsewhere or in a container', ['ssh', 'docker', 'podman', 'kubectl', 'socat']),
});

/**
 * Programs that run only themselves unless given certain arguments. `options` count anywhere in
 * the command (`-c` also inside bundled short options like `-xc`, `--long` also as `--long=…` and
 * cut short, `--to-com` for `--to-command`); `subcommands` count as any word that is not an option: which word is the subcommand depends on
 * which options take values (`git -C dir clone …`), and a wrong guess must not let one through.
 */
export interface ArgumentRunners {
  why: string;
  options?: readonly string[];
  subcommands?: readonly string[];
  /** `NAME=value` arguments can redefine what it runs (make's SHELL, CC, …). */
  assignments?: true;
  /** Its first word may be a bundle of options without a dash (tar's `tar xIf …`). */
  dashlessFirstWord?: true;
}

export const RUNS_OTHER_PROGRAMS_WITH: Readonly<Record<string, ArgumentRunners>> = Object.freeze({
  find: {
    why: 'runs or deletes with -exec, -execdir, -ok, -delete and writes files with -fprint',
    options: ['-exec', '-execdir', '-ok', '-okdir', '-delete', '-fprint', '-fprint0', '-fprintf', '-fls'],
  },
  fd: { why: 'runs a command per match with -x/--exec', options: ['-x', '-X', '--exec', '--exec-batch'] },
  fdfind: { why: 'runs a command per match with -x/--exec', options: ['-x', '-X', '--exec', '--exec-batch'] },
  rg: { why: 'runs a preprocessor command with --pre', options: ['--pre'] },
  git: {
    why: 'runs any program through -c config (core.pager, alias.x=!cmd, core.fsmonitor), --exec-path, and subcommands that run commands (bisect run, submodule foreach, rebase --exec, difftool, transports)',
    options: [
      '-c',
      '--config-env',
      '--exec-path',
      '--exec',
      '-x',
      '--extcmd',
      '--upload-pack',
      '--receive-pack',
      '-O',
      '--open-files-in-pager',
      '--ext-diff',
      '--textconv',
      '--template',
      '--git-dir',
      '--work-tree',
    ],
    subcommands: [
      'bisect',
      'submodule',
      'filter-branch',
      'filter-repo',
      'difftool',
      'mergetool',
      'instaweb',
      'web--browse',
      'daemon',
      'clone',
      'fetch',
      'pull',
      'push',
      'ls-remote',
      'archive',
      'send-email',
      'config',
      'credential',
      'help',
      'var',
      'sh-i18n--envsubst',
    ],
  },
  make: {
    why: 'runs recipes from any makefile (-f, --eval) and variables (SHELL=, CC=) can replace what they run',
    options: ['-f', '--file', '--makefile', '--eval', '-E', '-e', '--environment-overrides', '-I', '--include-dir'],
    assignments: true,
  },
  gmake: {
    why: 'runs recipes from any makefile (-f, --eval) and variables (SHELL=, CC=) can replace what they run',
    options: ['-f', '--file', '--makefile', '--eval', '-E', '-e', '--environment-overrides', '-I', '--include-dir'],
    assignments: true,
  },
  just: {
    why: 'runs recipes under any shell (--shell) and from any justfile (-f)',
    options: ['--shell', '--shell-arg', '--set', '-f', '--justfile', '--command'],
  },
  rake: {
    why: 'runs any Ruby code with -e/-p and any Rakefile with -f',
    options: ['-e', '--execute', '-p', '--execute-print', '-E', '--execute-continue', '-f', '--rakefile', '-r', '--require'],
  },
  cmake: { why: 'runs scripts with -P and any command through -E env', options: ['-P', '-E'] },
  tar: {
    why: 'runs programs through --to-command, -I/--use-compress-program and --checkpoint-action',
    options: [
      '--to-command',
      '-I',
      '--use-compress-program',
      '--checkpoint-action',
      '--info-script',
      '-F',
      '--new-volume-script',
      '--rsh-command',
      '--rmt-command',
    ],
    dashlessFirstWord: true,
  },
  rsync: { why: 'runs a remote shell or program through -e/--rsh and --rsync-path', options: ['-e', '--rsh', '--rsync-path'] },
  scp: { why: 'runs a program through -S and -o ProxyCommand', options: ['-S', '-o', '-F'] },
  sftp: { why: 'runs a program through -S, -D and -o ProxyCommand', options: ['-S', '-D', '-o', '-F'] },
  zip: { why: 'runs a test command with -TT/--unzip-command', options: ['-TT', '--unzip-command'] },
  sort: { why: 'runs a compressor named with --compress-program', options: ['--compress-program'] },
  split: { why: 'runs a command per piece with --filter', options: ['--filter'] },
  wget: { why: 'runs the program named by --use-askpass to ask for a password', options: ['--use-askpass'] },
  wget2: { why: 'runs the program named by --use-askpass to ask for a password', options: ['--use-askpass'] },
  aria2c: {
    why: 'runs a command on download events (--on-download-complete and the other --on-… hooks)',
    options: [
      '--on-download-complete',
      '--on-download-error',
      '--on-download-pause',
      '--on-download-start',
      '--on-download-stop',
      '--on-bt-download-complete',
    ],
  },
  tcpdump: { why: 'runs a command on each finished capture file with -z', options: ['-z'] },
  gpg: { why: 'runs a viewer named with --photo-viewer', options: ['--photo-viewer', '--exec-path'] },
  gpg2: { why: 'runs a viewer named with --photo-viewer', options: ['--photo-viewer', '--exec-path'] },
  man: { why: 'runs the pager or preprocessor it is given', options: ['-P', '--pager', '-H', '--html', '-p', '--preprocessor'] },
  nc: { why: 'runs a program with -e/-c', options: ['-e', '-c'] },
  ncat: { why: 'runs a program with --exec, --sh-exec and --lua-exec', options: ['-e', '-c', '--exec', '--sh-exec', '--lua-exec'] },
  netcat: { why: 'runs a program with -e/-c', options: ['-e', '-c'] },
  npm: {
    why: 'fetches and runs any package (exec, x, init, create) and takes a shell or Node options from its flags',
    options: ['-c', '--call', '--script-shell', '--shell', '--node-options', '--prefix', '--userconfig', '--globalconfig'],
    subcommands: ['exec', 'x', 'explore', 'init', 'create', 'innit'],
  },
  pnpm: {
    why: 'fetches and runs any package (dlx, exec, create)',
    options: ['-c', '--shell-mode', '--script-shell', '--node-options'],
    subcommands: ['dlx', 'exec', 'create', 'x'],
  },
  yarn: { why: 'fetches and runs any package (dlx, exec, node, create)', subcommands: ['dlx', 'exec', 'node', 'create'] },
  uv: { why: 'runs any command with `uv run` and any tool with `uv tool`', subcommands: ['run', 'tool', 'tx'] },
  poetry: { why: 'runs any command with `poetry run`', subcommands: ['run', 'shell'] },
  pipenv: { why: 'runs any command with `pipenv run`', subcommands: ['run', 'shell'] },
  pdm: { why: 'runs any command with `pdm run`', subcommands: ['run'] },
  hatch: { why: 'runs any command with `hatch run`', subcommands: ['run', 'shell'] },
  conda: { why: 'runs any command with `conda run`', subcommands: ['run'] },
  bundle: { why: 'runs any command with `bundle exec`', subcommands: ['exec'] },
  cargo: {
    why: 'takes runner programs from --config, and `cargo run` runs the program it builds',
    options: ['--config', '-Z'],
    subcommands: ['run'],
  },
  go: {
    why: 'runs programs through -exec and -toolexec, `go run` runs the code it is given, and `go generate` runs the commands files name',
    options: ['-exec', '-toolexec'],
    subcommands: ['generate', 'run'],
  },
  dotnet: { why: 'runs any assembly it is named', subcommands: ['exec', 'run', 'fsi', 'script'] },
  ip: { why: 'runs any command with `ip netns exec`', options: ['exec'] },
  nix: {
    why: 'runs any program with `nix run`, `nix shell`, `nix develop` and their --command',
    options: ['-c', '--command'],
    subcommands: ['run', 'shell', 'develop', 'exec', 'bundle'],
  },
  mamba: { why: 'runs any command with `mamba run`', subcommands: ['run'] },
  micromamba: { why: 'runs any command with `micromamba run`', subcommands: ['run'] },
  install: { why: 'runs the program named by --strip-program on the files it installs', options: ['--strip-program'] },
  diff3: { why: 'runs the program named by --diff-program', options: ['--diff-program'] },
  sdiff: { why: 'runs the program named by --diff-program', options: ['--diff-program'] },
  zic: { why: 'runs the program named by -y', options: ['-y'] },
  cpio: { why: 'runs a remote shell named by --rsh-command', options: ['--rsh-command'] },
});

function words(why: string, names: readonly string[]): Record<string, string> {
  return Object.fromEntries(names.map((name) => [name, why]));
}

/**
 * The name a program is known by: without its directory, quotes, backslashes, `.exe` or version
 * suffix (`/usr/bin/python3.12` → `python`), lower case. Used only to refuse, so folding more is safe.
 */
export function programName(word: string): string {
  const base = exactProgramName(word);
  const unversioned = base.replace(/[-.]?\d+(?:\.\d+)*$/, '');
  return unversioned === '' ? base : unversioned;
}

/** The name without directory, quotes, backslashes or `.exe`, lower case, digits kept (`linux32`, `x86_64`). */
function exactProgramName(word: string): string {
  const bare = word.replace(/["'\\]/g, '');
  return bare
    .slice(bare.lastIndexOf('/') + 1)
    .toLowerCase()
    .replace(/\.exe$/, '');
}

/** The dynamic loader runs any program it is given (`/lib64/ld-linux-x86-64.so.2 /bin/rm x`). */
const LOADER = /^ld(-linux[\w.-]*|-musl[\w.-]*)?\.so(\.\d+)*$/;

/** A table's entry for a program, under its exact name (`linux32`) or its name without a version (`python3.12` → `python`). */
function lookup<T>(table: Readonly<Record<string, T>>, word: string): { name: string; entry: T } | undefined {
  for (const name of [exactProgramName(word), programName(word)]) {
    if (Object.hasOwn(table, name)) return { name, entry: table[name]! };
  }
  return undefined;
}

function optionMatches(word: string, option: string): boolean {
  if (option.startsWith('--')) {
    // GNU getopt_long (tar, sort, git's parse-options, npm) takes any unambiguous start of a long
    // option: `--to-com=sh` is `--to-command=sh`. Every start of a listed option counts.
    const name = word.includes('=') ? word.slice(0, word.indexOf('=')) : word;
    return name.length > 2 && name.startsWith('--') && option.startsWith(name);
  }
  if (option.length === 2 && option.startsWith('-')) {
    // A short option also counts bundled with others (`-xvIzstd`) or with its value attached (`-cfoo`).
    if (word === option) return true;
    return word.startsWith('-') && !word.startsWith('--') && word.slice(1).split('=')[0]!.includes(option[1]!);
  }
  return word === option || word.startsWith(`${option}=`);
}

export interface RunnerFinding {
  /** The word that makes the command able to run other programs. */
  word: string;
  why: string;
}

/**
 * Why this command (argv, program first) could run a program other than its own, or null. The
 * whole command is read, not just a prefix: a rule for `find .` must not cover `find . -exec rm {} +`.
 */
export function runsOtherPrograms(argv: readonly string[]): RunnerFinding | null {
  const program = argv[0];
  if (program === undefined) return null;
  const always = lookup(RUNS_OTHER_PROGRAMS, program);
  if (always) return { word: program, why: `\`${always.name}\` ${always.entry}` };
  if (LOADER.test(exactProgramName(program)))
    return { word: program, why: `\`${exactProgramName(program)}\` is the dynamic loader: it runs any program it is given` };
  const found = lookup(RUNS_OTHER_PROGRAMS_WITH, program);
  if (!found) return null;
  const { name, entry: spec } = found;
  const refusal = (word: string): RunnerFinding => ({ word, why: `\`${name} … ${word}\`: ${name} ${spec.why}` });
  const rest = argv.slice(1);
  if (spec.dashlessFirstWord && rest[0] !== undefined && !rest[0].startsWith('-')) {
    const bundled = rest[0];
    const hit = (spec.options ?? []).find((option) => option.length === 2 && option.startsWith('-') && bundled.includes(option[1]!));
    if (hit) return refusal(bundled);
  }
  for (const word of rest) {
    if ((spec.options ?? []).some((option) => optionMatches(word, option))) return refusal(word);
    if (spec.assignments && /^[A-Za-z_.][A-Za-z0-9_.]*\+?[:?]?=/.test(word)) return refusal(word);
  }
  const subcommand = rest.find((word) => !word.startsWith('-') && spec.subcommands?.includes(word.toLowerCase()));
  if (subcommand !== undefined) return refusal(subcommand);
  return null;
}

/** Whether some words could make this program run another one: it is in either table (or is the loader). */
export function mayRunOtherPrograms(program: string): boolean {
  return (
    lookup(RUNS_OTHER_PROGRAMS, program) !== undefined ||
    lookup(RUNS_OTHER_PROGRAMS_WITH, program) !== undefined ||
    LOADER.test(exactProgramName(program))
  );
}

/** What a rule's first word may look like: a plain program name or path, no shell syntax, no `..`. */
const PLAIN_PROGRAM = /^[A-Za-z0-9_.+/-]+$/;

/**
 * Why these words cannot be a remembered rule's prefix, in a sentence that names the word, or null.
 * Checked where rules are offered, where they arrive (the policy schema) and where they match.
 */
export function whyNotARulePrefix(prefix: readonly string[]): string | null {
  const program = prefix[0];
  if (program === undefined) return 'A command rule needs at least the program name.';
  if (!PLAIN_PROGRAM.test(program) || program.split('/').includes('..') || programName(program) === '' || program === '.') {
    return `A command rule must start with a plain program name or path; "${program}" is not one.`;
  }
  const finding = runsOtherPrograms(prefix);
  if (finding)
    return `A command rule cannot start with "${finding.word}": ${finding.why}, so the rule would cover any program. Approve such steps one at a time.`;
  return null;
}
