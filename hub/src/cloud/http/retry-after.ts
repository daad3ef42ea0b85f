/**
 * Retry-After (RFC 9110 §10.2.3) as a delay in ms from the injected clock's now: delta-seconds
 * or an HTTP date. A date in the past, or negative seconds, is 0; a delay past `maxMs` is cut
 * to it (a broken or hostile header must not park a key for days); anything unreadable is
 * undefined, so the caller falls back to its own backoff.
 */

/** The longest delay a vendor may ask for. */
export const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

/** An HTTP date in any of its three forms begins with the day's name; "3.5" must not read as a date. */
const HTTP_DATE = /^(mon|tue|wed|thu|fri|sat|sun)[a-z]*,? /i;

export function parseRetryAfterMs(
  header: string | null | undefined,
  nowMs: number,
  maxMs = MAX_RETRY_AFTER_MS,
): number | undefined {
  if (header === undefined || header === null) return undefined;
  const text = header.trim();
  let ms: number;
  if (/^-?\d+$/.test(text)) ms = Number(text) * 1000;
  // asctime's form names no zone, and Date.parse would read it as local time: HTTP dates are GMT.
  else if (HTTP_DATE.test(text)) ms = Date.parse(/ GMT$/i.test(text) ? text : `${text} GMT`) - nowMs;
  else return undefined;
  if (Number.isNaN(ms)) return undefined;
  return Math.min(Math.max(0, ms), maxMs);
}
