import { GcpComputeFake, putUpstreamExternalLb } from "@fleet-ccm/sim";
import { jest } from "@jest/globals";
import type { ConformanceFixture, FakeResource, VendorMode } from "../../conformance/conformance.testkit.js";
import { describeProviderConformance } from "../../conformance/conformance.testkit.js";
import type { AccountBinding, LbOwner } from "../../provider.js";
import { gcpProvider } from "./index.js";
import { descriptionOwner, gceLoadBalancerName, ROUTE_DESCRIPTION } from "./names.js";
import { CLUSTER_NAME_LABEL, PD_CSI_DRIVER } from "./volumes.js";

const PROJECT = "conf-project";
const REGION = "us-central1";
const VENDOR_MODES = ["target pool (cloud-provider-gcp)"] as const;
let disks = 0;

/** What the fake lets reach the owner's load balancer: "<port> <range>" of its firewalls (clients, health checks). */
function exposure(fake: GcpComputeFake, lbName: string): string[] {
  const fws = fake.list(PROJECT, "firewalls");
  const pool = fake.list(PROJECT, "targetPools").find((p) => p.name === lbName);
  const hc = String((pool?.healthChecks as string[] | undefined)?.[0] ?? "")
    .split("/")
    .pop();
  const names = new Set([
    `k8s-fw-${lbName}`,
    ...(hc === undefined || hc === "" ? [] : [hc === lbName ? `k8s-${hc}-http-hc` : `${hc}-http-hc`]),
  ]);
  const out: string[] = [];
  for (const f of fws) {
    if (!names.has(String(f.name))) continue;
    const ports = ((f.allowed as { ports?: string[] }[] | undefined) ?? []).flatMap((a) => a.ports ?? []);
    for (const r of (f.sourceRanges as string[] | undefined) ?? [])
      for (const p of ports) out.push(`${p} ${r}`);
  }
  return [...new Set(out)].sort();
}

function vendorModes(fake: GcpComputeFake): VendorMode[] {
  return [
    {
      mode: VENDOR_MODES[0],
      async build(owner, spec, clusterId) {
        const lbName = gceLoadBalancerName(owner.serviceUid);
        const ip = putUpstreamExternalLb(fake, PROJECT, REGION, {
          clusterId,
          lbName,
          serviceName: spec.serviceName ?? `default/svc-${owner.serviceUid}`,
          ports: spec.listeners.map((l) => l.port),
          backends: spec.backends,
          nodeTags: ["default-node"],
        });
        return {
          ingress: [{ ip }],
          exposure: () => exposure(fake, lbName),
          healthRanges: ["130.211.0.0/22", "209.85.152.0/22", "209.85.204.0/22", "35.191.0.0/16"],
        };
      },
    },
  ];
}

