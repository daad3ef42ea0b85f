/**
 * A fake Azure Resource Manager for the resources a cloud controller manager uses:
 * Microsoft.Compute virtual machines, scale-set VMs and managed disks (read), Microsoft.Network network
 * interfaces (read, and written to join a NIC-based pool: the pool then shows the IP
 * configurations naming it), a uniform scale set's VMs' network interfaces and public IPs (read,
 * through the scale set's own API, api-version 2018-10-01), public IP addresses, load balancers, network security groups and
 * route tables (read and write), tag names and counts as ARM limits them, as the swagger in sim/fixtures/azure/ describes them (api-version
 * 2024-01-01 for Network, 2024-07-01 for Compute, 2024-03-02 for disks), over HTTPS on loopback (the SDK's bearer
 * policy refuses plain HTTP) with a generated certificate.
 *
 * What ARM does that a client depends on: whole-object PUTs with an ETag (`If-Match` that no
 * longer matches: 412 PreconditionFailed), `provisioningState` Updating until the write ends,
 * with an `Azure-AsyncOperation` URL to poll; `nextLink` paging with `$skiptoken`; the error
 * envelope `{error: {code, message}}` with ARM's codes (ResourceNotFound, ResourceGroupNotFound,
 * PreconditionFailed, PublicIPAddressInUse, InvalidResourceReference, TooManyRequests with
 * Retry-After, InternalServerError, ServiceUnavailable / RetryableError); the
 * `x-ms-ratelimit-remaining-subscription-reads|writes` headers. Tokens come from the fake
 * Entra ID beside it (entra.ts). One account of the kit is one subscription.
 */
import { randomUUID } from "node:crypto";
import {
  byKind,
  type ErrorRenderer,
  FakeError,
  type ListFaults,
  type VendorCall,
  VendorFake,
  type VendorListing,
  type VendorRoute,
} from "../fake-kit/index.js";
import { selfSignedCertificate, type TestCertificate } from "../util/certificate.js";
import { EntraFake } from "./entra.js";
import { AZURE_SPEC, azureSpecChecker } from "./swagger.js";

type Json = Record<string, unknown>;

export const NETWORK_API_VERSION = "2024-01-01";
export const COMPUTE_API_VERSION = "2024-07-01";
/** Managed disks are the Disk RP's, versioned apart from the rest of Microsoft.Compute. */
export const DISK_API_VERSION = "2024-03-02";
/** A scale set's VMs' NICs and public IPs: the api-version the SDK and cloud-provider-azure send. */
export const VMSS_NETWORK_API_VERSION = "2018-10-01";

/** The resource types the fake keeps, by their path segment. */
export type ArmType =
  | "virtualMachines"
  | "networkInterfaces"
  | "publicIPAddresses"
  | "loadBalancers"
  | "networkSecurityGroups"
  | "routeTables"
  | "virtualNetworks"
  | "vmssVirtualMachines"
  | "virtualMachineScaleSets"
  | "vmssNetworkInterfaces"
  | "vmssPublicIPAddresses"
  | "disks";

const PROVIDER: Record<ArmType, string> = {
  virtualMachines: "Microsoft.Compute/virtualMachines",
  vmssVirtualMachines: "Microsoft.Compute/virtualMachineScaleSets/virtualMachines",
  virtualMachineScaleSets: "Microsoft.Compute/virtualMachineScaleSets",
  disks: "Microsoft.Compute/disks",
  networkInterfaces: "Microsoft.Network/networkInterfaces",
  // A uniform scale set's NIC: a Microsoft.Network resource whose id is under its VM's.
  vmssNetworkInterfaces: "Microsoft.Network/networkInterfaces",
  vmssPublicIPAddresses: "Microsoft.Network/publicIPAddresses",
  publicIPAddresses: "Microsoft.Network/publicIPAddresses",
  loadBalancers: "Microsoft.Network/loadBalancers",
  networkSecurityGroups: "Microsoft.Network/networkSecurityGroups",
  routeTables: "Microsoft.Network/routeTables",
  virtualNetworks: "Microsoft.Network/virtualNetworks",
};
/** Compute resources: provisioningState of their own, no ETag in the fake's answers. */
const COMPUTE: ReadonlySet<ArmType> = new Set([
  "virtualMachines",
  "vmssVirtualMachines",
  "virtualMachineScaleSets",
  "disks",
]);
const WRITABLE: readonly ArmType[] = [
  "publicIPAddresses",
  "loadBalancers",
  "networkSecurityGroups",
  "routeTables",
];

/** One resource as ARM holds it. */
export interface ArmResource {
  readonly id: string;
  readonly type: ArmType;
  readonly resourceGroup: string;
  readonly name: string;
  readonly seq: number;
  etag: string;
  body: Json;
  /** The write in flight ends (provisioningState Succeeded, or Failed) at this time. */
  readyAtMs?: number;
  failWrite?: boolean;
  deleting?: boolean;
}

interface AsyncOp {
  readonly id: string;
  readonly resourceKey: string;
  readonly startMs: number;
  readonly kind: "put" | "delete";
}

export interface AzureFakeOptions {
  readonly now?: () => number;
  readonly seed?: number;
  /** Items per list page (ARM's own size varies; default 100). */
  readonly pageSize?: number;
  /** How long a write stays `Updating` (default 0: done when answered). */
  readonly asyncMs?: number;
  /** Check every exchange against the swagger (default true). */
  readonly spec?: boolean;
  /**
   * Refuse a call whose bucket is empty (429 TooManyRequests with Retry-After), as ARM does;
   * default false (tests that make bursts of calls). The headers are sent either way.
   */
  readonly armLimits?: boolean;
  /** The buckets' sizes and refill rates (default ARM's, ARM_BUCKETS). */
  readonly armBuckets?: typeof ARM_BUCKETS;
}

/** ARM's per-subscription buckets ("Understand how Azure Resource Manager throttles requests"). */
type ArmBudget = "reads" | "writes" | "deletes";
export const ARM_BUCKETS: Readonly<Record<ArmBudget, { readonly size: number; readonly perSecond: number }>> =
  {
    reads: { size: 250, perSecond: 25 },
    writes: { size: 200, perSecond: 10 },
    deletes: { size: 200, perSecond: 10 },
  };

