import type { FileChangePreview, Preview } from '../../src/domain/step-record.js';
import { UnifiedDiff } from './diff-view.js';
import { InvisibleWarning, MarkedText, markedPlainText } from './marked-text.js';

function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function fileHeadline(file: FileChangePreview): string {
  if (!file.existedBefore && file.existsAfter) return `new file, ${sizeText(file.sizeAfter)}`;
  if (file.existedBefore && !file.existsAfter) return `deleted, was ${sizeText(file.sizeBefore)}`;
  return `${sizeText(file.sizeBefore)} → ${sizeText(file.sizeAfter)}`;
}

function FileChange({ file }: { file: FileChangePreview }) {
  return (
    <section className="file-change" aria-label={`Changes to ${markedPlainText(file.path)}`}>
      <header className="file-change-head">
        <code className="file-path">
          <MarkedText text={file.path} />
        </code>
        <span className="muted">{fileHeadline(file)}</span>
      </header>
      {file.dropped?.map((note) => (
        <p key={note} className="warning">
          Not carried back: {note}
        </p>
      ))}
      <InvisibleWarning texts={[file.path, file.diff]} what="path or the diff of this file" />
      {file.diff !== null ? (
        <UnifiedDiff patch={markedPlainText(file.diff)} path={markedPlainText(file.path)} label={`Diff of ${markedPlainText(file.path)}`} />
      ) : (
        <p className="muted">
          {file.binary
            ? 'Binary file: no text diff. Exact snapshots are kept for revert.'
            : (file.diffOmittedReason ?? 'No diff available.')}
        </p>
      )}
    </section>
  );
}

