import { canonicalJson, sha256Hex } from '../domain/canonical-json.js';
import type { Policy } from './policy-file.js';

/**
 * The sha256 of a policy's canonical JSON, carried by every policy record (`policySha256`): at open
 * the host compares policy.json with the newest recorded fingerprint, so an edit made behind its back
 * is noticed and recorded (`policy.edited_outside`). The policy record itself digests some values
 * (secretGlobs), so the recorded `after` alone could not be compared.
 */
export function policyFingerprint(policy: Policy): string {
  return sha256Hex(canonicalJson(policy));
}
