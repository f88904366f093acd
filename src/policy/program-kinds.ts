/**
 * What the shell analysis (src/policy/shell-analysis.ts) knows about programs by name: which run
 * code, which start another program given in their arguments, which variables change what a name
 * runs. Lists of this kind are never complete; each entry only makes the analysis more careful.
 */

import { SHELL_NAMES } from '../domain/shell-names.js';

export const SYSTEM_PROGRAM_DIRS = new Set(['/bin', '/usr/bin', '/sbin', '/usr/sbin', '/usr/local/bin', '/usr/local/sbin']);

export const SHELLS: ReadonlySet<string> = new Set(SHELL_NAMES);

/** Programs whose job is to run code: whatever their arguments, the code they run is not on the line. */
export const INTERPRETER = new RegExp(
  '^(' +
    [
      'python[0-9.]*',
      'pypy[0-9.]*',
      'ipython[0-9.]*',
      'node(js)?',
      'deno',
      'bun',
      'ts-node',
      'tsx',
      'perl[0-9.]*',
      'ruby[0-9.]*',
      'irb',
      'jruby',
      'php[0-9.]*',
      'lua(jit|[0-9.]*)?',
      'tclsh[0-9.]*',
      'wish[0-9.]*',
      'awk',
      'gawk',
      'mawk',
      'nawk',
      'busybox-awk',
      'rscript',
      'r',
      'julia',
      'osascript',
      'pwsh',
      'powershell',
      'jshell',
      'groovy',
      'scala',
      'kotlin',
      'swift',
      'expect',
      'guile',
      'racket',
      'sbcl',
      'clisp',
      'elixir',
      'iex',
      'erl',
      'escript',
      'runghc',
      'runhaskell',
      'ghci',
      'gdb',
      'lldb',
      'sqlite3',
      'vim?',
      'nvim',
      'view',
      'ex',
      'ed',
      'emacs',
      'tmux',
      'screen',
      'at',
      'batch',
    ].join('|') +
    ')$',
  'i',
);
/**
 * Arguments that only ask a shell or interpreter about itself, whatever the program. Short options
 * are not: `sh -v`, `python3 -v` and `ed -v` turn on verbose mode and then run code from their input,
 * `vim -V` too, `sh -h` sets hashall.
 */
export const SELF_DESCRIBING = new Set(['--version', '--help']);

export const MULTI_CALL = new Set(['busybox', 'toybox']);

/** Reserved words are never programs: one read as a command name means the grammar misread the line (`! { rm x; }`). */
export const RESERVED_WORDS = new Set([
  '!',
  '{',
  '}',
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'do',
  'done',
  'while',
  'until',
  'for',
  'case',
  'esac',
  'in',
  'select',
  'function',
  '[[',
  ']]',
]);

/**
 * Variables that change which program a name runs, or make a program run other code: a line (or a
 * wrapper such as `env`) that sets one is unknowable whatever it runs next. Case matters, as it does
 * to the sandbox's Linux programs (`for path in …` is no write to PATH); npm and yarn read their
 * settings from variables of either case.
 */
