/**
 * What a person reads of a unified patch: its lines, each unchanged, removed or added, with whether it ends in a
 * newline ("\ No newline at end of file" takes it away). Runs of removed and added lines between unchanged ones are
 * one change block.
 */
export function shownLines(patch: string): { kind: ' ' | '-' | '+'; text: string }[] {
  const lines = patch.split('\n');
  const shown: { kind: ' ' | '-' | '+'; text: string }[] = [];
  let inHunk = false;
  for (let k = 0; k < lines.length; k++) {
    const line = lines[k]!;
    if (line.startsWith('@@')) inHunk = true;
    if (!inHunk || line.startsWith('@@') || line.startsWith('\\') || line === '') continue;
    const ending = lines[k + 1]?.startsWith('\\') ? '' : '\n';
    shown.push({ kind: line[0] as ' ' | '-' | '+', text: line.slice(1) + ending });
  }
  return shown;
}
