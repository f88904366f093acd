import type { FileChangePreview, OutputPreview, Preview, RunTimes, StepRecord } from '../domain/step-record.js';
import type { StepStatus } from '../domain/state-machine.js';
import { absoluteForMatching } from '../policy/path-patterns.js';
import type { Policy } from '../policy/policy-file.js';
import { secretPathTest, stepRecordTraits } from './step-record-traits.js';

/*
 * Secret content in a step's record: the diff and hashes of a secret-looking file a step writes or
 * deletes (its old content is the secret), and everything a command printed or changed when its
 * `allowSecrets` let it read secret files. The person sees it in the preview they decide on. An agent
 * never does: not the proposer reading its own step back (getStep, getStepPart, listSteps, its step
 * events), not a dry run it asks for, not the diffs of what ran. And once a step has ended without
 * its changes standing (denied, rejected, expired, failed, cancelled), the stored record keeps none
 * of it: the preview it held has no use left.
 */

/** Ends after which a step's stored preview is no longer anyone's to decide on: its secret parts are dropped. */
export const SECRET_SCRUB_STATUSES: readonly StepStatus[] = ['denied', 'rejected', 'expired', 'failed', 'cancelled'];

const WITHHELD_DIFF =
  'secret-looking file: its content is shown only to you while you decide, never to an agent, and is not kept once the step ended without running';
const WITHHELD_OUTPUT =
  '(withheld: this command was let to read secret-looking files, so what it printed is shown only to you while you decide, never to an agent)';

/** Which parts of one record hold secret content. */
interface SecretParts {
  /** A file of the preview (by its path) whose content is secret. */
  file(filePath: string): boolean;
  /** The output and every file of its runs may carry what the command read (runCommand with allowSecrets). */
  everything: boolean;
  /** The step's own content is the person's version of a secret file (an edited write). */
  editedContent: boolean;
}

/** A path, relative to a root or absolute, that matches the secret patterns (in any case: hiding errs toward hiding). */
function secretPathIn(policy: Policy): (filePath: string) => boolean {
  const isSecret = secretPathTest(policy);
  return (filePath) => isSecret(filePath) || isSecret(absoluteForMatching(filePath));
}

function secretPartsOf(record: StepRecord, policy: Policy, dataDir: string): SecretParts | null {
  const isSecret = secretPathIn(policy);
  const step = record.step;
  const everything = step.action === 'runCommand' && (step.args.allowSecrets?.length ?? 0) > 0;
  // A write through a harmless-looking link to .env opens .env: the step's real target decides too.
  const target = stepRecordTraits(step, policy, dataDir).secretContent;
  const files = record.preview && 'files' in record.preview ? record.preview.files : [];
  const anySecretFile = target || files.some((file) => isSecret(file.path));
  if (!everything && !anySecretFile) return null;
  return {
    file: (filePath) => everything || target || isSecret(filePath),
    everything,
    editedContent: target && record.edit !== undefined,
  };
}

function withheldFile(file: FileChangePreview): FileChangePreview {
  // The hashes go too: the sha256 of a short secret is one guess away from it.
  return { ...file, preHash: null, postHash: null, diff: null, diffOmittedReason: WITHHELD_DIFF };
}

function withheldOutput(output: OutputPreview): OutputPreview {
  return { text: WITHHELD_OUTPUT, bytes: output.bytes, truncated: false };
}

function withheldPreview(preview: Preview, parts: SecretParts): Preview {
  if (preview.kind === 'fileChanges')
    return { ...preview, files: preview.files.map((file) => (parts.file(file.path) ? withheldFile(file) : file)) };
  if (preview.kind === 'commandRun') {
    const files = preview.files.map((file) => (parts.file(file.path) ? withheldFile(file) : file));
    if (!parts.everything) return { ...preview, files };
    return { ...preview, files, stdout: withheldOutput(preview.stdout), stderr: withheldOutput(preview.stderr) };
  }
  return preview;
}

