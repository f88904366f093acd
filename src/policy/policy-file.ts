import { RunLimitsPolicySchema } from './run-limits.js';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ExecutorError } from '../domain/errors.js';
import { assertWithinJsonLimits, FILE_LIMITS } from '../domain/json-limits.js';
import { describeIssues } from '../domain/plan-parse.js';
import { whyNotARulePrefix } from '../domain/program-runners.js';
import type { RememberedRule } from '../domain/remembered-rule.js';
import { ModelSettingsSchema } from '../domain/model-settings.js';

const ruleRisk = z.enum(['LOW', 'MEDIUM', 'HIGH']);
const absoluteRoot = z.string().refine((p) => path.isAbsolute(p), { message: 'a rule root must be an absolute path' });
const ruleId = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9._:-]+$/);

/** Whose steps a rule covers (RuleProposer): the person's own, or one agent's by its identity. */
const ruleProposer = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('person') }),
  z.strictObject({ kind: z.literal('agent'), agentId: z.string().min(1).max(200) }),
]);

/** Fields every rule has beside its reach: who it is for, when it ends, when it was made. */
const ruleScope = {
  id: ruleId,
  maxRisk: ruleRisk,
  createdAt: z.string(),
  proposer: ruleProposer,
  expiresAt: z.iso.datetime({ offset: true, message: 'expiresAt is an ISO date and time, e.g. 2026-01-31T12:00:00Z' }).optional(),
  madeBeforeScoping: z.literal(true).optional(),
};

/**
 * "Approve and remember" rules (shapes and words in src/domain/remembered-rule.ts). Each reaches
 * no further than its fields say, and never past the risk of the step it was made from. A command
 * rule never starts with a program that runs other programs (src/domain/program-runners.ts),
 * however the rule arrives: from the window, setPolicy or a hand-edited policy.json.
 */
export const RememberedRuleSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    ...ruleScope,
    kind: z.literal('command'),
    prefix: z
      .array(z.string().min(1).max(200))
      .min(1, 'a command rule needs at least the program name')
      .max(20)
      .superRefine((prefix, ctx) => {
        const refusal = whyNotARulePrefix(prefix);
        if (refusal) ctx.addIssue({ code: 'custom', message: refusal });
      }),
    root: absoluteRoot,
  }),
  z.strictObject({
    ...ruleScope,
    kind: z.literal('file'),
    root: absoluteRoot,
    glob: z
      .string()
      .min(1)
      .max(500)
      .refine((glob) => !glob.startsWith('/') && !glob.split('/').includes('..'), {
        message: 'a file rule glob is relative to its root and stays inside it',
      }),
  }),
  z.strictObject({
    ...ruleScope,
    kind: z.literal('url'),
    host: z
      .string()
      .min(1)
      .max(253)
      .regex(/^[a-z0-9.-]+$/, 'a URL rule names one host in lower case, without scheme, port or wildcard'),
  }),
]);

/**
 * Rules saved before rules named whom they cover have no `proposer`. They load as the person's own
 * rules, flagged: the safe reading, since such a rule may have been made from any agent's step and
 * reading it as "any agent" would hand every agent what one was given. Agents' identical steps ask
 * again, and Settings shows the flag so the person can remove the rule or make it again.
 */
export function upgradeUnscopedRule(raw: unknown): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw) || 'proposer' in raw) return raw;
  return { ...raw, proposer: { kind: 'person' }, madeBeforeScoping: true };
}

/** What `sandbox.ignore` defaulted to before a project's node_modules and .git came into the sandbox. */
const SAVED_OLD_SANDBOX_IGNORE = ['.git/**', 'node_modules/**'];

/**
 * A policy saved by a version before `sandbox.readOnly` holds the old default ignore list written out
 * (saving fills every default in), though the person never chose it: it loads as the new default, so
 * `npm test` and `git status` work there too. An ignore list the person wrote differently stays, and
 * so does this one beside a `readOnly` (then it was saved, or written, knowing both).
 */
