/**
 * Instances: virtual machines (and scale-set VMs) as cloud-provider-azure maps them
 * (azure_instances.go, azure_standard.go, azure_vmss.go): the providerID is `azure://` + the
 * VM's ARM id (resource group lower-cased), shutdown from the instance view's PowerState
 * (stopped, deallocated, deallocating), the size, the region, the zone `<region>-<n>` or the
 * fault domain where the VM has no zone, and the addresses from the primary NIC's primary IP
 * configuration and its public IP, in upstream's order (InternalIP, Hostname, ExternalIP).
 * Only a 404 on the VM's own resource is "not found"; names are case-insensitive, as Azure's.
 *
 * A uniform scale set's VMs have NICs of the scale set, read through its own API (upstream's
 * GetPrimaryInterface in azure_vmss.go): the group's NIC listing takes, besides the group's
 * standalone NICs, each uniform scale set's NICs (one paged listing per scale set); a single
 * lookup lists the one VM's NICs. A VM's own public IP in a scale set (the scale set's network
 * profile gives one to each VM) is the scale set's too: a page of its VMs takes one listing of
 * the scale set's public IPs when one of them has one, a single lookup gets it by its id (as
 * upstream's GetIPByNodeName does). A flexible scale set's VMs are standalone VMs with standalone
 * NICs: listed and read as any VM (its scale set has no VMs of its own to list).
 */

import type {
  VirtualMachine,
  VirtualMachineInstanceView,
  VirtualMachineScaleSetVM,
} from "@azure/arm-compute";
import type { NetworkInterface, NetworkInterfaceIPConfiguration, PublicIPAddress } from "@azure/arm-network";
import { InstanceNotFoundError, SuspectAnswerError } from "../../errors.js";
import type {
  InstanceListPage,
  InstanceMetadata,
  InstanceState,
  Instances,
  NodeAddress,
} from "../../provider.js";
import type { AzureApi } from "./api.js";
import { isNotFound } from "./errors.js";
import { parseVmId, providerIdOf, segmentAfter, type VmRef, vmId } from "./names.js";
import { RecentListings } from "./recent-listings.js";

type AnyVm = VirtualMachine | VirtualMachineScaleSetVM;
/** Where a listing is: the node resource group, the scale set (absent: its VMs), the page. */
interface PageAt {
  readonly g: number;
  readonly s?: number;
  readonly sets?: readonly string[];
  readonly link?: string;
}

const lower = (s: string | undefined) => (s ?? "").toLowerCase();

/** Every item of an SDK listing (all pages; a failed page fails the whole listing). */
async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** The first page of an SDK listing, with the continuation to the next. */
export async function firstPage<T>(
  pages: AsyncIterableIterator<T[]>,
  continuationOf: (page: unknown) => string | undefined,
): Promise<{ readonly items: T[]; readonly link?: string }> {
  const first = await pages.next();
  if (first.done === true) return { items: [] };
  const link = continuationOf(first.value);
  return { items: first.value, ...(link !== undefined && { link }) };
}

/**
 * What the instance view's PowerState says, in the contract's states. Shut down as upstream's
 * InstanceShutdownByProviderID (azure_instances_v1.go) counts it: PowerState stopped,
 * deallocated or deallocating, and only with provisioningState Succeeded. Anything else that
 * exists (PowerState/stopping, a deallocated VM being updated or failed) is "unknown": neither
 * shut down nor gone.
 */
export function powerState(
  view: VirtualMachineInstanceView | undefined,
  provisioning?: string,
): InstanceState {
  const code = view?.statuses
    ?.find((s) => s.code?.toLowerCase().startsWith("powerstate/"))
    ?.code?.toLowerCase();
  switch (code?.slice("powerstate/".length)) {
    case "running":
      return "running";
    case "starting":
      return "pending";
    case "stopping":
      return "unknown";
    case "stopped":
    case "deallocated":
    case "deallocating":
      return provisioning?.toLowerCase() === "succeeded" ? "stopped" : "unknown";
    default:
      return provisioning?.toLowerCase() === "creating" ? "pending" : "unknown";
  }
}

/** The primary NIC's primary IP configuration (upstream getPrimaryIPConfig). */
export function primaryIpConfig(
  nic: NetworkInterface | undefined,
): NetworkInterfaceIPConfiguration | undefined {
  const configs = nic?.ipConfigurations ?? [];
  return configs.length === 1 ? configs[0] : (configs.find((c) => c.primary === true) ?? configs[0]);
}

