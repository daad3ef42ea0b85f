/**
 * The names cloud-provider-azure gives what it builds (pkg/provider/azure_loadbalancer.go,
 * azure_wrap.go, azure_routes.go), so what it made is found again, and the providerIDs it writes.
 */
export const PROVIDER_NAME = "azure";
export const AZURE_ANNOTATION_PREFIX = "service.beta.kubernetes.io/azure-";
export const AZURE_ANNOTATION_PREFIXES = [AZURE_ANNOTATION_PREFIX];

/** The suffix of a cluster's internal load balancer (upstream InternalLoadBalancerNameSuffix). */
export const INTERNAL_SUFFIX = "-internal";
/** Tags upstream puts on a Service's public IP (consts.ServiceTagKey, consts.ClusterNameKey). */
export const UPSTREAM_SERVICE_TAG = "k8s-azure-service";
export const UPSTREAM_CLUSTER_TAG = "k8s-azure-cluster-name";

/** Upstream's rule prefix and frontend name: "a" + the Service uid without dashes (GetDefaultLoadBalancerName). */
export function frontendName(serviceUid: string, subnet?: string): string {
  const base = `a${serviceUid.replace(/-/g, "")}`;
  return subnet === undefined ? base : `${base}-${subnet}`.slice(0, 80);
}

/** A load-balancing rule's (and its probe's) name: `<frontend>-<Protocol>-<port>` (getLoadBalancerRuleName). */
export function ruleName(frontend: string, protocol: string, port: number): string {
  return `${frontend}-${protocol}-${port}`;
}

/** An NSG rule's name: `<frontend>-<Protocol>-<port>-<source>` with `/` as `_` (getSecurityRuleName). */
export function securityRuleName(frontend: string, protocol: string, port: number, source: string): string {
  return `${frontend}-${protocol}-${port}-${source.replace(/\//g, "_").replace(/:/g, ".")}`;
}

/** The cluster's load balancer: `<cluster>` or `<cluster>-internal` (getAzureLoadBalancerName). */
export function loadBalancerName(clusterName: string, internal: boolean): string {
  return internal ? `${clusterName}${INTERNAL_SUFFIX}` : clusterName;
}

/** The Service's public IP: `<cluster>-a<uid>` (getPublicIPName). */
export function publicIpName(clusterName: string, serviceUid: string): string {
  return `${clusterName}-${frontendName(serviceUid)}`.slice(0, 80);
}

/** A name template's value: `{cluster}` replaced. */
export function fromTemplate(template: string, cluster: string): string {
  return template.replace(/\{cluster\}/g, cluster);
}

// ---- providerIDs ------------------------------------------------------------------------------

export interface VmRef {
  readonly subscription: string;
  /** Lower-cased, as upstream writes it (convertResourceGroupNameToLower). */
  readonly resourceGroup: string;
  readonly name: string;
  /** Scale-set VMs: the scale set and the instance id. */
  readonly scaleSet?: string;
  readonly instanceId?: string;
}

const VM_ID =
  /^\/subscriptions\/([^/]+)\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Compute\/virtualMachines\/([^/]+)$/i;
const VMSS_ID =
  /^\/subscriptions\/([^/]+)\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Compute\/virtualMachineScaleSets\/([^/]+)\/virtualMachines\/([^/]+)$/i;

/** A VM's (or scale-set VM's) ARM id as upstream's providerID carries it, or undefined. */
export function parseVmId(id: string): VmRef | undefined {
  const vm = VM_ID.exec(id);
  if (vm !== null)
    return {
      subscription: vm[1] as string,
      resourceGroup: (vm[2] as string).toLowerCase(),
      name: vm[3] as string,
    };
  const ss = VMSS_ID.exec(id);
  if (ss !== null)
    return {
      subscription: ss[1] as string,
      resourceGroup: (ss[2] as string).toLowerCase(),
      name: `${ss[3]}_${ss[4]}`,
      scaleSet: ss[3] as string,
      instanceId: ss[4] as string,
    };
  return undefined;
}

/** The instance id the hub keys a VM by: its ARM id with the resource group lower-cased. */
export function vmId(ref: VmRef): string {
  return ref.scaleSet === undefined
    ? `/subscriptions/${ref.subscription}/resourceGroups/${ref.resourceGroup}/providers/Microsoft.Compute/virtualMachines/${ref.name}`
    : `/subscriptions/${ref.subscription}/resourceGroups/${ref.resourceGroup}/providers/Microsoft.Compute/virtualMachineScaleSets/${ref.scaleSet}/virtualMachines/${ref.instanceId}`;
}

/** `azure://` + the ARM id: upstream's providerID (three slashes, the id starts with one). */
export function providerIdOf(instanceId: string): string {
  return `azure://${instanceId}`;
}

/** The last segment of an ARM id of the form `.../<type>/<name>`, for `type`. */
export function segmentAfter(id: string | undefined, type: string): string | undefined {
  if (id === undefined) return undefined;
  const parts = id.split("/");
  const i = parts.findIndex((p) => p.toLowerCase() === type.toLowerCase());
  return i < 0 ? undefined : parts[i + 1];
}
