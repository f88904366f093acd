import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hostCodeReason, hostCodeReasonAt, matchHostCodePath } from '../../../src/policy/host-code-paths.js';
import { HOST_CODE_PATHS } from '../../../src/policy/host-code-table.js';
import { PlannedTree } from '../../../src/policy/tree-after.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/** Files this machine runs or obeys later, by the kind of reason they must give. */
const RUNS_LATER: [string, string][] = [
  ['.git/config', 'core.fsmonitor'],
  ['.git/hooks/pre-commit', 'Git hook'],
  ['.git/hooks/post-checkout', 'Git hook'],
  ['vendor/lib/.git/hooks/pre-push', 'Git hook'],
  ['vendor/lib/.git/config', 'core.fsmonitor'],
  ['.git/modules/sub/hooks/post-merge', 'Git hook'],
  ['.git/modules/sub/config', 'core.fsmonitor'],
  ['.git/worktrees/feature/config.worktree', 'core.fsmonitor'],
  ['.git/config.worktree', 'core.fsmonitor'],
  ['.git/info/attributes', 'filter'],
  ['.git/HEAD', "Git's own repository data"],
  ['.git/commondir', "Git's own repository data"],
  ['.git', '.git file'],
  ['sub/.git', '.git file'],
  ['.gitattributes', 'filter'],
  ['docs/.gitattributes', 'filter'],
  ['.gitmodules', 'submodule'],
  ['.gitconfig', 'core.fsmonitor'],
  ['.config/git/config', 'core.fsmonitor'],
  ['.lfsconfig', 'LFS'],
  ['.githooks/pre-commit', 'Git hook'],
  ['.bashrc', 'shell start-up'],
  ['.bash_profile', 'shell start-up'],
  ['.bash_login', 'shell start-up'],
  ['.bash_logout', 'shell start-up'],
  ['.bash_aliases', 'shell start-up'],
  ['.profile', 'shell start-up'],
  ['.zshrc', 'shell start-up'],
  ['.zshenv', 'shell start-up'],
  ['.zprofile', 'shell start-up'],
  ['.zlogin', 'shell start-up'],
  ['.kshrc', 'shell start-up'],
  ['.cshrc', 'shell start-up'],
  ['.tcshrc', 'shell start-up'],
  ['.config/fish/config.fish', 'shell start-up'],
  ['.config/fish/conf.d/evil.fish', 'shell start-up'],
  ['Documents/PowerShell/Microsoft.PowerShell_profile.ps1', 'shell start-up'],
  ['.inputrc', 'key bindings'],
  ['.tmux.conf', 'shell start-up'],
  ['.config/autostart/evil.desktop', 'login'],
  ['.config/systemd/user/evil.service', 'login'],
  ['Library/LaunchAgents/com.evil.plist', 'login'],
  ['.ssh/rc', 'login'],
  ['.envrc', 'direnv'],
  ['app/.envrc', 'direnv'],
  ['.tool-versions', 'version manager'],
  ['.mise.toml', 'version manager'],
  ['mise.toml', 'version manager'],
  ['.vscode/tasks.json', 'VS Code'],
  ['.vscode/settings.json', 'VS Code'],
  ['.vscode/launch.json', 'VS Code'],
  ['project.code-workspace', 'VS Code'],
  ['.idea/workspace.xml', 'JetBrains'],
  ['.idea/runConfigurations/app.xml', 'JetBrains'],
  ['.devcontainer/devcontainer.json', 'initializeCommand'],
  ['.devcontainer.json', 'initializeCommand'],
  ['.exrc', 'editor start-up'],
  ['.nvim.lua', 'editor start-up'],
  ['.dir-locals.el', 'editor start-up'],
  ['eslint.config.js', 'JavaScript configuration'],
  ['.eslintrc.cjs', 'JavaScript configuration'],
  ['vite.config.ts', 'JavaScript configuration'],
  ['packages/web/jest.config.mjs', 'JavaScript configuration'],
  ['.prettierrc.js', 'JavaScript configuration'],
  ['gulpfile.js', 'JavaScript configuration'],
  ['package.json', 'scripts'],
  ['packages/app/package.json', 'scripts'],
  ['composer.json', 'scripts'],
  ['.npmrc', 'node options'],
  ['.yarnrc.yml', 'yarnPath'],
  ['.yarnrc', 'yarnPath'],
  ['.pnpmfile.cjs', 'install hooks'],
  ['bunfig.toml', 'package manager'],
  ['.yarn/releases/yarn-4.1.0.cjs', 'package manager'],
  ['.pnp.cjs', 'package manager'],
  ['package-lock.json', 'dependency list'],
  ['yarn.lock', 'dependency list'],
  ['requirements.txt', 'dependency list'],
  ['requirements-dev.txt', 'dependency list'],
  ['Makefile', 'build or task file'],
  ['makefile', 'build or task file'],
  ['GNUmakefile', 'build or task file'],
  ['src/rules.mk', 'build or task file'],
  ['justfile', 'build or task file'],
  ['Taskfile.yml', 'build or task file'],
  ['Rakefile', 'build or task file'],
  ['Gemfile', 'build or task file'],
  ['pyproject.toml', 'build or task file'],
  ['setup.py', 'build or task file'],
  ['build.rs', 'build or task file'],
  ['.cargo/config.toml', 'build or task file'],
  ['Cargo.toml', 'build or task file'],
  ['build.gradle.kts', 'build or task file'],
  ['gradle/wrapper/gradle-wrapper.properties', 'build or task file'],
  ['gradlew', 'build or task file'],
  ['pom.xml', 'build or task file'],
  ['.mvn/extensions.xml', 'build or task file'],
  ['CMakeLists.txt', 'build or task file'],
  ['app.csproj', 'build or task file'],
  ['Directory.Build.props', 'build or task file'],
  ['Package.swift', 'build or task file'],
  ['flake.nix', 'build or task file'],
  ['docker-compose.yml', 'Compose'],
  ['compose.override.yaml', 'Compose'],
  ['conftest.py', 'pytest'],
  ['tests/conftest.py', 'pytest'],
  ['sitecustomize.py', 'interpreter start-up'],
  ['.venv/lib/python3.12/site-packages/evil.pth', 'interpreter start-up'],
  ['.irbrc', 'interpreter start-up'],
  ['node_modules/.bin/vitest', 'installed code'],
  ['node_modules/left-pad/index.js', 'installed code'],
  ['.venv/bin/activate', 'installed code'],
  ['.local/bin/git', 'installed code'],
  // Issue 23 red team: editor helpers and test runners that run project files, and tox/nox environments.
  ['.ycm_extra_conf.py', 'YouCompleteMe'],
  ['src/.ycm_extra_conf.py', 'YouCompleteMe'],
  ['.ropeproject/config.py', 'rope'],
  ['.luarc.json', 'lua-language-server'],
  ['.busted', 'interpreter start-up'],
  ['.tox/py312/bin/python', 'installed code'],
  ['.nox/tests/bin/pytest', 'installed code'],
  ['.pre-commit-config.yaml', 'commit-hook'],
  ['.husky/pre-commit', 'commit-hook'],
  ['lefthook.yml', 'commit-hook'],
  ['.lintstagedrc.json', 'commit-hook'],
  ['.github/workflows/ci.yml', 'CI pipeline'],
  ['.github/actions/setup/action.yml', 'CI pipeline'],
  ['.gitlab-ci.yml', 'CI pipeline'],
  ['.circleci/config.yml', 'CI pipeline'],
  ['Jenkinsfile', 'CI pipeline'],
  // The outside reviewer's findings, each rated MEDIUM before.
  ['.hg/hgrc', 'Mercurial'],
  ['sub/.hg/hgrc', 'Mercurial'],
  ['.hgrc', 'Mercurial'],
  ['.Rprofile', 'interpreter start-up'],
  ['.pylintrc', 'init-hook'],
  ['.claude/settings.json', "coding agent's settings"],
  ['.claude/commands/deploy.md', "coding agent's settings"],
  ['.claude/agents/reviewer.md', "coding agent's settings"],
  ['.mcp.json', 'MCP servers'],
  ['.cursor/mcp.json', 'MCP servers'],
  ['.cursor/rules/style.mdc', "coding agent's settings"],
  ['.windsurf/workflows/x.md', "coding agent's settings"],
  ['.continue/config.yaml', "coding agent's settings"],
  ['.aider.conf.yml', "coding agent's settings"],
  ['.huskyrc', 'commit-hook'],
  ['nodemon.json', 'JavaScript tool setting'],
  ['.air.toml', 'live-reload'],
  ['karma.conf.js', 'JavaScript configuration'],
  ['protractor.conf.cjs', 'JavaScript configuration'],
  ['wdio.conf.mjs', 'JavaScript configuration'],
  ['main.tf', 'terraform plan'],
  ['modules/network/variables.tf', 'terraform plan'],
  ['stack.tf.json', 'terraform plan'],
  ['.terraform/providers/registry.terraform.io/hashicorp/aws/5.0.0/linux_amd64/terraform-provider-aws', 'terraform plan'],
  ['.bash_completion', 'shell start-up'],
  ['.bash_completion.d/git', 'shell start-up'],
  ['.config/direnv/direnvrc', 'direnv'],
  ['.config/direnv/lib/use_nix.sh', 'direnv'],
  ['.config/nushell/config.nu', 'shell start-up'],
  ['.xonshrc', 'shell start-up'],
  ['.rubocop.yml', 'RuboCop'],
  ['.mocharc.yml', 'JavaScript tool setting'],
  ['.mocharc.json', 'JavaScript tool setting'],
  ['.rspec', 'RSpec'],
  // The same classes, further: version control, agents, linters, interpreters, builds, terminals.
  ['.hg/hgrc.d/hooks.rc', 'Mercurial'],
  ['.hgsub', 'subrepository'],
  ['.jj/repo/config.toml', 'version-control'],
  ['.sl/config', 'version-control'],
  ['.gemini/settings.json', "coding agent's settings"],
  ['.codex/config.toml', "coding agent's settings"],
  ['.amazonq/mcp.json', "coding agent's settings"],
  ['.vscode/mcp.json', 'VS Code'],
  ['.eslintrc.json', 'JavaScript tool setting'],
  ['.prettierrc', 'JavaScript tool setting'],
  ['.babelrc', 'JavaScript tool setting'],
  ['.stylelintrc.yaml', 'JavaScript tool setting'],
  ['project.json', 'JavaScript tool setting'],
  ['.flake8', 'flake8'],
  ['mypy.ini', 'mypy'],
  ['.coveragerc', 'plugins'],
  ['phpunit.xml.dist', 'PHPUnit'],
  ['.php-cs-fixer.dist.php', 'plugins'],
  ['.golangci.yml', 'plugins'],
  ['.gdbinit', 'gdb'],
  ['.lldbinit', 'lldb'],
  ['.ghci', 'GHCi'],
  ['.iex.exs', 'Elixir'],
  ['.erlang', 'Erlang'],
  ['.psqlrc', 'psql'],
  ['.sqliterc', 'sqlite3'],
  ['.julia/config/startup.jl', 'Julia'],
  ['.Renviron', 'interpreter start-up'],
  ['startup.m', 'interpreter start-up'],
  ['.jvmopts', 'JVM'],
  ['go.mod', 'dependency list'],
  ['Podfile', 'dependency list'],
  ['Brewfile', 'dependency list'],
  ['environment.yml', 'dependency list'],
  ['Procfile', 'build or task file'],
  ['Tiltfile', 'build or task file'],
  ['skaffold.yaml', 'build or task file'],
  ['.goreleaser.yaml', 'build or task file'],
  ['Earthfile', 'build or task file'],
  ['devbox.json', 'build or task file'],
  ['build.zig', 'build or task file'],
  ['rebar.config', 'build or task file'],
  ['Makefile.PL', 'build or task file'],
  ['.terraformrc', 'provider'],
  ['terragrunt.hcl', 'terraform plan'],
  ['image.pkr.hcl', 'terraform plan'],
  ['.terraform.lock.hcl', 'terraform plan'],
  ['.zcompdump-host-5.9', 'shell start-up'],
  ['.p10k.zsh', 'shell start-up'],
  ['.config/starship.toml', 'shell start-up'],
  ['.wezterm.lua', 'terminal'],
  ['.config/kitty/kitty.conf', 'terminal'],
  ['.config/alacritty/alacritty.toml', 'terminal'],
  ['.config/i3/config', 'login'],
  ['.config/hypr/hyprland.conf', 'login'],
  ['.hammerspoon/init.lua', 'login'],
  ['.config/karabiner/karabiner.json', 'login'],
  ['AppData/Roaming/Microsoft/Windows/Start Menu/Programs/Startup/evil.lnk', 'login'],
  ['.ssh/environment', 'login'],
  ['.helix/languages.toml', 'editor project settings'],
  ['.docker/cli-plugins/docker-compose', 'installed code'],
  ['.terraform.d/plugins/x/y', 'installed code'],
  ['go/bin/gopls', 'installed code'],
  ['.cirrus.yml', 'CI pipeline'],
  ['.config/Code/User/settings.json', 'VS Code'],
  ['Library/Application Support/Cursor/User/tasks.json', 'VS Code'],
  ['.mailcap', 'file opening'],
  ['.wgetrc', 'use_askpass'],
  ['.gitea/workflows/ci.yml', 'CI pipeline'],
];