export interface CreateDiskSpec {
  readonly resourceGroup: string;
  readonly name: string;
  readonly location: string;
  readonly sizeGiB: number;
  /** A zonal disk's logical zone ("1"); none: a regional (non-zonal) disk. */
  readonly zone?: string;
  /** The VM id the disk is attached to. */
  readonly managedBy?: string;
  readonly tags?: Record<string, string>;
  readonly sku?: string;
}

export interface CreateVmSpec {
  readonly resourceGroup: string;
  readonly name: string;
  readonly location: string;
  readonly size?: string;
  readonly zone?: string;
  readonly faultDomain?: number;
  /** The subnet id of its primary NIC. */
  readonly subnetId: string;
  readonly privateIp: string;
  readonly publicIp?: string;
  readonly power?: "running" | "stopped" | "deallocated" | "deallocating" | "starting";
  readonly tags?: Record<string, string>;
  /**
   * A uniform scale set: the VM is instance `name` of it, its NIC the scale set's (named after
   * the scale set's network profile, read through the scale set's NIC API).
   */
  readonly scaleSet?: string;
  /** A flexible scale set: the VM is a standalone VM (and NIC) that names the scale set. */
  readonly flexibleScaleSet?: string;
  /**
   * A uniform scale-set VM answered as ARM's own VirtualMachineScaleSetVM_Get example: its size
   * only in `sku.name`, `hardwareProfile: {}` (no `vmSize`). Otherwise both carry it.
   */
  readonly sizeInSkuOnly?: boolean;
}

const renderer: ErrorRenderer = {
  render(e) {
    const code = byKind(
      e as FakeError,
      {
        throttled: "TooManyRequests",
        internal: "InternalServerError",
        unavailable: "ServiceUnavailable",
        timeout: "GatewayTimeout",
      },
      e.code,
    );
    return { status: e.status, headers: e.headers ?? {}, body: { error: { code, message: e.message } } };
  },
};

const notFound = (type: string, name: string, rg: string) =>
  new FakeError(
    404,
    "ResourceNotFound",
    `The Resource '${PROVIDER[type as ArmType] ?? type}/${name}' under resource group '${rg}' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix`,
  );

const lower = (s: string) => s.toLowerCase();

/** The fake serves the swagger's api-version only: ARM refuses one its provider does not register. */
function checkApiVersion(c: VendorCall): void {
  const want = /\/providers\/Microsoft\.Compute\/disks(\/|$)/i.test(c.path)
    ? DISK_API_VERSION
    : /\/virtualMachineScaleSets\/[^/]+\/(.+\/)?(networkInterfaces|publicipaddresses)(\/|$)/i.test(c.path)
      ? VMSS_NETWORK_API_VERSION
      : /\/providers\/Microsoft\.Compute\//i.test(c.path)
        ? COMPUTE_API_VERSION
        : NETWORK_API_VERSION;
  const got = c.query.get("api-version");
  if (got !== want)
    throw new FakeError(
      400,
      "InvalidApiVersionParameter",
      `The api-version '${got ?? ""}' is invalid. The supported versions are '${want}'.`,
    );
}

/** A list answer before paging: the items with their creation seq (`__seq`, never sent). */
interface ArmListing extends VendorListing {
  readonly list: readonly Json[];
}

export class AzureFake extends VendorFake<ArmListing> {
  readonly entra: EntraFake;
  readonly certificate: TestCertificate;
  /** Every successful write's body, as sent. */
  readonly mutations: { operation: string; path: string; body: unknown }[] = [];
  asyncMs: number;
  private readonly pageSize: number;
  /** ARM id (lowercased) → resource, in creation order. */
  private readonly resources = new Map<string, ArmResource>();
  private readonly groups = new Set<string>();
  private readonly ops = new Map<string, AsyncOp>();
  private seq = 0;
  private nextFailures = 0;
  private pageFailures = 0;
  /** ARM's token buckets per subscription (reads, writes, deletes), for the headers and 429s. */
  private readonly buckets = new Map<string, Record<ArmBudget, { tokens: number; atMs: number }>>();
  private readonly armLimits: boolean;
  private readonly armBuckets: typeof ARM_BUCKETS;
  /** The headers object of each subscription's call being handled (rateHeaders). */
  private readonly remainingHeaders = new Map<string, Record<string, string>>();
  /** 412 on the next PUTs of these resources (another writer's change), by lowercased id. */
  private readonly raceNext = new Map<string, number>();

  private constructor(opts: AzureFakeOptions, entra: EntraFake, certificate: TestCertificate) {
    super({
      vendor: "Azure",
      newToken: () => "",
      ...(opts.now !== undefined && { now: opts.now }),
      ...(opts.seed !== undefined && { seed: opts.seed }),
      ...(opts.spec !== false && {
        spec: { checker: azureSpecChecker({ extraQueryParams: ["$skiptoken"] }), fixture: AZURE_SPEC },
      }),
      renderer,
      requestIdHeader: "x-ms-request-id",
      requestId: () => randomUUID(),
      refusals: {
        badBody: () =>
          new FakeError(
            400,
            "InvalidRequestContent",
            "The request content was invalid and could not be deserialized.",
          ),
        unauthenticated: () =>
          new FakeError(401, "InvalidAuthenticationToken", "The access token is invalid or has expired.", {
            kind: "auth",
          }),
        notFound: () => new FakeError(404, "InvalidResourceType", "The resource type could not be found."),
        methodNotAllowed: () =>
          new FakeError(405, "MethodNotAllowed", "The requested method is not allowed."),
      },
      rateHeadersOn: "handled-calls",
      tls: certificate,
    });
    this.entra = entra;
    this.certificate = certificate;
    this.asyncMs = opts.asyncMs ?? 0;
    this.pageSize = opts.pageSize ?? 100;
    this.armLimits = opts.armLimits ?? false;
    this.armBuckets = opts.armBuckets ?? ARM_BUCKETS;
  }

  /** ARM and Entra ID, both on loopback with one generated certificate (trust `certificate.cert`). */
  static async start(opts: AzureFakeOptions = {}): Promise<AzureFake> {
    const certificate = selfSignedCertificate("127.0.0.1", "IP:127.0.0.1,DNS:localhost");
    const entra = await EntraFake.start(certificate, opts.now ?? Date.now);
    try {
      return await new AzureFake(opts, entra, certificate).listen();
    } catch (err) {
      await entra.close();
      throw err;
    }
  }

  override async close(): Promise<void> {
    await Promise.all([super.close(), this.entra.close()]);
  }

  // ---- test controls -------------------------------------------------------------------------

