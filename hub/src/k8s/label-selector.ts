/**
 * Kubernetes label selectors in their string form (`env=prod,tier in (web, api),!spot`), as
 * k8s.io/apimachinery's labels.Parse reads them: requirements joined by commas, each `key`,
 * `!key`, `key=value` (or `==`), `key!=value`, `key in (…)`, `key notin (…)`, `key>n`, `key<n`.
 * `!=` and `notin` also match a node without the label; the empty selector matches every node.
 * Used where a vendor CCM filters nodes by a selector its annotation holds (Hetzner's
 * `load-balancer.hetzner.cloud/node-selector`).
 */

export type LabelSelector = (labels: Readonly<Record<string, string>>) => boolean;

export class LabelSelectorError extends Error {
  override name = "LabelSelectorError";
}

type Requirement =
  | { readonly op: "exists" | "!exists"; readonly key: string }
  | { readonly op: "in" | "notin"; readonly key: string; readonly values: ReadonlySet<string> }
  | { readonly op: "gt" | "lt"; readonly key: string; readonly bound: number };

const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const INTEGER = /^-?\d+$/;

/** Parses a selector; throws LabelSelectorError naming what is wrong. */
export function parseLabelSelector(text: string): LabelSelector {
  const requirements = splitRequirements(text).map(parseRequirement);
  return (labels) => requirements.every((r) => matches(r, labels));
}

/** Commas outside parentheses separate requirements. */
function splitRequirements(text: string): string[] {
  if (text.trim() === "") return [];
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    if (depth < 0 || depth > 1) throw new LabelSelectorError(`unbalanced parentheses in "${text}"`);
    if (c === "," && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (depth !== 0) throw new LabelSelectorError(`unbalanced parentheses in "${text}"`);
  parts.push(text.slice(start));
  return parts.map((p) => p.trim());
}

function parseRequirement(text: string): Requirement {
  if (text === "") throw new LabelSelectorError("an empty requirement (two commas, or a trailing one)");
  if (text.startsWith("!")) return { op: "!exists", key: checkKey(text.slice(1).trim()) };
  const set = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(text);
  if (set !== null) {
    const [, key = "", op, list = ""] = set;
    const values = list.split(",").map((v) => checkValue(v.trim()));
    return { op: op === "in" ? "in" : "notin", key: checkKey(key), values: new Set(values) };
  }
  const cmp = /^([^=!<>\s]+)\s*(==|=|!=|>|<)\s*(.*)$/.exec(text);
  if (cmp !== null) {
    const [, key = "", op, value = ""] = cmp;
    if (op === ">" || op === "<") {
      if (!INTEGER.test(value)) throw new LabelSelectorError(`"${text}": ${op} takes an integer`);
      return { op: op === ">" ? "gt" : "lt", key: checkKey(key), bound: Number(value) };
    }
    const values = new Set([checkValue(value)]);
    return { op: op === "!=" ? "notin" : "in", key: checkKey(key), values };
  }
  if (/\s/.test(text)) throw new LabelSelectorError(`"${text}" is no requirement`);
  return { op: "exists", key: checkKey(text) };
}

function matches(r: Requirement, labels: Readonly<Record<string, string>>): boolean {
  const value = Object.hasOwn(labels, r.key) ? labels[r.key] : undefined;
  switch (r.op) {
    case "exists":
      return value !== undefined;
    case "!exists":
      return value === undefined;
    case "in":
      return value !== undefined && r.values.has(value);
    case "notin":
      return value === undefined || !r.values.has(value);
    case "gt":
    case "lt": {
      if (value === undefined || !INTEGER.test(value)) return false;
      return r.op === "gt" ? Number(value) > r.bound : Number(value) < r.bound;
    }
  }
}

/** A label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters. */
function checkKey(key: string): string {
  const slash = key.indexOf("/");
  const prefix = slash === -1 ? undefined : key.slice(0, slash);
  const name = slash === -1 ? key : key.slice(slash + 1);
  const ok =
    name.length <= 63 &&
    NAME.test(name) &&
    (prefix === undefined || (prefix.length <= 253 && DNS_SUBDOMAIN.test(prefix)));
  if (!ok) throw new LabelSelectorError(`"${key}" is not a valid label key`);
  return key;
}

/** A label value: empty, or at most 63 characters of the name alphabet. */
function checkValue(value: string): string {
  if (value !== "" && (value.length > 63 || !NAME.test(value)))
    throw new LabelSelectorError(`"${value}" is not a valid label value`);
  return value;
}
