/** How long a finished listing of a group's NICs (or scale sets) serves the readers it covers. */
export const LISTING_REUSE_MS = 10_000;

interface Listing<T> {
  readonly value: Promise<T>;
  /** When it settled (injected clock); undefined while in flight. */
  doneAtMs?: number;
}

/**
 * The latest listing per resource group. A reader joins it while it is in flight, however long
 * it takes (a listing of thousands of NICs can outlast the reuse window, and every reader
 * starting its own would only slow them all), or up to LISTING_REUSE_MS after it finished; it
 * takes it only if it succeeded and `cover`s what the reader needs, else lists anew.
 */
export class RecentListings<T> {
  private readonly latest = new Map<string, Listing<T>>();

  constructor(private readonly now: () => number) {}

  async recent(rg: string, cover: (value: T) => boolean, list: () => Promise<T>): Promise<T> {
    const hit = this.latest.get(rg);
    if (hit !== undefined && (hit.doneAtMs === undefined || this.now() - hit.doneAtMs <= LISTING_REUSE_MS)) {
      const value = await hit.value.catch(() => undefined);
      if (value !== undefined && cover(value)) return value;
    }
    return this.fresh(rg, list);
  }

  /** Lists now; readers of a recent listing take this one from now on. */
  fresh(rg: string, list: () => Promise<T>): Promise<T> {
    const listing: Listing<T> = { value: list() };
    const settled = () => {
      listing.doneAtMs = this.now();
    };
    listing.value.then(settled, settled);
    this.latest.set(rg, listing);
    return listing.value;
  }
}