  /** A subscription with an app registration allowed in it (Contributor-like). */
  createSubscription(subscription: string, tenant: string, clientId: string, secret: string): void {
    this.createAccount(subscription, `unused-${subscription}`);
    this.entra.registerApp(tenant, clientId, subscription, secret);
  }

  createResourceGroup(subscription: string, name: string): void {
    this.groups.add(lower(`${subscription}/${name}`));
  }

  resourceId(subscription: string, rg: string, type: ArmType, name: string): string {
    if (
      type === "vmssVirtualMachines" ||
      type === "vmssNetworkInterfaces" ||
      type === "vmssPublicIPAddresses"
    ) {
      const [ss, n, nic, ipc, pip] = name.split("/");
      const vm = `/subscriptions/${subscription}/resourceGroups/${rg}/providers/Microsoft.Compute/virtualMachineScaleSets/${ss}/virtualMachines/${n}`;
      if (type === "vmssVirtualMachines") return vm;
      return type === "vmssNetworkInterfaces"
        ? `${vm}/networkInterfaces/${nic}`
        : `${vm}/networkInterfaces/${nic}/ipConfigurations/${ipc}/publicIPAddresses/${pip}`;
    }
    return `/subscriptions/${subscription}/resourceGroups/${rg}/providers/${PROVIDER[type]}/${name}`;
  }

  /** Puts a resource as another client would (no spec check, no ETag check). */
  put(subscription: string, rg: string, type: ArmType, name: string, body: Json): ArmResource {
    const id = this.resourceId(subscription, rg, type, name);
    const key = lower(id);
    const prior = this.resources.get(key);
    const res: ArmResource = prior ?? {
      id,
      type,
      resourceGroup: rg,
      name,
      seq: ++this.seq,
      etag: "",
      body: {},
    };
    res.etag = `W/"${randomUUID()}"`;
    res.body = this.complete(res, body, "Succeeded");
    this.resources.set(key, res);
    return res;
  }

  /** A virtual machine (or a scale-set VM) with its primary NIC (and public IP). */
  createVm(subscription: string, spec: CreateVmSpec): ArmResource {
    const uniform = spec.scaleSet;
    // A uniform scale set's NICs are named by its network profile: the same name on every VM.
    const nicName = uniform === undefined ? `${spec.name}-nic` : `${uniform}-nic`;
    let pipId: string | undefined;
    if (uniform !== undefined && spec.publicIp !== undefined)
      // The scale set's network profile gives each VM's IP configuration a public IP of its own.
      pipId = this.put(
        subscription,
        spec.resourceGroup,
        "vmssPublicIPAddresses",
        `${uniform}/${spec.name}/${nicName}/ipconfig1/${uniform}-pip`,
        {
          location: spec.location,
          sku: { name: "Standard" },
          properties: {
            publicIPAllocationMethod: "Static",
            ipAddress: spec.publicIp,
            ipConfiguration: {
              id: `${this.resourceId(subscription, spec.resourceGroup, "vmssNetworkInterfaces", `${uniform}/${spec.name}/${nicName}`)}/ipConfigurations/ipconfig1`,
            },
          },
        },
      ).id;
    else if (spec.publicIp !== undefined) {
      const pip = this.put(subscription, spec.resourceGroup, "publicIPAddresses", `${nicName}-pip`, {
        location: spec.location,
        sku: { name: "Standard" },
        properties: { publicIPAllocationMethod: "Static", ipAddress: spec.publicIp },
      });
      pipId = pip.id;
    }
    const vmArmId =
      uniform === undefined
        ? this.resourceId(subscription, spec.resourceGroup, "virtualMachines", spec.name)
        : this.resourceId(subscription, spec.resourceGroup, "vmssVirtualMachines", `${uniform}/${spec.name}`);
    const nic = this.put(
      subscription,
      spec.resourceGroup,
      uniform === undefined ? "networkInterfaces" : "vmssNetworkInterfaces",
      uniform === undefined ? nicName : `${uniform}/${spec.name}/${nicName}`,
      {
        location: spec.location,
        properties: {
          primary: true,
          virtualMachine: { id: vmArmId },
          ipConfigurations: [
            {
              name: "ipconfig1",
              properties: {
                primary: true,
                privateIPAddress: spec.privateIp,
                privateIPAllocationMethod: "Dynamic",
                subnet: { id: spec.subnetId },
                ...(pipId !== undefined && { publicIPAddress: { id: pipId } }),
              },
            },
          ],
        },
      },
    );
    const power = spec.power ?? "running";
    const props: Json = {
      hardwareProfile: { vmSize: spec.size ?? "Standard_D2s_v3" },
      networkProfile: { networkInterfaces: [{ id: nic.id, properties: { primary: true } }] },
      osProfile: { computerName: spec.name.replace("/", "") },
      vmId: randomUUID(),
      instanceView: {
        platformFaultDomain: spec.faultDomain ?? 0,
        statuses: [
          { code: "ProvisioningState/succeeded", level: "Info", displayStatus: "Provisioning succeeded" },
          { code: `PowerState/${power}`, level: "Info", displayStatus: `VM ${power}` },
        ],
      },
    };
    const scaleSet = uniform ?? spec.flexibleScaleSet;
    const ssId =
      scaleSet === undefined
        ? undefined
        : this.resourceId(subscription, spec.resourceGroup, "virtualMachineScaleSets", scaleSet);
    if (scaleSet !== undefined && ssId !== undefined && this.find(ssId) === undefined)
      this.put(subscription, spec.resourceGroup, "virtualMachineScaleSets", scaleSet, {
        location: spec.location,
        ...(uniform !== undefined && { sku: { name: spec.size ?? "Standard_D2s_v3", capacity: 1 } }),
        properties: {
          orchestrationMode: uniform === undefined ? "Flexible" : "Uniform",
          ...(uniform !== undefined && {
            virtualMachineProfile: {
              networkProfile: {
                networkInterfaceConfigurations: [
                  {
                    name: nicName,
                    properties: {
                      primary: true,
                      ipConfigurations: [
                        {
                          name: "ipconfig1",
                          properties: {
                            primary: true,
                            subnet: { id: spec.subnetId },
                            ...(spec.publicIp !== undefined && {
                              publicIPAddressConfiguration: {
                                name: `${uniform}-pip`,
                                properties: { idleTimeoutInMinutes: 4 },
                              },
                            }),
                          },
                        },
                      ],
                    },
                  },
                ],
              },
            },
          }),
        },
      });
    if (uniform !== undefined) {
      const instanceId = spec.name;
      return this.put(
        subscription,
        spec.resourceGroup,
        "vmssVirtualMachines",
        `${spec.scaleSet}/${instanceId}`,
        {
          location: spec.location,
          instanceId,
          sku: { name: spec.size ?? "Standard_D2s_v3", tier: "Standard" },
          ...(spec.zone !== undefined && { zones: [spec.zone] }),
          ...(spec.tags !== undefined && { tags: spec.tags }),
          properties: {
            ...props,
            ...(spec.sizeInSkuOnly === true && { hardwareProfile: {} }),
            osProfile: { computerName: `${uniform}${instanceId.padStart(6, "0")}` },
          },
        },
      );
    }
    return this.put(subscription, spec.resourceGroup, "virtualMachines", spec.name, {
      location: spec.location,
      ...(spec.zone !== undefined && { zones: [spec.zone] }),
      ...(spec.tags !== undefined && { tags: spec.tags }),
      properties: { ...props, ...(ssId !== undefined && { virtualMachineScaleSet: { id: ssId } }) },
    });
  }

