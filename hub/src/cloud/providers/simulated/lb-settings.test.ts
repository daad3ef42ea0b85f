import { describe, expect, test } from "@jest/globals";
import { parseLbAnnotations as parse } from "../../../reconcilers/service/annotations.js";
import type { VendorLbSettings } from "../../provider.js";
import { simulatedLbSettings } from "./annotations.js";

/** The hub's parse of a Service's annotations for a cluster of this provider. */
const parseLbAnnotations = (
  vendor: (a: Readonly<Record<string, string>>) => VendorLbSettings,
  annotations: Readonly<Record<string, string>>,
) => parse(annotations, vendor);

const VENDOR = "service.beta.kubernetes.io/simulated-load-balancer-idle-timeout";

describe("provider annotations", () => {
  test("the simulated provider's idle timeout sets the same setting as lb.fleet-ccm.io/idle-timeout", () => {
    expect(parseLbAnnotations(simulatedLbSettings, {}).idleTimeoutSeconds).toBe(60);
    expect(parseLbAnnotations(simulatedLbSettings, { [VENDOR]: "120" }).idleTimeoutSeconds).toBe(120);
  });

  test("when both are set, the unified key wins", () => {
    expect(
      parseLbAnnotations(simulatedLbSettings, { [VENDOR]: "120", "lb.fleet-ccm.io/idle-timeout": "30" })
        .idleTimeoutSeconds,
    ).toBe(30);
  });

  test("a bad vendor value names the vendor annotation; unknown vendor keys are ignored", () => {
    expect(() => parseLbAnnotations(simulatedLbSettings, { [VENDOR]: "soon" })).toThrow(
      `invalid annotation ${VENDOR}="soon": expected a whole number of seconds from 1 to 3600`,
    );
    expect(
      parseLbAnnotations(simulatedLbSettings, { "service.beta.kubernetes.io/simulated-something-else": "x" })
        .idleTimeoutSeconds,
    ).toBe(60);
  });
});
