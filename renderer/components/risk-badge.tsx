import type { Risk } from '../../src/domain/risk.js';

const RISK_GLYPH: Record<Risk, string> = { LOW: '●', MEDIUM: '▲', HIGH: '◆', CRITICAL: '■' };

/** Risk in colour, shape and text, so it reads without colour vision too. */
export function RiskBadge({ risk }: { risk: Risk | null | undefined }) {
  if (!risk) return <span className="risk risk-none">UNRATED</span>;
  return (
    <span className={`risk risk-${risk.toLowerCase()}`} title={`${risk} risk`}>
      <span aria-hidden="true">{RISK_GLYPH[risk]} </span>
      {risk}
    </span>
  );
}
