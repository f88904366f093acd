import fs from 'node:fs';
import path from 'node:path';
import { readRegularFileSync } from '../fs/regular-file.js';
import { globListMatcher, normalizedForMatching, type PathMatchOptions } from './path-patterns.js';

/**
 * Files that make this machine run code later: not when the step runs, but on the person's next
 * `git status`, `cd`, shell start, editor open, `npm install`, `make` or `git push`. Writing one is
 * writing a program the person will run without reading it, so such a step is at least HIGH, with
 * the reason in words. Matched like the secret globs: a pattern without `/` names a file at any
 * depth, one with `/` matches at any depth (a nested repository's `.git/hooks/` counts too).
 *
 * Deliberately not here: `.editorconfig` (formatting only), `.gitignore` (hides files, runs
 * nothing), version pins that only choose among installed tools (`.nvmrc`, `.python-version`,
 * `.ruby-version`), `Dockerfile` (its commands run inside a build container, not on this machine),
 * and ordinary source files (what the project's own tests run is the content the person reviews).
 */
export type HostCodeKind =
  | 'git'
  | 'vcs'
  | 'shell-startup'
  | 'session-startup'
  | 'directory-environment'
  | 'editor'
  | 'ai-agent'
  | 'tool-config-code'
  | 'package-manager'
  | 'dependencies'
  | 'build'
  | 'infrastructure'
  | 'interpreter-startup'
  | 'installed-code'
  | 'commit-hooks'
  | 'ci';

export interface HostCodeEntry {
  kind: HostCodeKind;
  globs: readonly string[];
  /** Completes "<path> is …": what the file is, what it makes run, and when. */
  what: string;
}

