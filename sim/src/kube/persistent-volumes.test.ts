// PersistentVolumes through the real client-node: create, list, watch, patch, and the validation
// rules of ValidatePersistentVolume(Update) that a CCM's writes meet.

import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1PersistentVolume,
  Watch,
} from "@kubernetes/client-node";
import { type KubeApiServer, startKubeApiServer } from "./index.js";

let sim: KubeApiServer;
let kc: KubeConfig;
let core: CoreV1Api;

beforeAll(async () => {
  sim = await startKubeApiServer();
  kc = new KubeConfig();
  kc.loadFromOptions(sim.kubeConfigOptions());
  core = kc.makeApiClient(CoreV1Api);
});

afterAll(async () => {
  await sim.close();
});

const smp = setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch);

function ebsVolume(name: string, extra: Partial<V1PersistentVolume["spec"]> = {}): V1PersistentVolume {
  return {
    metadata: { name },
    spec: {
      capacity: { storage: "10Gi" },
      accessModes: ["ReadWriteOnce"],
      csi: { driver: "ebs.csi.aws.com", volumeHandle: "vol-0123456789abcdef0" },
      ...extra,
    },
  };
}

async function failure(p: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiException) {
      const body = JSON.parse(typeof e.body === "string" ? e.body : "{}") as { message?: string };
      return { code: e.code, message: body.message ?? "" };
    }
    throw e;
  }
  throw new Error("expected the call to fail");
}

const zoneAffinity = (zone: string) => ({
  required: {
    nodeSelectorTerms: [
      { matchExpressions: [{ key: "topology.kubernetes.io/zone", operator: "In", values: [zone] }] },
    ],
  },
});

describe("persistentvolumes", () => {
  test("created Pending with upstream's defaults, listed, and served by name", async () => {
    const pv = await core.createPersistentVolume({ body: ebsVolume("pv-a") });
    expect(pv.status?.phase).toBe("Pending");
    expect(pv.spec?.persistentVolumeReclaimPolicy).toBe("Retain");
    expect(pv.spec?.volumeMode).toBe("Filesystem");
    const list = await core.listPersistentVolume();
    expect(list.kind).toBe("PersistentVolumeList");
    expect(list.items.map((i) => i.metadata?.name)).toContain("pv-a");
    expect((await core.readPersistentVolume({ name: "pv-a" })).metadata?.uid).toBe(pv.metadata?.uid);
  });

  test("validation: a volume source, capacity and access modes are required, one source only", async () => {
    const none = await failure(
      core.createPersistentVolume({ body: { metadata: { name: "pv-bad" }, spec: {} } }),
    );
    expect(none.code).toBe(422);
    expect(none.message).toContain("spec.accessModes: Required value");
    expect(none.message).toContain("spec.capacity: Required value");
    expect(none.message).toContain("spec: Required value: must specify a volume type");
    const two = await failure(
      core.createPersistentVolume({
        body: ebsVolume("pv-two", { awsElasticBlockStore: { volumeID: "vol-1" } }),
      }),
    );
    expect(two.message).toContain("may not specify more than 1 volume type");
  });

  test("labels and a first nodeAffinity patch in; a changed nodeAffinity or source is refused", async () => {
    await core.createPersistentVolume({ body: ebsVolume("pv-b") });
    const patched = await core.patchPersistentVolume(
      {
        name: "pv-b",
        body: {
          metadata: { labels: { "topology.kubernetes.io/zone": "us-east-1a" } },
          spec: { nodeAffinity: zoneAffinity("us-east-1a") },
        },
      },
      smp,
    );
    expect(patched.metadata?.labels?.["topology.kubernetes.io/zone"]).toBe("us-east-1a");
    expect(patched.spec?.nodeAffinity?.required?.nodeSelectorTerms[0]?.matchExpressions?.[0]?.values).toEqual(
      ["us-east-1a"],
    );
    const changed = await failure(
      core.patchPersistentVolume(
        { name: "pv-b", body: { spec: { nodeAffinity: zoneAffinity("us-east-1b") } } },
        smp,
      ),
    );
    expect(changed.code).toBe(422);
    expect(changed.message).toContain("spec.nodeAffinity: Invalid value");
    expect(changed.message).toContain("field is immutable");
    const source = await failure(
      core.patchPersistentVolume(
        { name: "pv-b", body: { spec: { csi: { volumeHandle: "vol-other" } } } },
        smp,
      ),
    );
    expect(source.message).toContain("spec.persistentvolumesource is immutable after creation");
  });

  test("watched: ADDED and MODIFIED events after a list's resourceVersion", async () => {
    const list = await core.listPersistentVolume();
    const seen: string[] = [];
    const done = new Promise<void>((resolve) => {
      void new Watch(kc).watch(
        "/api/v1/persistentvolumes",
        { resourceVersion: list.metadata?.resourceVersion },
        (phase, obj: V1PersistentVolume) => {
          seen.push(`${phase} ${obj.metadata?.name}`);
          if (phase === "MODIFIED") resolve();
        },
        () => undefined,
      );
    });
    await core.createPersistentVolume({ body: ebsVolume("pv-w") });
    await core.patchPersistentVolume({ name: "pv-w", body: { metadata: { labels: { a: "b" } } } }, smp);
    await done;
    expect(seen).toEqual(["ADDED pv-w", "MODIFIED pv-w"]);
  });

  test("served as a Table with kubectl's columns", async () => {
    await core.createPersistentVolume({ body: ebsVolume("pv-t") });
    const res = await fetch(`${sim.url}/api/v1/persistentvolumes/pv-t`, {
      headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" },
    });
    const table = (await res.json()) as {
      columnDefinitions: { name: string }[];
      rows: { cells: unknown[] }[];
    };
    expect(table.columnDefinitions.map((c) => c.name)).toEqual([
      "Name",
      "Capacity",
      "Access Modes",
      "Reclaim Policy",
      "Status",
      "Claim",
      "StorageClass",
      "VolumeAttributesClass",
      "Reason",
      "Age",
      "VolumeMode",
    ]);
    expect(table.rows[0]?.cells.slice(0, 9)).toEqual([
      "pv-t",
      "10Gi",
      "RWO",
      "Retain",
      "Pending",
      "",
      "",
      "<unset>",
      "",
    ]);
  });
});
