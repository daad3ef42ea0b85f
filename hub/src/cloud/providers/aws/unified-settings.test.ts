import { describe, expect, test } from "@jest/globals";
import { parseLbAnnotations as parse } from "../../../reconcilers/service/annotations.js";
import type { VendorLbSettings } from "../../provider.js";
import { awsLbSettings } from "./unified-settings.js";

/** The hub's parse of a Service's annotations for a cluster of this provider. */
const parseLbAnnotations = (
  vendor: (a: Readonly<Record<string, string>>) => VendorLbSettings,
  annotations: Readonly<Record<string, string>>,
) => parse(annotations, vendor);

describe("cloud-provider-aws annotations", () => {
  const aws = (k: string) => `service.beta.kubernetes.io/aws-load-balancer-${k}`;

  test("health check, idle timeout, proxy protocol and internal with upstream's meaning", () => {
    const s = parseLbAnnotations(awsLbSettings, {
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
    expect(parseLbAnnotations(awsLbSettings, { [aws("internal")]: "false" }).internal).toBe(false);
    expect(parseLbAnnotations(awsLbSettings, { [aws("scheme")]: "internal" }).internal).toBe(true);
  });

  test("the unified keys win; bad values name the AWS annotation", () => {
    expect(
      parseLbAnnotations(awsLbSettings, {
        [aws("connection-idle-timeout")]: "300",
        "lb.fleet-ccm.io/idle-timeout": "30",
      }).idleTimeoutSeconds,
    ).toBe(30);
    expect(() => parseLbAnnotations(awsLbSettings, { [aws("healthcheck-interval")]: "1" })).toThrow(
      `invalid annotation ${aws("healthcheck-interval")}="1"`,
    );
    expect(() => parseLbAnnotations(awsLbSettings, { [aws("proxy-protocol")]: "80" })).toThrow(
      '"*" (every port), as upstream',
    );
  });
});

describe("AWS bounds", () => {
  test("the AWS vendor keys the hub reads are held to AWS's bounds", () => {
    expect(() =>
      parseLbAnnotations(awsLbSettings, {
        "service.beta.kubernetes.io/aws-load-balancer-healthcheck-path": `/${"a".repeat(2000)}`,
      }),
    ).toThrow("1 to 1014 characters");
    expect(() =>
      parseLbAnnotations(awsLbSettings, {
        "service.beta.kubernetes.io/aws-load-balancer-connection-idle-timeout": "4000",
      }),
    ).toThrow("from 1 to 3600");
  });
});
