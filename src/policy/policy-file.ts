import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ExecutorError } from '../domain/errors.js';
import { describeIssues } from '../domain/plan-parse.js';
import type { RememberedRule } from '../domain/remembered-rule.js';

const ruleRisk = z.enum(['LOW', 'MEDIUM', 'HIGH']);
const absoluteRoot = z.string().refine((p) => path.isAbsolute(p), { message: 'a rule root must be an absolute path' });
const ruleId = z.string().min(1).max(64).regex(/^[A-Za-z0-9._:-]+$/);

/**
 * "Approve and remember" rules (shapes and words in src/domain/remembered-rule.ts). Each reaches
 * no further than its fields say, and never past the risk of the step it was made from.
 */
export const RememberedRuleSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    id: ruleId,
    kind: z.literal('command'),
    prefix: z
      .array(z.string().min(1).max(200))
      .min(1, 'a command rule needs at least the program name')
      .max(20),
    root: absoluteRoot,
    maxRisk: ruleRisk,
    createdAt: z.string(),
  }),
  z.strictObject({
    id: ruleId,
    kind: z.literal('file'),
    root: absoluteRoot,
    glob: z
      .string()
      .min(1)
      .max(500)
      .refine((glob) => !glob.startsWith('/') && !glob.split('/').includes('..'), { message: 'a file rule glob is relative to its root and stays inside it' }),
    maxRisk: ruleRisk,
    createdAt: z.string(),
  }),
  z.strictObject({
    id: ruleId,
    kind: z.literal('url'),
    host: z
      .string()
      .min(1)
      .max(253)
      .regex(/^[a-z0-9.-]+$/, 'a URL rule names one host in lower case, without scheme, port or wildcard'),
    maxRisk: ruleRisk,
    createdAt: z.string(),
  }),
]);

/**
 * Files that hold credentials by their well-known names: never read back to an agent, never copied
 * into a sandbox, HIGH to write or delete. These always apply; a policy's own `secretGlobs` add to
 * them (a policy saved by an older version names only the five it knew, and still gets all of these).
 */
export const DEFAULT_SECRET_GLOBS = [
  // Environment files (direnv's .envrc too) and private keys.
  '.env*',
  '*.pem',
  '*.key',
  'id_rsa*',
  '.ssh/**',
  'id_dsa*',
  'id_ecdsa*',
  'id_ed25519*',
  '*.ppk',
  // Certificate, key and password stores.
  '*.p12',
  '*.pfx',
  '*.keystore',
  '*.jks',
  '*.keytab',
  '*.kdbx',
  '*.ovpn',
  '.gnupg/**',
  '.password-store/**',
  // Package registries and git hosts: tokens in plain text.
  '.npmrc',
  '.yarnrc.yml',
  '.pypirc',
  '.netrc',
  '_netrc',
  '.git-credentials',
  '.config/gh/hosts.yml',
  '.config/hub',
  '.gem/credentials',
  '.cargo/credentials',
  '.cargo/credentials.toml',
  '.m2/settings.xml',
  '.m2/settings-security.xml',
  '.gradle/gradle.properties',
  '.composer/auth.json',
  '.config/composer/auth.json',
  // Clouds, clusters and containers.
  '.aws/**',
  '.azure/**',
  '.config/gcloud/**',
  '.oci/**',
  '.kube/config',
  'kubeconfig',
  '*.kubeconfig',
  '.docker/config.json',
  '.dockercfg',
  '.boto',
  '.s3cfg',
  '.config/rclone/rclone.conf',
  '.vault-token',
  '.terraformrc',
  'terraform.rc',
  '.terraform.d/credentials.tfrc.json',
  '*.tfvars',
  '*.tfvars.json',
  '*.tfstate',
  '*.tfstate.backup',
  // Databases.
  '.pgpass',
  '.my.cnf',
  '.mylogin.cnf',
  // Service credentials by their usual names.
  'credentials.json',
  'client_secret*.json',
  '.htpasswd',
  'secrets.{json,yml,yaml,toml}',
  '.secrets',
  'wallet.dat',
];
export const DEFAULT_SANDBOX_IGNORE = ['.git/**', 'node_modules/**'];