/** The dry run, as the person approves it: diffs for files, the entry for knowledge, output for the rest. */
export function PreviewPanel({ preview, error }: { preview: Preview | null; error?: string | null }) {
  if (!preview) {
    return <p className="muted">{error ? `No preview: ${error}` : 'No preview was made for this step.'}</p>;
  }
  if (preview.kind === 'fileChanges') {
    if (preview.files.length === 0) return <p className="muted">No file changes.</p>;
    return (
      <div className="preview">
        {preview.files.map((file) => (
          <FileChange key={file.path} file={file} />
        ))}
      </div>
    );
  }
  if (preview.kind === 'kbEntry') {
    return (
      <section className="kb-preview" aria-label="Knowledge-base entry">
        <h4>{preview.title}</h4>
        {preview.tags.length ? (
          <p className="tags">
            {preview.tags.map((tag) => (
              <span key={tag} className="tag">
                {tag}
              </span>
            ))}
          </p>
        ) : null}
        <InvisibleWarning texts={[preview.title, preview.content]} what="entry" />
        <pre className="output" tabIndex={0} aria-label="Entry content">
          <MarkedText text={preview.content} />
        </pre>
      </section>
    );
  }
  if (preview.kind === 'url') {
    return (
      <section className="url-preview" aria-label="URL to open">
        <dl className="facts">
          <dt>Host</dt>
          <dd>
            <strong>{preview.host}</strong>
            {preview.protocol === 'http:' ? <span className="warning-inline"> not encrypted (http:)</span> : null}
          </dd>
          <dt>Path</dt>
          <dd>
            <code>
              <MarkedText text={preview.path} />
            </code>
          </dd>
          {preview.fragment ? (
            <>
              <dt>Fragment</dt>
              <dd>
                <code>
                  <MarkedText text={preview.fragment} />
                </code>
              </dd>
            </>
          ) : null}
          <dt>Full URL</dt>
          <dd>
            <code className="hash">{preview.url}</code>
          </dd>
        </dl>
        {preview.query.length ? (
          <table className="grid query-table">
            <caption className="muted">Query parameters, decoded</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Value</th>
              </tr>
            </thead>
            <tbody>
              {preview.query.map((param, index) => (
                <tr key={`${param.name}-${index}`} className={param.opaque ? 'opaque' : ''}>
                  <td>
                    <code>{param.name}</code>
                  </td>
                  <td>
                    <code className="hash">
                      <MarkedText text={param.value} />
                    </code>
                    {param.opaque ? <span className="warning-inline"> opaque: could carry data out</span> : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        {preview.warnings.map((warning) => (
          <p key={warning} className="warning">
            {warning}
          </p>
        ))}
      </section>
    );
  }
  if (preview.kind === 'commandRun') {
    const outcome = preview.timedOut ? 'timed out' : preview.oomKilled ? 'ran out of memory' : `exited with ${preview.exitCode ?? '—'}`;
    return (
      <div className="preview">
        <InvisibleWarning
          texts={[preview.command, preview.cwd, preview.stdout.text, preview.stderr.text]}
          what="command, its folder or its output"
        />
        <dl className="facts">
          <dt>Command</dt>
          <dd>
            <code>
              <MarkedText text={preview.command} />
            </code>
          </dd>
          <dt>In</dt>
          <dd>
            <code>
              <MarkedText text={preview.cwd} />
            </code>{' '}
            · network {preview.network === 'none' ? 'off' : 'allowlisted hosts only'}
          </dd>
          <dt>Dry run</dt>
          <dd>
            {outcome} in the sandbox
            {preview.planBasis?.length
              ? ` · after the plan's earlier ${preview.planBasis.length === 1 ? 'step' : `${preview.planBasis.length} steps`}`
              : ''}
            {preview.dryRun ? ' · approving applies it as shown' : ' · approving runs it again'}
          </dd>
        </dl>
        {preview.rebuilt ? (
          <p className="notice" data-testid="preview-rebuilt">
            Rebuilt: <MarkedText text={preview.rebuilt.reason} />
          </p>
        ) : null}
        <Output label="Standard output" stream={preview.stdout} />
        <Output label="Standard error" stream={preview.stderr} />
        {preview.conflicts.length ? (
          <p className="warning">Changed in the real workspace while the command ran: {preview.conflicts.join(', ')}</p>
        ) : null}
        {preview.skipped.map((entry) => (
          <p key={entry.path} className={entry.blocksChangeset ? 'warning' : 'muted'}>
            {entry.blocksChangeset ? 'Refused — nothing of this command will be applied' : 'Not carried back'}:{' '}
            <code>
              <MarkedText text={entry.path} />
            </code>{' '}
            — {entry.reason}
          </p>
        ))}
        {preview.files.map((file) => (
          <FileChange key={file.path} file={file} />
        ))}
      </div>
    );
  }
  if (preview.kind === 'codeRun') {
    const result = preview.result;
    return (
      <div className="preview">
        <p>
          {result.ok ? `Returned in ${result.durationMs} ms:` : `Failed (${result.code}) after ${result.durationMs} ms: ${result.message}`}
        </p>
        {result.ok ? (
          <pre className="output" tabIndex={0} aria-label="Returned value">
            {JSON.stringify(result.value, null, 2) ?? 'undefined'}
          </pre>
        ) : null}
        {result.logs.length ? (
          <pre className="output" tabIndex={0} aria-label="Console output">
            <MarkedText text={result.logs.join('\n')} />
          </pre>
        ) : null}
        {preview.requests.length ? (
          <section aria-label="Network requests it would make">
            <h4>Network requests (not sent in the dry run)</h4>
            <ul>
              {preview.requests.map((request, index) => (
                <li key={index}>
                  <code>
                    {request.method} {request.url}
                  </code>
                </li>
              ))}
            </ul>
          </section>
        ) : null}
      </div>
    );
  }
  return (
    <pre className="output" tabIndex={0} aria-label="Captured output">
      {preview.text}
    </pre>
  );
}

function Output({ label, stream }: { label: string; stream: { text: string; bytes: number; truncated: boolean } }) {
  if (!stream.text) return null;
  return (
    <section aria-label={label}>
      <h4 className="small-head">
        {label}
        {stream.truncated ? ` (first part of ${stream.bytes} bytes)` : ''}
      </h4>
      <pre className="output" tabIndex={0}>
        <MarkedText text={stream.text} />
      </pre>
    </section>
  );
}
