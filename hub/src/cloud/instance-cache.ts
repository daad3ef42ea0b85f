import { sharedStrings } from "@fleet-ccm/proto";
import type { Logger } from "pino";
import type { Clock } from "../util/clock.js";
import { sameAddresses, sameRecord } from "../util/same.js";
import { errorMessage } from "./errors.js";
import type { InstanceMetadata, InstanceState, Instances } from "./provider.js";

/** Whether a listed instance says exactly what the view already holds for it. */
export function sameInstance(a: InstanceMetadata, b: InstanceMetadata): boolean {
  return (
    a.providerID === b.providerID &&
    a.instanceID === b.instanceID &&
    a.name === b.name &&
    a.instanceType === b.instanceType &&
    a.region === b.region &&
    a.zone === b.zone &&
    a.state === b.state &&
    a.network === b.network &&
    sameAddresses(a.addresses, b.addresses) &&
    sameRecord(a.tags, b.tags) &&
    sameRecord(a.additionalLabels, b.additionalLabels)
  );
}

/**
 * What the view keeps of a new or changed instance: its repeated strings (type, region, zone,
 * state, network, address types, tag values) as the hub's one copy of each. The view holds the
 * whole account, and a cloud's answer has a copy of each per instance.
 */
function kept(i: InstanceMetadata): InstanceMetadata {
  const s = sharedStrings;
  return {
    ...i,
    instanceType: s.intern(i.instanceType),
    region: s.intern(i.region),
    zone: s.intern(i.zone),
    state: s.intern(i.state) as InstanceState,
    addresses: i.addresses.map((a) => ({ ...a, type: s.intern(a.type) as typeof a.type })),
    ...(i.network !== undefined && { network: s.intern(i.network) }),
    tags: s.internValues(i.tags),
    ...(i.additionalLabels !== undefined && { additionalLabels: s.internValues(i.additionalLabels) }),
  };
}

/**
 * A periodically refreshed view of an account's instances (all pages of one list), shared by
 * every cluster in the account: one list per period answers every node's refresh, where a
 * per-cluster CCM calls the cloud once per node. The view is only replaced by a complete list;
 * a failed or partial one keeps the previous view. Absence from the view proves nothing: it is
 * never a reason to act, only presence is.
 *
 * A refresh keeps the objects of instances that did not change, and the whole view when none
 * did: the freshly parsed copies then die young, instead of a long-lived copy of the account
 * being replaced every period (which, at 25,000 instances, was what made an idle hub run its
 * major collections).
 */
export class InstanceCache {
  private view = new Map<string, InstanceMetadata>();
  private byID = new Map<string, InstanceMetadata>();
  /** name → every live instance of that name (names are not unique across an account's clusters). */
  private byName = new Map<string, InstanceMetadata[]>();
  private fetchedAtMs = Number.NEGATIVE_INFINITY;
  private inflight: Promise<void> | undefined;
  lists = 0;

  constructor(
    private readonly instances: Instances,
    private readonly clock: Clock,
    private readonly maxAgeMs: number,
    private readonly logger: Logger,
  ) {}

  /** Refreshes when the view is older than the refresh period; concurrent callers share one list. */
  fresh(): Promise<void> {
    return this.freshWithin(this.maxAgeMs);
  }

  /** Refreshes when the view is older than `maxAgeMs`; concurrent callers share one list. */
  async freshWithin(maxAgeMs: number): Promise<void> {
    if (this.clock.now() - this.fetchedAtMs < maxAgeMs) return;
    this.inflight ??= this.refresh().finally(() => {
      this.inflight = undefined;
    });
    await this.inflight;
  }

  private async refresh(): Promise<void> {
    // While the list comes in the order the view was built in (a cloud lists in a stable order)
    // and says what the view holds, each instance is compared with the view's next entry: no
    // lookup and no new map. The first that differs (changed, new, gone, reordered, repeated)
    // starts the new view with the entries matched so far.
    const inOrder = this.view.entries();
    let matched = 0;
    let next: Map<string, InstanceMetadata> | undefined;
    let token: string | undefined;
    const seenTokens = new Set<string>();
    let changed = false;
    try {
      do {
        const page = await this.instances.listPage(token);
        for (const i of page.instances) {
          if (next === undefined) {
            const h = inOrder.next();
            if (!h.done && h.value[0] === i.providerID && sameInstance(h.value[1], i)) {
              matched++;
              continue;
            }
            next = this.firstEntries(matched);
          }
          const held = this.view.get(i.providerID);
          if (held !== undefined && sameInstance(held, i)) next.set(i.providerID, held);
          else {
            next.set(i.providerID, kept(i));
            changed = true;
          }
        }
        token = page.nextPageToken;
        if (token !== undefined) {
          if (seenTokens.has(token)) throw new Error(`page token ${token} repeated`);
          seenTokens.add(token);
        }
      } while (token !== undefined);
      this.lists++;
    } catch (err) {
      // Keep the last complete view; try again next period.
      this.logger.warn({ err: errorMessage(err) }, "instance list failed; keeping the previous view");
      this.fetchedAtMs = this.clock.now();
      return;
    }
    this.fetchedAtMs = this.clock.now();
    // Every instance listed is one the view holds, unchanged: so is the view when no more were listed.
    if (next === undefined) {
      if (matched === this.view.size) return;
      next = this.firstEntries(matched);
    } else if (!changed && next.size === this.view.size) return;
    const byName = new Map<string, InstanceMetadata[]>();
    for (const i of next.values()) {
      if (i.state === "terminated") continue;
      const same = byName.get(i.name);
      if (same === undefined) byName.set(i.name, [i]);
      else same.push(i);
    }
    this.view = next;
    this.byID = new Map([...next.values()].map((i) => [i.instanceID, i]));
    this.byName = byName;
  }

  /** A new map of the view's first `n` entries (those a refresh found unchanged, in order). */
  private firstEntries(n: number): Map<string, InstanceMetadata> {
    const m = new Map<string, InstanceMetadata>();
    if (n === 0) return m;
    for (const [id, i] of this.view) {
      m.set(id, i);
      if (m.size === n) break;
    }
    return m;
  }

  /** The live instances called `name` in the view (empty proves nothing: the view may be old). */
  getByName(name: string): readonly InstanceMetadata[] {
    return this.byName.get(name) ?? [];
  }

  get(providerID: string): InstanceMetadata | undefined {
    return this.view.get(providerID);
  }

  /** By instance id (load balancer backends are instance ids). */
  getByInstanceID(instanceID: string): InstanceMetadata | undefined {
    return this.byID.get(instanceID);
  }

  size(): number {
    return this.view.size;
  }

  /** When the view was last (re)listed or a list failed; undefined before the first. */
  listedAtMs(): number | undefined {
    return Number.isFinite(this.fetchedAtMs) ? this.fetchedAtMs : undefined;
  }
}
