/**
 * The agent bundle replaces two client-node modules with stand-ins (scripts/bundle/agent.mjs):
 * each must do what the agent's use of the real one does, and the bundle must carry neither
 * the generated API clients nor their models.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, test } from "@jest/globals";
import { ObjectSerializer } from "@kubernetes/client-node/dist/serializer.js";

const ROOT = join(fileURLToPath(new URL(".", import.meta.url)), "..");
const standIn = async <T>(file: string): Promise<T> =>
  (await import(pathToFileURL(join(ROOT, "scripts", "bundle", file)).href)) as T;

type Serializer = { ObjectSerializer: { serialize(data: unknown, type: string): unknown } };
type Gen = { createConfiguration(): unknown; ServerConfiguration: new () => unknown };

describe("kube-serializer.mjs", () => {
  test("serializes selector strings as client-node does (ListWatch's only use)", async () => {
    const { ObjectSerializer: stand } = await standIn<Serializer>("kube-serializer.mjs");
    for (const s of [
      "",
      "kubernetes.io/os=linux",
      "metadata.name=node-1,spec.unschedulable!=true",
      undefined,
    ])
      expect(stand.serialize(s, "string")).toBe(ObjectSerializer.serialize(s, "string"));
  });

  test("any other type says it is not in the bundle", async () => {
    const { ObjectSerializer: stand } = await standIn<Serializer>("kube-serializer.mjs");
    expect(() => stand.serialize({ kind: "Node" }, "V1Node")).toThrow("not in the fleet-ccm agent bundle");
  });
});

describe("kube-gen.mjs", () => {
  test("the generated API clients say they are not in the bundle (KubeConfig.makeApiClient)", async () => {
    const gen = await standIn<Gen>("kube-gen.mjs");
    expect(() => gen.createConfiguration()).toThrow("not in the fleet-ccm agent bundle");
    expect(() => new gen.ServerConfiguration()).toThrow("not in the fleet-ccm agent bundle");
  });
});

describe("the agent bundle (npm test builds it first)", () => {
  const bundle = readFileSync(join(ROOT, "cli", "dist", "agent.bundle.js"), "utf8");

  test("holds KubeConfig and the informer's ListWatch, and the stand-ins in place of the generated code", () => {
    for (const kept of ["var KubeConfig=class", "var ListWatch=class", "not in the fleet-ccm agent bundle"])
      expect(bundle).toContain(kept);
    // Every generated model declares its attributeTypeMap (1,441 of them before the stand-ins).
    for (const left of ["attributeTypeMap", "V1PodSpec", "CoreV1Api"]) expect(bundle).not.toContain(left);
  });
});