function upgradeSavedSandboxIgnore(raw: unknown): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw) || 'readOnly' in raw) return raw;
  const ignore = (raw as { ignore?: unknown }).ignore;
  if (!Array.isArray(ignore) || ignore.length !== SAVED_OLD_SANDBOX_IGNORE.length) return raw;
  if (!SAVED_OLD_SANDBOX_IGNORE.every((pattern, index) => ignore[index] === pattern)) return raw;
  return { ...raw, ignore: [...DEFAULT_SANDBOX_IGNORE] };
}

/**
 * Files that hold credentials by their well-known names: never read back to an agent, never copied
 * into a sandbox, HIGH to write or delete. These always apply; a policy's own `secretGlobs` add to
 * them (a policy saved by an older version names only the five it knew, and still gets all of these).
 */
export const DEFAULT_SECRET_GLOBS = [
  // Environment files (direnv's .envrc too, Wrangler's .dev.vars) and private keys.
  '.env*',
  '.dev.vars*',
  '*.pem',
  '*.key',
  'id_rsa*',
  '.ssh/**',
  'id_dsa*',
  'id_ecdsa*',
  'id_ed25519*',
  '*.ppk',
  '*.p8',
  '*.pk8',
  '*.pvk',
  '*.snk',
  '.putty/**',
  // Certificate, key and password stores.
  '*.p12',
  '*.pfx',
  '*.pkcs12',
  '*.keystore',
  '*.jks',
  '*.jceks',
  '*.bks',
  '*.keytab',
  '*.kdbx',
  '*.ovpn',
  '*.keychain',
  '*.keychain-db',
  'Library/Keychains/**',
  '.local/share/keyrings/**',
  '.local/share/kwalletd/**',
  '*.kwl',
  '.gnupg/**',
  'secring.*',
  '.password-store/**',
  '.config/gopass/**',
  '.local/share/gopass/**',
  '.config/op/**',
  '.op/**',
  '.age/**',
  '.config/age/**',
  'sops/age/**',
  '.awsvault/**',
  'Microsoft/Credentials/**',
  'Microsoft/Protect/**',
  'Microsoft/Vault/**',
  // Package registries and git hosts: tokens in plain text.
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
  '.config/pnpm/rc',
  '.bunfig.toml',
  '.pypirc',
  'pip.conf',
  'pip.ini',
  'pypoetry/auth.toml',
  'uv/credentials/**',
  '.condarc',
  '.conda/condarc',
  '.conda/.condarc',
  '.continuum/**',
  '.netrc',
  '_netrc',
  '.git-credentials',
  '.config/git/credentials',
  '.git-credential-cache/**',
  // A repository's own config holds remote URLs with tokens in them (`https://user:TOKEN@…`) and `http.extraHeader`.
  '.git/config',
  '.git/config.worktree',
  '.git/modules/**/config',
  '.config/gh/**',
  'GitHub CLI/**',
  '.config/glab-cli/**',
  'glab-cli/config.yml',
  '.config/hub',
  '.config/tea/**',
  '.subversion/auth/**',
  '.hgrc',
  'mercurial.ini',
  '.config/hg/hgrc',
  '.gem/credentials',
  '.local/share/gem/credentials',
  '.bundle/config',
  '.cargo/credentials',
  '.cargo/credentials.toml',
  '.m2/settings.xml',
  '.m2/settings-security.xml',
  '.gradle/gradle.properties',
  '.sbt/*credentials*',
  '.ivy2/.credentials',
  '.composer/auth.json',
  '.config/composer/auth.json',
  '[Nn]u[Gg]et.[Cc]onfig',
  '.nuget/NuGet/**',
  '.hex/hex.config',
  'pub-credentials.json',
  '.jfrog/**',
  '.sentryclirc',
  '.travis/config.yml',
  '.circleci/cli.yml',
  '.gitlab-runner/config.toml',
  // Clouds, clusters and containers.
  '.aws/**',
  '.azure/**',
  '.config/gcloud/**',
  '.oci/**',
  '.bluemix/**',
  '.aliyun/**',
  '.tccli/**',
  '.config/openstack/**',
  'clouds.y{a,}ml',
  '.config/doctl/**',
  'doctl/config.yaml',
  '.config/heroku/**',
  '.fly/**',
  'com.vercel.cli/**',
  '.vercel/auth.json',
  '.now/auth.json',
  '.config/netlify/**',
  'netlify/config.json',
  '.netlify/config.json',
  '.supabase/**',
  '.config/configstore/**',
  '.config/stripe/**',
  '.config/linode-cli',
  '.linode-cli',
  '.vultr-cli.y{a,}ml',
  '.config/hcloud/**',
  '.config/scw/**',
  '.wrangler/config/**',
  '.config/ngrok/**',
  '.ngrok2/**',
  'ngrok.y{a,}ml',
  '.kube/**',
  '{*[-_.],}kubeconfig{,.y{a,}ml,.json}',
  '.minikube/**',
  '.talos/**',
  'talosconfig',
  'k3s.yaml',
  'rke2.yaml',
  'kubernetes/*.conf',
  '.config/helm/registry/**',
  '.config/helm/repositories.yaml',
  'helm/registry/config.json',
  '.docker/config.json',
  '.dockercfg',
  'containers/auth.json',
  '.boto',
  '.s3cfg',
  '.config/rclone/rclone.conf',
  '.rclone.conf',
  '.config/restic/**',
  '.vault-token',
  '.terraformrc',
  'terraform.rc',
  '.terraform.d/credentials.tfrc.json',
  '*.tfvars',
  '*.tfvars.json',
  '*.tfstate',
  '*.tfstate.backup',
  '.pulumi/credentials.json',
  '.cf/config.json',
  '.databrickscfg',
  '.snowflake/connections.toml',
  '.snowsql/config',
  '.dbt/profiles.yml',
  '.mc/config.json',
  '.passwd-s3fs',
  '.expo/state.json',
  '.android/adbkey*',
  '{.,}vault[-_]pass*',
  '.vault_password*',
  // Network and VPN keys.
  'wireguard/*.conf',
  'wg[0-9]*.conf',
  'openvpn/**/*.{conf,auth,pass}',
  'NetworkManager/system-connections/**',
  '.smbcredentials',
  // Mail and chat clients that keep passwords.
  '.authinfo*',
  '.msmtprc',
  '.mbsyncrc',
  '.fetchmailrc',
  '.offlineimaprc',
  '.muttrc',
  '.mutt/muttrc',
  '.config/Slack/**',
  'Slack/Local Storage/**',
  '.config/discord/**',
  'discord/Local Storage/**',
  'Signal/config.json',
  'TelegramDesktop/tdata/**',
  'Telegram Desktop/tdata/**',
  // Databases.
  '.pgpass',
  '.my.cnf',
  '.mylogin.cnf',
  '.cassandra/cqlshrc',
  'credentials-config.json',
  // AI tools and editors that keep sign-in tokens or API keys.
  '.huggingface/**',
  'huggingface/token',
  'huggingface/stored_tokens',
  '.claude/.credentials.json',
  '.claude.json',
  'claude_desktop_config.json',
  '.config/github-copilot/**',
  'github-copilot/{hosts,apps}.json',
  '.codeium/**',
  '.codex/auth.json',
  '.gemini/oauth_creds.json',
  '.gemini/google_accounts.json',
  '.aider.conf.y{a,}ml',
  '.continue/config.*',
  '.kaggle/**',
  'kaggle.json',
  'User/globalStorage/**',
  // Browser and mail profiles: saved passwords, cookies, session keys.
  '.mozilla/**',
  '.thunderbird/**',
  'Firefox/Profiles/**',
  'Thunderbird/Profiles/**',
  'logins.json',
  'key[34].db',
  'signons*.sqlite',
  'cookies.sqlite*',
  '.config/google-chrome/**',
  '.config/chromium/**',
  '.config/BraveSoftware/**',
  '.config/microsoft-edge/**',
  'Login Data*',
  'Web Data',
  'Local State',
  'Cookies',
  'Cookies-journal',
  'Library/Cookies/**',
  // Shell and REPL histories: commands typed with tokens and passwords in them.
  '*_history',
  'PSReadLine/*_history.txt',
  '.history',
  '.zhistory',
  '.histfile',
  '.lesshst',
  '.Rhistory',
  '.dbshell',
  '.viminfo',
  '.local/share/nvim/shada/**',
  '.julia/logs/repl_history.jl',
  '.aider*history*',
  // Files named for what they hold.
  'credentials',
  'credentials.{json,toml,y{a,}ml,xml,ini,conf,cfg,properties,db}',
  '*[-_.]credentials{,.json}',
  'client_secret*.json',
  'service[-_]account*.json',
  '*-firebase-adminsdk-*.json',
  'token',
  'tokens',
  '*[-_.]token',
  'access[-_]token*',
  '.htpasswd',
  'secrets.{json,yml,yaml,toml}',
  '.secrets',
  '*.secret',
  'wallet.dat',
  // The system's own, when a root lies above them.
  'etc/shadow*',
  'etc/gshadow*',
  'etc/ssl/private/**',
];
/**
 * Nothing by default: a project's commands (`npm test`, `git status`, `git commit`) need its
 * `node_modules` and `.git`. `.git/config` stays out as a secret path (the container gets a stand-in
 * with core settings only, scratch-copy.ts), and `node_modules` is mounted read-only instead of copied
 * (DEFAULT_SANDBOX_READ_ONLY).
 */
