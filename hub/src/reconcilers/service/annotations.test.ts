import { describe, expect, test } from "@jest/globals";
import { parseBoolean, parseEnum, parseRange } from "../../cloud/annotation-bounds.js";
import { AWS_SETTING_BOUNDS } from "../../cloud/providers/aws/annotations.js";
import { LINODE_SETTING_BOUNDS } from "../../cloud/providers/linode/annotations.js";
import { AnnotationError, parseLbAnnotations, UNIFIED_SETTINGS } from "./annotations.js";

describe("the unified settings' bounds", () => {
  const PATH = "lb.fleet-ccm.io/health-check-path";
  const aws = { provider: "aws", bounds: AWS_SETTING_BOUNDS };
  const linode = { provider: "linode", bounds: LINODE_SETTING_BOUNDS };

  test("every default lies within its setting's bound", () => {
    for (const [name, s] of Object.entries(UNIFIED_SETTINGS)) {
      if (!("default" in s)) continue;
      const raw = String(s.default);
      if (s.bound.kind === "range")
        expect([name, parseRange(s.key, raw, s.bound)]).toEqual([name, s.default]);
      else if (s.bound.kind === "enum")
        expect([name, parseEnum(s.key, raw, s.bound)]).toEqual([name, s.default]);
      else expect([name, parseBoolean(s.key, raw, s.bound)]).toEqual([name, s.default]);
    }
  });

  test("a health check path takes up to 1024 characters; 64 KiB is refused naming the key and the bound, not echoed", () => {
    const longest = `/${"a".repeat(1023)}`;
    expect(parseLbAnnotations({ [PATH]: longest }).healthCheckPath).toBe(longest);
    const huge = `/${"a".repeat(64 * 1024 - 1)}`;
    let message = "";
    try {
      parseLbAnnotations({ [PATH]: huge });
    } catch (err) {
      expect(err).toBeInstanceOf(AnnotationError);
      message = (err as Error).message;
    }
    expect(message).toContain(`invalid annotation ${PATH}="/aaa`);
    expect(message).toContain("expected an absolute URL path such as /healthz, 1 to 1024 characters");
    expect(message).toContain("(65536 characters)");
    expect(message.length).toBeLessThan(300);
  });

  test("a provider's tighter bound refuses what the hub's takes, naming the provider", () => {
    const interval = "lb.fleet-ccm.io/health-check-interval";
    expect(parseLbAnnotations({ [interval]: "2" }).healthCheckIntervalSeconds).toBe(2);
    expect(() => parseLbAnnotations({ [interval]: "2" }, undefined, aws)).toThrow(
      `invalid annotation ${interval}="2": expected a whole number of seconds from 5 to 300 on provider aws (below 5)`,
    );
    expect(() =>
      parseLbAnnotations({ "lb.fleet-ccm.io/health-check-healthy-threshold": "1" }, undefined, aws),
    ).toThrow("from 2 to 10 on provider aws");
    expect(() => parseLbAnnotations({ [PATH]: `/${"a".repeat(1014)}` }, undefined, aws)).toThrow(
      "at most 1014 characters on provider aws",
    );
    // Linode's check_path pattern: no underscore.
    expect(parseLbAnnotations({ [PATH]: "/ready" }, undefined, linode).healthCheckPath).toBe("/ready");
    expect(() => parseLbAnnotations({ [PATH]: "/ready_now" }, undefined, linode)).toThrow(
      "on provider linode",
    );
    expect(() =>
      parseLbAnnotations(
        { "lb.fleet-ccm.io/health-check-timeout": "31", [interval]: "60" },
        undefined,
        linode,
      ),
    ).toThrow("from 1 to 30 on provider linode (above 30)");
  });

  test("a provider's bounds lie within the hub's: they only narrow", () => {
    for (const bounds of [AWS_SETTING_BOUNDS, LINODE_SETTING_BOUNDS])
      for (const [setting, b] of Object.entries(bounds)) {
        const unified = UNIFIED_SETTINGS[setting as keyof typeof UNIFIED_SETTINGS].bound;
        expect([setting, b.kind]).toEqual([setting, unified.kind]);
        if (b.kind === "range" && unified.kind === "range") {
          expect(b.min).toBeGreaterThanOrEqual(unified.min);
          expect(b.max).toBeLessThanOrEqual(unified.max);
        }
        if (b.kind === "length" && unified.kind === "length") expect(b.max).toBeLessThanOrEqual(unified.max);
      }
  });
});