/** A stopped run's kept output goes when the run could read secrets. */
function withheldRunTimes(runTimes: RunTimes): RunTimes {
  const strip = (span: RunTimes['dryRun']) => {
    if (!span?.output) return span;
    const { output: _output, ...rest } = span;
    return rest;
  };
  return {
    ...(runTimes.dryRun ? { dryRun: strip(runTimes.dryRun) } : {}),
    ...(runTimes.realRun ? { realRun: strip(runTimes.realRun) } : {}),
  };
}

/**
 * The record without its secret content (the same object when it holds none). `keepResult`: an
 * executed step's result is what the person approved to happen, and goes back to its proposer.
 */
function withoutSecretContent(record: StepRecord, parts: SecretParts, keepResult: boolean): StepRecord {
  const preview = record.preview ? withheldPreview(record.preview, parts) : null;
  const runTimes = parts.everything && record.runTimes ? withheldRunTimes(record.runTimes) : record.runTimes;
  const result = parts.everything && !keepResult && record.result ? { withheld: WITHHELD_OUTPUT } : record.result;
  let { step, edit } = record;
  if (parts.editedContent && step.action === 'writeFile') {
    // The person's own version of a secret file may hold the real value: it is theirs, not the agent's.
    step = { ...step, args: { ...step.args, content: '(withheld: your version of a secret-looking file)', encoding: 'utf8' } };
    if (edit) edit = { ...edit, diff: null };
  }
  return {
    ...record,
    step,
    preview,
    result,
    ...(runTimes ? { runTimes } : {}),
    ...(edit ? { edit } : {}),
  };
}

/** A step record as an agent may read it: no secret-looking file's content, no output of a run that could read secrets. */
export function recordForAgent(record: StepRecord, policy: Policy, dataDir: string): StepRecord {
  const parts = secretPartsOf(record, policy, dataDir);
  if (!parts) return record;
  // The preview's hash covers the secret too: with everything else known, a short secret is one guess away from it.
  return { ...withoutSecretContent(record, parts, record.status === 'executed' || record.status === 'reverted'), previewHash: null };
}

/** A preview an agent asked for (its own dry run of its step): the same parts withheld as in its record. */
export function previewForAgent(record: StepRecord, preview: Preview, policy: Policy, dataDir: string): Preview {
  const parts = secretPartsOf({ ...record, preview }, policy, dataDir);
  return parts ? withheldPreview(preview, parts) : preview;
}

/**
 * A list of files with diffs (what a step changed, what its revert would do) as an agent may read
 * it: a secret-looking file's diff, and every diff of a run that could read secrets, withheld.
 */
export function diffsForAgent<T extends { files: { path: string; diff?: string | null; diffOmittedReason?: string }[] }>(
  page: T,
  record: StepRecord,
  policy: Policy,
  dataDir: string,
): T {
  const parts = secretPartsOf(record, policy, dataDir);
  const isSecret = secretPathIn(policy);
  const secret = (filePath: string) => isSecret(filePath) || (parts?.file(filePath) ?? false);
  if (!page.files.some((file) => secret(file.path))) return page;
  return {
    ...page,
    files: page.files.map((file) => {
      if (!secret(file.path)) return file;
      // Every diff of the file goes: what the step changed, and what changed since (a revert's conflict shows the newer content).
      const withheld: typeof file & { changedSince?: unknown } = { ...file, diff: null, diffOmittedReason: WITHHELD_DIFF };
      if ('changedSince' in withheld) withheld.changedSince = null;
      return withheld;
    }),
  };
}

/**
 * What the store keeps of a record that has just ended without its changes standing: the secret
 * parts of its preview and run output dropped (null: nothing to drop).
 */
export function storedAfterEnd(record: StepRecord, policy: Policy, dataDir: string): Pick<StepRecord, 'preview' | 'runTimes'> | null {
  if (!SECRET_SCRUB_STATUSES.includes(record.status)) return null;
  const parts = secretPartsOf(record, policy, dataDir);
  if (!parts) return null;
  const scrubbed = withoutSecretContent(record, parts, false);
  return { preview: scrubbed.preview, runTimes: scrubbed.runTimes };
}