export const LOOKUP_VARIABLE = new RegExp(
  '^(' +
    [
      // what a name runs, and code the shell itself runs
      'PATH',
      'ENV',
      'BASH_ENV',
      'PS[0-4]',
      'SHELLOPTS',
      'BASHOPTS',
      'EXECIGNORE',
      'PROMPT_COMMAND',
      'BASH_LOADABLES_PATH',
      'BASH_CMDS',
      'BASH_ALIASES',
      'FCEDIT',
      // code the loader and the language runtimes load
      'LD_\\w+',
      'DYLD_\\w+',
      'GLIBC_TUNABLES',
      'GCONV_PATH',
      'NODE_OPTIONS',
      'NODE_PATH',
      'NODE_REPL_EXTERNAL_MODULE',
      'PYTHON(STARTUP|PATH|HOME|INSPECT|USERBASE|BREAKPOINT)',
      'PERL5OPT',
      'PERL5LIB',
      'PERLLIB',
      'PERL5DB',
      'RUBYOPT',
      'RUBYLIB',
      'JAVA_TOOL_OPTIONS',
      '_JAVA_OPTIONS',
      'JDK_JAVA_OPTIONS',
      'CLASSPATH',
      'MAVEN_OPTS',
      'GRADLE_OPTS',
      // programs that tools start by the name a variable holds, and config files they read from HOME
      'GIT_\\w+',
      'PAGER',
      'MANPAGER',
      'MANOPT',
      'EDITOR',
      'VISUAL',
      'SUDO_EDITOR',
      'LESSOPEN',
      'LESSCLOSE',
      'LESS',
      'SSH_ASKPASS',
      'SUDO_ASKPASS',
      'TAR_OPTIONS',
      'SHELL',
      'CONFIG_SHELL',
      'MAKEFLAGS',
      'MAKESHELL',
      'MFLAGS',
      'BROWSER',
      'RSYNC_RSH',
      'RSYNC_CONNECT_PROG',
      'GOFLAGS',
      'RUSTC',
      'RUSTC_WRAPPER',
      'RUSTC_WORKSPACE_WRAPPER',
      'CARGO_\\w+',
      'CC',
      'CXX',
      'CPP',
      'LD',
      'AS',
      'AR',
      '[Nn][Pp][Mm]_[Cc][Oo][Nn][Ff][Ii][Gg]_\\w+',
      '[Yy][Aa][Rr][Nn]_\\w+',
      'COREPACK_\\w+',
      'HOME',
      'XDG_CONFIG_HOME',
      'XDG_CONFIG_DIRS',
      // more of the same (issue 23 red team): a program, a config file that names one, or code to load, per tool
      'RSH',
      'CVS_RSH',
      'MAILCAPS',
      'HGRCPATH',
      'HGEDITOR',
      'SVN_EDITOR',
      'SVN_SSH',
      'BZR_\\w+',
      'ZDOTDIR',
      'VIMINIT',
      'EXINIT',
      'MYVIMRC',
      'EMACSLOADPATH',
      'SCREENRC',
      'SYSSCREENRC',
      'WGETRC',
      'CURL_HOME',
      'GNUPGHOME',
      'KUBECONFIG',
      'AWS_CONFIG_FILE',
      'BOTO_CONFIG',
      'DOCKER_CONFIG',
      'OPENSSL_CONF',
      'OPENSSL_ENGINES',
      'OPENSSL_MODULES',
      'PHPRC',
      'PHP_INI_SCAN_DIR',
      'DOTNET_STARTUP_HOOKS',
      'CORECLR_\\w+',
      'ERL_[AZ]?FLAGS',
      'ELIXIR_ERL_OPTIONS',
      'JAVA_HOME',
      'GRADLE_USER_HOME',
      'RUSTFLAGS',
      'RUSTDOCFLAGS',
      'C(XX|PP)?FLAGS',
      'LDFLAGS',
      'CGO_\\w+',
      'GOENV',
      'GOTOOLCHAIN',
      'GOROOT',
      'BUNDLE_GEMFILE',
      'GEM_HOME',
      'GEM_PATH',
      'LUA_(INIT|PATH|CPATH)\\w*',
      'TCLLIBPATH',
      'R_(PROFILE|ENVIRON)\\w*',
      'R_LIBS\\w*',
      'JULIA_(DEPOT|LOAD)_PATH',
      'QT_PLUGIN_PATH',
      'GTK_(MODULES|PATH)',
      'GIO_EXTRA_MODULES',
    ].join('|') +
    ')$',
);

/**
 * Variables the shell itself writes as a side effect (`$_` is the last word of the previous command,
 * `REPLY` what `read` read, `BASH_REMATCH` what `[[ =~ ]]` matched): text the line can choose.
 * Arithmetic that reads one evaluates that text as an expression, which can assign PATH.
 */
export const SHELL_WRITTEN_VARIABLE = /^(_|REPLY|OPTARG|MAPFILE|COPROC\w*|BASH_\w+|READLINE_\w+|COMP_\w+|FUNCNAME|PWD|OLDPWD)$/;

