/**
 * Many short-lived listeners on one long-lived AbortSignal (every cloud call in flight on the
 * hub's shutdown signal). Node's EventTarget walks a signal's whole listener list on every add
 * and remove, so with n calls in flight each call pays O(n) twice. Here each signal has one
 * listener, shared by every subscriber, and a subscription costs a Set insertion and deletion.
 */
const subscribers = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `onAbort` once when `signal` aborts; the returned function unsubscribes. A signal already
 * aborted calls it at once. `onAbort` must not throw: the subscribers after it would not be called.
 */
export function whenAborted(signal: AbortSignal, onAbort: () => void): () => void {
  if (signal.aborted) {
    onAbort();
    return noop;
  }
  const set = subscribers.get(signal) ?? listen(signal);
  // A function object per subscription: the same callback subscribed twice is two subscriptions.
  const entry = () => onAbort();
  set.add(entry);
  return () => {
    set.delete(entry);
  };
}

/** The signal's subscriber set, with its one listener, which calls them all on abort. */
function listen(signal: AbortSignal): Set<() => void> {
  const set = new Set<() => void>();
  subscribers.set(signal, set);
  signal.addEventListener(
    "abort",
    () => {
      subscribers.delete(signal);
      for (const fn of set) fn();
      set.clear();
    },
    { once: true },
  );
  return set;
}

function noop(): void {}
