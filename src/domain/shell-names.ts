/**
 * Programs that read their arguments as a POSIX-like shell's command line (`-c '…'`, a script). One
 * list, read by the rule table (src/domain/program-runners.ts: a shell can run any program) and by the
 * shell analysis (src/policy/program-kinds.ts: a shell's `-c` text is analysed as a line of its own).
 * Pure data: it runs in the window too.
 */
export const SHELL_NAMES: readonly string[] = Object.freeze([
  'sh',
  'hush',
  'msh',
  'bash',
  'rbash',
  'dash',
  'zsh',
  'ksh',
  'mksh',
  'pdksh',
  'ash',
  'yash',
  'posh',
  'fish',
  'csh',
  'tcsh',
  'elvish',
  'nu',
  'xonsh',
  'rc',
  'oksh',
  'loksh',
  'lksh',
  'ksh93',
  'bosh',
  'jsh',
  'sash',
  'osh',
  'ysh',
  'oil',
  'es',
  'murex',
  'ion',
]);
