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

describe("cloud-provider-aws annotations", () => {
  const aws = (k: string) => `service.beta.kubernetes.io/aws-load-balancer-${k}`;

  test("health check, idle timeout, proxy protocol and internal with upstream's meaning", () => {
    const s = parseLbAnnotations({
      [aws("healthcheck-interval")]: "30",
      [aws("healthcheck-timeout")]: "10",
      [aws("healthcheck-healthy-threshold")]: "3",
      [aws("healthcheck-unhealthy-threshold")]: "4",
      [aws("healthcheck-protocol")]: "HTTP",
      [aws("healthcheck-path")]: "/ready",
      [aws("connection-idle-timeout")]: "300",
      [aws("proxy-protocol")]: "*",
      [aws("internal")]: "0.0.0.0/0",
    });
    expect(s).toMatchObject({
      healthCheckIntervalSeconds: 30,
      healthCheckTimeoutSeconds: 10,
      healthyThreshold: 3,
      unhealthyThreshold: 4,
      healthCheckProtocol: "HTTP",
      healthCheckPath: "/ready",
      idleTimeoutSeconds: 300,
      proxyProtocol: true,
      internal: true,
    });
    expect(parseLbAnnotations({ [aws("internal")]: "false" }).internal).toBe(false);
    expect(parseLbAnnotations({ [aws("scheme")]: "internal" }).internal).toBe(true);
  });

  test("the unified keys win; bad values name the AWS annotation", () => {
    expect(
      parseLbAnnotations({ [aws("connection-idle-timeout")]: "300", "lb.fleet-ccm.io/idle-timeout": "30" })
        .idleTimeoutSeconds,
    ).toBe(30);
    expect(() => parseLbAnnotations({ [aws("healthcheck-interval")]: "1" })).toThrow(
      `invalid annotation ${aws("healthcheck-interval")}="1"`,
    );
    expect(() => parseLbAnnotations({ [aws("proxy-protocol")]: "80" })).toThrow(
      '"*" (every port), as upstream',
    );
  });
});