/** Most specific first: the first entry that matches gives the reason. */
export const HOST_CODE_PATHS: readonly HostCodeEntry[] = [
  {
    kind: 'git',
    globs: ['.git/hooks/**', '.git/modules/**/hooks/**', '.git/worktrees/*/hooks/**', '.githooks/**'],
    what: 'a Git hook: Git runs it as a program on the next commit, checkout, merge, rebase or push',
  },
  {
    kind: 'git',
    globs: [
      '.git/config',
      '.git/config.worktree',
      '.git/worktrees/*/config.worktree',
      '.git/modules/**/config',
      '.gitconfig',
      '.config/git/config',
    ],
    what: "Git's configuration: settings such as core.fsmonitor, core.hooksPath, core.pager, core.sshCommand, filter drivers and aliases name programs Git runs on the next git command — git status included, which many shell prompts run on every cd",
  },
  {
    kind: 'git',
    globs: ['.gitattributes', '.git/info/attributes', '.config/git/attributes'],
    what: 'Git attributes: they attach filter, diff and merge drivers, programs Git runs on the next checkout, add, diff or status',
  },
  {
    kind: 'git',
    globs: ['.gitmodules'],
    what: 'the submodule list: it names the repositories and paths the next `git submodule update` fetches and checks out, with their own hooks and configuration',
  },
  {
    kind: 'git',
    globs: ['.lfsconfig'],
    what: 'Git LFS settings: they choose the servers and transfer agents Git LFS uses on the next checkout or push',
  },
  {
    kind: 'git',
    globs: ['.git'],
    what: 'a .git file: it points Git at another git directory, whose configuration and hooks Git then obeys in this folder',
  },
  {
    kind: 'git',
    globs: ['.git/**', '.config/git/**'],
    what: "inside Git's own repository data: it decides what Git does next (refs, index, objects, and pointers to other git directories whose configuration and hooks Git would obey)",
  },
  {
    kind: 'vcs',
    globs: ['.hg/hgrc', '.hgrc', '.hgrc.d/**', '.config/hg/**', 'mercurial.ini', 'Mercurial.ini', '.hg/hgrc.d/**'],
    what: "Mercurial's configuration: its [hooks] and [extensions] sections name programs and Python files that hg runs on the next hg command (hg status included, which many shell prompts run on every cd)",
  },
  {
    kind: 'vcs',
    globs: ['.hgsub', '.hgsubstate'],
    what: 'the Mercurial subrepository list: it names the repositories the next hg update fetches and checks out, with their own hooks and configuration',
  },
  {
    kind: 'vcs',
    globs: [
      '.hg/**',
      '.jj/**',
      '.config/jj/**',
      '.jjconfig.toml',
      '.sl/**',
      '.slconfig',
      '.config/sapling/**',
      '.bzr/**',
      '.bazaar/**',
      '.fossil-settings/**',
      '.svn/**',
      '.subversion/config',
    ],
    what: "inside a version-control system's own data or settings (Mercurial, Jujutsu, Sapling, Bazaar, Fossil, Subversion): it decides what that tool does next, and its settings name programs it runs (hooks, pagers, diff and merge tools, extensions)",
  },
  {
    kind: 'shell-startup',
    globs: [
      '.bashrc',
      '.bash_profile',
      '.bash_login',
      '.bash_logout',
      '.bash_aliases',
      '.bashrc.d/**',
      '.bash_completion',
      '.bash_completion.d/**',
      '.local/share/bash-completion/**',
      '.config/bash/**',
      '.profile',
      '.zshrc',
      '.zshenv',
      '.zprofile',
      '.zlogin',
      '.zlogout',
      '.config/zsh/**',
      '.zsh/**',
      '.zcompdump*',
      '.p10k.zsh',
      '.zfunc/**',
      '.oh-my-zsh/**',
      '.oh-my-bash/**',
      '.bash_it/**',
      '.yashrc',
      '.xonshrc',
      '.config/xonsh/**',
      '.config/nushell/**',
      'nushell/*.nu',
      '.config/elvish/**',
      '.elvish/**',
      '.config/ion/**',
      '.config/oils/**',
      '.config/starship.toml',
      'starship.toml',
      '.kshrc',
      '.mkshrc',
      '.cshrc',
      '.tcshrc',
      '.login',
      '.logout',
      '.config/fish/**',
      '.config/powershell/**',
      '*profile.ps1',
      '.tmux.conf',
      '.config/tmux/**',
      '.screenrc',
      '.config/screen/**',
      '.tmuxinator/**',
      '.config/tmuxinator/**',
      '.wezterm.lua',
      '.config/wezterm/**',
      '.config/kitty/**',
      '.config/alacritty/**',
      '.alacritty.toml',
      '.alacritty.yml',
      '.config/ghostty/**',
      '.config/zellij/**',
      '.hyper.js',
    ],
    what: "a shell start-up file (or a terminal's own): every new shell or terminal window runs the commands in it, or the program it names",
  },
  {
    kind: 'shell-startup',
    globs: ['.inputrc', '.editrc'],
    what: "the line editor's key bindings: a binding can type a whole command into every shell prompt (Enter included)",
  },
  {
    kind: 'session-startup',
    globs: [
      '.xprofile',
      '.xinitrc',
      '.xsession',
      '.xsessionrc',
      '.pam_environment',
      '.config/environment.d/**',
      '.config/autostart/**',
      '.config/systemd/user/**',
      '.local/share/applications/**',
      '.config/mimeapps.list',
      'Library/LaunchAgents/**',
      'Start Menu/Programs/Startup/**',
      '.ssh/rc',
      '.ssh/config',
      '.ssh/environment',
      '.ssh/authorized_keys*',
      '.config/i3/**',
      '.i3/**',
      '.config/sway/**',
      '.config/hypr/**',
      '.config/openbox/**',
      '.config/awesome/**',
      '.xmonad/**',
      '.config/qtile/**',
      '.xbindkeysrc',
      '.config/sxhkd/**',
      '.skhdrc',
      '.config/skhd/**',
      '.config/karabiner/**',
      '.hammerspoon/**',
    ],
    what: 'a login or session start-up file: it names programs that run at the next login, session start, ssh connection or file opening',
  },
  {
    kind: 'directory-environment',
    globs: ['.envrc', '.direnv/**', '.direnvrc', '.config/direnv/**', '.autoenv*', '.env.leave'],
    what: 'a direnv or autoenv file: it is run as a shell script when a shell enters (or leaves) this folder',
  },
  {
    kind: 'directory-environment',
    globs: [
      '.tool-versions',
      '.mise.toml',
      'mise.toml',
      '.mise.*.toml',
      'mise.*.toml',
      '.mise/**',
      'mise/config.toml',
      '.config/mise/**',
      '.rtx.toml',
      '.rtx/**',
    ],
    what: "a version manager's settings (asdf, mise): they choose which programs run as node, python and the rest, and mise runs its hooks and env scripts when a shell enters the folder",
  },
  {
    kind: 'editor',
    globs: ['.vscode/**', '*.code-workspace', '{Code,Code - Insiders,VSCodium,Cursor,Windsurf}/User/**', '.vscode-server/data/Machine/**'],
    what: 'VS Code workspace settings: tasks can run when the folder opens, and settings name programs the editor and its extensions start (terminal profiles, interpreters, linters, git)',
  },
  {
    kind: 'editor',
    globs: ['.idea/**'],
    what: 'JetBrains project settings: run configurations, external tools and startup tasks the IDE runs',
  },
  {
    kind: 'editor',
    globs: ['.devcontainer/**', '.devcontainer.json'],
    what: 'dev container settings: initializeCommand runs on this machine, and the container gets the mounts named here, when the folder is opened in a container',
  },
  {
    kind: 'editor',
    globs: [
      '.zed/**',
      '.fleet/**',
      '*.sublime-project',
      '.helix/**',
      '.config/helix/**',
      '.kakrc',
      '.config/kak/**',
      '.nova/**',
      '.theia/**',
      '.externalToolBuilders/**',
      '.project',
      '.lapce/**',
    ],
    what: 'editor project settings: tasks, build systems and language servers the editor starts',
  },
  {
    kind: 'ai-agent',
    globs: [
      '.claude/**',
      '.mcp.json',
      'mcp.json',
      'mcp_config.json',
      'mcp-config.json',
      'claude_desktop_config.json',
      '.cursor/**',
      '.windsurf/**',
      '.codeium/**',
      '.continue/**',
      '.continuerc.json',
      '.aider*',
      '.gemini/**',
      '.codex/**',
      '.amazonq/**',
      '.kiro/**',
      '.roo/**',
      '.cline/**',
      '.goose/**',
      '.config/goose/**',
      '.opencode/**',
      'opencode.json',
      '.junie/**',
      '.augment/**',
    ],
    what: "a coding agent's settings: they start MCP servers (commands run on this machine), run hooks before and after the agent's tool calls, and give the agent its standing commands and instructions, on the next agent session in this folder",
  },
  {
    kind: 'editor',
    globs: [
      '.exrc',
      '.nvimrc',
      '.nvim.lua',
      '.lvimrc',
      '.vimrc',
      '.gvimrc',
      '_vimrc',
      '_gvimrc',
      '.vim/**',
      '.config/nvim/**',
      '.emacs',
      '.emacs.el',
      '.emacs.d/**',
      '.config/emacs/**',
      '.dir-locals.el',
      '.dir-locals-2.el',
    ],
    what: 'editor start-up code (vim, neovim, Emacs): the editor runs it when it starts or opens this folder',
  },
  {
    kind: 'tool-config-code',
    globs: [
      '*.config.{js,cjs,mjs,ts,cts,mts}',
      '*.conf.{js,cjs,mjs,ts,cts,mts}',
      '.*rc.{js,cjs,mjs,ts,cts,mts}',
      '*.config.*.{js,cjs,mjs,ts,cts,mts}',
      'gulpfile.*',
      'Gulpfile.*',
      'Gruntfile.*',
      'gruntfile.*',
      'Jakefile*',
    ],
    what: "a JavaScript configuration file: tools load it as code when they start (the editor's linter or formatter on open, test runners, bundlers, task runners)",
  },
  {
    kind: 'tool-config-code',
    globs: [
      '.eslintrc*',
      '.prettierrc*',
      '.stylelintrc*',
      '.babelrc*',
      'babel.config.*',
      '.postcssrc*',
      '.mocharc*',
      '.nycrc*',
      '.c8rc*',
      '.releaserc*',
      'release.config.*',
      '.commitlintrc*',
      '.swcrc',
      '.markdownlint-cli2.*',
      'nodemon.json',
      '.nodemonrc*',
      '.pm2rc*',
      'ecosystem.config.*',
      'nx.json',
      'project.json',
      'rush.json',
      'common/config/rush/**',
    ],
    what: 'a JavaScript tool setting that names code or commands: plugins, parsers and modules loaded by path, scripts and commands the tool runs on the next lint, format, test, watch, release or task run',
  },
  {
    kind: 'tool-config-code',
    globs: [
      '.pylintrc',
      'pylintrc',
      '.flake8',
      'mypy.ini',
      '.mypy.ini',
      '.coveragerc',
      '.pytest.ini',
      '.rubocop*.yml',
      '.rspec*',
      '.solargraph.yml',
      '.reek.yml',
      'phpunit.xml*',
      '.php-cs-fixer*.php',
      '.php_cs*',
      'phpstan.neon*',
      'psalm.xml*',
      'rector.php',
      'ecs.php',
      'grumphp.yml*',
      '.golangci.{yml,yaml,toml,json}',
      '.air.toml',
      'air.toml',
      '.air.conf',
      'treefmt.toml',
      '.treefmt.toml',
      '.gdbinit',
      '.config/gdb/**',
      '.lldbinit',
      '.lldbinit-*',
    ],
    what: "a development tool's setting that loads or runs code: init hooks, plugins and modules named by path (pylint's init-hook, mypy and flake8 plugins, RuboCop's and RSpec's require, PHPUnit's bootstrap, gdb and lldb scripts, live-reload commands), on the next lint, test, debug or watch",
  },
  {
    kind: 'tool-config-code',
    globs: ['.wgetrc', '.mailcap', '.lessfilter', '.lessopen'],
    what: "a command-line tool's setting that names a program it runs: wget's use_askpass, mailcap's viewer for each kind of file, less's input filter, on the next download, file opening or page view",
  },
  {
    kind: 'package-manager',
    globs: ['package.json', 'composer.json', 'deno.json', 'deno.jsonc', 'package.json5', 'package.yaml'],
    what: 'a package manifest: its scripts (preinstall, postinstall, prepare, test, start) run on the next install, test or start',
  },
  {
    kind: 'package-manager',
    globs: [
      '.npmrc',
      '.yarnrc',
      '.yarnrc.yml',
      'bunfig.toml',
      '.bunfig.toml',
      '.pnpmfile.cjs',
      '.pnpmfile.mjs',
      '.yarn/releases/**',
      '.yarn/plugins/**',
      '.pnp.cjs',
      '.pnp.js',
      '.pnp.loader.mjs',
    ],
    what: "the package manager's settings or its own code: they can name the shell for scripts, node options such as --require of a file, yarnPath (run in place of Yarn), install hooks and the registry packages come from",
  },
  {
    kind: 'dependencies',
    globs: [
      'package-lock.json',
      'npm-shrinkwrap.json',
      'yarn.lock',
      'pnpm-lock.yaml',
      'bun.lock',
      'bun.lockb',
      'requirements*.txt',
      'Pipfile',
      'Pipfile.lock',
      'poetry.lock',
      'uv.lock',
      'Gemfile.lock',
      'Cargo.lock',
      'composer.lock',
      'go.mod',
      'go.work',
      'go.sum',
      'environment.y{a,}ml',
      '.condarc',
      'poetry.toml',
      'uv.toml',
      'pixi.lock',
      'Directory.Packages.props',
      'packages.lock.json',
      'Podfile',
      'Podfile.lock',
      'Cartfile',
      'Brewfile',
      'Brewfile.lock.json',
      'pip.conf',
      'pip.ini',
      '.pip/**',
      '.config/pip/**',
      'nuget.config',
      '.gemrc',
      '.bundle/config',
    ],
    what: 'a dependency list or its source settings: it decides which packages the next install downloads, and their install scripts run',
  },
  {
    kind: 'build',
    globs: [
      'Makefile',
      'makefile',
      'GNUmakefile',
      '*.mk',
      'justfile',
      'Justfile',
      '.justfile',
      '{T,t}askfile{,.dist}.{yml,yaml}',
      'Rakefile',
      'rakefile',
      'Rakefile.rb',
      'Gemfile',
      '*.gemspec',
      'Guardfile',
      'Capfile',
      'Vagrantfile',
      'Procfile*',
      '.foreman',
      'Tiltfile',
      'tilt_config.json',
      'skaffold.y{a,}ml',
      '.goreleaser.y{a,}ml',
      'Earthfile',
      '.lando*.yml',
      '.ddev/**',
      'devbox.json',
      'devenv.nix',
      'devenv.yaml',
      '.moon/**',
      'moon.yml',
      'Snakefile',
      'dvc.yaml',
      'magefile.go',
      'build.zig',
      'xmake.lua',
      'premake5.lua',
      'Setup.hs',
      '*.cabal',
      'cabal.project*',
      'stack.yaml',
      'rebar.config',
      'Makefile.PL',
      'Build.PL',
      'hatch.toml',
      '.pdm.toml',
      'pdm.toml',
      'pixi.toml',
      'pyproject.toml',
      'setup.py',
      'setup.cfg',
      'noxfile.py',
      'tox.ini',
      'build.rs',
      'Cargo.toml',
      '.cargo/config',
      '.cargo/config.toml',
      'rust-toolchain',
      'rust-toolchain.toml',
      'build.gradle',
      'build.gradle.kts',
      'settings.gradle',
      'settings.gradle.kts',
      'gradle.properties',
      'init.gradle',
      'gradle/wrapper/**',
      'gradlew',
      'gradlew.bat',
      'pom.xml',
      '.mvn/**',
      'mvnw',
      'mvnw.cmd',
      'build.sbt',
      'project/*.{sbt,scala}',
      'build.xml',
      'CMakeLists.txt',
      '*.cmake',
      'CMakePresets.json',
      'CMakeUserPresets.json',
      'configure',
      'configure.ac',
      'configure.in',
      'Makefile.am',
      'Makefile.in',
      'meson.build',
      'meson_options.txt',
      'SConstruct',
      'SConscript',
      '.bazelrc',
      'WORKSPACE',
      'WORKSPACE.bazel',
      'MODULE.bazel',
      'BUILD',
      'BUILD.bazel',
      '*.bzl',
      '*.{csproj,vbproj,fsproj,sln}',
      'Directory.Build.{props,targets}',
      '*.targets',
      'Package.swift',
      'mix.exs',
      'flake.nix',
      'shell.nix',
      'default.nix',
      '{docker-,}compose{,.*}.{yml,yaml}',
    ],
    what: 'a build or task file: the commands it names run on the next build, make, install or task run (and some IDEs run it when the project opens; Compose can mount any folder of this machine into a container)',
  },
  {
    kind: 'infrastructure',
    globs: [
      '*.tf',
      '*.tf.json',
      '*.tofu',
      '*.tofu.json',
      '.terraform/**',
      '.terraform.lock.hcl',
      '.terraformrc',
      'terraform.rc',
      'terragrunt.hcl',
      '*.pkr.hcl',
      '*.pkr.json',
      'Pulumi.y{a,}ml',
      'Pulumi.*.y{a,}ml',
      'ansible.cfg',
      '.ansible.cfg',
    ],
    what: "an infrastructure tool's code or settings: the next terraform plan runs the programs its external data sources and provisioners name, the providers in .terraform/ are programs, and the CLI settings can swap a provider for any local binary",
  },
  {
    kind: 'interpreter-startup',
    globs: [
      'conftest.py',
      'pytest.ini',
      'sitecustomize.py',
      'usercustomize.py',
      '*.pth',
      '.pythonrc*',
      '.pdbrc*',
      '.ipython/**',
      '.jupyter/**',
      '.irbrc',
      '.pryrc',
      '.Rprofile',
      'Rprofile.site',
      '.Renviron',
      'renv/activate.R',
      '.julia/config/**',
      '.octaverc',
      'startup.m',
      '.ghci',
      '.ocamlinit',
      '.sbclrc',
      '.clisprc*',
      '.racketrc',
      '.erlang',
      '.iex.exs',
      '.tclshrc',
      '.wishrc',
      '.perldb',
      '.replyrc',
      '.psqlrc*',
      '.sqliterc',
      '.mongoshrc.js',
      '.mongorc.js',
      '.jvmopts',
      '.sbtopts',
      '.sbtrc',
      '.node_repl.js',
    ],
    what: 'interpreter start-up code: an interpreter or database shell (Python, pytest, Ruby, R, Julia, GHCi, OCaml, Erlang, Elixir, psql, sqlite3, mongosh, the JVM) loads and runs it, or the commands in it, on the next start or test run',
  },
  {
    kind: 'installed-code',
    globs: [
      'node_modules/**',
      '.venv/**',
      'venv/**',
      'site-packages/**',
      'dist-packages/**',
      '.local/bin/**',
      '.cargo/bin/**',
      'go/bin/**',
      '.bun/bin/**',
      '.deno/bin/**',
      '.docker/cli-plugins/**',
      '.terraform.d/plugins/**',
      '.local/share/direnv/**',
      '.asdf/shims/**',
      '.local/share/mise/shims/**',
    ],
    what: "installed code: the project's tools, tests and shells run it without anyone reviewing it again",
  },
  {
    kind: 'commit-hooks',
    globs: [
      '.pre-commit-config.yaml',
      '.pre-commit-hooks.yaml',
      '.husky/**',
      '{.,}lefthook{,-local}.{yml,yaml,json,toml}',
      '.lefthook/**',
      '.lintstagedrc*',
      'lint-staged.config.*',
      '{.,}simple-git-hooks.*',
      '.overcommit.yml',
      '.huskyrc*',
      '.git-hooks/**',
      '.hooks/**',
    ],
    what: 'a commit-hook setting: the commands it names run on the next commit or push',
  },
  {
    kind: 'ci',
    globs: [
      '.github/workflows/**',
      '.github/actions/**',
      '.gitlab-ci.yml',
      '.gitlab/ci/**',
      '.circleci/**',
      '.travis.yml',
      'azure-pipelines.yml',
      '.azure-pipelines/**',
      'Jenkinsfile',
      '.buildkite/**',
      'bitbucket-pipelines.yml',
      '.drone.yml',
      '.woodpecker.yml',
      '.woodpecker/**',
      '{.,}appveyor.yml',
      'cloudbuild.{yml,yaml}',
      '.cirrus.yml',
      '.semaphore/**',
      '.gitea/workflows/**',
      '.forgejo/workflows/**',
      'codemagic.yaml',
      '.harness/**',
      'buildspec.yml',
      '.gitpod.yml',
    ],
    what: "a CI pipeline: its commands run on the next push, on CI machines that hold the repository's secrets",
  },
];