/** Ordinary work an agent does all day: no reason to raise it. */
const ORDINARY = [
  'README.md',
  'src/index.ts',
  'src/git/config.ts',
  'src/hooks/useThing.ts',
  'docs/bashrc-tips.md',
  'notes/profile.md',
  'config.json',
  'tsconfig.json',
  '.editorconfig',
  '.gitignore',
  '.nvmrc',
  '.python-version',
  'Dockerfile',
  'test/fixtures/data.csv',
  'src/package-info.ts',
  'lib/make.js',
  'scripts/release.md',
  'github/workflows.md',
  'my.git.notes.txt',
  'src/config.ts',
  'app/models/user.rb',
  'assets/logo.svg',
  // Near misses of the widened table: same words, not the files.
  'docs/mercurial.md',
  'src/hg/hgrc.ts',
  'src/claude/settings.ts',
  'docs/cursor.md',
  'src/terraform/main.ts',
  'terraform.md',
  'src/nodemon.ts',
  'src/mcp/server.ts',
  'docs/mcp.json.md',
  'infra/README.md',
  'src/rspec-helper.md',
  'src/startup.ts',
  'scripts/release.sh',
  'AGENTS.md',
  'CLAUDE.md',
  'src/air.ts',
  'karma.md',
  'src/eslint-rules/no-foo.ts',
  'data/environment.json',
];

