import type { HookClientName, TextReplacement } from './tool-calls.js';

/*
 * An edit's exact new content, computed against the file as it is now, as the client's own Edit
 * tool would compute it. What the person approves is this whole content, so an edit whose old text
 * is not there (the model worked from a stale read) or not unique is refused here, in the words the
 * client's own tool uses for that, which the model already knows how to act on.
 */

export type EditOutcome = { ok: true; content: string } | { ok: false; reason: string };

const occurrences = (haystack: string, needle: string) => haystack.split(needle).length - 1;

const WORDS: Record<
  HookClientName,
  {
    missingFile: string;
    unchanged(path: string): string;
    notFound(path: string, old: string): string;
    notUnique(path: string, count: number, old: string): string;
  }
> = {
  'claude-code': {
    missingFile: 'File does not exist.',
    unchanged: () => 'No changes to make: old_string and new_string are exactly the same.',
    notFound: (_path, old) => `String to replace not found in file.\nString: ${old}`,
    notUnique: (_path, count, old) =>
      `Found ${count} matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: ${old}`,
  },
  'gemini-cli': {
    missingFile: 'File not found. Cannot apply edit. Use an empty old_string to create a new file.',
    unchanged: (filePath) => `No changes to apply. The old_string and new_string are identical in file: ${filePath}`,
    notFound: (filePath) =>
      `Could not find an exact match for 'old_string' in '${filePath}'. If previous edits modified the file or you are modifying lines outside your recent read window, please use ReadFile to inspect the target lines before retrying with an exact 'old_string'.`,
    notUnique: (filePath, count) =>
      `Failed to edit, Expected 1 occurrence but found ${count} for old_string in file: ${filePath}. If you intended to replace multiple occurrences, set 'allow_multiple' to true.`,
  },
};

/** `current` is the file's text now, or null when it does not exist; an empty old text on a missing file creates it. */
export function applyEdits(client: HookClientName, filePath: string, current: string | null, replacements: TextReplacement[]): EditOutcome {
  const words = WORDS[client];
  let content = current;
  for (const { oldText, newText, all } of replacements) {
    // Both clients refuse an edit that changes nothing: a step for it would ask the person about nothing.
    if (oldText === newText) return { ok: false, reason: words.unchanged(filePath) };
    if (content === null) {
      if (oldText !== '') return { ok: false, reason: words.missingFile };
      content = newText;
      continue;
    }
    if (oldText === '') {
      // Both clients create a file with an empty old text; on a file that has content it names nothing.
      if (content !== '') return { ok: false, reason: words.notFound(filePath, oldText) };
      content = newText;
      continue;
    }
    const count = occurrences(content, oldText);
    if (count === 0) return { ok: false, reason: words.notFound(filePath, oldText) };
    if (count > 1 && !all) return { ok: false, reason: words.notUnique(filePath, count, oldText) };
    // split/join, not String.replace: "$&" in the new text is text, not a pattern.
    content = all ? content.split(oldText).join(newText) : content.replace(oldText, () => newText);
  }
  return { ok: true, content: content ?? '' };
}