export const DEFAULT_SANDBOX_IGNORE: string[] = [];
/**
 * Folders the container sees read-only from the real workspace instead of a copy: cheap for a large
 * `node_modules`, and what a command writes there fails (EROFS) rather than landing anywhere. Not a
 * repository's packs, though git only reads them: git "freshens" an object it writes by touching the
 * pack that holds it, and where it cannot, writes the object again as a loose one, so a commit on
 * read-only packs brings back a copy of every object it touched.
 */
export const DEFAULT_SANDBOX_READ_ONLY = ['node_modules'];

/** An image reference the engine can look up: `name[:tag]` or `name@sha256:…`, or a bare image id. */
const ImageReference = z
  .string()
  .regex(
    /^(?:sha256:[0-9a-f]{64}|[a-z0-9]+(?:[._\/-][a-z0-9]+)*(?::[0-9]+)?(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?)$/,
    {
      message: 'an image reference is name[:tag] or name@sha256:…',
    },
  );
const RootPath = z.string().refine((p) => path.isAbsolute(p), { message: 'a root in sandbox settings must be an absolute path' });

/**
 * What a command's changeset can do, as the effects policy names it (src/policy/command-effects.ts
 * rates a changeset by these): the gate that holds whatever the command line looked like.
 */
export const COMMAND_EFFECT_KINDS = [
  'delete',
  'replace',
  'create',
  'modify',
  'executable',
  'permission',
  'secret',
  'git',
  'hostCode',
  'size',
] as const;
export type CommandEffectKind = (typeof COMMAND_EFFECT_KINDS)[number];

/** Effects that go to the person by default, even when autoApprove or a remembered rule covers the command. */
export const DEFAULT_EFFECTS_ASK: CommandEffectKind[] = ['secret', 'git', 'hostCode', 'permission', 'executable'];

const CommandEffectsSchema = z
  .strictObject({
    /** A changeset with one of these effects is never applied: the step is denied, or fails on its real run. */
    deny: z.array(z.enum(COMMAND_EFFECT_KINDS)).default([]),
    /** A changeset with one of these effects always goes to the person. */
    ask: z.array(z.enum(COMMAND_EFFECT_KINDS)).default([...DEFAULT_EFFECTS_ASK]),
    /** More changed files than this is the `size` effect (null: no limit). */
    maxFiles: z.number().int().min(0).nullable().default(null),
    /** More bytes written (new and changed files' sizes) than this is the `size` effect (null: no limit). */
    maxBytes: z.number().int().min(0).nullable().default(null),
  })
  .prefault({});

export const DEFAULT_AGENT_LIMITS = { stepsPerMinute: 30, openSteps: 10 };
/** Two: one long container run does not hold up every other plan's preview, and two cores are not swamped. */
export const DEFAULT_PREPARATION_CONCURRENCY = 2;

/** How long a step may wait for consent, or hold an approval it has not used, before it expires: a day. */
export const DEFAULT_CONSENT_EXPIRY_SECONDS = 24 * 3600;
/** The longest expiry a policy (or a plan) may set: a step never waits longer than a year. */
export const MAX_CONSENT_EXPIRY_SECONDS = 366 * 24 * 3600;

/** A witness's name: a C2SP key-name-like word (no spaces, no '+'), also the folder of its git clone. */
const witnessName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._\/-]{0,99}$/,
    'a witness name is letters, digits and . _ / - (at most 100), starting with a letter or digit',
  )
  .refine((name) => !name.split('/').includes('..'), { message: "a witness name may not hold '..'" });