function primaryNicId(vm: AnyVm): string | undefined {
  const nics = vm.networkProfile?.networkInterfaces ?? [];
  return (nics.length === 1 ? nics[0] : (nics.find((n) => n.primary === true) ?? nics[0]))?.id;
}

export class AzureInstances implements Instances {
  private readonly nicListings: RecentListings<Map<string, NetworkInterface>>;
  private readonly scaleSetListings: RecentListings<string[]>;
  /** A uniform scale set's VMs' public IPs, by `<rg>/<scale set>`. */
  private readonly scaleSetPipListings: RecentListings<Map<string, PublicIPAddress>>;

  constructor(private readonly api: AzureApi) {
    this.nicListings = new RecentListings(() => api.now());
    this.scaleSetListings = new RecentListings(() => api.now());
    this.scaleSetPipListings = new RecentListings(() => api.now());
  }

  /** The resource groups the nodes' VMs are in. */
  get groups(): readonly string[] {
    return this.api.options.nodeResourceGroups ?? [this.api.options.resourceGroup];
  }

  parseProviderID(providerID: string): string | undefined {
    if (!providerID.startsWith("azure://")) return undefined;
    const ref = parseVmId(providerID.slice("azure://".length));
    if (ref === undefined || ref.subscription.toLowerCase() !== this.api.subscription.toLowerCase())
      return undefined;
    return vmId({ ...ref, subscription: this.api.subscription });
  }

  async getByProviderID(providerID: string, signal?: AbortSignal): Promise<InstanceMetadata> {
    const id = this.parseProviderID(providerID);
    if (id === undefined)
      throw new SuspectAnswerError(`not an Azure providerID of this subscription: ${providerID}`);
    const ref = parseVmId(id) as VmRef;
    const vm = await this.getVm(ref, signal);
    if (vm === undefined) throw new InstanceNotFoundError(providerID);
    return this.describe(ref, vm, signal);
  }

