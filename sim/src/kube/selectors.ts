// Label selectors (k8s.io/apimachinery/pkg/labels) and field selectors (pkg/fields).

import { badRequest, fieldErrorString, fieldInvalid } from "./errors.js";
import { isQualifiedName, isValidLabelValue } from "./validation.js";

export type LabelOp = "exists" | "!" | "=" | "!=" | "in" | "notin" | "gt" | "lt";

export interface LabelRequirement {
  key: string;
  op: LabelOp;
  values: string[];
}

export type LabelSelector = readonly LabelRequirement[];

type TokKind = "id" | "=" | "==" | "!=" | "!" | ">" | "<" | "(" | ")" | "," | "end";
interface Tok {
  kind: TokKind;
  text: string;
}

const SPECIAL = new Set(["=", "!", "(", ")", ",", "<", ">"]);

function lex(input: string): Tok[] {
  const toks: Tok[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i] ?? "";
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
      continue;
    }
    if (c === "=") {
      if (input[i + 1] === "=") {
        toks.push({ kind: "==", text: "==" });
        i += 2;
      } else {
        toks.push({ kind: "=", text: "=" });
        i++;
      }
      continue;
    }
    if (c === "!") {
      if (input[i + 1] === "=") {
        toks.push({ kind: "!=", text: "!=" });
        i += 2;
      } else {
        toks.push({ kind: "!", text: "!" });
        i++;
      }
      continue;
    }
    if (c === "(" || c === ")" || c === "," || c === "<" || c === ">") {
      toks.push({ kind: c, text: c });
      i++;
      continue;
    }
    let j = i;
    while (j < input.length) {
      const d = input[j] ?? "";
      if (SPECIAL.has(d) || d === " " || d === "\t" || d === "\n" || d === "\r") break;
      j++;
    }
    toks.push({ kind: "id", text: input.slice(i, j) });
    i = j;
  }
  toks.push({ kind: "end", text: "" });
  return toks;
}

function parseError(detail: string): never {
  throw badRequest(`unable to parse requirement: ${detail}`);
}

function checkKey(key: string): void {
  const msgs = isQualifiedName(key);
  if (msgs.length > 0) parseError(fieldErrorString(fieldInvalid("key", key, msgs.join("; "))));
}

function checkValue(key: string, value: string, index: number): void {
  const msgs = isValidLabelValue(value);
  if (msgs.length > 0)
    parseError(fieldErrorString(fieldInvalid(`values[${index}][${key}]`, value, msgs.join("; "))));
}

/** Parses a label selector string; throws a 400 BadRequest KubeApiError on syntax or validation errors. */
export function parseLabelSelector(input: string): LabelSelector {
  const toks = lex(input);
  let pos = 0;
  const peek = (): Tok => toks[pos] ?? { kind: "end", text: "" };
  const next = (): Tok => {
    const t = peek();
    pos++;
    return t;
  };
  const reqs: LabelRequirement[] = [];
  if (peek().kind === "end") return reqs;
  for (;;) {
    const t = next();
    if (t.kind === "!") {
      const k = next();
      if (k.kind !== "id") parseError(`found '${k.text}', expected: identifier`);
      checkKey(k.text);
      reqs.push({ key: k.text, op: "!", values: [] });
    } else if (t.kind === "id") {
      const key = t.text;
      checkKey(key);
      const op = peek();
      if (op.kind === "," || op.kind === "end") {
        reqs.push({ key, op: "exists", values: [] });
      } else if (op.kind === "=" || op.kind === "==" || op.kind === "!=") {
        next();
        const v = peek();
        let value = "";
        if (v.kind === "id") {
          value = v.text;
          next();
        } else if (v.kind !== "," && v.kind !== "end") {
          parseError(`found '${v.text}', expected: identifier`);
        }
        checkValue(key, value, 0);
        reqs.push({ key, op: op.kind === "!=" ? "!=" : "=", values: [value] });
      } else if (op.kind === ">" || op.kind === "<") {
        next();
        const v = next();
        if (v.kind !== "id") parseError(`found '${v.text}', expected: identifier`);
        if (!/^-?\d+$/.test(v.text)) {
          parseError(`for 'Gt', 'Lt' operators, the value must be an integer`);
        }
        reqs.push({ key, op: op.kind === ">" ? "gt" : "lt", values: [v.text] });
      } else if (op.kind === "id" && (op.text === "in" || op.text === "notin")) {
        next();
        const lp = next();
        if (lp.kind !== "(") parseError(`found '${lp.text}', expected: '('`);
        const values: string[] = [];
        for (;;) {
          const v = next();
          if (v.kind === ")") break;
          if (v.kind === "id") {
            checkValue(key, v.text, values.length);
            values.push(v.text);
            const sep = next();
            if (sep.kind === ")") break;
            if (sep.kind !== ",") parseError(`found '${sep.text}', expected: ',' or ')'`);
            continue;
          }
          if (v.kind === ",") {
            values.push("");
            continue;
          }
          parseError(`found '${v.text}', expected: ',', ')' or identifier`);
        }
        reqs.push({ key, op: op.text === "in" ? "in" : "notin", values });
      } else {
        parseError(`found '${op.text}', expected: in, notin, =, ==, !=, gt, lt`);
      }
    } else {
      parseError(`found '${t.text}', expected: !, identifier, or 'end of string'`);
    }
    const sep = next();
    if (sep.kind === "end") break;
    if (sep.kind !== ",") parseError(`found '${sep.text}', expected: ',' or 'end of string'`);
  }
  return reqs;
}