/**
 * Witnesses outside this machine (a copy of this data directory cannot vouch for itself): a C2SP tlog-witness by URL and its cosigner vkey, or a
 * team's git remote whose protected branch receives each checkpoint. The vkey is checked in full
 * where it is added (`executor witness add`); here only its shape.
 */
export const WitnessConfigSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('http'),
    name: witnessName,
    url: z.url({
      protocol: /^https?$/,
      message: 'a witness URL starts with https:// (or http:// for one on this machine or your network)',
    }),
    vkey: z.string().regex(/^[^\s+]+\+[0-9a-fA-F]{8}\+[A-Za-z0-9+/]+=*$/, 'a witness vkey reads name+8 hex digits+base64'),
  }),
  z.strictObject({
    kind: z.literal('git'),
    name: witnessName,
    // Never read as an option of git (a remote like --upload-pack=… would run a program).
    remote: z
      .string()
      .min(1)
      .max(4096)
      .refine((remote) => !remote.startsWith('-'), { message: 'a git remote may not start with "-"' }),
    branch: z.string().regex(/^(?!-)(?!.*\.\.)[A-Za-z0-9._\/-]{1,200}$/, 'a branch name is letters, digits and . _ / -'),
  }),
]);
export type WitnessConfig = z.infer<typeof WitnessConfigSchema>;

