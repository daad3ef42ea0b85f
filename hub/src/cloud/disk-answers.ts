/**
 * Checks shared by the providers whose disk API answers one volume by id and lists the rest
 * without an id filter (Linode, DigitalOcean, Hetzner).
 */
import { SuspectAnswerError } from "./errors.js";

/** A direct read must answer the disk asked for, or the answer is not trusted. */
export function sameDisk(vendor: string, asked: string, answered: string | number): void {
  if (String(answered) !== asked)
    throw new SuspectAnswerError(`asked for volume ${asked}, ${vendor} answered ${answered}`);
}

/** The listed disks a batch asked for; the others are left out. */
export function askedOnly<T>(
  ids: readonly string[],
  listed: readonly T[],
  idOf: (t: T) => string | number,
): T[] {
  const asked = new Set(ids);
  return listed.filter((t) => asked.has(String(idOf(t))));
}
