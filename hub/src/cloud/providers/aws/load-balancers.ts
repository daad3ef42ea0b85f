/**
 * A Service's load balancer on AWS, as cloud-provider-aws chooses it: a classic ELB unless
 * `aws-load-balancer-type: nlb` (or the account's defaultLoadBalancerType says nlb for new
 * Services), `external` left to the AWS Load Balancer Controller. Names (`a` + the Service
 * uid) and tags (kubernetes.io/cluster/<cluster>: owned, kubernetes.io/service-name) are
 * upstream's, so upstream adopts ours; one upstream made is adopted only with the cluster's
 * adoptFrom (the operator's opt-in, lb-network.ts whyNotOwned).
 */
import { CloudError, ImplementedElsewhereError, SuspectAnswerError } from "../../errors.js";
import {
  type BackendAnnotations,
  type InProgress,
  isInProgress,
  type LbIngress,
  type LbServiceHints,
  type LoadBalancerCapabilities,
  type LoadBalancerSpec,
  type LoadBalancerState,
  type LoadBalancers,
  lbOwner,
  type OwnedLoadBalancerPage,
  type ProviderContext,
  type ServiceTarget,
} from "../../provider.js";
import { AWS_ANNOTATIONS, awsLbCapabilities, parseAwsLbAnnotations } from "./annotations.js";
import type { AwsApi } from "./api.js";
import { ClassicElb, isGone as classicGone } from "./classic.js";
import { awsHealthCheck } from "./health.js";
import {
  awsLoadBalancerName,
  backendsDigestTags,
  LbNetwork,
  ownedAmong,
  specDigestTags,
} from "./lb-network.js";
import { Nlb, isGone as nlbGone } from "./nlb.js";
import type { AwsOptions } from "./options.js";

const ELB_TOKEN = "elb:";
const NLB_TOKEN = "nlb:";

type Found =
  | { readonly type: "classic"; readonly found: NonNullable<Awaited<ReturnType<ClassicElb["find"]>>> }
  | { readonly type: "nlb"; readonly found: NonNullable<Awaited<ReturnType<Nlb["find"]>>> };

export class AwsLoadBalancers implements LoadBalancers {
  readonly capabilities: LoadBalancerCapabilities;
  private readonly net: LbNetwork;
  private readonly classic: ClassicElb;
  private readonly nlb: Nlb;

  constructor(
    ctx: ProviderContext,
    api: AwsApi,
    private readonly options: AwsOptions,
  ) {
    this.capabilities = awsLbCapabilities(options.defaultLoadBalancerType);
    this.net = new LbNetwork(ctx, api, options.dependencyRetryMs);
    this.classic = new ClassicElb(api, this.net);
    this.nlb = new Nlb(api, this.net);
  }