  /**
   * A managed disk as the Disk RP answers it: `zones` for a zonal disk, `managedBy` (the VM's id)
   * and diskState Attached when attached, Unattached otherwise.
   */
  createDisk(subscription: string, spec: CreateDiskSpec): ArmResource {
    return this.put(subscription, spec.resourceGroup, "disks", spec.name, {
      location: spec.location,
      sku: { name: spec.sku ?? "StandardSSD_LRS", tier: "Standard" },
      ...(spec.zone !== undefined && { zones: [spec.zone] }),
      ...(spec.managedBy !== undefined && { managedBy: spec.managedBy }),
      ...(spec.tags !== undefined && { tags: spec.tags }),
      properties: {
        creationData: { createOption: "Empty" },
        diskSizeGB: spec.sizeGiB,
        diskSizeBytes: spec.sizeGiB * 1024 ** 3,
        diskState: spec.managedBy !== undefined ? "Attached" : "Unattached",
        timeCreated: new Date(this.now()).toISOString(),
        uniqueId: randomUUID(),
      },
    });
  }

  setPower(id: string, power: string): void {
    const vm = this.byId(id);
    const view = (vm.body["properties"] as Json)["instanceView"] as { statuses: Json[] };
    view.statuses = view.statuses.map((s) =>
      String(s["code"]).startsWith("PowerState/") ? { ...s, code: `PowerState/${power}` } : s,
    );
  }

  /**
   * A VM's (or scale-set VM's) provisioningState, as ARM reports it while an operation runs
   * ("Updating") or after one failed ("Failed"), with the instance view's status to match.
   */
  setProvisioningState(id: string, state: string): void {
    const props = this.byId(id).body["properties"] as Json;
    props["provisioningState"] = state;
    const view = props["instanceView"] as { statuses: Json[] } | undefined;
    if (view !== undefined)
      view.statuses = view.statuses.map((s) =>
        String(s["code"]).startsWith("ProvisioningState/")
          ? { ...s, code: `ProvisioningState/${state.toLowerCase()}` }
          : s,
      );
  }

  /**
   * Deletes a resource; a scale-set VM's NICs and public IPs go with it, as ARM deletes them with
   * the instance.
   */
  remove(id: string): void {
    this.resources.delete(lower(id));
    for (const r of [...this.resources.values()])
      if (
        (r.type === "vmssNetworkInterfaces" || r.type === "vmssPublicIPAddresses") &&
        lower(r.id).startsWith(`${lower(id)}/networkinterfaces/`)
      )
        this.resources.delete(lower(r.id));
  }

  byId(id: string): ArmResource {
    const r = this.resources.get(lower(id));
    if (r === undefined) throw new Error(`no resource ${id}`);
    return r;
  }

  find(id: string): ArmResource | undefined {
    return this.resources.get(lower(id));
  }

  list(subscription: string, type?: ArmType): ArmResource[] {
    const prefix = lower(`/subscriptions/${subscription}/`);
    return [...this.resources.values()].filter(
      (r) => lower(r.id).startsWith(prefix) && (type === undefined || r.type === type),
    );
  }

  /** The next `n` accepted writes end Failed (provisioningState Failed, the operation Failed). */
  failNextWrites(n: number): void {
    this.nextFailures = n;
  }

  /** The next `n` requests for a listing's next page (a nextLink) fail: 500 InternalServerError. */
  failNextPages(n: number): void {
    this.pageFailures = n;
  }

  /** The next `n` PUTs of `id` meet another writer's change first (412 with a fresh ETag). */
  raceNextPuts(id: string, n: number): void {
    this.raceNext.set(lower(id), n);
  }

  // ---- the vendor's parts --------------------------------------------------------------------

  protected override accountOf(token: string): string | undefined {
    const t = this.entra.tokens.get(token);
    return t === undefined || t.expiresAtMs <= this.now() ? undefined : t.subscription;
  }

  /**
   * The kit asks for the headers before the handler runs; ARM's count the call itself. So the
   * answer's headers are this object, which the handler's count() fills in after taking its token.
   */
  protected override rateHeaders(account: string | undefined, nowMs: number): Record<string, string> {
    if (account === undefined) return {};
    const headers: Record<string, string> = {};
    this.remainingHeaders.set(account, headers);
    this.fillHeaders(headers, this.bucketsOf(account, nowMs));
    return headers;
  }

  private fillHeaders(headers: Record<string, string>, b: Record<ArmBudget, { tokens: number }>): void {
    for (const k of Object.keys(ARM_BUCKETS) as ArmBudget[])
      headers[`x-ms-ratelimit-remaining-subscription-${k}`] = String(Math.max(0, Math.floor(b[k].tokens)));
  }

  /** The subscription's buckets, refilled to now. */
  private bucketsOf(account: string, nowMs: number): Record<ArmBudget, { tokens: number; atMs: number }> {
    const sizes = this.armBuckets;
    const b = this.buckets.get(account) ?? {
      reads: { tokens: sizes.reads.size, atMs: nowMs },
      writes: { tokens: sizes.writes.size, atMs: nowMs },
      deletes: { tokens: sizes.deletes.size, atMs: nowMs },
    };
    for (const k of Object.keys(sizes) as ArmBudget[]) {
      const { size, perSecond } = sizes[k];
      b[k].tokens = Math.min(size, b[k].tokens + (Math.max(0, nowMs - b[k].atMs) * perSecond) / 1000);
      b[k].atMs = nowMs;
    }
    this.buckets.set(account, b);
    return b;
  }

