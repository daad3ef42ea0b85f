import { expect, test } from "@jest/globals";
import { builtinProviders } from "./cloud/builtin.js";
import { checkHubConfig, hubConfigProblems } from "./config-check.js";

const env = { KEY: "k", T1: "t1", T2: "t2" };
const base = {
  grpc: { listen: "127.0.0.1:7443", insecure: true },
  nats: { servers: ["nats://127.0.0.1:4222"] },
};
const sim = { provider: "simulated", endpoint: "http://127.0.0.1:1", credentials: { env: "KEY" } };
const problems = (doc: unknown) =>
  hubConfigProblems(JSON.stringify(doc), { providers: builtinProviders, env }).problems;

test("each stage runs on the parts that parsed: a broken account does not hide the next one's provider options", () => {
  expect(
    problems({
      ...base,
      accounts: [
        { ...sim, name: "a", region: 7 },
        { ...sim, name: "b", region: "r1", options: { pollMs: 5 } },
        { ...sim, name: "c", regions: ["r1", "r2"], credentials: { apiKey: { env: "NOPE" } } },
        { ...sim, name: "d", region: "r1", endpoint: undefined },
      ],
      clusters: [
        { name: "x", token: { env: "T1" }, account: "c" },
        { name: "y", token: { env: "T2" }, account: "b", region: "r9" },
        { name: "z", token: { env: "T3" }, account: "zz" },
      ],
    }),
  ).toEqual([
    expect.stringMatching(/^accounts\[0\]\.region: /),
    'clusters[2].account: unknown account "zz"',
    'accounts[1].options: Unrecognized key: "pollMs"',
    "accounts[3].endpoint: required: the simulated provider has no public address",
    'clusters[0].region: required: account "c" serves several regions (r1, r2)',
    'clusters[1].region: account "b" does not serve region "r9" (it serves r1)',
    "accounts[2].credentials.apiKey: environment variable NOPE is not set",
    "clusters[2].token: environment variable T3 is not set",
  ]);
});

test("a whole configuration with readable secrets passes; two clusters sharing a token do not", () => {
  const ok = { ...base, accounts: [{ ...sim, name: "a", region: "r1" }] };
  const one = { name: "x", token: { env: "T1" }, account: "a" };
  expect(
    checkHubConfig(JSON.stringify({ ...ok, clusters: [one] }), "hub.yaml", {
      providers: builtinProviders,
      env,
    }).clusters[0]?.name,
  ).toBe("x");
  expect(problems({ ...ok, clusters: [one, { ...one, name: "y" }] })).toEqual([
    'clusters: clusters "x" and "y" have the same token; each cluster needs its own',
  ]);
});