export const PolicySchema = z.strictObject({
  workspaceRoots: z.array(z.string().refine((p) => path.isAbsolute(p), { message: 'workspace roots must be absolute paths' })).default([]),
  /** The highest risk approved without asking. CRITICAL is never auto-approved. */
  autoApprove: z.enum(['none', 'LOW', 'MEDIUM', 'HIGH']).default('none'),
  secretGlobs: z
    .array(z.string().min(1))
    .transform((globs) => [...new Set([...DEFAULT_SECRET_GLOBS, ...globs])])
    .default([...DEFAULT_SECRET_GLOBS]),
  commands: z
    .strictObject({ allow: z.array(z.string()).default([]), deny: z.array(z.string()).default([]), effects: CommandEffectsSchema })
    .prefault({}),
  network: z.strictObject({ allowHosts: z.array(z.string()).default([]) }).default({ allowHosts: [] }),
  /**
   * Seconds a step may wait for the person's decision (awaiting_consent), or hold an approval it has
   * not used yet (approved, waiting for an earlier step), before it becomes `expired`. A plan may ask
   * for less (its consentExpirySeconds), never more.
   */
  consentExpirySeconds: z.number().int().min(1).max(MAX_CONSENT_EXPIRY_SECONDS).default(DEFAULT_CONSENT_EXPIRY_SECONDS),
  /**
   * How much one agent client (the MCP client's name and version) may propose: steps per rolling
   * minute, and steps still waiting or running at once. The host enforces them, so a second MCP
   * process of the same client shares the budget.
   */
  agentLimits: z
    .strictObject({
      stepsPerMinute: z.number().int().min(1).max(100_000).default(DEFAULT_AGENT_LIMITS.stepsPerMinute),
      openSteps: z.number().int().min(1).max(100_000).default(DEFAULT_AGENT_LIMITS.openSteps),
    })
    .default(DEFAULT_AGENT_LIMITS),
  /**
   * Previews computed in the background after a proposal is acknowledged: how many plans prepare
   * (dry runs, container runs, diffs) at once. One plan's steps always prepare in order, one at a time.
   */
  preparation: z
    .strictObject({
      concurrency: z.number().int().min(1).max(64).default(DEFAULT_PREPARATION_CONCURRENCY),
    })
    .prefault({}),
  /** Limits of the light sandbox (runCode in a forked Node worker) and its energy-style budget. */
  lightSandbox: z
    .strictObject({
      defaultTimeoutMs: z.number().int().min(100).max(5000).default(2000),
      maxHeapMb: z.number().int().min(16).max(4096).default(64),
      /** Address-space cap (setrlimit): the only thing that bounds ArrayBuffer and WebAssembly.Memory. Node needs ~800 MiB of reservations to start. */
      addressSpaceMb: z.number().int().min(896).max(65536).default(1024),
      maxCallsPerStep: z.number().int().min(0).max(1000).default(20),
      fetchTimeoutMs: z.number().int().min(100).max(60_000).default(5000),
      maxFetchBytes: z
        .number()
        .int()
        .min(1024)
        .max(16 * 1024 * 1024)
        .default(256 * 1024),
      maxReadFileBytes: z
        .number()
        .int()
        .min(1024)
        .max(16 * 1024 * 1024)
        .default(256 * 1024),
      /** Pre-spawned, never-used workers kept ready so a step does not pay process start-up. */
      warmWorkers: z.number().int().min(0).max(8).default(2),
      budget: z
        .strictObject({
          enabled: z.boolean().default(true),
          runsPerMinute: z.number().int().min(1).default(60),
          cpuSecondsPerHour: z.number().min(1).default(600),
        })
        .prefault({}),
    })
    .prefault({}),
  /** Limits of the Docker sandbox that runs commands and heavy code; every one applies to each run. */
  sandbox: z.preprocess(
    upgradeSavedSandboxIgnore,
    z
      .strictObject({
        memoryMb: z
          .number()
          .int()
          .min(16)
          .max(1024 * 1024)
          .default(512),
        cpus: z.number().min(0.05).max(1024).default(1),
        pids: z.number().int().min(8).max(1_000_000).default(256),
        timeoutMs: z
          .number()
          .int()
          .min(100)
          .max(24 * 3600 * 1000)
          .default(120_000),
        /** Each of stdout and stderr is kept up to this many bytes; the rest is dropped and flagged. */
        outputBytes: z
          .number()
          .int()
          .min(1024)
          .max(256 * 1024 * 1024)
          .default(1024 * 1024),
        /** Left out of the scratch copy (and out of the changeset) to keep copies cheap. */
        ignore: z.array(z.string().min(1)).default([...DEFAULT_SANDBOX_IGNORE]),
        /**
         * Folders (glob of a folder's path; a name without `/` matches at any depth) mounted read-only at
         * their place instead of copied, where the engine runs on this machine and nothing in them looks
         * like a secret; otherwise they are copied like the rest (src/sandbox/docker/scratch-copy.ts).
         */
        readOnly: z
          .array(
            z
              .string()
              .min(1)
              // Matched against folder paths inside the root: an absolute path or a `..` step matches nothing,
              // and a person who wrote one would silently get every such folder copied.
              .refine((glob) => !path.isAbsolute(glob) && !glob.split(/[\\/]/).includes('..') && !glob.includes('\0'), {
                message:
                  'a read-only folder is a glob of a folder path inside the root (node_modules, packages/*/node_modules), not an absolute path or one with ..',
              }),
          )
          .default([...DEFAULT_SANDBOX_READ_ONLY]),
        /** A workspace (or cwd subtree) larger than this is not copied: the step fails and says to narrow cwd or ignore more. */
        maxCopyMb: z
          .number()
          .int()
          .min(1)
          .max(1024 * 1024)
          .default(2048),
        /**
         * The image a root's commands run in, before the project's own dev container: one reference for
         * every root, or one per root path (src/sandbox/docker/project-image.ts says the order).
         */
        image: z.union([ImageReference, z.record(RootPath, ImageReference)]).optional(),
        /** A Dockerfile (relative to its root, inside it) a root's image is built from when the project has no dev container. */
        dockerfile: z.record(RootPath, z.string().min(1)).optional(),
      })
      .default({
        memoryMb: 512,
        cpus: 1,
        pids: 256,
        timeoutMs: 120_000,
        outputBytes: 1024 * 1024,
        ignore: [...DEFAULT_SANDBOX_IGNORE],
        readOnly: [...DEFAULT_SANDBOX_READ_ONLY],
        maxCopyMb: 2048,
      }),
  ),
  /** The person's model for agent runs (src/domain/model-settings.ts); never its key, which is sealed in keys/. */
  model: ModelSettingsSchema.optional(),
  /** Agent runs' limits and budgets (src/policy/run-limits.ts). */
  runs: RunLimitsPolicySchema,
  /** Skills (docs/skills.md): how long a new skill is watched, how many may be usable, when repetition is noticed. */
  skills: z
    .strictObject({
      trialUses: z.number().int().min(1).max(100_000).default(50),
      trialMinHours: z
        .number()
        .min(0)
        .max(24 * 365)
        .default(24),
      maxActive: z.number().int().min(0).max(1000).default(5),
      repetitionThreshold: z.number().int().min(2).max(1000).default(3),
      /** Plain errors in a row (the code threw or crashed) after which an active skill is disabled (docs/skills.md). */
      maxConsecutiveErrors: z.number().int().min(1).max(1000).default(3),
    })
    .prefault({}),
  witnesses: z
    .array(WitnessConfigSchema)
    .max(32)
    .superRefine((witnesses, ctx) => {
      const seen = new Set<string>();
      for (const witness of witnesses) {
        if (seen.has(witness.name))
          ctx.addIssue({ code: 'custom', message: `witness names must be unique; "${witness.name}" appears more than once` });
        seen.add(witness.name);
      }
    })
    .default([]),
  remembered: z
    .array(z.preprocess(upgradeUnscopedRule, RememberedRuleSchema))
    .max(1000)
    // Hit counts, notices and removal go by id: two rules with one id would be counted and removed as one.
    .superRefine((rules, ctx) => {
      const seen = new Set<string>();
      for (const rule of rules) {
        if (seen.has(rule.id))
          ctx.addIssue({ code: 'custom', message: `remembered rule ids must be unique; "${rule.id}" appears more than once` });
        seen.add(rule.id);
      }
    })
    .default([]),
});
export type Policy = z.infer<typeof PolicySchema>;
export type LightSandboxPolicy = Policy['lightSandbox'];
// The schema and the domain's rule type describe one shape: this fails to compile if they drift.
const sameRule: [z.infer<typeof RememberedRuleSchema>] extends [RememberedRule]
  ? [RememberedRule] extends [z.infer<typeof RememberedRuleSchema>]
    ? true
    : false
  : false = true;
