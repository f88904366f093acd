import type { EventKind } from './audit-event.js';
import { durationText } from './run-step-facts.js';
import { flatText } from './sentence-text.js';

/*
 * An audit record as a reviewer reads it: one sentence per record in the words History uses ("root forced
 * the revert of “Write src/api.js” over a file changed since; …"). The window's audit view and the CLI's
 * `audit show` say the same. SENTENCES is keyed by every EventKind, so a kind added to EVENT_KINDS without
 * its sentence fails the type check: no record reads as its machine name.
 */

/** The signed body's fields a sentence reads (src/audit/format/record-format.ts). */
export interface RecordBodyWords {
  action?: string;
  stepId?: string | null;
  planId?: string | null;
  userId?: { user?: string; channel?: string; agent?: string | null; client?: string | null } | null;
  /** The event's detail, as signed. */
  args?: Record<string, unknown> | null;
  /** The outcome as signed: `{ ok: false, error }`, a result, or `{ status }`. */
  result?: unknown;
}

/** What a sentence has to hand besides the body: the step's title when the reader knows it. */
interface Said {
  who: string;
  /** “Title” or "step 1a2b3c4d…9f0e"; "a step" when the record names none. */
  step: string;
  args: Record<string, unknown>;
  body: RecordBodyWords;
}

/** The words an id starts with that every id of its kind shares: `step-`, `step-run-`, `run-`. */
const ID_LABELS = /^(?:(?:step|run|plan|skill|q)-)+/;
/** The least of an id's own characters its short form shows after those words. */
const OWN_CHARACTERS_SHOWN = 3;

/**
 * A long id as History and the window show it (and the CLI takes back): its start and end. The start
 * holds at least a few characters of the id's own after the words every id of its kind starts with:
 * a run's steps are `step-run-<uuid>-i1-c0`, whose first 8 characters and last 4 were the same for
 * every run.
 */
export function shortRecordId(id: string, keep = 8): string {
  const characters = [...id];
  const start = Math.max(keep, (ID_LABELS.exec(id)?.[0].length ?? 0) + OWN_CHARACTERS_SHOWN);
  if (characters.length <= start + 6) return id;
  return `${characters.slice(0, start).join('')}…${characters.slice(-4).join('')}`;
}

/**
 * The curly double quotes of a value shown straight: the curly ones around it are ours, and an
 * agent's `ok”. root approved “x` must not close them and read on as a sentence of ours.
 */
const ownQuotesOnly = (text: string): string => text.replace(/[“”„‟〝〞＂]/gu, '"');

/** A value an agent or a person wrote, as one short line inside our sentence. */
function quoted(value: unknown, max = 80): string {
  const text = ownQuotesOnly(flatText(typeof value === 'string' ? value : JSON.stringify(value ?? '')));
  const characters = [...text];
  return `“${characters.length > max ? `${characters.slice(0, max - 1).join('')}…` : text}”`;
}

const text = (value: unknown): string | null => (typeof value === 'string' && value.trim() !== '' ? flatText(value) : null);
const count = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) ? value : Array.isArray(value) ? value.length : 0;
const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;
const runRef = (args: Record<string, unknown>): string => (text(args.runId) ? `run ${shortRecordId(text(args.runId)!)}` : 'a run');
const skillRef = (args: Record<string, unknown>): string => (text(args.name) ? `skill ${quoted(args.name, 60)}` : 'a skill');

/** Why, when the record says: " (reason)". */
function because(value: unknown): string {
  const reason = text(value);
  return reason ? ` (${[...reason].length > 160 ? `${[...reason].slice(0, 159).join('')}…` : reason})` : '';
}

function errorOf(body: RecordBodyWords): string {
  const outcome = body.result as { ok?: unknown; error?: { code?: unknown; message?: unknown } } | null | undefined;
  const error = outcome && typeof outcome === 'object' && outcome.ok === false ? outcome.error : undefined;
  const code = text(error?.code);
  return code ? `: ${code}` : '';
}