describe('host-code paths', () => {
  it.each(RUNS_LATER)('%s makes the host run code later (%s)', (relativePath, words) => {
    const reason = hostCodeReason(relativePath);
    expect(reason).toBeDefined();
    expect(reason).toContain(relativePath);
    expect(reason).toContain(words);
  });

  it.each(ORDINARY)('%s is ordinary', (relativePath) => {
    expect(hostCodeReason(relativePath)).toBeUndefined();
  });

  it('matches case-insensitively only when asked (a case-insensitive filesystem opens .GIT/config as .git/config)', () => {
    for (const variant of ['.GIT/config', '.Git/Hooks/pre-commit', '.BASHRC', '.VSCode/tasks.json', 'MAKEFILE', 'Package.JSON']) {
      expect(hostCodeReason(variant), variant).toBeUndefined();
      expect(hostCodeReason(variant, { caseInsensitive: true }), variant).toBeDefined();
    }
  });

  it("folds Windows' ways of naming the same file: backslashes, trailing dots and spaces, alternate data streams", () => {
    for (const variant of [
      '.git\\config',
      '.git./config',
      '.git/config.',
      '.git/config ',
      '.git/config::$DATA',
      '.\\.git\\hooks\\pre-commit',
      '.git//hooks/pre-commit',
    ]) {
      expect(hostCodeReason(variant), variant).toBeDefined();
    }
  });

  it('gives every entry a reason in words and a kind, and the first match is the most specific', () => {
    for (const entry of HOST_CODE_PATHS) {
      expect(entry.what.length).toBeGreaterThan(30);
      expect(entry.globs.length).toBeGreaterThan(0);
    }
    expect(matchHostCodePath('.git/hooks/pre-commit')?.glob).toBe('.git/hooks/**');
    expect(matchHostCodePath('.git/config')?.kind).toBe('git');
  });

  it("treats the folder a repository's core.hooksPath names as its hooks, in the root and in a nested repository", () => {
    const root = tempDir();
    fs.mkdirSync(path.join(root, '.git'));
    fs.writeFileSync(
      path.join(root, '.git', 'config'),
      '[core]\n\trepositoryformatversion = 0\n\tHooksPath = "tools/git-hooks" ; set by setup\n[remote "origin"]\n\turl = x\n',
    );
    expect(hostCodeReasonAt(root, 'tools/git-hooks/pre-commit')).toMatch(/core\.hooksPath names: it is a Git hook/);
    expect(hostCodeReasonAt(root, 'tools/git-hooks/lib/common.sh')).toMatch(/core\.hooksPath/);
    expect(hostCodeReasonAt(root, 'tools/other/pre-commit')).toBeUndefined();
    fs.mkdirSync(path.join(root, 'vendor', 'lib', '.git'), { recursive: true });
    fs.writeFileSync(path.join(root, 'vendor', 'lib', '.git', 'config'), '[core] hooksPath = .\n');
    expect(hostCodeReasonAt(root, 'vendor/lib/post-checkout')).toMatch(/core\.hooksPath/);
    expect(hostCodeReasonAt(root, 'vendor/lib/index.js')).toBeUndefined();
    expect(hostCodeReasonAt(root, 'vendor/lib/src/post-checkout')).toBeUndefined();
  });

  it('reads a git config that is not a regular file as naming nothing, at once', () => {
    const root = tempDir();
    fs.mkdirSync(path.join(root, '.git', 'config'), { recursive: true });
    expect(hostCodeReasonAt(root, 'tools/pre-commit')).toBeUndefined();
  });

  it('treats a git directory under another name (a bare repo, the target of a gitdir: line) like .git/', () => {
    const root = tempDir();
    const bare = path.join(root, 'mirror.git');
    fs.mkdirSync(path.join(bare, 'objects'), { recursive: true });
    fs.mkdirSync(path.join(bare, 'refs'), { recursive: true });
    fs.mkdirSync(path.join(bare, 'hooks'), { recursive: true });
    fs.writeFileSync(path.join(bare, 'HEAD'), 'ref: refs/heads/main\n');
    expect(hostCodeReason('mirror.git/hooks/post-receive')).toBeUndefined();
    expect(hostCodeReasonAt(root, 'mirror.git/hooks/post-receive')).toMatch(/mirror\.git, a git directory .* Git hook/);
    expect(hostCodeReasonAt(root, 'mirror.git/config')).toMatch(/core\.fsmonitor/);
    expect(hostCodeReasonAt(root, 'mirror.git/description')).toMatch(/git directory/);
    expect(hostCodeReasonAt(root, 'other/readme.md')).toBeUndefined();
  });
});