  protected override recordMutation(m: { operation: string; path: string; body: unknown }): void {
    this.mutations.push({ operation: m.operation, path: m.path, body: m.body });
  }

  protected routes(): readonly VendorRoute<ArmListing>[] {
    const sub = "/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/";
    const ex = "/subscriptions/s/resourceGroups/rg/providers/";
    const routes: VendorRoute<ArmListing>[] = [];
    const one = (type: ArmType, rp: string, methods: readonly ("GET" | "PUT" | "DELETE")[]) => {
      for (const method of methods)
        routes.push({
          method,
          pattern: new RegExp(`^${sub}${rp}/([^/]+)$`, "i"),
          op: `${type}.${method === "GET" ? "get" : method === "PUT" ? "createOrUpdate" : "delete"}`,
          example: `${ex}${rp}/x`,
          handle: (c) =>
            method === "GET"
              ? this.getOne(c, type)
              : method === "PUT"
                ? this.putOne(c, type)
                : this.deleteOne(c, type),
        });
      routes.push({
        method: "GET",
        pattern: new RegExp(`^${sub}${rp}$`, "i"),
        op: `${type}.list`,
        example: `${ex}${rp}`,
        handle: (c) => this.listOf(c, type),
      });
    };
    one("virtualMachines", "Microsoft.Compute/virtualMachines", ["GET"]);
    one("virtualMachineScaleSets", "Microsoft.Compute/virtualMachineScaleSets", ["GET"]);
    one("disks", "Microsoft.Compute/disks", ["GET"]);
    // A NIC's PUT is how a VM joins a NIC-based backend pool (its IP configuration names the pool).
    one("networkInterfaces", "Microsoft.Network/networkInterfaces", ["GET", "PUT"]);
    for (const t of WRITABLE) one(t, PROVIDER[t], ["GET", "PUT", "DELETE"]);
    routes.push(
      {
        method: "GET",
        pattern: new RegExp(
          `^${sub}Microsoft\\.Compute/virtualMachineScaleSets/([^/]+)/virtualMachines/([^/]+)$`,
          "i",
        ),
        op: "vmssVirtualMachines.get",
        example: `${ex}Microsoft.Compute/virtualMachineScaleSets/ss/virtualMachines/0`,
        handle: (c) =>
          this.getOne(
            { ...c, params: [c.params[0] ?? "", c.params[1] ?? "", `${c.params[2]}/${c.params[3]}`] },
            "vmssVirtualMachines",
          ),
      },
      {
        method: "GET",
        pattern: new RegExp(
          `^${sub}Microsoft\\.Compute/virtualMachineScaleSets/([^/]+)/virtualMachines$`,
          "i",
        ),
        op: "vmssVirtualMachines.list",
        example: `${ex}Microsoft.Compute/virtualMachineScaleSets/ss/virtualMachines`,
        handle: (c) => this.listOf(c, "vmssVirtualMachines", c.params[2]),
      },
      {
        method: "GET",
        pattern: /^\/subscriptions\/([^/]+)\/providers\/([^/]+)\/locations\/([^/]+)\/operations\/([^/]+)$/i,
        op: "operations.get",
        example: "/subscriptions/s/providers/Microsoft.Network/locations/l/operations/o",
        handle: (c) => this.operation(c),
      },
    );
    // A uniform scale set's VMs' NICs and public IPs, through the scale set's own API, matched in
    // any case; the swagger's (and the SDK's) NIC paths say `microsoft.Compute`, its public-IP
    // paths `Microsoft.Compute` (`rp`, for the example the spec must hold).
    const vmss = (op: string, rp: string, tail: string, handle: (c: VendorCall) => unknown) =>
      routes.push({
        method: "GET",
        pattern: new RegExp(
          `^${sub}Microsoft\\.Compute/virtualMachineScaleSets/([^/]+)${tail.replace(/\{\w+\}/g, "([^/]+)")}$`,
          "i",
        ),
        op,
        example: `${ex}${rp}/virtualMachineScaleSets/ss${tail.replace(/\{(\w+)\}/g, "$1")}`,
        handle: handle as VendorRoute<ArmListing>["handle"],
      });
    const names = (c: VendorCall, n: number) => c.params.slice(2, 2 + n).join("/");
    const named = (c: VendorCall, n: number): VendorCall => ({
      ...c,
      params: [c.params[0] ?? "", c.params[1] ?? "", names(c, n)],
    });
    const nic = "/virtualMachines/{vm}/networkInterfaces/{nic}";
    vmss("vmssNetworkInterfaces.list", "microsoft.Compute", "/networkInterfaces", (c) =>
      this.listUnder(c, "vmssNetworkInterfaces", "virtualMachineScaleSets", names(c, 1)),
    );
    vmss(
      "vmssNetworkInterfaces.listByVm",
      "microsoft.Compute",
      "/virtualMachines/{vm}/networkInterfaces",
      (c) => this.listUnder(c, "vmssNetworkInterfaces", "vmssVirtualMachines", names(c, 2)),
    );
    vmss("vmssNetworkInterfaces.get", "microsoft.Compute", nic, (c) =>
      this.getOne(named(c, 3), "vmssNetworkInterfaces"),
    );
    vmss("vmssPublicIPAddresses.list", "Microsoft.Compute", "/publicipaddresses", (c) =>
      this.listUnder(c, "vmssPublicIPAddresses", "virtualMachineScaleSets", names(c, 1)),
    );
    vmss(
      "vmssPublicIPAddresses.listByIpConfiguration",
      "Microsoft.Compute",
      `${nic}/ipconfigurations/{ipc}/publicipaddresses`,
      (c) => this.listUnder(c, "vmssPublicIPAddresses", "vmssNetworkInterfaces", names(c, 3), names(c, 4)),
    );
    vmss(
      "vmssPublicIPAddresses.get",
      "Microsoft.Compute",
      `${nic}/ipconfigurations/{ipc}/publicipaddresses/{pip}`,
      (c) => this.getOne(named(c, 5), "vmssPublicIPAddresses"),
    );
    return routes;
  }

