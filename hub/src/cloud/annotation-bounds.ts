/**
 * The one place an annotation value is checked against what its setting takes: a length (with
 * the characters the cloud accepts), a whole-number range, an enum, a boolean. Every reader
 * (the hub's unified `lb.fleet-ccm.io/` keys, each provider's vendor keys) declares a Bound per
 * annotation and parses through here, so a value past its setting's bounds is refused before
 * any cloud call, and the error names the annotation, what is wrong and the bound, never more
 * than the start of the value.
 */
import { CloudError } from "./errors.js";

/** A string of at most `max` characters (the cloud's limit), optionally of one form. */
export interface LengthBound {
  readonly kind: "length";
  readonly min?: number;
  readonly max: number;
  readonly pattern?: RegExp;
  /** The form `pattern` asks for, in words ("an absolute URL path such as /healthz"). */
  readonly form?: string;
}

/** A whole number from `min` to `max`. */
export interface RangeBound {
  readonly kind: "range";
  readonly min: number;
  readonly max: number;
  /** "seconds" reads "a whole number of seconds from …". */
  readonly unit?: string;
}

/** One of `values`, matched case-insensitively unless `caseSensitive`. */
export interface EnumBound<T extends string = string> {
  readonly kind: "enum";
  readonly values: readonly T[];
  readonly caseSensitive?: boolean;
}

/** true or false; `go` also takes Go's strconv.ParseBool spellings (1, t, TRUE, …), as Go CCMs read them. */
export interface BooleanBound {
  readonly kind: "boolean";
  readonly spellings?: "strict" | "go";
}

export type Bound = LengthBound | RangeBound | EnumBound | BooleanBound;

export const length = (max: number, form?: { pattern: RegExp; form: string }, min?: number): LengthBound => ({
  kind: "length",
  max,
  ...(min !== undefined && { min }),
  ...(form !== undefined && { pattern: form.pattern, form: form.form }),
});
export const range = (min: number, max: number, unit?: string): RangeBound => ({
  kind: "range",
  min,
  max,
  ...(unit !== undefined && { unit }),
});
export const oneOf = <T extends string>(values: readonly T[], caseSensitive = false): EnumBound<T> => ({
  kind: "enum",
  values,
  ...(caseSensitive && { caseSensitive }),
});
export const BOOLEAN: BooleanBound = { kind: "boolean" };
export const GO_BOOLEAN: BooleanBound = { kind: "boolean", spellings: "go" };

/** The bound in the words an Event shows after "expected". */
export function describeBound(b: Bound): string {
  switch (b.kind) {
    case "length": {
      const size =
        b.min !== undefined && b.min > 0 ? `${b.min} to ${b.max} characters` : `at most ${b.max} characters`;
      return b.form === undefined ? size : `${b.form}, ${size}`;
    }
    case "range":
      return `a whole number${b.unit === undefined ? "" : ` of ${b.unit}`} from ${b.min} to ${b.max}`;
    case "enum":
      return `one of ${b.values.map((v) => (b.caseSensitive ? v : v.toLowerCase())).join(", ")}`;
    case "boolean":
      return `"true" or "false"`;
  }
}

/** Longest part of a value an error shows: a huge value is never echoed. */
export const SHOWN_VALUE_CHARS = 64;

function shown(value: string): string {
  const cut = value.length > SHOWN_VALUE_CHARS ? `${value.slice(0, SHOWN_VALUE_CHARS)}…` : value;
  return JSON.stringify(cut);
}

/**
 * An annotation whose value its setting cannot take: permanent until the Service changes (no
 * retry). The message names the annotation, the start of the value, the bound and the problem.
 */
export class AnnotationError extends CloudError {
  override name = "AnnotationError";
  constructor(
    readonly annotation: string,
    readonly value: string,
    /** The bound in words (describeBound), after "expected". */
    readonly expected: string,
    /** What is wrong with the value, when the bound alone does not say it. */
    readonly problem?: string,
  ) {
    super(
      `invalid annotation ${annotation}=${shown(value)}: expected ${expected}${problem === undefined ? "" : ` (${problem})`}`,
    );
  }
}

const fail = (key: string, raw: string, b: Bound, problem?: string): never => {
  throw new AnnotationError(key, raw, describeBound(b), problem);
};

/** The value as it is (no trimming: the cloud would get it as it is). */
export function parseLength(key: string, raw: string, b: LengthBound): string {
  if (raw.length > b.max) fail(key, raw, b, `${raw.length} characters`);
  if (b.min !== undefined && raw.length < b.min) fail(key, raw, b, `${raw.length} characters`);
  if (b.pattern !== undefined && !b.pattern.test(raw)) fail(key, raw, b);
  return raw;
}

export function parseRange(key: string, raw: string, b: RangeBound): number {
  if (!/^\s*\d+\s*$/.test(raw)) return fail(key, raw, b, "not a whole number");
  const n = Number(raw);
  if (n < b.min) fail(key, raw, b, `below ${b.min}`);
  if (n > b.max) fail(key, raw, b, `above ${b.max}`);
  return n;
}

/** The matching value of `b.values`, spelt as there. */
export function parseEnum<T extends string>(key: string, raw: string, b: EnumBound<T>): T {
  const v = raw.trim();
  const hit = b.values.find((x) => (b.caseSensitive ? x === v : x.toLowerCase() === v.toLowerCase()));
  if (hit === undefined) return fail(key, raw, b);
  return hit;
}

const GO_TRUE = ["1", "t", "T", "TRUE", "true", "True"];
const GO_FALSE = ["0", "f", "F", "FALSE", "false", "False"];

export function parseBoolean(key: string, raw: string, b: BooleanBound = BOOLEAN): boolean {
  const v = raw.trim();
  if (b.spellings === "go") {
    if (GO_TRUE.includes(v)) return true;
    if (GO_FALSE.includes(v)) return false;
    return fail(key, raw, b);
  }
  if (v.toLowerCase() === "true") return true;
  if (v.toLowerCase() === "false") return false;
  return fail(key, raw, b);
}

/** The unified settings (LbSettings keys) a provider may bound more tightly than the hub does. */
export interface SettingBounds {
  readonly healthCheckPath?: LengthBound;
  readonly healthCheckIntervalSeconds?: RangeBound;
  readonly healthCheckTimeoutSeconds?: RangeBound;
  readonly healthyThreshold?: RangeBound;
  readonly unhealthyThreshold?: RangeBound;
  readonly idleTimeoutSeconds?: RangeBound;
}