void sameRule;

export const POLICY_FILE = 'policy.json';

export function defaultPolicy(): Policy {
  return PolicySchema.parse({});
}

/**
 * Reads policy.json from the data directory. A missing file means the defaults (no roots,
 * so every file step is denied until the person names one); a broken file is an error,
 * never a silent fallback to something more permissive.
 */
export function loadPolicy(dataDir: string): Policy {
  const file = path.join(dataDir, POLICY_FILE);
  let text: string;
  try {
    // A named pipe there would hold every command in readFileSync for ever; a link to a file (kept elsewhere) is followed.
    if (!fs.statSync(file).isFile())
      throw new ExecutorError(
        'POLICY_INVALID',
        `${file} is not a regular file (a folder, a pipe, a device or a socket): put the policy file back.`,
        {
          file,
        },
      );
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return defaultPolicy();
    throw error;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ExecutorError('POLICY_INVALID', `${file} is not valid JSON: ${(error as Error).message}`, { file });
  }
  assertWithinJsonLimits(raw, FILE_LIMITS, {
    code: 'POLICY_INVALID',
    subject: file,
    details: { file },
    advice: 'Fix that value in the file.',
  });
  const parsed = PolicySchema.safeParse(raw);
  if (!parsed.success) {
    throw new ExecutorError('POLICY_INVALID', `${file} is not a valid policy: ${describeIssues(parsed.error).join('; ')}`, {
      file,
      issues: describeIssues(parsed.error),
    });
  }
  assertRootsApartFromDataDir(parsed.data, dataDir, file);
  return parsed.data;
}

