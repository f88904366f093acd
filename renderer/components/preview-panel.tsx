import type { FileChangePreview, Preview } from '../../src/domain/step-record.js';
import { UnifiedDiff } from './diff-view.js';

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
    <section className="file-change" aria-label={`Changes to ${file.path}`}>
      <header className="file-change-head">
        <code className="file-path">{file.path}</code>
        <span className="muted">{fileHeadline(file)}</span>
      </header>
      {file.diff !== null ? (
        <UnifiedDiff patch={file.diff} path={file.path} label={`Diff of ${file.path}`} />
      ) : (
        <p className="muted">{file.binary ? 'Binary file: no text diff. Exact snapshots are kept for revert.' : (file.diffOmittedReason ?? 'No diff available.')}</p>
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
        {preview.tags.length ? <p className="tags">{preview.tags.map((tag) => <span key={tag} className="tag">{tag}</span>)}</p> : null}
        <pre className="output" tabIndex={0} aria-label="Entry content">{preview.content}</pre>
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
            <code>{preview.path}</code>
          </dd>
          {preview.fragment ? (
            <>
              <dt>Fragment</dt>
              <dd>
                <code>{preview.fragment}</code>
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
                    <code className="hash">{param.value}</code>
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
  if (preview.kind === 'codeRun') {
    const { result } = preview;
    return (
      <section className="code-preview" aria-label="Dry run of the code">
        <p className={result.ok ? 'muted' : 'warning'}>
          {result.ok ? `Finished in ${result.durationMs} ms.` : `${result.code}: ${result.message}`}
        </p>
        {result.ok ? (
          <pre className="output" tabIndex={0} aria-label="Returned value">{JSON.stringify(result.value, null, 2) ?? 'undefined'}</pre>
        ) : null}
        {result.logs.length ? <pre className="output" tabIndex={0} aria-label="Console output">{result.logs.join('\n')}</pre> : null}
        {preview.requests.length ? (
          <ul aria-label="Requests it would make">
            {preview.requests.map((request, index) => (
              <li key={index}>
                <code>
                  {request.method} {request.url}
                </code>
              </li>
            ))}
          </ul>
        ) : null}
      </section>
    );
  }
  if (preview.kind === 'commandRun') {
    return (
      <section className="command-preview" aria-label="Dry run of the command">
        <dl className="facts">
          <dt>Command</dt>
          <dd>
            <code>{preview.command}</code> in <code>{preview.cwd}</code>
          </dd>
          <dt>Outcome</dt>
          <dd>
            {preview.timedOut ? 'timed out' : preview.oomKilled ? 'killed at the memory limit' : `exit code ${preview.exitCode ?? '?'}`} · network{' '}
            {preview.network}
          </dd>
        </dl>
        {preview.conflicts.length ? <p className="warning">Changed in the workspace meanwhile: {preview.conflicts.join(', ')}</p> : null}
        {preview.stdout.text ? <pre className="output" tabIndex={0} aria-label="Standard output">{preview.stdout.text}</pre> : null}
        {preview.stderr.text ? <pre className="output" tabIndex={0} aria-label="Standard error">{preview.stderr.text}</pre> : null}
        {preview.files.length === 0 ? <p className="muted">No file changes.</p> : preview.files.map((file) => <FileChange key={file.path} file={file} />)}
        {preview.skipped.length ? (
          <p className="muted">Not carried back: {preview.skipped.map((entry) => `${entry.path} (${entry.reason})`).join(', ')}</p>
        ) : null}
      </section>
    );
  }
  return <pre className="output" tabIndex={0} aria-label="Captured output">{preview.text}</pre>;
}
