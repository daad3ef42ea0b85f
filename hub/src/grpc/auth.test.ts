import { describe, expect, test } from "@jest/globals";
import { parseHubConfig } from "../config/load.js";
import { clusterCredentials, TokenAuthenticator, tokenHash } from "./auth.js";

describe("TokenAuthenticator", () => {
  test("a token is admitted by itself or by its digest only", () => {
    const auth = new TokenAuthenticator();
    auth.replace([
      { cluster: "a", token: "token-a" },
      { cluster: "b", tokenHash: tokenHash("token-b") },
    ]);
    expect(auth.clusterFor("Bearer token-a")).toBe("a");
    expect(auth.clusterFor("Bearer token-b")).toBe("b");
    expect(auth.clusterFor(`Bearer ${tokenHash("token-b")}`)).toBeUndefined();
  });

  test("replace reports the clusters whose credential changed or went, and only those", () => {
    const auth = new TokenAuthenticator([
      ["a", "token-a"],
      ["b", "token-b"],
      ["c", "token-c"],
    ]);
    const revoked = auth.replace([
      { cluster: "a", tokenHash: tokenHash("token-a") },
      { cluster: "b", token: "token-b2" },
      { cluster: "d", token: "token-d" },
    ]);
    expect(revoked.sort()).toEqual(["b", "c"]);
    expect(auth.clusterFor("Bearer token-b")).toBeUndefined();
    expect(auth.clusterFor("Bearer token-c")).toBeUndefined();
    expect(auth.clusterFor("Bearer token-a")).toBe("a");
  });

  test("two clusters with one token are refused and nothing changes", () => {
    const auth = new TokenAuthenticator([["a", "token-a"]]);
    expect(() =>
      auth.replace([
        { cluster: "a", token: "same" },
        { cluster: "b", tokenHash: tokenHash("same") },
      ]),
    ).toThrow('clusters "a" and "b" have the same token');
    expect(auth.clusterFor("Bearer token-a")).toBe("a");
  });

  test("rotation: with the old and the new digest listed both are admitted and nothing is revoked; dropping the old revokes the cluster", () => {
    const config = (tokenHashes: string[]) =>
      clusterCredentials(
        parseHubConfig(
          JSON.stringify({
            grpc: { insecure: true },
            nats: { servers: ["nats://127.0.0.1:1"] },
            accounts: [{ name: "a", provider: "simulated", region: "r", credentials: { env: "K" } }],
            clusters: [{ name: "c1", account: "a", tokenHash: tokenHashes }],
          }),
        ).clusters,
      );
    const auth = new TokenAuthenticator();
    auth.replace(config([tokenHash("old")]));
    expect(auth.replace(config([tokenHash("old"), tokenHash("new")]))).toEqual([]);
    expect(auth.clusterFor("Bearer old")).toBe("c1");
    expect(auth.clusterFor("Bearer new")).toBe("c1");
    expect(auth.replace(config([tokenHash("new")]))).toEqual(["c1"]);
    expect(auth.clusterFor("Bearer old")).toBeUndefined();
    expect(auth.clusterFor("Bearer new")).toBe("c1");
  });
});