function realOrResolved(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

/** Real paths compared as the filesystem compares names: without case on macOS and Windows. */
function contains(parent: string, child: string): boolean {
  const fold = (p: string) => (process.platform === 'darwin' || process.platform === 'win32' ? p.toLowerCase() : p);
  const relative = path.relative(fold(parent), fold(child));
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * A workspace root may neither contain the data directory nor lie inside it: a command runs on a
 * copy of its root, and the data directory holds the audit keys, the IPC tokens and the database.
 * Checked on real paths, so a symlinked root or data directory cannot slip past.
 */
export function assertRootsApartFromDataDir(policy: Policy, dataDir: string, file = path.join(dataDir, POLICY_FILE)): void {
  const realDataDir = realOrResolved(dataDir);
  for (const root of policy.workspaceRoots) {
    const realRoot = realOrResolved(root);
    if (contains(realRoot, realDataDir)) {
      throw new ExecutorError(
        'POLICY_INVALID',
        `The workspace root ${root} contains Executor's data directory ${realDataDir}, which holds its keys, tokens and database; commands run on a copy of their root, so this is refused. ` +
          `Name a narrower root in "workspaceRoots" (${file}), or move the data directory out of the root (--data-dir or EXECUTOR_DATA_DIR).`,
        { file, root, dataDir: realDataDir },
      );
    }
    if (contains(realDataDir, realRoot)) {
      throw new ExecutorError(
        'POLICY_INVALID',
        `The workspace root ${root} lies inside Executor's data directory ${realDataDir}, which steps may never touch. Name a root outside it in "workspaceRoots" (${file}).`,
        { file, root, dataDir: realDataDir },
      );
    }
  }
}

export function savePolicy(dataDir: string, policy: Policy): void {
  const file = path.join(dataDir, POLICY_FILE);
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, JSON.stringify(PolicySchema.parse(policy), null, 2) + '\n', { mode: 0o600 });
  try {
    fs.renameSync(temp, file);
  } catch (error) {
    // The old file stays in force; leave no half-saved copy beside it.
    fs.rmSync(temp, { force: true });
    throw error;
  }
}
