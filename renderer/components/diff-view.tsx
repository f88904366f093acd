import { formatPatch, parsePatch, reversePatch } from 'diff';
import { useMemo, type ReactNode } from 'react';
import { Diff, getChangeKey, Hunk, parseDiff, pickRanges, tokenize, type FileData } from 'react-diff-view';
import 'react-diff-view/style/index.css';
import { wordEdits } from './word-edits.js';

/**
 * jsdiff writes "Index:" and "===" lines and no git header; react-diff-view parses git's format.
 * The header is added so the same parser reads both.
 */
function asGitDiff(patch: string, path: string): string {
  const body = patch.replace(/^Index: .*\n=+\n/, '');
  return `diff --git a/${path} b/${path}\n${body}`;
}

/**
 * The diff that undoing the change would apply: revert shows this before it restores. Reversing
 * swaps + and − but keeps their order; each run of changes is put back in the usual order
 * (removed lines, then added ones), each line with its "\ No newline" marker.
 */
export function reverseUnifiedDiff(patch: string): string {
  const reversed = reversePatch(parsePatch(patch));
  for (const file of reversed) {
    for (const hunk of file.hunks) {
      const lines: string[] = [];
      let removed: string[] = [];
      let added: string[] = [];
      let last: string[] | null = null;
      const flush = () => {
        lines.push(...removed, ...added);
        removed = [];
        added = [];
        last = null;
      };
      for (const line of hunk.lines) {
        if (line.startsWith('-')) (last = removed).push(line);
        else if (line.startsWith('+')) (last = added).push(line);
        else if (line.startsWith('\\') && last) (last as string[]).push(line);
        else {
          flush();
          lines.push(line);
        }
      }
      flush();
      hunk.lines = lines;
    }
  }
  return formatPatch(reversed);
}

/**
 * A last line without a newline and the same line with one are different lines, and the diff says
 * so (`\ No newline at end of file`); react-diff-view drops that marker, which left a line shown as
 * removed and added with nothing to tell them apart. The note goes back under the line it is about.
 */
function endOfFileNotes(file: FileData): Record<string, ReactNode> {
  const notes: Record<string, ReactNode> = {};
  const changes = file.hunks.flatMap((hunk) => hunk.changes);
  const note = (text: string) => <div className="diff-eof-note">{text}</div>;
  const lastOld = changes.findLast((change) => change.type !== 'insert');
  const lastNew = changes.findLast((change) => change.type !== 'delete');
  const oldMissing = file.oldEndingNewLine === false && lastOld;
  const newMissing = file.newEndingNewLine === false && lastNew;
  if (oldMissing && newMissing && lastOld === lastNew) notes[getChangeKey(lastOld)] = note('No newline at end of file');
  else {
    if (oldMissing) notes[getChangeKey(lastOld)] = note('No newline at end of file (before)');
    if (newMissing) notes[getChangeKey(lastNew)] = note('No newline at end of file (after)');
  }
  return notes;
}

export function UnifiedDiff({ patch, path, label }: { patch: string; path: string; label: string }) {
  const files = useMemo(() => {
    try {
      return parseDiff(asGitDiff(patch, path));
    } catch {
      return null;
    }
  }, [patch, path]);
  if (!files || files.length === 0)
    return (
      <pre className="raw-diff" tabIndex={0} aria-label={label}>
        {patch}
      </pre>
    );
  return (
    <div className="diff-frame" role="region" aria-label={label} tabIndex={0}>
      {files.map((file, index) => {
        const edits = wordEdits(file.hunks);
        const tokens = tokenize(file.hunks, { enhancers: [pickRanges(edits.old, edits.new)] });
        return (
          <Diff
            key={index}
            viewType="unified"
            diffType={file.type}
            hunks={file.hunks}
            tokens={tokens}
            gutterType="default"
            widgets={endOfFileNotes(file)}
          >
            {(hunks) => hunks.map((hunk) => <Hunk key={hunk.content} hunk={hunk} />)}
          </Diff>
        );
      })}
    </div>
  );
}
