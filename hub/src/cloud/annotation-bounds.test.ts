import { describe, expect, test } from "@jest/globals";
import {
  AnnotationError,
  BOOLEAN,
  describeBound,
  GO_BOOLEAN,
  length,
  oneOf,
  parseBoolean,
  parseEnum,
  parseLength,
  parseRange,
  range,
  SHOWN_VALUE_CHARS,
} from "./annotation-bounds.js";

const K = "lb.fleet-ccm.io/x";

/** The AnnotationError `fn` throws. */
function refusal(fn: () => unknown): AnnotationError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AnnotationError) return err;
    throw err;
  }
  throw new Error("not refused");
}

describe("length", () => {
  const path = length(1024, { pattern: /^\/\S*$/, form: "an absolute path" }, 1);

  test("takes a value up to the maximum, as it is", () => {
    expect(parseLength(K, "/healthz", path)).toBe("/healthz");
    expect(parseLength(K, `/${"a".repeat(1023)}`, path)).toHaveLength(1024);
  });

  test("refuses a longer one naming the annotation, the bound and its length, never echoing it", () => {
    const huge = `/${"a".repeat(64 * 1024 - 1)}`;
    const err = refusal(() => parseLength(K, huge, path));
    expect(err.annotation).toBe(K);
    expect(err.message).toBe(
      `invalid annotation ${K}="/${"a".repeat(SHOWN_VALUE_CHARS - 1)}…": expected an absolute path, 1 to 1024 characters (65536 characters)`,
    );
  });

  test("refuses one too short or not of the form", () => {
    expect(refusal(() => parseLength(K, "", path)).message).toContain("(0 characters)");
    expect(refusal(() => parseLength(K, "healthz", path)).message).toBe(
      `invalid annotation ${K}="healthz": expected an absolute path, 1 to 1024 characters`,
    );
    expect(describeBound(length(50))).toBe("at most 50 characters");
  });

  test("a value with quotes or control characters is shown escaped", () => {
    expect(refusal(() => parseLength(K, '/a"\nb c', path)).message).toContain('="/a\\"\\nb c"');
  });
});

describe("range", () => {
  const seconds = range(5, 300, "seconds");

  test("takes a whole number within it (spaces around are fine)", () => {
    expect(parseRange(K, "5", seconds)).toBe(5);
    expect(parseRange(K, " 300 ", seconds)).toBe(300);
  });

  test("refuses what is not a whole number, below or above it, with the bound and the problem", () => {
    expect(refusal(() => parseRange(K, "often", seconds)).message).toBe(
      `invalid annotation ${K}="often": expected a whole number of seconds from 5 to 300 (not a whole number)`,
    );
    for (const v of ["1.5", "-5", "1e3", ""])
      expect(() => parseRange(K, v, seconds)).toThrow(AnnotationError);
    expect(refusal(() => parseRange(K, "4", seconds)).problem).toBe("below 5");
    expect(refusal(() => parseRange(K, "301", seconds)).problem).toBe("above 300");
    expect(refusal(() => parseRange(K, "99999999999999999999", seconds)).problem).toBe("above 300");
    expect(describeBound(range(1, 10))).toBe("a whole number from 1 to 10");
  });
});

describe("enum", () => {
  test("matches case-insensitively, answering the spelling of the bound", () => {
    const protocols = oneOf(["TCP", "HTTP"] as const);
    expect(parseEnum(K, " http ", protocols)).toBe("HTTP");
    expect(refusal(() => parseEnum(K, "udp", protocols)).message).toBe(
      `invalid annotation ${K}="udp": expected one of tcp, http`,
    );
  });

  test("case-sensitive when the setting is", () => {
    const exact = oneOf(["nlb", "external"] as const, true);
    expect(parseEnum(K, "nlb", exact)).toBe("nlb");
    expect(() => parseEnum(K, "NLB", exact)).toThrow("expected one of nlb, external");
  });
});

describe("boolean", () => {
  test('"true" or "false" in any case', () => {
    expect(parseBoolean(K, "True", BOOLEAN)).toBe(true);
    expect(parseBoolean(K, "false")).toBe(false);
    expect(refusal(() => parseBoolean(K, "yes")).message).toBe(
      `invalid annotation ${K}="yes": expected "true" or "false"`,
    );
    expect(() => parseBoolean(K, "1")).toThrow(AnnotationError);
  });

  test("Go's strconv.ParseBool spellings where a Go CCM reads them so", () => {
    for (const v of ["1", "t", "T", "TRUE", "true", "True"])
      expect(parseBoolean(K, v, GO_BOOLEAN)).toBe(true);
    for (const v of ["0", "f", "F", "FALSE", "false", "False"])
      expect(parseBoolean(K, v, GO_BOOLEAN)).toBe(false);
    expect(() => parseBoolean(K, "tRUE", GO_BOOLEAN)).toThrow(AnnotationError);
  });
});