export function matchLabels(sel: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const r of sel) {
    const has = Object.hasOwn(labels, r.key);
    const v = has ? labels[r.key] : undefined;
    switch (r.op) {
      case "exists":
        if (!has) return false;
        break;
      case "!":
        if (has) return false;
        break;
      case "=":
        if (v !== r.values[0]) return false;
        break;
      case "!=":
        if (has && v === r.values[0]) return false;
        break;
      case "in":
        if (v === undefined || !r.values.includes(v)) return false;
        break;
      case "notin":
        if (v !== undefined && r.values.includes(v)) return false;
        break;
      case "gt":
      case "lt": {
        if (v === undefined || !/^-?\d+$/.test(v)) return false;
        const n = Number(v);
        const want = Number(r.values[0]);
        if (r.op === "gt" ? !(n > want) : !(n < want)) return false;
        break;
      }
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Field selectors

export interface FieldRequirement {
  field: string;
  op: "=" | "!=";
  value: string;
}

export type FieldSelector = readonly FieldRequirement[];

function splitTerms(input: string): string[] {
  const terms: string[] = [];
  let cur = "";
  for (let i = 0; i < input.length; i++) {
    const c = input[i] ?? "";
    if (c === "\\" && i + 1 < input.length) {
      cur += c + (input[i + 1] ?? "");
      i++;
      continue;
    }
    if (c === ",") {
      terms.push(cur);
      cur = "";
      continue;
    }
    cur += c;
  }
  terms.push(cur);
  return terms;
}

function unescapeValue(v: string): string {
  let out = "";
  for (let i = 0; i < v.length; i++) {
    const c = v[i] ?? "";
    if (c === "\\" && i + 1 < v.length) {
      const n = v[i + 1] ?? "";
      if (n === "\\" || n === "," || n === "=" || n === "!") {
        out += n;
        i++;
        continue;
      }
      throw badRequest(`invalid field selector: invalid escape sequence: \\${n}`);
    }
    if (c === "," || c === "=") {
      throw badRequest(`invalid field selector: unescaped ${c} in value`);
    }
    out += c;
  }
  return out;
}

/** Parses a field selector; keys are checked by the caller against the resource's supported fields. */
export function parseFieldSelector(input: string): FieldSelector {
  if (input.trim() === "") return [];
  const reqs: FieldRequirement[] = [];
  for (const term of splitTerms(input)) {
    if (term === "") continue;
    let idx = term.indexOf("!=");
    let op: "=" | "!=" = "!=";
    let opLen = 2;
    if (idx < 0) {
      idx = term.indexOf("==");
      op = "=";
      opLen = 2;
      if (idx < 0) {
        idx = term.indexOf("=");
        opLen = 1;
      }
    }
    if (idx < 0) throw badRequest(`invalid selector: '${input}'; can't understand '${term}'`);
    const field = term.slice(0, idx).trim();
    const value = unescapeValue(term.slice(idx + opLen));
    reqs.push({ field, op, value });
  }
  return reqs;
}

export function matchFields(sel: FieldSelector, fields: Readonly<Record<string, string>>): boolean {
  for (const r of sel) {
    const v = fields[r.field] ?? "";
    if (r.op === "=" ? v !== r.value : v === r.value) return false;
  }
  return true;
}