  protected page(listing: ArmListing, c: VendorCall, faults: ListFaults): unknown {
    const after = Number(c.query.get("$skiptoken") ?? "0");
    if (!Number.isInteger(after) || after < 0)
      throw new FakeError(400, "InvalidSkipToken", "The skip token is not valid.");
    if (c.query.has("$skiptoken") && this.pageFailures > 0) {
      this.pageFailures--;
      throw new FakeError(500, "InternalServerError", "Encountered internal server error (injected).");
    }
    const items = faults.empty(listing.list.filter((i) => Number(i["__seq"]) > after));
    const page = items.slice(0, this.pageSize);
    const last = page.at(-1);
    const more = items.length > page.length && last !== undefined;
    // ARM's nextLink keeps the request's query ($expand, $filter): only the skip token changes.
    const next = new URL(`${this.url}${c.path}`);
    for (const [k, v] of c.query) if (k !== "$skiptoken") next.searchParams.set(k, v);
    if (more) next.searchParams.set("$skiptoken", String(last["__seq"]));
    return {
      value: faults.drop(page).map(({ __seq: _s, ...rest }) => rest),
      ...(more && { nextLink: next.toString() }),
    };
  }

  // ---- handlers ------------------------------------------------------------------------------

  private scope(c: VendorCall): { sub: string; rg: string } {
    const sub = c.params[0] ?? "";
    const rg = c.params[1] ?? "";
    checkApiVersion(c);
    if (lower(sub) !== lower(c.account))
      throw new FakeError(
        403,
        "AuthorizationFailed",
        `The client does not have authorization to perform this action over scope '/subscriptions/${sub}'.`,
      );
    if (!this.groups.has(lower(`${sub}/${rg}`)))
      throw new FakeError(404, "ResourceGroupNotFound", `Resource group '${rg}' could not be found.`);
    return { sub, rg };
  }

  /** Takes a token of the subscription's bucket for the call; with `armLimits`, none left is a 429. */
  private count(account: string, nowMs: number, kind: ArmBudget): void {
    const b = this.bucketsOf(account, nowMs)[kind];
    if (b.tokens < 1 && this.armLimits) {
      const seconds = Math.ceil((1 - b.tokens) / this.armBuckets[kind].perSecond);
      throw new FakeError(
        429,
        "TooManyRequests",
        `The request is being throttled as the limit has been reached for operation type - ${kind}.`,
        { headers: { "retry-after": String(seconds) } },
      );
    }
    b.tokens = Math.max(0, b.tokens - 1);
    const headers = this.remainingHeaders.get(account);
    if (headers !== undefined) this.fillHeaders(headers, this.bucketsOf(account, nowMs));
  }

  /** The resource as ARM shows it now (a finished write's state settled). */
  private settle(res: ArmResource, nowMs: number): ArmResource | undefined {
    if (res.readyAtMs !== undefined && nowMs >= res.readyAtMs) {
      res.readyAtMs = undefined;
      if (res.deleting) {
        this.resources.delete(lower(res.id));
        this.unlink(res);
        return undefined;
      }
      (res.body["properties"] as Json)["provisioningState"] = res.failWrite ? "Failed" : "Succeeded";
    }
    return res;
  }

  private getOne(c: VendorCall, type: ArmType) {
    const { sub, rg } = this.scope(c);
    this.count(c.account, c.nowMs, "reads");
    const name = c.params[2] ?? "";
    const found = this.resources.get(lower(this.resourceId(sub, rg, type, name)));
    const res = found === undefined ? undefined : this.settle(found, c.nowMs);
    if (res === undefined) throw notFound(type, name, rg);
    return { body: this.view(res, c.query.get("$expand") === "instanceView") };
  }

  /**
   * A scale set's NICs or public IPs (`parent` its name), or those of one of its VMs
   * (`<scaleSet>/<n>`) or NICs (`<scaleSet>/<n>/<nic>`, `within` one IP configuration); 404 when
   * the parent is not.
   */
  private listUnder(c: VendorCall, type: ArmType, parentType: ArmType, parent: string, within = parent) {
    const { sub, rg } = this.scope(c);
    const found = this.resources.get(lower(this.resourceId(sub, rg, parentType, parent)));
    if (found === undefined || this.settle(found, c.nowMs) === undefined) {
      this.count(c.account, c.nowMs, "reads");
      throw notFound(parentType, parent, rg);
    }
    return this.listOf(c, type, within);
  }

  /** A type's resources in the group; `within` a parent's name: only those under it. */
  private listOf(c: VendorCall, type: ArmType, within?: string) {
    const { sub, rg } = this.scope(c);
    this.count(c.account, c.nowMs, "reads");
    const prefix = lower(`/subscriptions/${sub}/resourceGroups/${rg}/`);
    // Only this page's items and one more (`page` tells from it whether there is a next page) are
    // viewed (cloned): a listing of N items in pages of P then costs N, not N²/P, clones.
    const after = Number(c.query.get("$skiptoken") ?? "0");
    const list: Json[] = [];
    for (const r of [...this.resources.values()]) {
      if (list.length > this.pageSize) break;
      if (r.type !== type || r.seq <= after || !lower(r.id).startsWith(prefix)) continue;
      if (within !== undefined && !lower(r.name).startsWith(`${lower(within)}/`)) continue;
      const res = this.settle(r, c.nowMs);
      if (res !== undefined)
        list.push({ ...this.view(res, c.query.get("$expand") === "instanceView"), __seq: res.seq });
    }
    return { list };
  }

