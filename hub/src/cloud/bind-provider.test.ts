import { expect, test } from "@jest/globals";
import { z } from "zod";
import { checkEndpoint } from "./bind-provider.js";
import type { CloudProvider, ProviderFactory } from "./provider.js";
import { bindRecorded } from "./recording-context.testkit.js";

test("endpoint declarations: required refuses none, a default stands in for none, any given one must be http(s)", () => {
  expect(() => checkEndpoint("required", undefined, "p")).toThrow("endpoint: required");
  expect(checkEndpoint("optional", "", "p")).toBeUndefined();
  expect(checkEndpoint({ default: "https://api.example.com" }, undefined, "p")).toBe(
    "https://api.example.com",
  );
  expect(checkEndpoint({ default: "https://api.example.com" }, "http://127.0.0.1:9", "p")).toBe(
    "http://127.0.0.1:9",
  );
  expect(() => checkEndpoint({ default: "https://api.example.com" }, "ftp://x", "p")).toThrow(
    "must be http(s)",
  );
});

test("a provider declaring a default endpoint finds it in its account binding when the account names none", async () => {
  const seen: (string | undefined)[] = [];
  const factory: ProviderFactory = {
    name: "p",
    annotationPrefixes: [],
    options: z.unknown(),
    credentials: { required: [], bare: "" },
    endpoint: { default: "https://api.example.com" },
    async create(ctx): Promise<CloudProvider> {
      seen.push(ctx.account.endpoint);
      return {
        name: "p",
        instances: {
          getByProviderID: async () => Promise.reject(new Error("unused")),
          findByName: async () => [],
          listPage: async () => ({ instances: [] }),
          parseProviderID: () => undefined,
        },
      };
    },
  };
  const account = { name: "a", provider: "p", region: "r", credential: "k", requestTimeoutMs: 1000 };
  await bindRecorded(factory, account);
  await bindRecorded(factory, { ...account, endpoint: "http://127.0.0.1:9" });
  expect(seen).toEqual(["https://api.example.com", "http://127.0.0.1:9"]);
});

test("a provider setting a Service annotation outside its forwarded prefixes is refused when bound", async () => {
  const factory = (prefixes: string[]): ProviderFactory => ({
    name: "p",
    annotationPrefixes: prefixes,
    options: z.unknown(),
    credentials: { required: [], bare: "" },
    endpoint: "optional",
    async create(): Promise<CloudProvider> {
      return {
        name: "p",
        instances: {
          getByProviderID: async () => Promise.reject(new Error("unused")),
          findByName: async () => [],
          listPage: async () => ({ instances: [] }),
          parseProviderID: () => undefined,
        },
        loadBalancers: {
          capabilities: {
            sessionAffinity: false,
            proxyProtocol: false,
            internal: false,
            protocols: ["TCP"],
            serviceAnnotationKeys: ["vendor.example/lb-id"],
          },
          get: async () => undefined,
          ensure: async () => [],
          updateBackends: async () => undefined,
          ensureDeleted: async () => undefined,
        },
      };
    },
  });
  const account = { name: "a", provider: "p", region: "r", credential: "k", requestTimeoutMs: 1000 };
  await expect(bindRecorded(factory(["other.example/"]), account)).rejects.toThrow(
    "provider p sets Service annotation vendor.example/lb-id outside its annotationPrefixes",
  );
  await expect(bindRecorded(factory(["vendor.example/lb-id"]), account)).resolves.toBeDefined();
});
