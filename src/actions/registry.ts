import type { ActionName, Step } from '../domain/step.js';
import type { ActionModule } from './action-module.js';
import { createKBEntry } from './create-kb-entry.js';
import { deleteFile } from './delete-file.js';
import { openURL } from './open-url.js';
import { runCode } from './run-code.js';
import { runCommand } from './run-command.js';
import { runSkill } from './run-skill.js';
import { writeFile } from './write-file.js';

/** Every action's module. The mapped type makes a new action in the schema union fail to compile until it is listed here. */
const ACTIONS: { [A in ActionName]: ActionModule<A> } = {
  writeFile,
  deleteFile,
  createKBEntry,
  runCommand,
  openURL,
  runCode,
  runSkill,
};

/** The module with its args, typed together, so callers never switch on the action name. */
export function boundAction(step: Step): { module: ActionModule<ActionName>; args: never } {
  return { module: ACTIONS[step.action] as ActionModule<ActionName>, args: step.args as never };
}