export interface HostCodeMatch {
  kind: HostCodeKind;
  /** The pattern that matched, for the record. */
  glob: string;
  /** The entry's words: "<path> is …". */
  what: string;
  /** One sentence, for the person: "<path> is …". */
  reason: string;
}

/** Every pattern in table order, and the first entry each belongs to: one compiled list answers for the whole table. */
const ALL_HOST_CODE_GLOBS: readonly string[] = HOST_CODE_PATHS.flatMap((entry) => entry.globs);
const ENTRY_OF_GLOB = new Map<string, HostCodeEntry>();
for (const entry of HOST_CODE_PATHS) for (const glob of entry.globs) if (!ENTRY_OF_GLOB.has(glob)) ENTRY_OF_GLOB.set(glob, entry);

/** Which entry of HOST_CODE_PATHS a root-relative path falls under, if any: the first in table order. */
export function matchHostCodePath(relativePath: string, options: PathMatchOptions = {}): HostCodeMatch | undefined {
  const normalized = normalizedForMatching(relativePath);
  if (normalized === '') return undefined;
  const glob = globListMatcher(ALL_HOST_CODE_GLOBS, options)(normalized);
  if (glob === undefined) return undefined;
  const entry = ENTRY_OF_GLOB.get(glob)!;
  return { kind: entry.kind, glob, what: entry.what, reason: `${relativePath} is ${entry.what}.` };
}