/** Variables the shell keeps as numbers: arithmetic that reads them reads a number. */
export const NUMERIC_SHELL_VARIABLE = /^(RANDOM|SRANDOM|SECONDS|EPOCHSECONDS|LINENO|EUID|UID|PPID|BASHPID|SHLVL|OPTIND|COLUMNS|LINES)$/;

export interface WrapperSpec {
  /** Options that take the next word as their value. */
  valueOptions?: readonly string[];
  /** Options whose value is shell code. */
  codeOptions?: readonly string[];
  /** Plain words before the inner program (`timeout`'s duration, `chroot`'s directory). */
  leadingWords?: number;
  /** The inner command is given as words joined into shell code (`watch`, `ssh`). */
  joinsIntoCode?: boolean;
}

/** Programs that start another program named in their arguments. The inner program is still reported. */
export const WRAPPERS: Record<string, WrapperSpec> = {
  timeout: { valueOptions: ['-s', '-k', '--signal', '--kill-after'], leadingWords: 1 },
  nice: { valueOptions: ['-n', '--adjustment'] },
  nohup: {},
  setsid: {},
  gosu: { leadingWords: 1 },
  'su-exec': { leadingWords: 1 },
  tini: { valueOptions: ['-p', '-e'] },
  'dumb-init': { valueOptions: ['-r', '--rewrite'] },
  catatonit: {},
  chronic: {},
  ifne: {},
  setlock: { leadingWords: 1 },
  lckdo: { valueOptions: ['-w'], leadingWords: 1 },
  's6-setuidgid': { leadingWords: 1 },
  unbuffer: {},
  caffeinate: { valueOptions: ['-t', '-w'] },
  time: { valueOptions: ['-f', '-o', '--format', '--output'] },
  stdbuf: { valueOptions: ['-i', '-o', '-e', '--input', '--output', '--error'] },
  ionice: { valueOptions: ['-c', '-n', '-p', '-P', '-u', '--class', '--classdata'] },
  chrt: { leadingWords: 1, valueOptions: ['-T', '-P', '-D'] },
  taskset: { leadingWords: 1 },
  numactl: { valueOptions: ['-C', '-N', '-m', '-p', '-i', '--physcpubind', '--cpunodebind', '--membind', '--preferred', '--interleave'] },
  prlimit: { valueOptions: ['-p', '--pid'] },
  cpulimit: { valueOptions: ['-l', '-p', '-e', '--limit', '--pid', '--exe'] },
  sudo: {
    valueOptions: [
      '-u',
      '-g',
      '-C',
      '-D',
      '-h',
      '-p',
      '-r',
      '-t',
      '-U',
      '-T',
      '-R',
      '--user',
      '--group',
      '--chdir',
      '--prompt',
      '--role',
      '--type',
      '--other-user',
      '--host',
      '--close-from',
      '--chroot',
      '--command-timeout',
    ],
  },
  doas: { valueOptions: ['-u', '-C'] },
  pkexec: { valueOptions: ['--user'] },
  su: {
    valueOptions: ['-s', '-g', '-G', '--shell', '--group', '--supp-group', '-w', '--whitelist-environment'],
    codeOptions: ['-c', '--command', '--session-command'],
    leadingWords: 1,
  },
  runuser: {
    valueOptions: ['-u', '-s', '-g', '-G', '--user', '--shell', '--group', '--supp-group', '-w'],
    codeOptions: ['-c', '--command', '--session-command'],
  },
  sg: { codeOptions: ['-c'], leadingWords: 1 },
  chroot: { valueOptions: ['--userspec', '--groups'], leadingWords: 1 },
  setpriv: {
    valueOptions: [
      '--reuid',
      '--regid',
      '--groups',
      '--inh-caps',
      '--ambient-caps',
      '--bounding-set',
      '--securebits',
      '--pdeathsig',
      '--selinux-label',
      '--apparmor-profile',
    ],
  },
  unshare: { valueOptions: ['-S', '-G', '-R', '-w', '--setuid', '--setgid', '--root', '--wd'] },
  nsenter: { valueOptions: ['-t', '-S', '-G', '-r', '-w', '--target', '--setuid', '--setgid', '--root', '--wd'] },
  firejail: {},
  bwrap: {
    valueOptions: [
      '--bind',
      '--ro-bind',
      '--dev-bind',
      '--chdir',
      '--setenv',
      '--unsetenv',
      '--uid',
      '--gid',
      '--hostname',
      '--proc',
      '--dev',
      '--tmpfs',
      '--symlink',
      '--dir',
      '--file',
      '--seccomp',
    ],
  },
  strace: { valueOptions: ['-e', '-o', '-p', '-s', '-u', '-E', '-I', '-b', '-a', '-O', '-X', '-P'] },
  ltrace: { valueOptions: ['-e', '-o', '-p', '-s', '-u', '-a', '-n'] },
  valgrind: {},
  faketime: { valueOptions: ['-m', '-p'], leadingWords: 1 },
  flock: { valueOptions: ['-w', '-E', '--timeout', '--conflict-exit-code'], codeOptions: ['-c', '--command'], leadingWords: 1 },
  watch: { valueOptions: ['-n', '--interval', '-d', '--differences', '-q', '--equexit'], joinsIntoCode: true },
  entr: {},
  parallel: { valueOptions: ['-j', '-S', '--jobs', '--sshlogin', '--delay', '--timeout', '-a', '--arg-file'] },
  xargs: {
    valueOptions: [
      '-I',
      '-n',
      '-P',
      '-d',
      '-E',
      '-L',
      '-s',
      '-a',
      '--max-args',
      '--max-procs',
      '--delimiter',
      '--arg-file',
      '--max-lines',
      '--max-chars',
      '--process-slot-var',
      '--replace',
      '--eof',
    ],
  },
  // GNU coreutils env (a Dockerfile image's) and busybox env (the default image's); -P is BSD's search path.
  env: { valueOptions: ['-u', '-C', '-a', '-P', '--unset', '--chdir', '--argv0'], codeOptions: ['-S', '--split-string'] },
  exec: { valueOptions: ['-a'] },
  command: {},
  builtin: {},
  coproc: {},
  script: {
    valueOptions: ['-T', '-t', '-O', '-I', '-B', '-E', '--timing', '--log-out', '--log-in', '--log-io', '--echo'],
    codeOptions: ['-c', '--command'],
  },
  ssh: {
    valueOptions: [
      '-b',
      '-c',
      '-D',
      '-E',
      '-e',
      '-F',
      '-I',
      '-i',
      '-J',
      '-L',
      '-l',
      '-m',
      '-O',
      '-o',
      '-p',
      '-Q',
      '-R',
      '-S',
      '-W',
      '-w',
      '-B',
    ],
    leadingWords: 1,
    joinsIntoCode: true,
  },
  sshpass: { valueOptions: ['-p', '-f', '-d', '-P'] },
  npx: { valueOptions: ['-p', '--package'], codeOptions: ['-c', '--call'] },
  bunx: {},
  pnpx: {},
  uvx: { valueOptions: ['--from', '--with', '-p', '--python'] },
  'xvfb-run': { valueOptions: ['-n', '-s', '-f', '-e', '-p', '--server-num', '--server-args', '--auth-file', '--error-file'] },
  'dbus-run-session': {},
  'systemd-run': { valueOptions: ['-p', '-u', '-E', '--property', '--unit', '--setenv', '--working-directory', '--uid', '--gid'] },
  torsocks: {},
  proxychains: { valueOptions: ['-f'] },
  proxychains4: { valueOptions: ['-f'] },
  'start-stop-daemon': {},
  daemonize: {},
  // util-linux, glibc and busybox: personality, user, limit and terminal changers
  linux32: {},
  linux64: {},
  i386: {},
  x86_64: {},
  uname26: {},
  setarch: { leadingWords: 1 },
  cttyhack: {},
  chpst: { valueOptions: ['-u', '-U', '-b', '-e', '-/', '-n', '-l', '-L', '-m', '-d', '-o', '-p', '-f', '-c', '-r', '-t'] },
  envdir: { leadingWords: 1 },
  envuidgid: { leadingWords: 1 },
  setuidgid: { leadingWords: 1 },
  softlimit: { valueOptions: ['-a', '-c', '-d', '-f', '-l', '-m', '-o', '-p', '-r', '-s', '-t'] },
  switch_root: { valueOptions: ['-c'], leadingWords: 1 },
  'run-init': { valueOptions: ['-c', '-d'], leadingWords: 1 },
  openvt: { valueOptions: ['-c'] },
  uevent: {},
  choom: { valueOptions: ['-n', '-p', '--adjust', '--pid'] },
  uclampset: { valueOptions: ['-m', '-M', '-p', '--pid'] },
  sotruss: { valueOptions: ['-F', '-T', '-o', '--from', '--to', '--output'] },
  memusage: { valueOptions: ['-n', '-p', '-b', '-x', '-y', '--progname', '--png', '--data', '--buffer', '--x-size', '--y-size'] },
  xtrace: { valueOptions: ['--data'] },
  tcpsvd: { valueOptions: ['-c', '-C', '-i', '-x', '-u', '-l', '-b', '-B', '-t'], leadingWords: 2 },
  udpsvd: { valueOptions: ['-c', '-i', '-x', '-u', '-l'], leadingWords: 2 },
  'ld.so': {},
};

