import { ExecutorError } from '../domain/errors.js';
import type { Preview, UrlQueryParam } from '../domain/step-record.js';
import type { Policy } from '../policy/policy-file.js';
import type { ActionModule } from './action-module.js';
import { measureOpaqueData, OPAQUE_PART_BITS, OPAQUE_URL_BITS, opaqueBitsOf } from './url-opaque-data.js';

const LONG_URL = 2000;

type ParsedUrl = { ok: true; url: URL } | { ok: false; reason: string };

/** Only http: and https:, judged after new URL() parsing, never by looking at the text. */
export function parseOpenableUrl(raw: string): ParsedUrl {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: `"${raw.slice(0, 200)}" is not a valid absolute URL.` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { ok: false, reason: `Only http: and https: pages can be opened; this URL is ${url.protocol}.` };
  }
  if (url.username || url.password) return { ok: false, reason: 'The URL carries a user name or password; it will not be opened.' };
  return { ok: true, url };
}

/** Whether one value alone carries enough encoded-looking data to mark it in the preview. */
export function isOpaqueValue(value: string): boolean {
  return opaqueBitsOf(value) >= OPAQUE_PART_BITS;
}

/** Exact host names, or "*.example.com" for its subdomains (not the bare domain). */
export function hostAllowed(host: string, policy: Policy): boolean {
  const name = host.toLowerCase();
  return policy.network.allowHosts.some((entry) => {
    const pattern = entry.toLowerCase();
    return pattern.startsWith('*.') ? name.endsWith(pattern.slice(1)) && name.length > pattern.length - 1 : name === pattern;
  });
}

function describe(url: URL): Extract<Preview, { kind: 'url' }> {
  const query: UrlQueryParam[] = [...url.searchParams].map(([name, value]) => ({
    name,
    value,
    opaque: isOpaqueValue(value) || isOpaqueValue(name),
  }));
  const warnings: string[] = [];
  // Measured over the whole URL at once: data cut into pieces that each look harmless still adds up.
  const opaque = measureOpaqueData(url);
  if (opaque.totalBits >= OPAQUE_URL_BITS) {
    const largest = opaque.parts
      .slice(0, 4)
      .map((part) => `${part.where}: ${Math.round(part.bits)}`)
      .join(', ');
    warnings.push(
      `The URL carries about ${Math.round(opaque.totalBits / 8)} bytes of encoded-looking data across ${opaque.parts.length} part(s) of its host, path, query and fragment (bits by part, largest first: ${largest}): it could carry data from this machine to ${url.host}, and the page itself can read the fragment.`,
    );
    for (const param of query.filter((entry) => entry.opaque)) {
      warnings.push(`Query parameter "${param.name.slice(0, 60)}" holds a long opaque value (${param.value.length} characters).`);
    }
  }
  if (url.href.length > LONG_URL) warnings.push(`The URL is ${url.href.length} characters long.`);
  return {
    kind: 'url',
    url: url.href,
    protocol: url.protocol,
    host: url.host,
    path: decodeURIComponentSafe(url.pathname),
    query,
    fragment: url.hash ? decodeURIComponentSafe(url.hash.slice(1)) : null,
    warnings,
  };
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

export const openURL: ActionModule<'openURL'> = {
  action: 'openURL',
  reversible: false,
  summarize: (args) => {
    const parsed = parseOpenableUrl(args.url);
    return parsed.ok
      ? `Open ${parsed.url.host}${decodeURIComponentSafe(parsed.url.pathname)} in the browser`
      : `Open an invalid URL (refused)`;
  },
  ruleTarget: (args) => ({ kind: 'url', url: args.url }),
  assess(args, ctx) {
    const parsed = parseOpenableUrl(args.url);
    if (!parsed.ok) return { risk: 'CRITICAL', deny: true, reasons: [parsed.reason], mitigations: [] };
    const { url } = parsed;
    const preview = describe(url);
    const allowed = hostAllowed(url.hostname, ctx.policy);
    const reasons = [
      allowed
        ? `Opens ${url.host} in your browser; the policy lists this host as allowed.`
        : `Opens ${url.host} in your browser: the page reaches the network, and whatever the URL carries (${preview.query.length} query parameter(s)) goes to that site.`,
      ...preview.warnings,
    ];
    if (url.protocol === 'http:') reasons.push('The page is not encrypted (http:).');
    return {
      // Data carried out in the URL outweighs the allowlist: an opaque value keeps the step HIGH.
      risk: allowed && preview.warnings.length === 0 ? 'LOW' : 'HIGH',
      reasons,
      mitigations: ['Nothing on this machine changes; the preview lists every query parameter decoded.'],
    };
  },
  async simulate(args) {
    const parsed = parseOpenableUrl(args.url);
    if (!parsed.ok) throw new ExecutorError('POLICY_DENIED', parsed.reason);
    return describe(parsed.url);
  },
  async run(args, ctx) {
    const parsed = parseOpenableUrl(args.url);
    if (!parsed.ok) throw new ExecutorError('POLICY_DENIED', parsed.reason);
    const href = parsed.url.href;
    return {
      fileChanges: [],
      async apply() {
        if (!ctx.openExternal) {
          // Serve and CLI hosts have no browser of their own: the person opens it (the web UI shows the link).
          return { url: href, opened: false, note: 'No browser is attached to this host: open the URL yourself.' };
        }
        await ctx.openExternal(href);
        return { url: href, opened: true };
      },
    };
  },
};
