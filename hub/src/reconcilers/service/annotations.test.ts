import { describe, expect, test } from "@jest/globals";
import { parseLbAnnotations } from "./annotations.js";

const VENDOR = "service.beta.kubernetes.io/simulated-load-balancer-idle-timeout";

describe("provider annotations", () => {
  test("the simulated provider's idle timeout sets the same setting as lb.fleet-ccm.io/idle-timeout", () => {
    expect(parseLbAnnotations({}).idleTimeoutSeconds).toBe(60);
    expect(parseLbAnnotations({ [VENDOR]: "120" }).idleTimeoutSeconds).toBe(120);
  });

  test("when both are set, the unified key wins", () => {
    expect(
      parseLbAnnotations({ [VENDOR]: "120", "lb.fleet-ccm.io/idle-timeout": "30" }).idleTimeoutSeconds,
    ).toBe(30);
  });

  test("a bad vendor value names the vendor annotation; unknown vendor keys are ignored", () => {
    expect(() => parseLbAnnotations({ [VENDOR]: "soon" })).toThrow(
      `invalid annotation ${VENDOR}="soon": expected a whole number of seconds from 1 to 3600`,
    );
    expect(
      parseLbAnnotations({ "service.beta.kubernetes.io/simulated-something-else": "x" }).idleTimeoutSeconds,
    ).toBe(60);
  });
});