/** Package-manager subcommands that run a program by name. */
export const RUNNER_SUBCOMMANDS: Record<string, readonly string[]> = {
  npm: ['exec', 'x'],
  pnpm: ['exec', 'dlx'],
  yarn: ['exec', 'dlx'],
  bun: ['x', 'exec'],
  uv: ['run', 'tool'],
  pipx: ['run'],
  poetry: ['run'],
  pipenv: ['run'],
  bundle: ['exec'],
  conda: ['run'],
  mamba: ['run'],
  cargo: ['run'],
  go: ['run'],
  'nix-shell': [],
  nix: ['run', 'shell', 'develop'],
  kubectl: ['exec'],
  docker: ['run', 'exec'],
  podman: ['run', 'exec'],
};

/** Whether a sed script may use `e` (run a command) or the `s///e` flag. Unreadable scripts count as yes. */
export function sedRunsCommands(script: string): boolean {
  let i = 0;
  const skipDelimited = (delimiter: string): boolean => {
    while (i < script.length && script[i] !== delimiter) {
      if (script[i] === '\\') i++;
      if (script[i] === '\n' && delimiter !== '\n') return false;
      i++;
    }
    if (i >= script.length) return false;
    i++;
    return true;
  };
  while (i < script.length) {
    const c = script[i]!;
    if (/[\s;{}!,0-9$~+]/.test(c)) {
      i++;
    } else if (c === '/') {
      i++;
      if (!skipDelimited('/')) return true;
      while (/[IM]/.test(script[i] ?? '')) i++;
    } else if (c === '\\') {
      const delimiter = script[i + 1];
      if (!delimiter) return true;
      i += 2;
      if (!skipDelimited(delimiter)) return true;
    } else if (c === '#') {
      while (i < script.length && script[i] !== '\n') i++;
    } else if (c === 's' || c === 'y') {
      const delimiter = script[i + 1];
      if (!delimiter || delimiter === '\n' || delimiter === '\\') return true;
      i += 2;
      if (!skipDelimited(delimiter) || !skipDelimited(delimiter)) return true;
      const flags = /^[a-zA-Z0-9]*/.exec(script.slice(i))![0];
      if (c === 's' && flags.includes('e')) return true;
      i += flags.length;
      // `w file` as a flag takes the rest of the line.
      if (flags.includes('w')) while (i < script.length && script[i] !== '\n') i++;
    } else if ('aicrRwWbtT:'.includes(c)) {
      // text, file names and labels run to the end of the line (labels also to `;`); `a\` text goes on past escaped newlines
      i++;
      while (i < script.length && script[i] !== '\n' && !('btT:'.includes(c) && script[i] === ';'))
        i += script[i] === '\\' && 'aic'.includes(c) ? 2 : 1;
    } else if (c === 'e') {
      return true;
    } else if (/[a-zA-Z=]/.test(c)) {
      i++;
    } else {
      return true;
    }
  }
  return false;
}
