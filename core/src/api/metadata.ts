/**
 * Metadata patch rules shared by agents, sessions and environments (SDK docs: "Set a value to
 * null or empty string to delete"; a null bag clears every key). Proved by
 * test/e2e/api/metadata-updates.test.ts.
 */
import { invalid } from '../errors.js';

export const MAX_METADATA_KEYS = 16;

/** Returns the bag after the patch; `patch === undefined` leaves it unchanged. */
export function applyMetadataPatch(
  current: Record<string, string>,
  patch: Record<string, string | null> | null | undefined,
): Record<string, string> {
  if (patch === undefined) return current;
  if (patch === null) return {};
  const next = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || v === '') delete next[k];
    else next[k] = v;
  }
  if (Object.keys(next).length > MAX_METADATA_KEYS)
    throw invalid('metadata', `at most ${MAX_METADATA_KEYS} keys`);
  return next;
}
