// Accept-header negotiation of the response form: the object itself (JSON), or a meta.k8s.io Table
// (`application/json;as=Table;v=v1;g=meta.k8s.io`), as k8s.io/apiserver's negotiation does it.

import { notAcceptable } from "./errors.js";

export interface OutputForm {
  /** Set when a Table was negotiated: its apiVersion (meta.k8s.io/v1 or meta.k8s.io/v1beta1). */
  readonly table?: string;
}

const ACCEPTED = "only the following media types are accepted: application/json, application/yaml";

interface Clause {
  readonly type: string;
  readonly params: ReadonlyMap<string, string>;
  readonly q: number;
  readonly index: number;
}

function parseAccept(header: string): Clause[] {
  const out: Clause[] = [];
  header.split(",").forEach((raw, index) => {
    const parts = raw.split(";").map((p) => p.trim());
    const type = (parts[0] ?? "").toLowerCase();
    if (type === "") return;
    const params = new Map<string, string>();
    let q = 1;
    for (const p of parts.slice(1)) {
      const eq = p.indexOf("=");
      if (eq < 0) continue;
      const k = p.slice(0, eq).trim().toLowerCase();
      const v = p.slice(eq + 1).trim();
      if (k === "q") q = Number(v);
      else params.set(k, v);
    }
    if (!(q > 0)) return;
    out.push({ type, params, q, index });
  });
  return out.sort((a, b) => b.q - a.q || a.index - b.index);
}

function jsonCompatible(type: string): boolean {
  return type === "application/json" || type === "application/*" || type === "*/*";
}

/**
 * The form to answer a GET, LIST or WATCH in. Clauses asking for a transformation this server does not
 * make (PartialObjectMetadata, a Table of another group) are skipped; if only such clauses remain → 406.
 * Other media types (YAML, protobuf) fall back to JSON, which every client of this server reads.
 */
export function negotiateOutput(accept: string | undefined): OutputForm {
  if (accept === undefined || accept.trim() === "") return {};
  const clauses = parseAccept(accept);
  let transformsOnly = clauses.length > 0;
  for (const c of clauses) {
    const as = c.params.get("as");
    if (as === undefined) {
      transformsOnly = false;
      if (jsonCompatible(c.type)) return {};
      continue;
    }
    if (!jsonCompatible(c.type)) continue;
    const g = c.params.get("g");
    const v = c.params.get("v");
    if (as === "Table" && g === "meta.k8s.io" && (v === "v1" || v === "v1beta1")) {
      return { table: `meta.k8s.io/${v}` };
    }
  }
  if (transformsOnly) throw notAcceptable(ACCEPTED);
  return {};
}
