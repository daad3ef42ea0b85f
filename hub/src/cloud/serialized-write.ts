import { ConflictError } from "./errors.js";
import type { LockKey } from "./provider.js";
import type { ClusterCloud } from "./scope.js";

/** Attempts of one write that meets ConflictError before the conflict counts as a failure. */
export const CONFLICT_ATTEMPTS = 3;

/**
 * Runs one provider write under its LockKey (no two writes of one shared cloud object at once,
 * across the account's clusters) and repeats it at once on ConflictError: each attempt reads
 * the object afresh, so a conflict is not a failure, no Event and no backoff, until
 * CONFLICT_ATTEMPTS in a row.
 */
export async function serializedWrite<T>(
  cloud: Pick<ClusterCloud, "writeLocks">,
  key: LockKey,
  write: () => Promise<T>,
): Promise<T> {
  return cloud.writeLocks.run(key, async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= CONFLICT_ATTEMPTS) throw err;
      }
    }
  });
}