/** Entry files of build tools and task runners beyond the ones an attack used (issue 23 §4), by kind of reason. */
const ENTRY_FILES: string[] = [
  'project.clj',
  'conanfile.py',
  'conanfile.txt',
  'tasks.py',
  'fabfile.py',
  'fastlane/Fastfile',
  'fastlane/Appfile',
  'Dangerfile',
  'Dangerfile.js',
  'build.boot',
  'deps.edn',
  'bb.edn',
  'dodo.py',
  'pavement.py',
  'wscript',
  'Cakefile',
  'build.cake',
  'build.fsx',
  'psakefile.ps1',
  'Thorfile',
  'Berksfile',
  'Puppetfile',
  'Makefile.toml',
  'build.mill',
  'build.sc',
  'app.sbt',
  'dune-project',
  'lib.opam',
  'tool.nimble',
  'dub.json',
  'shard.yml',
  'lib-1.0-1.rockspec',
  'Lib.podspec',
  'PKGBUILD',
  'DEPS',
  'BUCK',
  'BUILD.gn',
  'Tupfile',
  'build.ninja',
  'Jamroot',
  'app.pro',
  'deps/build.jl',
  'hook/build.dart',
  'pubspec.yaml',
  'buildSrc/src/main/kotlin/Conventions.kt',
  'gradle/publish.gradle',
  '.storybook/main.js',
  '.eleventy.js',
  'gatsby-node.js',
  'lerna.json',
  'pnpm-workspace.yaml',
  '.bowerrc',
  'netlify.toml',
  'vercel.json',
  'wrangler.toml',
  'firebase.json',
  'cdk.json',
  'helmfile.yaml',
  '.run/App.run.xml',
  '.vs/tasks.vs.json',
  'App.xcodeproj/project.pbxproj',
  '.flox/env/manifest.toml',
  '.sdkmanrc',
  '.actrc',
  'bitrise.yml',
  'action.yml',
  '.latexmkrc',
  '.tigrc',
  'manage.py',
  'config.ru',
  'flake.lock',
  'modules/dev.nix',
];

