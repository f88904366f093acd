import type { KeyProtection } from '../../audit/keys/key-store.js';
import { lastRecordedPolicy, witnessIdentity } from '../../audit/witness/named-witnesses.js';
import type { Actor } from '../../domain/actor.js';
import { ExecutorError } from '../../domain/errors.js';
import { assertWithinJsonLimits, FILE_LIMITS } from '../../domain/json-limits.js';
import { checkedApiKey, modelKeyEntry, type ModelProvider } from '../../domain/model-settings.js';
import { describeIssues } from '../../domain/plan-parse.js';
import { assertRootsApartFromDataDir, PolicySchema, savePolicy, type Policy, type WitnessConfig } from '../../policy/policy-file.js';
import { policyFingerprint } from '../../policy/policy-fingerprint.js';
import { checkWorkspaceRoot } from '../../policy/workspace-root.js';
import {
  connectDocker,
  engineStatus,
  refusedEngineStatus,
  type DockerClient,
  type EngineStatus,
} from '../../sandbox/docker/docker-client.js';
import { imageInfo, sandboxImageTag } from '../../sandbox/docker/sandbox-image.js';
import type { RuleHits } from '../../store/rule-hit-repository.js';
import { SYSTEM_ACTOR, type StepDesk } from '../step-desk.js';

export interface EnvironmentStatus {
  dataDir: string;
  engine: EngineStatus;
  image: { tag: string; present: boolean; digest: string | null };
}

/** What a policy change sets off elsewhere: a shorter consent expiry holds at once for the steps already waiting. */
export interface HostSettingsPort {
  sweepExpired(): void;
}

/**
 * The host's settings, beside the lifecycle: the policy (and a hand edit of policy.json, recorded at
 * open), how often remembered rules approved, the model API keys, and whether the sandbox can run.
 */
export class HostSettings {
  constructor(
    private readonly desk: StepDesk,
    private readonly port: HostSettingsPort,
  ) {}

  getPolicy(): Policy {
    return this.desk.policy;
  }

  reloadPolicy(): Policy {
    return this.desk.reloadPolicy();
  }

  /**
   * Replaces the policy. The audit record and the file write share one transaction: if the record
   * cannot be written the file is not replaced, and a failed write rolls the record back.
   */
  setPolicy(input: unknown, actor: Actor): Policy {
    assertWithinJsonLimits(input, FILE_LIMITS, { code: 'POLICY_INVALID', subject: 'The policy' });
    const parsed = PolicySchema.safeParse(input);
    if (!parsed.success) {
      const issues = describeIssues(parsed.error);
      throw new ExecutorError('POLICY_INVALID', `The policy is not valid: ${issues.join('; ')}`, { issues });
    }
    assertRootsApartFromDataDir(parsed.data, this.desk.dataDir);
    const before = this.desk.policy;
    // A root added through Settings passes the same check as `roots add` and the first-run prompt:
    // the policy is one more door to the same room. Roots already held stay (a later chmod is a
    // person's own choice, and refusing them here would lock Settings).
    const held = new Set(before.workspaceRoots);
    for (const root of parsed.data.workspaceRoots) if (!held.has(root)) checkWorkspaceRoot(root, this.desk.dataDir);
    this.desk.db.transaction(() => {
      this.desk.audit.append({
        kind: 'policy.changed',
        actor,
        detail: { before, after: parsed.data, policySha256: policyFingerprint(parsed.data) },
      });
      this.desk.ruleHits.keepOnly(parsed.data.remembered.map((rule) => rule.id));
      savePolicy(this.desk.dataDir, parsed.data);
    })();
    const policy = this.desk.reloadPolicy();
    this.desk.events.emit('policy', policy);
    // A shorter consent expiry holds at once for the steps already waiting.
    this.port.sweepExpired();
    return policy;
  }

  /**
   * policy.json is the person's file: an edit made while no host ran (or behind a running one's back,
   * read at the next open) is recorded as such, with the policy before and after, so the log names
   * every witness the policy ever held and a removal by hand shows with its time. Compared by the
   * fingerprint policy records carry; before any record has one (a new data directory set up by hand,
   * a log written before fingerprints), only the witnesses are compared, so a hand-written policy
   * adds no record unless it names a witness.
   */
  recordPolicyEditedOutside(): void {
    const recorded = lastRecordedPolicy(this.desk.db);
    const fingerprint = policyFingerprint(this.desk.policy);
    if (recorded?.policySha256) {
      if (recorded.policySha256 === fingerprint) return;
    } else {
      const same = (list: readonly WitnessConfig[]) => list.map(witnessIdentity).sort().join('\n');
      if (same(recorded?.witnesses ?? []) === same(this.desk.policy.witnesses)) return;
    }
    this.desk.audit.append({
      kind: 'policy.edited_outside',
      actor: SYSTEM_ACTOR,
      detail: {
        // The whole policy the log last recorded is in that record; before names its witnesses, enough to show one removed.
        before: { witnesses: recorded?.witnesses ?? [] },
        after: this.desk.policy,
        policySha256: fingerprint,
        message: recorded
          ? 'policy.json differed at open from the policy the log last recorded: it was edited outside Executor'
          : 'policy.json named witnesses the log had not recorded: it was written outside Executor',
      },
    });
  }

  /** How often each remembered rule approved a step, and when it last did. */
  listRuleHits(): RuleHits[] {
    return this.desk.ruleHits.all();
  }

  /** Where this host keeps its data and whether the Docker sandbox can run, for Settings. Never throws. */
  async environmentStatus(): Promise<EnvironmentStatus> {
    const tag = sandboxImageTag();
    let client: DockerClient;
    try {
      client = connectDocker();
    } catch (error) {
      // DOCKER_HOST or its certificates refused (ENGINE_CONFIG_INVALID / ENGINE_INSECURE): Settings says which.
      if (!(error instanceof ExecutorError)) throw error;
      return { dataDir: this.desk.dataDir, engine: refusedEngineStatus(error), image: { tag, present: false, digest: null } };
    }
    const engine = await engineStatus(client);
    const image = engine.reachable
      ? await imageInfo(client, tag).then(
          (info) => ({ tag, present: info.present, digest: info.digest ?? null }),
          () => ({ tag, present: false, digest: null }),
        )
      : { tag, present: false, digest: null };
    return { dataDir: this.desk.dataDir, engine, image };
  }

  /** A model provider's API key for agent runs (src/runs/models/), kept in the key store beside the audit keys; never logged, audited or sent to a window. */
  modelApiKey(provider: ModelProvider): string | undefined {
    const bytes = this.desk.keyStore.read(modelKeyEntry(provider));
    return bytes && bytes.length ? bytes.toString('utf8') : undefined;
  }

  /** Keeps (or, given null, erases) a provider's API key: audited as model.key_set without the key, in one transaction with the write. */
  setModelApiKey(provider: ModelProvider, key: string | null, actor: Actor): void {
    const checked = key === null ? null : checkedApiKey(key);
    this.desk.db.transaction(() => {
      this.desk.audit.append({ kind: 'model.key_set', actor, detail: { provider, set: checked !== null } });
      if (checked === null) this.desk.keyStore.erase(modelKeyEntry(provider));
      else this.desk.keyStore.write(modelKeyEntry(provider), Buffer.from(checked, 'utf8'));
    })();
  }

  /** How the model keys are kept: sealed by the OS keychain (the app) or a file only this user reads. */
  get modelKeyProtection(): KeyProtection {
    return this.desk.keyStore.protection;
  }
}
