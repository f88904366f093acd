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

/** The diff that undoing the change would apply: revert shows this before it restores. */
export function reverseUnifiedDiff(patch: string): string {
  const parsed = parsePatch(patch);
  return formatPatch(reversePatch(parsed));
}

export function UnifiedDiff({ patch, path, label }: { patch: string; path: string; label: string }) {
  const files = useMemo(() => {
    try {
      return parseDiff(asGitDiff(patch, path), { nearbySequences: 'zip' });
    } catch {
      return null;
    }
  }, [patch, path]);
  if (!files || files.length === 0) return <pre className="raw-diff" aria-label={label}>{patch}</pre>;
  return (
    <div className="diff-frame" role="region" aria-label={label}>
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
