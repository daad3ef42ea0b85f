import type { Logger } from "pino";
import type { Clock } from "../util/clock.js";

/** Node address as Kubernetes has it in status.addresses. */
export interface NodeAddress {
  readonly type: "Hostname" | "InternalIP" | "ExternalIP" | "InternalDNS" | "ExternalDNS";
  readonly address: string;
}

export type InstanceState = "pending" | "running" | "stopping" | "stopped" | "terminated" | "unknown";

/** What the cloud says about one instance (InstanceMetadata upstream, plus scope facts). */
export interface InstanceMetadata {
  /** `<provider>://<instance id>`, the node's spec.providerID. */
  readonly providerID: string;
  readonly instanceID: string;
  readonly name: string;
  readonly instanceType: string;
  readonly region: string;
  readonly zone: string;
  readonly addresses: readonly NodeAddress[];
  readonly state: InstanceState;
  /** VPC / network the instance is attached to, where the cloud has one. */
  readonly network?: string;
  /** Vendor tags/labels, used for ownership and scope checks. */
  readonly tags: Readonly<Record<string, string>>;
  readonly additionalLabels?: Readonly<Record<string, string>>;
}

export interface InstanceListPage {
  readonly instances: readonly InstanceMetadata[];
  /** Absent on the last page. */
  readonly nextPageToken?: string;
}

/** Required capability. Lookups throw InstanceNotFoundError only on a direct, authoritative "not found". */
export interface Instances {
  getByProviderID(providerID: string, signal?: AbortSignal): Promise<InstanceMetadata>;
  getByName(name: string, signal?: AbortSignal): Promise<InstanceMetadata>;
  /** One page of the account's instances in the bound region; for batched refresh, never for deletion. */
  listPage(pageToken: string | undefined, signal?: AbortSignal): Promise<InstanceListPage>;
  /** The instance id if `providerID` belongs to this provider, else undefined. */
  parseProviderID(providerID: string): string | undefined;
}

export interface CloudProvider {
  /** The providerID scheme, e.g. "simulated", "linode", "aws". */
  readonly name: string;
  readonly instances: Instances;
  // loadBalancers and routes arrive with their issues; absent means unsupported.
}

/** What a provider gets from the hub: its account, a logger, a clock. Never global state. */
export interface ProviderContext {
  readonly account: AccountBinding;
  readonly logger: Logger;
  readonly clock: Clock;
  /** Every cloud call goes through this (rate limit, metrics). */
  readonly call: CloudCallWrapper;
}

/** Wraps one cloud API call: rate limiting, counting, timing. `op` is a short stable name. */
export type CloudCallWrapper = <T>(op: string, fn: (signal: AbortSignal) => Promise<T>) => Promise<T>;

/** An account from the hub config, credentials resolved. */
export interface AccountBinding {
  readonly name: string;
  readonly provider: string;
  readonly region: string;
  readonly network?: string;
  /** API endpoint override (tests, demo, private endpoints). */
  readonly endpoint?: string;
  /** The secret itself: never logged, never sent to an agent. */
  readonly credential: string;
  readonly requestTimeoutMs: number;
}

export interface ProviderFactory {
  readonly name: string;
  create(ctx: ProviderContext): CloudProvider;
}
