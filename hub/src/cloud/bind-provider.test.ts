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