describe('the class of files a tool runs when it runs', () => {
  it.each(ENTRY_FILES)('%s is named, at the top and at any depth', (relativePath) => {
    expect(hostCodeReason(relativePath), relativePath).toBeDefined();
    expect(hostCodeReason(`packages/app/${relativePath}`), relativePath).toBeDefined();
  });

  it('every name the table spells out matches itself under any folder, and any case where the filesystem folds it', () => {
    const literals = HOST_CODE_PATHS.flatMap((entry) => entry.globs).filter((glob) => !/[*?{}[\]]/.test(glob));
    expect(literals.length).toBeGreaterThan(300);
    fc.assert(
      fc.property(
        fc.constantFrom(...literals),
        fc.array(fc.stringMatching(/^[a-z][a-z0-9_-]{0,8}$/), { maxLength: 4 }),
        fc.boolean(),
        (name, folders, shout) => {
          const relative = [...folders, shout ? name.toUpperCase() : name].join('/');
          expect(hostCodeReason(relative, { caseInsensitive: shout }), relative).toBeDefined();
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('the tree a change leaves', () => {
  it('a git directory assembled by planned writes makes every file in it Git data, and a planned core.hooksPath names hooks', () => {
    const root = tempDir();
    const at = (relative: string) => path.join(root, ...relative.split('/'));
    const tree = new PlannedTree([
      { absolutePath: at('vendor/HEAD'), content: Buffer.from('ref: refs/heads/main\n') },
      { absolutePath: at('vendor/objects/info/packs'), content: null },
      { absolutePath: at('vendor/refs/heads/main'), content: null },
    ]);
    expect(hostCodeReasonAt(root, 'vendor/config')).toBeUndefined();
    expect(hostCodeReasonAt(root, 'vendor/config', {}, tree)).toMatch(/vendor, a git directory once this change is made.*core\.fsmonitor/);
    expect(hostCodeReasonAt(root, 'vendor/HEAD', {}, tree)).toMatch(/git directory/);
    expect(hostCodeReasonAt(root, 'other/config', {}, tree)).toBeUndefined();
    // HEAD beside a commondir file is a git directory too (a linked worktree's).
    const linked = new PlannedTree([
      { absolutePath: at('wt/HEAD'), content: null },
      { absolutePath: at('wt/commondir'), content: null },
    ]);
    expect(hostCodeReasonAt(root, 'wt/config', {}, linked)).toMatch(/git directory/);
    // The root itself made a bare repository.
    const top = new PlannedTree([at('HEAD'), at('objects/x'), at('refs/x')].map((absolutePath) => ({ absolutePath, content: null })));
    expect(hostCodeReasonAt(root, 'config', {}, top)).toMatch(/the workspace root, a git directory/);
    // A config the plan writes, naming a hooks folder: the plan's write into that folder is a hook.
    const hooks = new PlannedTree([{ absolutePath: at('.git/config'), content: Buffer.from('[core]\n\thooksPath = tools\n') }]);
    expect(hostCodeReasonAt(root, 'tools/pre-commit')).toBeUndefined();
    expect(hostCodeReasonAt(root, 'tools/pre-commit', {}, hooks)).toMatch(/core\.hooksPath/);
  });
});
