/**
 * The contract errors every provider maps its vendor errors to (toContractError in
 * each provider). Reconcilers decide what to do from these classes alone.
 */

export class CloudError extends Error {
  override name = "CloudError";
}

/** A direct lookup said the instance does not exist. The only "not found" that counts. */
export class InstanceNotFoundError extends CloudError {
  override name = "InstanceNotFoundError";
  constructor(
    readonly lookup: string,
    options?: { cause?: unknown },
  ) {
    super(`instance not found: ${lookup}`, options);
  }
}

/** A direct lookup said the disk does not exist in the account (and its region, where disks are regional). */
export class DiskNotFoundError extends CloudError {
  override name = "DiskNotFoundError";
  constructor(
    readonly id: string,
    options?: { cause?: unknown },
  ) {
    super(`disk not found: ${id}`, options);
  }
}

/**
 * A direct read of one disk: the vendor's own "not found" answer (`isNotFound`) becomes
 * DiskNotFoundError, every other failure stays what it was.
 */
export async function readDisk<T>(
  id: string,
  isNotFound: (err: unknown) => boolean,
  read: () => Promise<T>,
): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (isNotFound(err)) throw new DiskNotFoundError(id, { cause: err });
    throw err;
  }
}

/**
 * Another controller builds this load balancer (upstream's cloudprovider.ImplementedElsewhere,
 * e.g. AWS's `aws-load-balancer-type: external`): the hub leaves the Service alone.
 */
export class ImplementedElsewhereError extends CloudError {
  override name = "ImplementedElsewhereError";
}

/**
 * `updateBackends` cannot apply the change alone: what it needs only a whole `ensure` carries
 * (the load balancer is gone, a certificate the cloud never returns). The service reconciler
 * runs `ensure` at once instead of retrying the backend update.
 */
export class NeedsEnsureError extends CloudError {
  override name = "NeedsEnsureError";
}

/** The provider lacks this operation. */
export class NotImplementedError extends CloudError {
  override name = "NotImplementedError";
}

/** 429 or the vendor's equivalent. */
export class ThrottledError extends CloudError {
  override name = "ThrottledError";
  constructor(
    message: string,
    readonly retryAfterMs: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Timeouts, connection errors, 5xx: try again later, change nothing. */
export class TransientCloudError extends CloudError {
  override name = "TransientCloudError";
}

/**
 * The shared cloud object changed under the write (an ETag's `412`, a `409` on a busy object):
 * nothing was changed. The hub repeats the call at once, which reads fresh state
 * (serialized-write.ts); only repeated conflicts become a failure, retried as a transient one.
 */
export class ConflictError extends TransientCloudError {
  override name = "ConflictError";
}

/**
 * An operation the cloud accepted (the provider answered in-progress) ended in failure, as
 * the cloud itself reports it (an operation's error, an ERROR provisioning state): any replica
 * reading the cloud sees it. Retried with backoff, as a fresh attempt.
 */
export class OperationFailedError extends CloudError {
  override name = "OperationFailedError";
}

/** Bad or insufficient credentials: retrying will not help until the config changes. */
export class ForbiddenError extends CloudError {
  override name = "ForbiddenError";
}

/** An answer that cannot be right (empty where something must be, wrong id): suspect, not an answer. */
export class SuspectAnswerError extends CloudError {
  override name = "SuspectAnswerError";
}

export function isRetryable(err: unknown): boolean {
  return (
    err instanceof ThrottledError ||
    err instanceof TransientCloudError ||
    err instanceof SuspectAnswerError ||
    err instanceof OperationFailedError ||
    !(err instanceof CloudError)
  );
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