  private putOne(c: VendorCall, type: ArmType) {
    const { sub, rg } = this.scope(c);
    this.count(c.account, c.nowMs, "writes");
    const name = c.params[2] ?? "";
    const id = this.resourceId(sub, rg, type, name);
    const key = lower(id);
    const prior0 = this.resources.get(key);
    const prior = prior0 === undefined ? undefined : this.settle(prior0, c.nowMs);
    const race = this.raceNext.get(key) ?? 0;
    if (race > 0 && prior !== undefined) {
      this.raceNext.set(key, race - 1);
      prior.etag = `W/"${randomUUID()}"`;
    }
    const ifMatch = c.headers["if-match"];
    if (typeof ifMatch === "string" && ifMatch !== "*" && (prior === undefined || prior.etag !== ifMatch))
      throw new FakeError(
        412,
        "PreconditionFailed",
        `The condition specified using HTTP conditional header(s) is not met for resource '${name}'.`,
      );
    if (prior?.readyAtMs !== undefined)
      throw new FakeError(
        409,
        "AnotherOperationInProgress",
        `Another operation on this or dependent resource is in progress. To retry later, please wait for the operation on '${name}' to end.`,
        { headers: { "retry-after": "1" } },
      );
    const body = structuredClone(c.body);
    this.validate(sub, type, body);
    // Read-only: the VM a NIC is attached to stays ARM's, whatever the body says.
    if (type === "networkInterfaces" && prior !== undefined) {
      const vm = (prior.body["properties"] as Json)["virtualMachine"];
      const props = { ...((body["properties"] as Json | undefined) ?? {}) };
      if (vm === undefined) delete props["virtualMachine"];
      else props["virtualMachine"] = vm;
      body["properties"] = props;
    }
    const res: ArmResource = prior ?? {
      id,
      type,
      resourceGroup: rg,
      name,
      seq: ++this.seq,
      etag: "",
      body: {},
    };
    if (prior !== undefined) this.unlink(prior);
    res.etag = `W/"${randomUUID()}"`;
    const failing = this.nextFailures > 0;
    if (failing) this.nextFailures--;
    res.failWrite = failing;
    const pending = this.asyncMs > 0 || failing;
    res.body = this.complete(res, body, pending ? "Updating" : "Succeeded");
    if (pending) res.readyAtMs = c.nowMs + this.asyncMs;
    this.resources.set(key, res);
    this.link(res);
    return {
      status: prior === undefined ? 201 : 200,
      body: this.view(res, false),
      headers: this.asyncHeader(sub, c, key, "put", String(body["location"] ?? "eastus")),
    };
  }

  private deleteOne(c: VendorCall, type: ArmType) {
    const { sub, rg } = this.scope(c);
    this.count(c.account, c.nowMs, "deletes");
    const name = c.params[2] ?? "";
    const key = lower(this.resourceId(sub, rg, type, name));
    const found = this.resources.get(key);
    const res = found === undefined ? undefined : this.settle(found, c.nowMs);
    if (res === undefined) return { status: 204 };
    if (type === "publicIPAddresses") {
      const ipc = (res.body["properties"] as Json)["ipConfiguration"] as Json | undefined;
      if (ipc !== undefined)
        throw new FakeError(
          400,
          "PublicIPAddressInUse",
          `Public IP address ${res.id} can not be deleted since it is still allocated to resource ${String(ipc["id"])}.`,
        );
    }
    if (res.deleting === true)
      return { status: 202, headers: this.asyncHeader(sub, c, key, "delete", String(res.body["location"])) };
    if (this.asyncMs > 0) {
      res.deleting = true;
      res.readyAtMs = c.nowMs + this.asyncMs;
      (res.body["properties"] as Json)["provisioningState"] = "Deleting";
      return { status: 202, headers: this.asyncHeader(sub, c, key, "delete", String(res.body["location"])) };
    }
    // Microsoft.Network answers every accepted delete 202 with an operation to poll.
    this.resources.delete(key);
    this.unlink(res);
    return { status: 202, headers: this.asyncHeader(sub, c, key, "delete", String(res.body["location"])) };
  }

  private asyncHeader(sub: string, c: VendorCall, key: string, kind: "put" | "delete", location: string) {
    const id = randomUUID();
    this.ops.set(id, { id, resourceKey: key, startMs: c.nowMs, kind });
    const url = `${this.url}/subscriptions/${sub}/providers/Microsoft.Network/locations/${location}/operations/${id}?api-version=${c.query.get("api-version") ?? NETWORK_API_VERSION}`;
    return { "azure-asyncoperation": url, "retry-after": "1" };
  }

  private operation(c: VendorCall) {
    checkApiVersion(c);
    this.count(c.account, c.nowMs, "reads");
    const op = this.ops.get(c.params[3] ?? "");
    if (op === undefined || lower(c.params[0] ?? "") !== lower(c.account))
      throw new FakeError(404, "OperationNotFound", "The operation was not found.");
    const found = this.resources.get(op.resourceKey);
    const res = found === undefined ? undefined : this.settle(found, c.nowMs);
    const running = res?.readyAtMs !== undefined;
    const failed = res?.failWrite === true && !running && op.kind === "put";
    const status = running ? "InProgress" : failed ? "Failed" : "Succeeded";
    return {
      body: {
        name: op.id,
        status,
        startTime: new Date(op.startMs).toISOString(),
        ...(failed && {
          error: { code: "InternalServerError", message: "The operation failed in the cloud (injected)." },
        }),
      },
    };
  }

  // ---- rules between resources ---------------------------------------------------------------

  private validate(sub: string, type: ArmType, body: Json): void {
    const props = (body["properties"] as Json | undefined) ?? {};
    // ARM's tag limits ("Use tags to organize your Azure resources", Limitations).
    const tags = Object.entries((body["tags"] as Record<string, string> | undefined) ?? {});
    const badName = tags.find(([k]) => /[<>%&\\?/]/.test(k) || k.length > 512);
    if (badName !== undefined)
      throw new FakeError(
        400,
        "InvalidTagNameCharacters",
        `The tag names '${badName[0]}' have reserved characters '<,>,%,&,\\,?,/' or control characters.`,
      );
    if (tags.some(([, v]) => v.length > 256))
      throw new FakeError(400, "InvalidTagValueLength", "Tag values can have a maximum of 256 characters.");
    if (tags.length > 50)
      throw new FakeError(400, "BadRequest", `A resource can have at most 50 tags, not ${tags.length}.`);
    if (type === "networkInterfaces")
      for (const ipc of (props["ipConfigurations"] as Json[] | undefined) ?? [])
        for (const ref of (((ipc["properties"] as Json | undefined)?.["loadBalancerBackendAddressPools"] as
          | Json[]
          | undefined) ?? []) as Json[]) {
          const id = String(ref["id"] ?? "");
          if (this.poolOf(id) === undefined)
            throw new FakeError(
              400,
              "InvalidResourceReference",
              `Resource ${id} referenced by resource ${String(ipc["name"])} was not found.`,
            );
        }
    if (type === "loadBalancers") {
      for (const f of (props["frontendIPConfigurations"] as Json[] | undefined) ?? []) {
        const p = (f["properties"] as Json | undefined) ?? {};
        const pip = (p["publicIPAddress"] as Json | undefined)?.["id"];
        if (typeof pip === "string") {
          const r = this.resources.get(lower(pip));
          if (r === undefined || !lower(pip).startsWith(lower(`/subscriptions/${sub}/`)))
            throw new FakeError(
              400,
              "InvalidResourceReference",
              `Resource ${pip} referenced by resource ${String(f["name"])} was not found.`,
            );
          const ipc = (r.body["properties"] as Json)["ipConfiguration"] as Json | undefined;
          if (
            ipc !== undefined &&
            !lower(String(ipc["id"])).includes(lower(`/frontendIPConfigurations/${String(f["name"])}`))
          )
            throw new FakeError(
              400,
              "PublicIPAddressInUse",
              `Public IP address ${pip} is already in use by ${String(ipc["id"])}.`,
            );
        }
      }
    }
  }

