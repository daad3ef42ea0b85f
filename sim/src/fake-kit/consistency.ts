/**
 * Eventual consistency, as clouds show it: for a while after a change, a read sees the
 * version before it. For a new resource that is nothing (404 on a get, absent from lists);
 * for a deleted one, the resource as it was. Gets and lists have their own windows because
 * vendors differ (EC2: both lag; most REST APIs: gets lag, lists do not).
 */

/** How one API call sees the data: its time and the stale windows of the fault config. */
export interface ConsistencyView {
  readonly nowMs: number;
  /** Direct reads within this many ms of the last change see the version before it. */
  readonly staleReadMs: number;
  /** The same for lists; 0 or absent: lists are consistent. */
  readonly listStaleMs?: number;
}

/** A consistent view at `nowMs`. */
export function consistentView(nowMs: number): ConsistencyView {
  return { nowMs, staleReadMs: 0 };
}

/** The version a reader sees: `previous` while within `windowMs` of the change, else `current`. */
export function visibleVersion<T>(
  current: T | null,
  previous: T | null,
  changedAtMs: number,
  nowMs: number,
  windowMs: number,
): T | null {
  return windowMs > 0 && nowMs - changedAtMs < windowMs ? previous : current;
}
