import { formatPatch, parsePatch, reversePatch } from 'diff';
import { useMemo } from 'react';
import { Diff, Hunk, markEdits, parseDiff, tokenize } from 'react-diff-view';
import 'react-diff-view/style/index.css';

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

export function UnifiedDiff({ patch, path, label }: { patch: string; path: string; label: string }) {
  const files = useMemo(() => {
    try {
      return parseDiff(asGitDiff(patch, path), { nearbySequences: 'zip' });
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
        const tokens = tokenize(file.hunks, { enhancers: [markEdits(file.hunks, { type: 'block' })] });
        return (
          <Diff key={index} viewType="unified" diffType={file.type} hunks={file.hunks} tokens={tokens} gutterType="default">
            {(hunks) => hunks.map((hunk) => <Hunk key={hunk.content} hunk={hunk} />)}
          </Diff>
        );
      })}
    </div>
  );
}
