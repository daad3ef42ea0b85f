import { describe, expect, test } from "@jest/globals";
import { clusterOfDesiredSubject, describeNatsError, redactServer } from "./publisher.js";

describe("NATS errors a user can act on", () => {
  const servers = ["nats://hub:s3cret@nats-1:4222", "nats://nats-2:4222"];

  test("server URLs lose their credentials", () => {
    expect(redactServer("nats://hub:s3cret@nats-1:4222")).toBe("nats://nats-1:4222");
    expect(redactServer("tls://nats-2:4222")).toBe("tls://nats-2:4222");
  });

  test("an authorization failure names the servers and the settings, never the password", () => {
    const err = Object.assign(new Error("Authorization Violation"), { name: "AuthorizationError" });
    const msg = describeNatsError(err, servers);
    expect(msg).toBe(
      "NATS at nats://nats-1:4222, nats://nats-2:4222 refused the hub's credentials (Authorization Violation): check nats.credentials (or nats.user and nats.password)",
    );
    expect(msg).not.toContain("s3cret");
  });

  test("an unreachable server names nats.servers; only the first line of a message is kept", () => {
    const err = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:4222\n    at TCPConnectWrap"), {
      name: "ConnectionError",
    });
    expect(describeNatsError(err, ["nats://127.0.0.1:4222"])).toBe(
      "cannot connect to NATS at nats://127.0.0.1:4222 (connect ECONNREFUSED 127.0.0.1:4222): check nats.servers and that NATS is running",
    );
  });

  test("a permission violation says what the hub's user must be allowed", () => {
    const err = Object.assign(new Error("Permissions Violation for Publish to fleet.v1.a.desired"), {
      name: "PermissionViolationError",
    });
    expect(describeNatsError(err, ["nats://n:4222"])).toContain("must be allowed to publish fleet.v1.>");
  });
});

test("a refused subject names its cluster only when it is a desired-state subject", () => {
  expect(clusterOfDesiredSubject("fleet.v1.prod-eu-1.desired")).toBe("prod-eu-1");
  expect(clusterOfDesiredSubject("fleet.v1.prod-eu-1.other")).toBeUndefined();
  expect(clusterOfDesiredSubject("$KV.fleet-ccm-leases.a")).toBeUndefined();
});
