import { canonicalJson, sha256Hex } from '../domain/canonical-json.js';
import { PolicySchema, type Policy } from './policy-file.js';

/**
 * The sha256 of a policy's canonical JSON, carried by every policy record (`policySha256`): at open
 * the host compares policy.json with the newest recorded fingerprint, so an edit made behind its back
 * is noticed and recorded (`policy.edited_outside`). The policy record itself digests some values
 * (secretGlobs), so the recorded `after` alone could not be compared.
 */
export function policyFingerprint(policy: Policy): string {
  // As savePolicy writes it and loadPolicy reads it back: defaults filled the same way on both sides.
  return sha256Hex(canonicalJson(PolicySchema.parse(policy)));
}
