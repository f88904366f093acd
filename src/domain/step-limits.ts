/**
 * Bounds of a step's values, apart from the schema that enforces them, so that code which only
 * needs the numbers (the CLI's early checks) does not load zod with them.
 */
/** Largest file content a step may carry; bigger payloads belong in a command's changeset, not in a plan. */
export const MAX_CONTENT_BYTES = 16 * 1024 * 1024;
