import type { ExecutorClient } from '../ipc/client/client.js';
import type { SignedRpc } from '../ipc/client/signed-rpc.js';

/*
 * The few host methods the hook calls, over a signed session, with their results checked by hand
 * for the members the hook reads. The typed client (client.ts) checks every result against the
 * method table's zod schemas, and loading those schemas was most of the hook's cold start: the hook
 * runs before every tool call of an outside agent (bench/hooks.ts). What is checked here is the
 * subset the hook's decisions rest on; a reply outside it is IPC_INVALID_RESULT, which the hook
 * answers with a deny.
 */

export type HookApi = Pick<
  ExecutorClient,
  | 'getPolicy'
  | 'agentIdentity'
  | 'checkRead'
  | 'evaluateStep'
  | 'propose'
  | 'listSteps'
  | 'getStep'
  | 'cancel'
  | 'getStorageHold'
  | 'on'
  | 'close'
>;

type Json = Record<string, unknown>;
type Check = (result: unknown) => { success: true; data: unknown } | { success: false };

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const isString = (value: unknown): value is string => typeof value === 'string';
const optional = (value: unknown, is: (value: unknown) => boolean) => value === undefined || is(value);
const checkedBy =
  (is: (value: unknown) => boolean): Check =>
  (result) =>
    is(result) ? { success: true, data: result } : { success: false };

/** A step record as far as the hook reads it: its step, status, place in its plan, outcome. */
function isStepRecord(value: unknown): boolean {
  if (!isObject(value) || !isObject(value.step)) return false;
  const step = value.step;
  return (
    isString(step.id) &&
    isString(step.planId) &&
    isString(step.action) &&
    isObject(step.args) &&
    isString(value.status) &&
    typeof value.position === 'number' &&
    optional(value.result, (result) => result === null || isObject(result)) &&
    optional(value.evaluation, (evaluation) => evaluation === null || isObject(evaluation))
  );
}
const isStepRecords = (value: unknown) => Array.isArray(value) && value.every(isStepRecord);

const CHECKS: Record<Exclude<keyof HookApi, 'on' | 'close'>, Check> = {
  getPolicy: checkedBy(isObject),
  agentIdentity: checkedBy((value) => isObject(value) && isString(value.agentId) && isString(value.credential)),
  checkRead: checkedBy(
    (value) => isObject(value) && typeof value.allowed === 'boolean' && optional(value.path, isString) && optional(value.reason, isString),
  ),
  evaluateStep: checkedBy(
    (value) =>
      isObject(value) &&
      typeof value.allowed === 'boolean' &&
      isString(value.consent) &&
      Array.isArray(value.reasons) &&
      value.reasons.every(isString),
  ),
  propose: checkedBy(isStepRecords),
  listSteps: checkedBy(isStepRecords),
  getStep: checkedBy(isStepRecord),
  cancel: checkedBy(isStepRecord),
  getStorageHold: checkedBy(isStorageHold),
};

/** A hold on a full data directory as far as the wait reads it (decision-wait.ts): whether it holds, and its words. */
function isStorageHold(value: unknown): boolean {
  return isObject(value) && typeof value.held === 'boolean';
}

/** The topics the hook hears, each with the check its events must pass before a listener sees one. */
const EVENT_CHECKS: Record<string, (value: unknown) => boolean> = { step: isStepRecord, storageHold: isStorageHold };

export function hookClient(rpc: SignedRpc): HookApi {
  const call = (name: keyof typeof CHECKS) => (params?: unknown) => rpc.call(name, params ?? {}, CHECKS[name]);
  const subscribed = new Set<string>();
  const api = {
    getPolicy: call('getPolicy'),
    agentIdentity: call('agentIdentity'),
    checkRead: call('checkRead'),
    evaluateStep: call('evaluateStep'),
    propose: call('propose'),
    listSteps: call('listSteps'),
    getStep: call('getStep'),
    cancel: call('cancel'),
    getStorageHold: call('getStorageHold'),
    async on(topic: string, listener: (data: unknown) => void) {
      // Only the topics the wait reads (a step's moves, a hold on a full disk); any other is a mistake in the hook, not a silent no-op.
      const check = EVENT_CHECKS[topic];
      if (!check) throw new Error(`the hook's client hears step and storageHold events only, not ${topic}`);
      const off = rpc.onEvent(topic, (data) => {
        if (check(data)) listener(data);
      });
      if (!subscribed.has(topic)) {
        await rpc.call('subscribe', { topics: [...subscribed, topic] });
        subscribed.add(topic);
      }
      return off;
    },
    close: () => rpc.close(),
  };
  return api as unknown as HookApi;
}
