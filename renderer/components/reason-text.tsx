import { splitReason } from '../../src/domain/reason-detail.js';
import { MarkedText } from './marked-text.js';

/**
 * One policy reason: what could happen, then how the analysis knows, folded. A person deciding
 * reads the consequence; the detail ("arithmetic names `PATH`…") is one click away for whoever
 * wants to check it.
 */
export function ReasonText({ reason }: { reason: string }) {
  const { headline, detail } = splitReason(reason);
  if (detail === null) return <MarkedText text={reason} />;
  return (
    <>
      <MarkedText text={headline} />
      <details className="reason-detail">
        <summary>In detail</summary>
        <p>
          <MarkedText text={detail} />
        </p>
      </details>
    </>
  );
}