/**
 * Why touching this root-relative path makes the host run code later, or undefined when it does not.
 * The predicate for file steps and for rating a command by the files it changed.
 */
export function hostCodeReason(relativePath: string, options: PathMatchOptions = {}): string | undefined {
  return matchHostCodePath(relativePath, options)?.reason;
}

/** Git's own test for a git directory (setup.c is_git_directory): HEAD, objects/ and refs/ side by side. */
function isGitDirectory(dir: string): boolean {
  try {
    return (
      fs.statSync(path.join(dir, 'HEAD')).isFile() &&
      fs.statSync(path.join(dir, 'objects')).isDirectory() &&
      fs.statSync(path.join(dir, 'refs')).isDirectory()
    );
  } catch {
    return false;
  }
}

/** Every name Git runs from a hooks folder (githooks(5)). */
const GIT_HOOK_NAMES = new Set([
  'applypatch-msg',
  'pre-applypatch',
  'post-applypatch',
  'pre-commit',
  'pre-merge-commit',
  'prepare-commit-msg',
  'commit-msg',
  'post-commit',
  'pre-rebase',
  'post-checkout',
  'post-merge',
  'pre-push',
  'pre-receive',
  'update',
  'proc-receive',
  'post-receive',
  'post-update',
  'reference-transaction',
  'push-to-checkout',
  'pre-auto-gc',
  'post-rewrite',
  'sendemail-validate',
  'fsmonitor-watchman',
  'p4-changelist',
  'p4-prepare-changelist',
  'p4-post-changelist',
  'p4-pre-submit',
  'post-index-change',
]);

