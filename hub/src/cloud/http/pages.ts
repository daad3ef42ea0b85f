/**
 * Following a paged list to its end, whatever the vendor's paging: page numbers with a count
 * (Linode's page/pages/results envelope), or opaque next-page tokens. The vendor supplies how
 * to fetch one page, where its items are and what to ask next; it checks its own envelope and
 * throws `malformedPage` (naming the list's path) for an answer that is not one.
 */
import { SuspectAnswerError } from "../errors.js";

export interface Paging<C, P, T> {
  /** The cursor of the first page (1, or no token). */
  readonly first: C;
  /** One page, its envelope checked. */
  readonly fetch: (cursor: C) => Promise<P>;
  readonly items: (page: P) => readonly T[];
  /** The next page's cursor; undefined after the last page. */
  readonly next: (page: P, cursor: C) => C | undefined;
}

/** Every item of every page, in order: one request per page, none in parallel. */
export async function collectPages<C, P, T>(paging: Paging<C, P, T>): Promise<T[]> {
  const all: T[] = [];
  let cursor: C | undefined = paging.first;
  while (cursor !== undefined) {
    const page = await paging.fetch(cursor);
    all.push(...paging.items(page));
    cursor = paging.next(page, cursor);
  }
  return all;
}

/** An answer to a list that is not the vendor's page envelope: suspect, naming the list. */
export function malformedPage(label: string, path: string, detail: string): SuspectAnswerError {
  return new SuspectAnswerError(`${label} GET ${path.split("?")[0]}: ${detail}`);
}