  /** The owner's load balancer of either kind, `first` (default: the account's default kind) asked first. */
  private async find(
    owner: ServiceTarget,
    signal?: AbortSignal,
    first: "classic" | "nlb" = this.options.defaultLoadBalancerType === "nlb" ? "nlb" : "classic",
  ): Promise<Found | undefined> {
    const order: readonly ("classic" | "nlb")[] = first === "nlb" ? ["nlb", "classic"] : ["classic", "nlb"];
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

  /** Pure: the AWS-only annotations, read as ensure reads them, without any call. */
  checkAnnotations(annotations: Readonly<Record<string, string>>): void {
    parseAwsLbAnnotations(annotations, this.options.defaultLoadBalancerType);
  }

  async get(target: ServiceTarget, signal?: AbortSignal): Promise<LoadBalancerState | undefined> {
    const owner = lbOwner(target);
    const f = await this.find(target, signal);
    if (f === undefined) return undefined;
    return f.type === "classic"
      ? this.classic.state(owner, f.found.lb)
      : this.nlb.state(owner, f.found.lb, signal);
  }

  async ensure(
    owner: ServiceTarget,
    spec: LoadBalancerSpec,
    signal?: AbortSignal,
    hints?: LbServiceHints,
  ): Promise<readonly LbIngress[] | InProgress> {
    const annotations = spec.annotations ?? {};
    const settings = parseAwsLbAnnotations(annotations, this.options.defaultLoadBalancerType);
    if (settings.type === "external")
      throw new ImplementedElsewhereError(
        `${AWS_ANNOTATIONS.type}: ${annotations[AWS_ANNOTATIONS.type]} is the AWS Load Balancer Controller's`,
      );
    // The account default applies to new Services: an existing load balancer keeps its kind.
    const explicit = annotations[AWS_ANNOTATIONS.type] !== undefined;
    // With a type annotation the other kind is asked first, so one left from a change is found.
    const existing = await this.find(
      owner,
      signal,
      explicit ? (settings.type === "nlb" ? "classic" : "nlb") : undefined,
    );
    const type = existing !== undefined && !explicit ? existing.type : settings.type;
    // A type annotation changed: AWS cannot convert one kind into the other. As upstream, the
    // new kind is built beside the old (its own name space, the same managed security group;
    // an interrupted change's is found again); unlike upstream, the old one is deleted once the
    // new one is ready, not left behind.
    const replaced = existing !== undefined && existing.type !== type ? existing.type : undefined;
    const kindSettings = { ...settings, type };
    // The hints hold every annotation (the spec's only when a vendor key is among them).
    const kindSpec = {
      ...spec,
      healthCheck: awsHealthCheck(spec, hints?.annotations ?? annotations, type, settings),
    };
    const made =
      type === "classic"
        ? await this.classic.ensure(
            owner,
            kindSpec,
            kindSettings,
            existing?.type === "classic"
              ? existing.found
              : replaced === undefined
                ? undefined
                : await this.classic.find(owner, signal),
            signal,
          )
        : await this.nlb.ensure(
            owner,
            kindSpec,
            kindSettings,
            existing?.type === "nlb"
              ? existing.found
              : replaced === undefined
                ? undefined
                : await this.nlb.find(owner, signal),
            signal,
          );
    if (isInProgress(made)) return made;
    if (replaced !== undefined) await this.kind(replaced).deleteLoadBalancer(owner, signal);
    // Last: the digests vouch for everything above, so a crash before here leaves them stale.
    await this.kind(type).tag(made.ref, made.tags, specDigestTags(spec), signal);
    return made.ingress;
  }

  private kind(type: "classic" | "nlb"): ClassicElb | Nlb {
    return type === "classic" ? this.classic : this.nlb;
  }

  async updateBackends(
    owner: ServiceTarget,
    backends: readonly string[],
    signal?: AbortSignal,
    backendAnnotations?: BackendAnnotations,
  ): Promise<undefined | InProgress> {
    const f = await this.find(owner, signal);
    if (f === undefined)
      throw new CloudError(`load balancer ${awsLoadBalancerName(owner.serviceUid)} does not exist`);
    let ref: string;
    if (f.type === "classic") {
      await this.classic.updateBackends(owner, f.found, backends, signal);
      ref = f.found.lb.LoadBalancerName ?? "";
    } else {
      await this.nlb.updateBackends(owner, f.found, backends, signal);
      ref = f.found.lb.LoadBalancerArn ?? "";
    }
    await this.kind(f.type).tag(ref, f.found.tags, backendsDigestTags(backends, backendAnnotations), signal);
    return undefined;
  }

  /**
   * Every load balancer of ours in the region: the classic ELBs' pages (token `elb:<marker>`),
   * then the NLBs' (`nlb:<marker>`), each page one DescribeLoadBalancers and a DescribeTags per
   * 20 of its load balancers.
   */
  async listOwned(pageToken: string | undefined, signal?: AbortSignal): Promise<OwnedLoadBalancerPage> {
    const token = pageToken ?? ELB_TOKEN;
    const sep = token.indexOf(":");
    const kind = sep < 0 ? "" : token.slice(0, sep + 1);
    const marker = token.slice(sep + 1) || undefined;
    const type = kind === ELB_TOKEN ? "classic" : kind === NLB_TOKEN ? "nlb" : undefined;
    if (type === undefined) throw new SuspectAnswerError(`bad page token ${pageToken}`);
    const lbs = this.kind(type);
    const page = await lbs.listingPage(marker, signal);
    const items = await ownedAmong(
      page.lbs,
      (refs) => lbs.describeTags(refs, signal),
      type === "classic" ? classicGone : nlbGone,
    );
    const next = page.next !== undefined ? `${kind}${page.next}` : type === "classic" ? NLB_TOKEN : undefined;
    return { items, ...(next !== undefined && { nextPageToken: next }) };
  }

  /**
   * Upstream's order: the node-group rules from the load balancer's group revoked, the load
   * balancer deleted (either kind: an interrupted create or a kind changed by hand leaves
   * nothing), its group last, in progress while AWS still holds it.
   */
  async ensureDeleted(owner: ServiceTarget, signal?: AbortSignal): Promise<undefined | InProgress> {
    const groups = await this.net.ownedGroups(awsLoadBalancerName(owner.serviceUid), owner, signal);
    for (const g of groups) await this.net.revokeNodeRules(g, signal);
    await this.classic.deleteLoadBalancer(owner, signal);
    await this.nlb.deleteLoadBalancer(owner, signal);
    return this.net.deleteGroups(groups, signal);
  }
}
