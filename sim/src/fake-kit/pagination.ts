/**
 * Pagination as vendors do it, over ResourceTable pages (which continue after a creation
 * seq, so that items created or deleted between pages never shift the rest):
 *
 * - opaque tokens (`page_token`/`next_page_token`, AWS `NextToken`, ELB `Marker`, GCP
 *   `pageToken`): `encodeSeqToken` / `decodeSeqToken`;
 * - numbered pages (Linode `page`/`pages`/`results`, DigitalOcean `links`): `numberedPage`;
 * - page sizes with a default, a minimum and a maximum: `parsePageSize`.
 */
import { FakeError } from "./errors.js";

/** Opaque to clients: base64url of a small versioned JSON. */
export function encodeSeqToken(afterSeq: number): string {
  return Buffer.from(JSON.stringify({ v: 1, after: afterSeq }), "utf8").toString("base64url");
}

/** The seq to continue after, or undefined when the token is not one of ours. */
export function decodeSeqToken(token: string): number | undefined {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    if (typeof parsed !== "object" || parsed === null) return undefined;
    const { v, after } = parsed as { v?: unknown; after?: unknown };
    return v === 1 && typeof after === "number" && Number.isSafeInteger(after) && after >= 0
      ? after
      : undefined;
  } catch {
    return undefined;
  }
}

export interface PageSizeRule {
  /** The parameter's name, for the error message. */
  readonly param: string;
  readonly defaultSize: number;
  /** Larger sizes are cut to this (`clamp`) or refused. */
  readonly max: number;
  readonly min?: number;
  readonly overMax?: "clamp" | "refuse";
  /** The error code of a bad value (default "InvalidParameter"). */
  readonly code?: string;
}

/** The page size a list call asked for (null: none given); throws a 400 FakeError. */
export function parsePageSize(value: string | null, rule: PageSizeRule): number {
  if (value === null) return rule.defaultSize;
  const min = rule.min ?? 1;
  const n = Number(value);
  const code = rule.code ?? "InvalidParameter";
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
    throw new FakeError(400, code, `${rule.param} must be a positive integer`, { field: rule.param });
  }
  if (n < min) throw new FakeError(400, code, `${rule.param} must be at least ${min}`, { field: rule.param });
  if (n > rule.max) {
    if (rule.overMax === "refuse") {
      throw new FakeError(400, code, `${rule.param} must be at most ${rule.max}`, { field: rule.param });
    }
    return rule.max;
  }
  return n;
}

/** The seq of a page token (null or "": the first page); throws a 400 FakeError. */
export function parseSeqToken(
  value: string | null,
  param: string,
  code = "InvalidPageToken",
): number | undefined {
  if (value === null || value === "") return undefined;
  const after = decodeSeqToken(value);
  if (after === undefined) throw new FakeError(400, code, `${param} is not valid`, { field: param });
  return after;
}

export interface NumberedPage<T> {
  readonly data: T[];
  readonly page: number;
  readonly pages: number;
  readonly results: number;
}

/**
 * Page `page` (from 1) of `items`, Linode style: `pages` is at least 1, and a page past the
 * end is empty (the vendor's answer). Numbered pages shift when items come and go between
 * calls, as the vendor's do: that is part of what a client must survive.
 */
export function numberedPage<T>(items: readonly T[], page: number, pageSize: number): NumberedPage<T> {
  const pages = Math.max(1, Math.ceil(items.length / pageSize));
  const start = (page - 1) * pageSize;
  return { data: items.slice(start, start + pageSize), page, pages, results: items.length };
}