  /** The ids of the NIC IP configurations that name a pool. */
  private poolMembers(poolId: string): string[] {
    const out: string[] = [];
    for (const r of this.resources.values()) {
      if (r.type !== "networkInterfaces") continue;
      for (const ipc of ((r.body["properties"] as Json)["ipConfigurations"] as Json[] | undefined) ?? []) {
        const refs = ((ipc["properties"] as Json | undefined)?.["loadBalancerBackendAddressPools"] ??
          []) as Json[];
        if (refs.some((x) => lower(String(x["id"])) === lower(poolId))) out.push(String(ipc["id"]));
      }
    }
    return out;
  }

  /** The backend pool of a load balancer by its id, if both exist. */
  private poolOf(id: string): Json | undefined {
    const m = /^(.*)\/backendAddressPools\/([^/]+)$/i.exec(id);
    const lb = m === null ? undefined : this.resources.get(lower(m[1] ?? ""));
    if (lb === undefined || lb.type !== "loadBalancers") return undefined;
    const pools = ((lb.body["properties"] as Json)["backendAddressPools"] as Json[] | undefined) ?? [];
    return pools.find((p) => lower(String(p["name"])) === lower(m?.[2] ?? ""));
  }

  /** Back-references ARM keeps: a public IP's ipConfiguration names the frontend using it. */
  private link(res: ArmResource): void {
    if (res.type !== "loadBalancers") return;
    for (const f of ((res.body["properties"] as Json)["frontendIPConfigurations"] as Json[] | undefined) ??
      []) {
      const pip = ((f["properties"] as Json | undefined)?.["publicIPAddress"] as Json | undefined)?.["id"];
      const r = typeof pip === "string" ? this.resources.get(lower(pip)) : undefined;
      if (r !== undefined) (r.body["properties"] as Json)["ipConfiguration"] = { id: String(f["id"]) };
    }
  }

  private unlink(res: ArmResource): void {
    if (res.type !== "loadBalancers") return;
    for (const r of this.resources.values()) {
      if (r.type !== "publicIPAddresses") continue;
      const ipc = (r.body["properties"] as Json)["ipConfiguration"] as Json | undefined;
      if (ipc !== undefined && lower(String(ipc["id"])).startsWith(`${lower(res.id)}/`))
        delete (r.body["properties"] as Json)["ipConfiguration"];
    }
  }

  /** The stored body: ids for the resource and its child resources, ARM's read-only fields. */
  private complete(res: ArmResource, body: Json, state: string): Json {
    const props: Json = { ...((body["properties"] as Json | undefined) ?? {}) };
    const out: Json = {
      ...body,
      id: res.id,
      name: res.name.split("/").at(-1) as string,
      type: PROVIDER[res.type],
      location: body["location"] ?? "eastus",
      properties: props,
    };
    if (!COMPUTE.has(res.type)) props["provisioningState"] = state;
    else props["provisioningState"] ??= "Succeeded";
    if (res.type === "loadBalancers")
      for (const child of [
        "frontendIPConfigurations",
        "backendAddressPools",
        "loadBalancingRules",
        "probes",
        "inboundNatRules",
        "outboundRules",
      ]) {
        const list = props[child] as Json[] | undefined;
        if (list === undefined) continue;
        props[child] = list.map((item) => {
          const p: Json = { ...((item["properties"] as Json | undefined) ?? {}), provisioningState: state };
          if (
            child === "frontendIPConfigurations" &&
            p["subnet"] !== undefined &&
            p["privateIPAddress"] === undefined
          )
            p["privateIPAddress"] = this.freeInternalIp();
          return { ...item, id: `${res.id}/${child}/${String(item["name"])}`, properties: p };
        });
      }
    if (res.type === "networkSecurityGroups" || res.type === "routeTables") {
      const child = res.type === "routeTables" ? "routes" : "securityRules";
      const list = (props[child] as Json[] | undefined) ?? [];
      props[child] = list.map((item) => ({
        ...item,
        id: `${res.id}/${child}/${String(item["name"])}`,
        properties: { ...((item["properties"] as Json | undefined) ?? {}), provisioningState: state },
      }));
    }
    if (res.type === "publicIPAddresses" && props["ipAddress"] === undefined)
      props["ipAddress"] = this.freePublicIp();
    if (res.type === "networkInterfaces" || res.type === "vmssNetworkInterfaces")
      props["ipConfigurations"] = ((props["ipConfigurations"] as Json[] | undefined) ?? []).map((item) => ({
        ...item,
        id: `${res.id}/ipConfigurations/${String(item["name"])}`,
      }));
    return out;
  }

  private ipSeq = 0;
  private freePublicIp(): string {
    this.ipSeq++;
    return `20.${Math.floor(this.ipSeq / 250) % 250}.${this.ipSeq % 250}.${10 + (this.seq % 200)}`;
  }
  private freeInternalIp(): string {
    this.ipSeq++;
    return `10.240.${Math.floor(this.ipSeq / 250) % 250}.${(this.ipSeq % 250) + 4}`;
  }

  /** What GET answers: the stored body with its ETag, instance view only when asked for. */
  private view(res: ArmResource, instanceView: boolean): Json {
    const body = structuredClone(res.body);
    const props = body["properties"] as Json;
    if (COMPUTE.has(res.type)) {
      if (!instanceView) delete props["instanceView"];
      return body;
    }
    if (res.type !== "virtualNetworks") body["etag"] = res.etag;
    // A NIC-based pool shows the NIC IP configurations that name it (read-only backendIPConfigurations).
    if (res.type === "loadBalancers")
      for (const pool of (props["backendAddressPools"] as Json[] | undefined) ?? []) {
        const members = this.poolMembers(String(pool["id"]));
        const pp = { ...((pool["properties"] as Json | undefined) ?? {}) };
        if (members.length > 0) pp["backendIPConfigurations"] = members.map((id) => ({ id }));
        else delete pp["backendIPConfigurations"];
        pool["properties"] = pp;
      }
    return body;
  }
}