/** Git reads a config file of any size; one that names a hooks folder is a few lines. */
const MAX_GIT_CONFIG_BYTES = 256 * 1024;

/** The `core.hooksPath` values a repository's own config names (the last one wins in Git; any may have been in force). */
function configuredHooksPaths(configFile: string): string[] {
  let text: string;
  try {
    text = readRegularFileSync(configFile, { maxBytes: MAX_GIT_CONFIG_BYTES }).toString('utf8');
  } catch {
    return [];
  }
  const found: string[] = [];
  let section = '';
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.replace(/^\s+/, '');
    const header = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"[^"]*")?\s*\](.*)$/.exec(line);
    if (header) {
      section = header[1]!.toLowerCase();
      // `[core] hooksPath = x` on the header's own line counts too.
      const rest = header[2]!.trim();
      if (rest) found.push(...hooksPathOf(section, rest));
      continue;
    }
    found.push(...hooksPathOf(section, line));
  }
  return found;
}

function hooksPathOf(section: string, line: string): string[] {
  if (section !== 'core') return [];
  const entry = /^hookspath\s*=\s*(.*)$/i.exec(line.trim());
  if (!entry) return [];
  const value = entry[1]!
    .replace(/\s[;#].*$/, '')
    .trim()
    .replace(/^"(.*)"$/, '$1');
  return value ? [value] : [];
}

function isInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * hostCodeReason, plus what only the disk can tell: a git directory under another name (a bare
 * `repo.git`, or the target of a `.git` file's `gitdir:`) is obeyed like `.git/`, so its config and
 * hooks are matched as if they sat in one; and a folder a repository's `core.hooksPath` names holds
 * its hooks, whatever it is called. `root` is the real workspace root the path is relative to.
 */
export function hostCodeReasonAt(root: string, relativePath: string, options: PathMatchOptions = {}): string | undefined {
  const byName = hostCodeReason(relativePath, options);
  if (byName) return byName;
  const parts = normalizedForMatching(relativePath).split('/');
  for (let depth = parts.length - 1; depth >= 1; depth -= 1) {
    const dir = path.join(root, ...parts.slice(0, depth));
    if (!isGitDirectory(dir)) continue;
    const inside = matchHostCodePath(['.git', ...parts.slice(depth)].join('/'), options);
    const gitDir = parts.slice(0, depth).join('/');
    const what = inside?.what ?? "inside Git's own repository data, which Git obeys";
    return `${relativePath} is inside ${gitDir}, a git directory (it has HEAD, objects/ and refs/), so it counts as ${what}.`;
  }
  const target = path.join(root, ...parts);
  for (let depth = parts.length - 1; depth >= 0; depth -= 1) {
    const worktree = path.join(root, ...parts.slice(0, depth));
    for (const hooksPath of configuredHooksPaths(path.join(worktree, '.git', 'config'))) {
      // Relative to the top of the worktree, where Git runs hooks; `~/` leads out of the root, where steps cannot write.
      if (hooksPath.startsWith('~')) continue;
      const hooksDir = path.resolve(worktree, hooksPath);
      // A hooks folder that is a whole project (`hooksPath = .`) makes only hook names hooks; a folder of its own, everything in it (hooks source helpers).
      const isHook =
        hooksDir === worktree || hooksDir === root
          ? path.dirname(target) === hooksDir && GIT_HOOK_NAMES.has(path.basename(target))
          : isInside(hooksDir, target) && hooksDir !== target;
      if (isHook) {
        return `${relativePath} is in ${path.relative(root, hooksDir) || '.'}, the folder the repository's core.hooksPath names: it is a Git hook, which Git runs as a program on the next commit, checkout, merge, rebase or push.`;
      }
    }
  }
  return undefined;
}