function fixture(operationMs: number): ConformanceFixture {
  return {
    vendorModes: VENDOR_MODES,
    async start() {
      const fake = await GcpComputeFake.start({ spec: true });
      fake.operationMs = operationMs;
      const { key } = fake.createProject(PROJECT, {
        [REGION]: [`${REGION}-a`, `${REGION}-b`],
        "europe-west1": ["europe-west1-b"],
      });
      let n = 0;
      const make = (name: string, zone: string, network = "default") => {
        fake.createInstance(PROJECT, { name, zone, network, tags: [`${network}-node`] });
        return { instanceID: `${zone}/${name}`, providerID: `gce://${PROJECT}/${zone}/${name}` };
      };
      const ours = (o: LbOwner, r: { description?: unknown }) => {
        const d = descriptionOwner(r.description);
        return d !== undefined && d.cluster === o.cluster && d.serviceUid === o.serviceUid;
      };
      return {
        factory: gcpProvider,
        account: (): AccountBinding => ({
          name: "conf",
          provider: "gcp",
          region: REGION,
          network: "default",
          endpoint: fake.url,
          credential: key,
          requestTimeoutMs: 5_000,
        }),
        options: { operationPollMs: Math.min(operationMs, 50), instancePageSize: 20 },
        isMutation: (op) => /\.(insert|delete|patch|update|addInstance|removeInstance)$/.test(op),
        createInstance: ({ name, inScope }) =>
          make(name, inScope ? `${REGION}-${"ab"[n++ % 2]}` : "europe-west1-b"),
        terminateInstance: (id) => {
          const [zone = "", name = ""] = id.split("/");
          fake.deleteInstance(PROJECT, zone, name);
        },
        disks: {
          zonal: true,
          // Zonal disks alternate between the in-tree pdName and the CSI handle; two zones: a regional disk.
          create: ({ sizeGiB, zones, inScope, ownerCluster, attachedTo }) => {
            const name = `pvc-${++disks}`;
            const region = inScope ? REGION : "europe-west1";
            const regional = zones === 2;
            const zone = regional ? undefined : inScope ? `${REGION}-a` : "europe-west1-b";
            fake.createDisk(PROJECT, {
              name,
              sizeGb: sizeGiB,
              ...(regional ? { region, replicaZones: [`${region}-a`, `${region}-b`] } : { zone }),
              ...(attachedTo !== undefined && { users: [attachedTo] }),
              ...(ownerCluster !== undefined && {
                labels: { [CLUSTER_NAME_LABEL]: ownerCluster, "goog-gke-volume": "" },
              }),
              description: JSON.stringify({
                "kubernetes.io/created-for/pv/name": name,
                "storage.gke.io/created-by": PD_CSI_DRIVER,
              }),
            });
            if (
              !regional &&
              inScope &&
              ownerCluster === undefined &&
              attachedTo === undefined &&
              disks % 2 === 0
            )
              return { id: name, source: "gcePersistentDisk", csiDriver: "", handle: name };
            const handle = `projects/${PROJECT}/${regional ? `regions/${region}` : `zones/${zone}`}/disks/${name}`;
            return { id: handle, source: "csi", csiDriver: PD_CSI_DRIVER, handle };
          },
          missing: () => {
            const handle = `projects/${PROJECT}/zones/${REGION}-a/disks/no-such-disk`;
            return { id: handle, source: "csi", csiDriver: PD_CSI_DRIVER, handle };
          },
        },
        missingProviderID: () => `gce://${PROJECT}/${REGION}-a/no-such-instance`,
        instancePageSize: 20,
        throttle: (seconds) =>
          fake.setFaults({ throttleRate: 1, throttleRetryAfterSeconds: seconds }, PROJECT),
        failWithServerErrors: () => fake.setFaults({ errorRate: 1 }, PROJECT),
        clearFaults: () => fake.resetFaults(),
        resources: (): FakeResource[] => {
          const out: FakeResource[] = [];
          for (const collection of [
            "addresses",
            "forwardingRules",
            "targetPools",
            "firewalls",
            "httpHealthChecks",
            "healthChecks",
            "backendServices",
            "instanceGroups",
          ]) {
            for (const r of fake.list(PROJECT, collection)) {
              const owner = descriptionOwner(r.description);
              out.push({
                kind: collection,
                id: String(r.selfLink),
                ...(owner !== undefined && { lbOwner: owner }),
              });
            }
          }
          for (const r of fake.list(PROJECT, "routes")) {
            const name = String(r.name);
            const cluster =
              r.description === ROUTE_DESCRIPTION ? name.replace(/-[0-9a-f]{32}$/, "") : undefined;
            out.push({
              kind: "route",
              id: String(r.selfLink),
              destinationCIDR: String(r.destRange),
              ...(cluster !== undefined && cluster !== name && { routeOwner: cluster }),
            });
          }
          return out;
        },
        createForeignLoadBalancer: () => {
          const name = `foreign-${++n}`;
          fake.put(PROJECT, `regions/${REGION}`, "targetPools", { name, description: "made by hand" });
        },
        createForeignRoute: (cidr, target) => {
          const [zone, name] = target.split("/");
          fake.put(PROJECT, "global", "routes", {
            name: `manual-${++n}`,
            network: `https://www.googleapis.com/compute/v1/projects/${PROJECT}/global/networks/default`,
            destRange: cidr,
            nextHopInstance: `https://www.googleapis.com/compute/v1/projects/${PROJECT}/zones/${zone}/instances/${name}`,
          });
        },
        // A target pool sends traffic to the Service ports (Compute keeps the destination):
        // the node ports are nowhere in the cloud; the health-check port is the only node port.
        trafficTo: "port",
        // The forwarding rules' page, then (where one holds a spec digest) the region's target pools.
        listOwnedReadsPerPage: 2,
        backendPorts: (o) => {
          const pool = fake
            .list(PROJECT, "targetPools")
            .find((p) => p.name === gceLoadBalancerName(o.serviceUid) && ours(o, p));
          if (pool === undefined || (pool.instances as string[]).length === 0) return [];
          const fw = fake.list(PROJECT, "firewalls").find((f) => f.name === `k8s-fw-${pool.name}`);
          const ports = ((fw?.allowed as { ports?: string[] }[] | undefined) ?? [])
            .flatMap((a) => a.ports ?? [])
            .map(Number);
          return [...new Set(ports)].sort((a, b) => a - b);
        },
        otherNetwork: {
          network: "other",
          createInstance: (name) => make(name, `${REGION}-a`, "other"),
        },
        // Not a quota (that is ThrottledError): an operation's plain failure.
        failNextCreates: (count) =>
          fake.failNextInserts(count, {
            code: "INTERNAL_ERROR",
            message: "Internal error. Please try again or contact Google Support.",
            status: 500,
          }),
        vendorModes: vendorModes(fake),
        close: async () => {
          fake.spec?.assertClean();
          await fake.close();
        },
      };
    },
  };
}

describeProviderConformance("gcp", fixture(0));
// Every mutation waits out a 120 ms operation, and the crash-after-every-mutation cases replay a
// whole ensure per mutation: minutes on a loaded machine, so this run gets 3 minutes a test.
jest.setTimeout(180_000);
describeProviderConformance("gcp (operations take 120 ms)", fixture(120), { inProgress: true });