export const DEFAULT_AGENT_LIMITS = { stepsPerMinute: 30, openSteps: 10 };

export const PolicySchema = z.strictObject({
  workspaceRoots: z
    .array(z.string().refine((p) => path.isAbsolute(p), { message: 'workspace roots must be absolute paths' }))
    .default([]),
  /** The highest risk approved without asking. CRITICAL is never auto-approved. */
  autoApprove: z.enum(['none', 'LOW', 'MEDIUM', 'HIGH']).default('none'),
  secretGlobs: z
    .array(z.string().min(1))
    .transform((globs) => [...new Set([...DEFAULT_SECRET_GLOBS, ...globs])])
    .default([...DEFAULT_SECRET_GLOBS]),
  commands: z
    .strictObject({ allow: z.array(z.string()).default([]), deny: z.array(z.string()).default([]) })
    .default({ allow: [], deny: [] }),
  network: z.strictObject({ allowHosts: z.array(z.string()).default([]) }).default({ allowHosts: [] }),
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
  /** Limits of the light sandbox (runCode in a forked Node worker) and its energy-style budget. */
  lightSandbox: z
    .strictObject({
      defaultTimeoutMs: z.number().int().min(100).max(5000).default(2000),
      maxHeapMb: z.number().int().min(16).max(4096).default(64),
      /** Address-space cap (setrlimit): the only thing that bounds ArrayBuffer and WebAssembly.Memory. Node needs ~800 MiB of reservations to start. */
      addressSpaceMb: z.number().int().min(896).max(65536).default(1024),
      maxCallsPerStep: z.number().int().min(0).max(1000).default(20),
      fetchTimeoutMs: z.number().int().min(100).max(60_000).default(5000),
      maxFetchBytes: z.number().int().min(1024).max(16 * 1024 * 1024).default(256 * 1024),
      maxReadFileBytes: z.number().int().min(1024).max(16 * 1024 * 1024).default(256 * 1024),
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
  sandbox: z
    .strictObject({
      memoryMb: z.number().int().min(16).max(1024 * 1024).default(512),
      cpus: z.number().min(0.05).max(1024).default(1),
      pids: z.number().int().min(8).max(1_000_000).default(256),
      timeoutMs: z.number().int().min(100).max(24 * 3600 * 1000).default(120_000),
      /** Each of stdout and stderr is kept up to this many bytes; the rest is dropped and flagged. */
      outputBytes: z.number().int().min(1024).max(256 * 1024 * 1024).default(1024 * 1024),
      /** Left out of the scratch copy (and out of the changeset) to keep copies cheap. */
      ignore: z.array(z.string().min(1)).default([...DEFAULT_SANDBOX_IGNORE]),
      /** A workspace (or cwd subtree) larger than this is not copied: the step fails and says to narrow cwd or ignore more. */
      maxCopyMb: z.number().int().min(1).max(1024 * 1024).default(2048),
    })
    .default({ memoryMb: 512, cpus: 1, pids: 256, timeoutMs: 120_000, outputBytes: 1024 * 1024, ignore: [...DEFAULT_SANDBOX_IGNORE], maxCopyMb: 2048 }),
  remembered: z.array(RememberedRuleSchema).max(1000).default([]),
});
export type Policy = z.infer<typeof PolicySchema>;
export type LightSandboxPolicy = Policy['lightSandbox'];
// The schema and the domain's rule type describe one shape: this fails to compile if they drift.
const sameRule: [z.infer<typeof RememberedRuleSchema>] extends [RememberedRule] ? ([RememberedRule] extends [z.infer<typeof RememberedRuleSchema>] ? true : false) : false = true;
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
  const parsed = PolicySchema.safeParse(raw);
  if (!parsed.success) {
    throw new ExecutorError('POLICY_INVALID', `${file} is not a valid policy: ${describeIssues(parsed.error).join('; ')}`, {
      file,
      issues: describeIssues(parsed.error),
    });
  }
  return parsed.data;
}

export function savePolicy(dataDir: string, policy: Policy): void {
  const file = path.join(dataDir, POLICY_FILE);
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, JSON.stringify(PolicySchema.parse(policy), null, 2) + '\n', { mode: 0o600 });
  fs.renameSync(temp, file);
}
