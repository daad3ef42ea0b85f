/**
 * A Service's load balancer on AWS, as cloud-provider-aws chooses it: a classic ELB unless
 * `aws-load-balancer-type: nlb` (or the account's defaultLoadBalancerType says nlb for new
 * Services), `external` left to the AWS Load Balancer Controller. Names (`a` + the Service
 * uid) and tags (kubernetes.io/cluster/<cluster>: owned, kubernetes.io/service-name) are
 * upstream's, so a load balancer either made is adopted by the other.
 */
import { CloudError, ImplementedElsewhereError } from "../../errors.js";
import type {
  InProgress,
  LbIngress,
  LbOwner,
  LoadBalancerCapabilities,
  LoadBalancerSpec,
  LoadBalancerState,
  LoadBalancers,
  ProviderContext,
} from "../../provider.js";
import { AWS_ANNOTATIONS, AWS_LB_CAPABILITIES, parseAwsLbAnnotations } from "./annotations.js";
import type { AwsApi } from "./api.js";
import { ClassicElb } from "./classic.js";
import { awsLoadBalancerName, LbNetwork } from "./lb-network.js";
import { Nlb } from "./nlb.js";
import type { AwsOptions } from "./options.js";

type Found =
  | { readonly type: "classic"; readonly found: NonNullable<Awaited<ReturnType<ClassicElb["find"]>>> }
  | { readonly type: "nlb"; readonly found: NonNullable<Awaited<ReturnType<Nlb["find"]>>> };

export class AwsLoadBalancers implements LoadBalancers {
  readonly capabilities: LoadBalancerCapabilities = AWS_LB_CAPABILITIES;
  private readonly net: LbNetwork;
  private readonly classic: ClassicElb;
  private readonly nlb: Nlb;

  constructor(
    ctx: ProviderContext,
    api: AwsApi,
    private readonly options: AwsOptions,
  ) {
    this.net = new LbNetwork(ctx, api, options.dependencyRetryMs);
    this.classic = new ClassicElb(api, this.net);
    this.nlb = new Nlb(api, this.net);
  }

  /** The owner's load balancer of either kind, the default kind asked first. */
  private async find(owner: LbOwner, signal?: AbortSignal): Promise<Found | undefined> {
    const order: readonly ("classic" | "nlb")[] =
      this.options.defaultLoadBalancerType === "nlb" ? ["nlb", "classic"] : ["classic", "nlb"];
    for (const type of order) {
      if (type === "classic") {
        const found = await this.classic.find(owner, signal);
        if (found !== undefined) return { type, found };
      } else {
        const found = await this.nlb.find(owner, signal);
        if (found !== undefined) return { type, found };
      }
    }
    return undefined;
  }

  async get(owner: LbOwner, signal?: AbortSignal): Promise<LoadBalancerState | undefined> {
    const f = await this.find(owner, signal);
    if (f === undefined) return undefined;
    return f.type === "classic"
      ? this.classic.state(owner, f.found.lb)
      : this.nlb.state(owner, f.found.lb, signal);
  }

  async ensure(
    owner: LbOwner,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
  ): Promise<readonly LbIngress[] | InProgress> {
    const annotations = spec.annotations ?? {};
    const settings = parseAwsLbAnnotations(annotations, this.options.defaultLoadBalancerType);
    if (settings.type === "external")
      throw new ImplementedElsewhereError(
        `${AWS_ANNOTATIONS.type}: ${annotations[AWS_ANNOTATIONS.type]} is the AWS Load Balancer Controller's`,
      );
    // The account default applies to new Services: an existing load balancer keeps its kind.
    const existing = await this.find(owner, signal);
    const explicit = annotations[AWS_ANNOTATIONS.type] !== undefined;
    const type = existing !== undefined && !explicit ? existing.type : settings.type;
    if (existing !== undefined && existing.type !== type)
      throw new CloudError(
        `load balancer ${awsLoadBalancerName(owner.serviceUid)} is a ${existing.type === "nlb" ? "network" : "classic"} load balancer; AWS cannot change its type in place (recreate the Service)`,
      );
    if (type === "classic")
      return this.classic.ensure(
        owner,
        spec,
        { ...settings, type },
        signal,
        existing?.type === "classic" ? existing.found : null,
      );
    return this.nlb.ensure(
      owner,
      spec,
      { ...settings, type },
      signal,
      existing?.type === "nlb" ? existing.found : null,
    );
  }

  async updateBackends(
    owner: LbOwner,
    backends: readonly string[],
    signal?: AbortSignal,
  ): Promise<undefined | InProgress> {
    const f = await this.find(owner, signal);
    if (f === undefined)
      throw new CloudError(`load balancer ${awsLoadBalancerName(owner.serviceUid)} does not exist`);
    if (f.type === "classic") await this.classic.updateBackends(owner, f.found, backends, signal);
    else await this.nlb.updateBackends(owner, f.found, backends, signal);
    return undefined;
  }

  /**
   * Upstream's order: the node-group rules from the load balancer's group revoked, the load
   * balancer deleted (either kind: an interrupted create or a kind changed by hand leaves
   * nothing), its group last, in progress while AWS still holds it.
   */
  async ensureDeleted(owner: LbOwner, signal?: AbortSignal): Promise<undefined | InProgress> {
    const groups = await this.net.ownedGroups(awsLoadBalancerName(owner.serviceUid), owner, signal);
    for (const g of groups) await this.net.revokeNodeRules(g, signal);
    await this.classic.deleteLoadBalancer(owner, signal);
    await this.nlb.deleteLoadBalancer(owner, signal);
    return this.net.deleteGroups(groups, signal);
  }
}