  /** The VM (with its instance view), or undefined on a 404 of its own resource. */
  async getVm(ref: VmRef, signal?: AbortSignal): Promise<AnyVm | undefined> {
    try {
      return ref.scaleSet === undefined
        ? await this.api.call(
            "virtualMachines.get",
            (c, o) =>
              c.compute.virtualMachines.get(ref.resourceGroup, ref.name, { ...o, expand: "instanceView" }),
            signal,
          )
        : await this.api.call(
            "virtualMachineScaleSetVMs.get",
            (c, o) =>
              c.compute.virtualMachineScaleSetVMs.get(
                ref.resourceGroup,
                ref.scaleSet as string,
                ref.instanceId as string,
                {
                  ...o,
                  expand: "instanceView",
                },
              ),
            signal,
          );
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * A VM of that name in each node resource group (one direct GET each), and the scale-set VMs
   * whose computer name it is (a scale-set node is named after its hostname): Azure's names are
   * case-insensitive.
   */
  async findByName(name: string, signal?: AbortSignal): Promise<readonly InstanceMetadata[]> {
    const out: InstanceMetadata[] = [];
    for (const rg of this.groups) {
      const ref: VmRef = { subscription: this.api.subscription, resourceGroup: rg.toLowerCase(), name };
      const vm = await this.getVm(ref, signal);
      if (vm !== undefined && this.inRegion(vm)) {
        // ARM answers a name in any case; the VM's own name is the one to report.
        const own: VmRef = { ...ref, name: vm.name ?? name };
        out.push(await this.describe(own, vm, signal));
      }
      for (const ss of await this.scaleSetsOf(rg, signal))
        for (let link: string | undefined, first = true; first || link !== undefined; first = false) {
          const page = await this.scaleSetVmPage(rg, ss, link, signal);
          link = page.link;
          for (const v of page.items)
            if (lower(v.osProfile?.computerName) === lower(name) && this.inRegion(v))
              out.push(await this.describe(this.scaleSetRef(rg, ss, v), v, signal));
        }
    }
    return out;
  }

  /**
   * One page of the node resource groups' VMs, then of each scale set's VMs, with their instance
   * views (power state) and, for the page, the group's NICs and public IPs (addresses).
   */
  async listPage(pageToken: string | undefined, signal?: AbortSignal): Promise<InstanceListPage> {
    const at: PageAt =
      pageToken === undefined
        ? { g: 0 }
        : (JSON.parse(Buffer.from(pageToken, "base64url").toString()) as PageAt);
    const rg = this.groups[at.g];
    if (rg === undefined) return { instances: [] };
    const sets = at.sets ?? (at.s === undefined ? undefined : await this.scaleSetsOf(rg, signal));
    const ss = at.s === undefined ? undefined : sets?.[at.s];
    const page =
      at.s === undefined
        ? await this.vmPage(rg, at.link, signal)
        : ss === undefined
          ? { items: [] }
          : await this.scaleSetVmPage(rg, ss, at.link, signal);
    const mine = page.items.filter((vm) => this.inRegion(vm));
    // The group's listing holds its scale sets' NICs too: a scale set's pages reuse it.
    const nics =
      mine.length > 0
        ? await this.recentNicsOf(
            rg,
            (m) => mine.every((vm) => m.has(primaryNicId(vm)?.toLowerCase() ?? "")),
            signal,
          )
        : new Map();
    // The group's public IPs only when a VM of the page has one on its NIC (nodes rarely do).
    // A scale set's VMs' public IPs are the scale set's: one listing serves its pages.
    const pipIds = mine.flatMap((vm) => {
      const id = primaryIpConfig(nics.get(primaryNicId(vm)?.toLowerCase() ?? ""))?.publicIPAddress?.id;
      return id === undefined ? [] : [id.toLowerCase()];
    });
    const pips =
      pipIds.length === 0
        ? new Map<string, PublicIPAddress>()
        : ss === undefined
          ? await this.publicIpsOf(rg, signal)
          : await this.scaleSetPipListings.recent(
              `${rg}/${ss}`,
              (m) => pipIds.every((id) => m.has(id)),
              () => this.listScaleSetPips(rg, ss, signal),
            );
    const instances = mine.map((vm) => {
      const ref =
        ss === undefined
          ? { subscription: this.api.subscription, resourceGroup: rg.toLowerCase(), name: vm.name ?? "" }
          : this.scaleSetRef(rg, ss, vm);
      const nic = nics.get(primaryNicId(vm)?.toLowerCase() ?? "");
      const pip = pips.get(primaryIpConfig(nic)?.publicIPAddress?.id?.toLowerCase() ?? "");
      return this.metadata(ref, vm, nic, pip);
    });
    const next = await this.after(at, rg, page.link, sets, signal);
    return {
      instances,
      ...(next !== undefined && { nextPageToken: Buffer.from(JSON.stringify(next)).toString("base64url") }),
    };
  }

  /** Where the listing goes after a page: its next page, the group's next scale set, the next group. */
  private async after(
    at: PageAt,
    rg: string,
    link: string | undefined,
    sets: readonly string[] | undefined,
    signal?: AbortSignal,
  ): Promise<PageAt | undefined> {
    if (link !== undefined) return { ...at, link, ...(sets !== undefined && { sets: [...sets] }) };
    // The scale sets the page's NIC listing has just read, if it has.
    const all =
      sets ??
      (await this.scaleSetListings.recent(
        rg,
        () => true,
        () => this.scaleSetsOf(rg, signal),
      ));
    const s = at.s === undefined ? 0 : at.s + 1;
    if (s < all.length) return { g: at.g, s, sets: [...all] };
    return at.g + 1 < this.groups.length ? { g: at.g + 1 } : undefined;
  }

  private vmPage(rg: string, link: string | undefined, signal?: AbortSignal) {
    return this.api.call(
      "virtualMachines.list",
      async (c, o) =>
        firstPage<AnyVm>(
          c.compute.virtualMachines
            .list(rg, { ...o, expand: "instanceView" })
            .byPage(link === undefined ? {} : { continuationToken: link }),
          c.continuationOf,
        ),
      signal,
    );
  }

  private scaleSetVmPage(rg: string, ss: string, link: string | undefined, signal?: AbortSignal) {
    return this.api.call(
      "virtualMachineScaleSetVMs.list",
      async (c, o) =>
        firstPage<AnyVm>(
          c.compute.virtualMachineScaleSetVMs
            .list(rg, ss, { ...o, expand: "instanceView" })
            .byPage(link === undefined ? {} : { continuationToken: link }),
          c.continuationOf,
        ),
      signal,
    );
  }

  /**
   * The names of a resource group's scale sets whose VMs are their own (all pages): a flexible
   * scale set's VMs are standalone VMs, listed with the group's.
   */
  private scaleSetsOf(rg: string, signal?: AbortSignal): Promise<string[]> {
    return this.scaleSetListings.fresh(rg, () => this.listScaleSets(rg, signal));
  }

  private async listScaleSets(rg: string, signal?: AbortSignal): Promise<string[]> {
    const sets = await this.api.call(
      "virtualMachineScaleSets.list",
      (c, o) => collect(c.compute.virtualMachineScaleSets.list(rg, o)),
      signal,
    );
    return sets.filter((ss) => ss.orchestrationMode !== "Flexible").map((ss) => ss.name ?? "");
  }

  private scaleSetRef(rg: string, ss: string, vm: AnyVm): VmRef {
    const instanceId =
      (vm as VirtualMachineScaleSetVM).instanceId ?? segmentAfter(vm.id, "virtualMachines") ?? "";
    return {
      subscription: this.api.subscription,
      resourceGroup: rg.toLowerCase(),
      name: `${ss}_${instanceId}`,
      scaleSet: ss,
      instanceId,
    };
  }

  /**
   * The group's NICs from a recent listing (RecentListings: one listing in flight or
   * just done serves a wave of Services and every page of a refresh, instead of one listing of
   * thousands of NICs each), or a fresh one when that listing does not `cover` what the caller
   * needs (a node newer than it).
   */
  async recentNicsOf(
    rg: string,
    cover: (nics: ReadonlyMap<string, NetworkInterface>) => boolean,
    signal?: AbortSignal,
  ): Promise<Map<string, NetworkInterface>> {
    return this.nicListings.recent(rg, cover, () => this.listNics(rg, signal));
  }

  /** Every NIC of a resource group, by lower-cased id (all pages), listed now. */
  nicsOf(rg: string, signal?: AbortSignal): Promise<Map<string, NetworkInterface>> {
    return this.nicListings.fresh(rg, () => this.listNics(rg, signal));
  }

  /** The group's standalone NICs, then each uniform scale set's: one paged listing each. */
  private async listNics(rg: string, signal?: AbortSignal): Promise<Map<string, NetworkInterface>> {
    const list = await this.api.call(
      "networkInterfaces.list",
      (c, o) => collect(c.network.networkInterfaces.list(rg, o)),
      signal,
    );
    for (const ss of await this.scaleSetsOf(rg, signal))
      list.push(
        ...(await this.api.call(
          "networkInterfaces.listVirtualMachineScaleSetNetworkInterfaces",
          (c, o) =>
            collect(c.network.networkInterfaces.listVirtualMachineScaleSetNetworkInterfaces(rg, ss, o)),
          signal,
        )),
      );
    return new Map(list.map((n) => [n.id?.toLowerCase() ?? "", n]));
  }

  /** A uniform scale set's VMs' public IPs, by lower-cased id (all pages). */
  private async listScaleSetPips(
    rg: string,
    ss: string,
    signal?: AbortSignal,
  ): Promise<Map<string, PublicIPAddress>> {
    const list = await this.api.call(
      "publicIPAddresses.listVirtualMachineScaleSetPublicIPAddresses",
      (c, o) => collect(c.network.publicIPAddresses.listVirtualMachineScaleSetPublicIPAddresses(rg, ss, o)),
      signal,
    );
    return new Map(list.map((p) => [p.id?.toLowerCase() ?? "", p]));
  }

  /** Every public IP of a resource group, by lower-cased id (all pages). */
  async publicIpsOf(rg: string, signal?: AbortSignal): Promise<Map<string, PublicIPAddress>> {
    const list = await this.api.call(
      "publicIPAddresses.list",
      (c, o) => collect(c.network.publicIPAddresses.list(rg, o)),
      signal,
    );
    return new Map(list.map((p) => [p.id?.toLowerCase() ?? "", p]));
  }

  private inRegion(vm: AnyVm): boolean {
    return (vm.location ?? "").toLowerCase().replace(/\s/g, "") === this.api.region.toLowerCase();
  }

  /** The VM with the addresses of its primary NIC (and its public IP): two more reads. */
  private async describe(ref: VmRef, vm: AnyVm, signal?: AbortSignal): Promise<InstanceMetadata> {
    const nic = await this.primaryNic(ref, vm, signal);
    const pipId = primaryIpConfig(nic)?.publicIPAddress?.id;
    const pip = pipId === undefined ? undefined : await this.publicIp(pipId, signal);
    return this.metadata(ref, vm, nic, pip);
  }

  /** A public IP by its id: the group's own, or a scale-set VM's (through the scale set's API). */
  private publicIp(id: string, signal?: AbortSignal): Promise<PublicIPAddress | undefined> {
    const [rg, name] = [segmentAfter(id, "resourceGroups"), segmentAfter(id, "publicIPAddresses")];
    const ss = segmentAfter(id, "virtualMachineScaleSets");
    const [n, nic, ipc] = [
      segmentAfter(id, "virtualMachines"),
      segmentAfter(id, "networkInterfaces"),
      segmentAfter(id, "ipConfigurations"),
    ];
    if (rg === undefined || name === undefined) return Promise.resolve(undefined);
    if (ss === undefined)
      return this.api.call(
        "publicIPAddresses.get",
        (c, o) => c.network.publicIPAddresses.get(rg, name, o),
        signal,
      );
    if (n === undefined || nic === undefined || ipc === undefined) return Promise.resolve(undefined);
    return this.api.call(
      "publicIPAddresses.getVirtualMachineScaleSetPublicIPAddress",
      (c, o) =>
        c.network.publicIPAddresses.getVirtualMachineScaleSetPublicIPAddress(rg, ss, n, nic, ipc, name, o),
      signal,
    );
  }

  /**
   * A VM's primary NIC: a standalone one by its id, a uniform scale set's VM's from the listing
   * of that VM's NICs (the scale set's API; its NICs are in no group listing).
   */
  private async primaryNic(ref: VmRef, vm: AnyVm, signal?: AbortSignal) {
    const nicId = primaryNicId(vm);
    const nicRg = segmentAfter(nicId, "resourceGroups");
    const nicName = segmentAfter(nicId, "networkInterfaces");
    if (nicRg === undefined || nicName === undefined) return undefined;
    if (ref.scaleSet === undefined || ref.instanceId === undefined)
      return this.api.call(
        "networkInterfaces.get",
        (c, o) => c.network.networkInterfaces.get(nicRg, nicName, o),
        signal,
      );
    const { scaleSet, instanceId } = ref;
    const nics = await this.api.call(
      "networkInterfaces.listVirtualMachineScaleSetVMNetworkInterfaces",
      (c, o) =>
        collect(
          c.network.networkInterfaces.listVirtualMachineScaleSetVMNetworkInterfaces(
            nicRg,
            scaleSet,
            instanceId,
            o,
          ),
        ),
      signal,
    );
    return nics.find((n) => n.id?.toLowerCase() === nicId?.toLowerCase());
  }

  metadata(
    ref: VmRef,
    vm: AnyVm,
    nic: NetworkInterface | undefined,
    pip: PublicIPAddress | undefined,
  ): InstanceMetadata {
    const id = vmId(ref);
    const region = (vm.location ?? this.api.region).toLowerCase();
    const zone = vm.zones?.[0];
    const faultDomain = vm.instanceView?.platformFaultDomain ?? 0;
    const hostname = vm.osProfile?.computerName ?? ref.name;
    const ipc = primaryIpConfig(nic);
    const addresses: NodeAddress[] = [];
    if (ipc?.privateIPAddress !== undefined)
      addresses.push({ type: "InternalIP", address: ipc.privateIPAddress });
    addresses.push({ type: "Hostname", address: hostname.toLowerCase() });
    if (pip?.ipAddress !== undefined) addresses.push({ type: "ExternalIP", address: pip.ipAddress });
    const vnet = segmentAfter(ipc?.subnet?.id, "virtualNetworks");
    return {
      providerID: providerIdOf(id),
      instanceID: id,
      name: ref.scaleSet === undefined ? ref.name : hostname,
      // A uniform scale-set VM's type is its SKU name (upstream azure_vmss.go
      // GetInstanceTypeByNodeName); ARM may leave its hardwareProfile empty.
      instanceType:
        (ref.scaleSet !== undefined ? (vm as VirtualMachineScaleSetVM).sku?.name : undefined) ??
        vm.hardwareProfile?.vmSize ??
        "",
      region,
      zone: zone !== undefined ? `${region}-${zone}` : String(faultDomain),
      addresses,
      state: powerState(vm.instanceView, vm.provisioningState),
      ...(vnet !== undefined && { network: vnet }),
      tags: { ...(vm.tags ?? {}) },
    };
  }
}