const SENTENCES: Record<EventKind, (said: Said) => string> = {
  'app.started': () => 'Executor started.',
  'app.stopped': () => 'Executor stopped.',
  'policy.changed': ({ who, args, body }) =>
    args.remembered && body.stepId
      ? `${who} changed the policy to remember a rule, approving ${stepOf(body)}.`
      : `${who} changed the policy.`,
  'policy.edited_outside': () => 'The policy file was found edited outside Executor; the log records what it now says.',
  'host.paused': ({ who, args }) =>
    `${who} stopped all agents${because(args.reason)}: ${plural(count(args.cancelledSteps), 'run')} stopped, ${plural(count(args.heldSteps), 'step')} held.`,
  'host.resumed': ({ who, args }) =>
    `${who} let agents work again${typeof args.pausedMs === 'number' ? ` (stopped for ${durationText(args.pausedMs)})` : ''}.`,
  'storage.recording_resumed': ({ args }) =>
    `Executor could record again after its data directory's disk was full${typeof args.heldMs === 'number' ? ` for ${durationText(args.heldMs)}` : ''}; ${plural(count(args.heldSteps), 'held step')} went on.`,
  'storage.held_records_recorded': ({ args }) =>
    `At its start Executor recorded ${plural(Array.isArray(args.records) ? args.records.length : 0, 'decision or outcome', 'decisions and outcomes')} that a host stopped on a full disk had kept in its reserve.`,
  'ipc.rejected': ({ who, args }) =>
    `Executor refused a message from ${who}${text(args.method) ? ` calling ${quoted(args.method, 60)}` : ''}${text(args.code) ? ` (${text(args.code)})` : ''}.`,
  'ipc.denied': ({ who, args }) =>
    `Executor denied ${who}${text(args.method) ? ` the call ${quoted(args.method, 60)}` : ' a call'}: that channel may not make it.`,
  'key.created': () => "Executor made the log's signing key; the records that follow are signed with it.",
  'key.rotated': ({ who }) => `${who} rotated the log's signing key; the records that follow are signed with the new one.`,
  'clock.stepped': ({ args }) =>
    `The machine's clock was found ${typeof args.behindMs === 'number' ? `${durationText(args.behindMs)} ` : ''}behind the log; records keep the log's time until it catches up.`,
  'audit.tail_lost': ({ args }) =>
    `At open, the database had lost its newest ${plural(count(args.lostRecords), 'record')}${typeof args.afterSeq === 'number' ? ` after #${args.afterSeq}` : ''}; the steps they ran are not run again.`,
  'audit.anchor_restored': ({ args }) =>
    `At open, the log's anchor was missing though the log held nothing but its creation${typeof args.seq === 'number' ? ` (up to #${args.seq})` : ''}: a host stopped before writing it. The anchor was written again.`,
  'step.proposed': ({ who, step }) => `${who} proposed ${step}.`,
  'step.evaluated': ({ who, step }) => `${who} rated the risk of ${step}.`,
  'step.consent_requested': ({ who, step }) => `${who} asked the person about ${step}.`,
  'step.approved': ({ who, step }) => `${who} approved ${step}.`,
  'step.approved_with_edits': ({ who, step }) => `${who} approved, with edits, ${step}.`,
  'step.edited': ({ who, step }) => `${who} edited ${step}.`,
  'step.rejected': ({ who, step, args }) => `${who} rejected ${step}${because(args.reason)}.`,
  'step.cancelled': ({ who, step }) => `${who} cancelled ${step}.`,
  'agent.rate_limited': ({ who, args }) =>
    `Executor turned away ${who}'s proposals for a while: over its limit${text(args.limit) ? ` of ${text(args.limit) === 'openSteps' ? 'open steps' : 'steps a minute'}` : ''}.`,
  'step.denied': ({ who, step }) => `${who} denied ${step}.`,
  'step.simulated': ({ who, step }) => `${who} dry-ran ${step}.`,
  'step.execution_started': ({ who, step }) => `${who} started running ${step}.`,
  'step.executed': ({ who, step }) => `${who} ran ${step}.`,
  'step.failed': ({ who, step, body }) => `${who} saw ${step} fail${errorOf(body)}.`,
  'step.interrupted': ({ step }) => `${cap(step)} was interrupted while it ran (Executor stopped).`,
  'step.reconsent': ({ step, args }) => `${cap(step)} needs the person's approval again${because(args.reason)}.`,
  'step.preview_rebuilt': ({ step, args }) => `The preview of ${step} was made again${because(args.reason)}.`,
  'step.execution_deferred': ({ step }) => `${cap(step)} waits its turn: it runs after the steps before it.`,
  'step.reverted': ({ who, step }) => `${who} reverted ${step}.`,
  'step.revert_forced': ({ who, step, args }) => {
    const kept = Array.isArray(args.restoreStepIds)
      ? (args.restoreStepIds as unknown[]).filter((id): id is string => typeof id === 'string')
      : [];
    return `${who} forced the revert of ${step} over a file changed since; the newer content is kept as the backup of ${
      kept.length ? kept.map((id) => `step ${shortRecordId(id)}`).join(', ') : 'its forced-revert steps'
    }.`;
  },
  'step.expired': ({ step }) => `Nobody decided ${step} in time; it lapsed and did not run.`,
  'step.recovered': ({ step, args }) =>
    `At restart, Executor took up ${step}${text(args.from) ? `, left ${text(args.from)!.replace(/_/g, ' ')}` : ''}${text(args.action) ? `: ${text(args.action)}` : ''}.`,
  'step.cancel_outcome': ({ step }) => `The cancelled run of ${step} ended after all; the step stays cancelled.`,
  'step.run_stopped_by_shutdown': ({ step }) => `Executor shut down while ${step} ran; its sandbox was stopped.`,
  'capability.call': ({ step, args }) =>
    `${step === 'a step' ? 'A skill' : cap(step)} used a capability${text(args.capability) ? ` ${quoted(args.capability, 40)}` : text(args.name) ? ` ${quoted(args.name, 40)}` : ''}.`,
  'agent.read': ({ who, args }) =>
    `${who} ${args.allowed === false ? 'was refused a read' : 'read'}${
      Array.isArray(args.paths) && args.paths.length
        ? ` of ${(args.paths as unknown[])
            .slice(0, 3)
            .map((p) => quoted(p, 60))
            .join(', ')}${args.paths.length > 3 ? ` and ${args.paths.length - 3} more` : ''}`
        : ''
    }${text(args.tool) ? ` with ${quoted(args.tool, 30)}` : ''}.`,
  'rule.applied': ({ step, args }) =>
    `A remembered rule${text(args.ruleId) ? ` (${shortRecordId(text(args.ruleId)!)})` : ''} approved ${step}.`,
  'model.key_set': ({ who, args }) =>
    `${who} ${args.set === false ? 'cleared' : 'set'} the ${text(args.provider) ?? 'model'} API key (the key itself is never recorded).`,
  'run.started': ({ who, args }) => `${who} started ${runRef(args)}${text(args.task) ? `: ${quoted(args.task)}` : ''}.`,
  'run.turn': ({ args }) =>
    `${cap(runRef(args))} took a model turn${typeof args.iteration === 'number' ? ` (#${args.iteration})` : ''}${Array.isArray(args.toolCalls) && args.toolCalls.length ? `, calling ${plural(args.toolCalls.length, 'tool')}` : ''}.`,
  'run.question': ({ who, args }) => `${args.runId ? cap(runRef(args)) : who} asked the person ${quoted(args.text)}.`,
  'run.answered': ({ who, args }) =>
    `${who} answered${args.runId ? ` ${runRef(args)}'s` : ' the'} question${text(args.answer) ? `: ${quoted(args.answer)}` : ''}.`,
  'run.ended': ({ args }) => `${cap(runRef(args))} ended${text(args.status) ? `: ${text(args.status)!.replace(/_/g, ' ')}` : ''}.`,
  'skill.proposed': ({ who, args }) =>
    `${who} proposed ${skillRef(args)}${typeof args.version === 'number' ? ` version ${args.version}` : ''}.`,
  'skill.state': ({ who, args }) =>
    `${who} moved ${skillRef(args)}${text(args.from) ? ` from ${text(args.from)}` : ''} to ${text(args.to) ?? 'a new state'}${because(args.reason)}.`,
  'skill.used': ({ who, args }) =>
    args.phase === 'end'
      ? `A use of ${skillRef(args)} ${args.ok === true ? 'succeeded' : `failed${text(args.code) ? ` (${text(args.code)})` : ''}`}${typeof args.durationMs === 'number' ? ` after ${durationText(args.durationMs)}` : ''}.`
      : `${who} began a use of ${skillRef(args)}.`,
};

/** A sentence that starts with our own words gets its capital; one that starts with a user's name keeps it as written ("root approved …"). */
const ourCap = (sentence: string): string => (/^(the|agent|a|someone) /.test(sentence) ? cap(sentence) : sentence);

const cap = (words: string): string => (words ? words[0]!.toUpperCase() + words.slice(1) : words);

function stepOf(body: RecordBodyWords, title?: string | null): string {
  if (title) return `“${ownQuotesOnly(flatText(title))}”`;
  return body.stepId ? `step ${shortRecordId(body.stepId)}` : 'a step';
}

/** Who acted, as History names them: the user, or the agent a channel speaks for. */
function whoOf(body: RecordBodyWords): string {
  const user = text(body.userId?.user);
  const agent = text(body.userId?.agent);
  if (body.userId?.channel === 'mcp' && agent) return `agent ${quoted(agent, 40)}`;
  if (body.userId?.channel === 'system' && (!user || user === 'executor')) return 'Executor';
  if (body.userId?.channel === 'policy') return 'the policy';
  return user ?? text(body.userId?.channel) ?? 'someone';
}

export function isKnownRecordAction(action: unknown): action is EventKind {
  return typeof action === 'string' && Object.prototype.hasOwnProperty.call(SENTENCES, action);
}

/**
 * The record's sentence. `title` is the step's title once the reader has it (the window asks the store);
 * without it the step is named by its short id. A record of a kind this build does not know (a newer
 * Executor's log) still reads as a sentence that says so.
 */
export function auditRecordSentence(body: RecordBodyWords, title: string | null = null): string {
  const said: Said = { who: whoOf(body), step: stepOf(body, title), args: body.args ?? {}, body };
  if (!isKnownRecordAction(body.action))
    return ourCap(`${said.who} did something this Executor has no words for (${quoted(body.action ?? 'no action', 60)}).`);
  return ourCap(SENTENCES[body.action](said));
}
