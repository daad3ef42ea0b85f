// Continue tokens of paged LISTs: the revision the first page was read at and the key to start from.

import { badRequest, expired, type KubeApiError } from "./errors.js";
import { isObject, type JsonValue, parseJson } from "./json.js";

const CONTINUE_EXPIRED =
  "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now might show up in the list.";

/** The token revision meaning "the current state" (the remainder of an expired list). */
export const CURRENT_STATE = -1;

interface ContinueToken {
  rv: number;
  start: string;
}

export function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: "meta.k8s.io/v1", rv, start })).toString("base64url");
}

export function decodeContinue(token: string): ContinueToken {
  let parsed: JsonValue;
  try {
    parsed = parseJson(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw badRequest("continue key is not valid: illegal base64 data or malformed JSON");
  }
  if (!isObject(parsed) || parsed["v"] !== "meta.k8s.io/v1") {
    throw badRequest(
      "continue key is not valid: continue key is not valid: server does not recognize this encoded version",
    );
  }
  const rv = parsed["rv"];
  const start = parsed["start"];
  if (typeof rv !== "number" || typeof start !== "string") {
    throw badRequest(
      "continue key is not valid: continue key is not valid: incorrect encoded start resourceVersion",
    );
  }
  if (rv === 0) {
    throw badRequest(
      "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
    );
  }
  return { rv, start };
}

/** 410 for a token older than the history, carrying one that continues from the current state. */
export function continueExpired(start: string): KubeApiError {
  const err = expired(CONTINUE_EXPIRED);
  err.status.metadata = { continue: encodeContinue(CURRENT_STATE, start) };
  return err;
}
