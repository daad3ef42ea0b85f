/**
 * The cluster's unmanaged instance group `k8s-ig--<cluster>` in each zone of the region
 * (upstream makeInstanceGroupName), the backends of every backend service of the cluster: the
 * internal load balancers' and the backend-service based external ones' (l4-rbs). Each
 * Service's ensure syncs the groups to its backends; a group goes once no backend service uses
 * it (Compute refuses the delete before: resourceInUseByAnotherResource).
 */
import { CloudError } from "../../errors.js";
import { type InProgress, inProgress, type ServiceTarget } from "../../provider.js";
import { hasReason, isNotFound } from "./errors.js";
import { GcpLbBase, tail } from "./lb-base.js";
import { gceInstanceGroupName } from "./names.js";
import { getOrUndefined, type Step } from "./operations.js";

/** The instance groups' description: the cluster they serve (the only owner a shared group has). */
const groupDescription = (cluster: string) => JSON.stringify({ "fleet-ccm.io/cluster": cluster });

/**
 * The cluster's instance-group name: its own, or while it migrates (adoptFrom) the vendor
 * cluster's `k8s-ig--<id>`, which its nodes are in already (an instance is in one
 * load-balanced group at most), shared with what it adopts.
 */
export function groupName(target: ServiceTarget): string {
  return gceInstanceGroupName(target.scope.adoptFrom?.vendorCcmClusterName ?? target.cluster);
}

/** Whether a group of that name is the cluster's: its description, or upstream's nameless one with adoptFrom. */
function ownGroup(target: ServiceTarget, description: string | null | undefined): boolean {
  if (description === groupDescription(target.cluster)) return true;
  return target.scope.adoptFrom !== undefined && (description ?? "") === "";
}

export class ClusterGroups extends GcpLbBase {
  private getGroup(zone: string, name: string, signal?: AbortSignal) {
    return getOrUndefined(
      async () =>
        (
          await this.api.call(
            "instanceGroups.get",
            (c, o) => c.instanceGroups.get({ project: this.api.project, zone, instanceGroup: name }, o),
            signal,
          )
        )[0],
    );
  }

  /** The instance ids ("<zone>/<name>") in a group. */
  async members(zone: string, name: string, signal?: AbortSignal): Promise<string[]> {
    const [items] = await this.api.call(
      "instanceGroups.listInstances",
      (c, o) =>
        c.instanceGroups.listInstances(
          {
            project: this.api.project,
            zone,
            instanceGroup: name,
            maxResults: 500,
            instanceGroupsListInstancesRequestResource: { instanceState: "ALL" },
          },
          o,
        ),
      signal,
    );
    return items.map((i) => tail(i.instance).replace(/^zones\/([^/]+)\/instances\/([^/]+)$/, "$1/$2")).sort();
  }

  /** The instances of a backend service's groups, sorted. */
  async backendsOf(
    bs: { readonly backends?: readonly { readonly group?: string | null }[] | null },
    signal?: AbortSignal,
  ): Promise<string[]> {
    const out: string[] = [];
    for (const b of bs.backends ?? []) {
      const m = /zones\/([^/]+)\/instanceGroups\/([^/]+)$/.exec(b.group ?? "");
      if (m !== null) out.push(...(await this.members(m[1] ?? "", m[2] ?? "", signal)));
    }
    return out.sort();
  }

  /**
   * The cluster's group in each zone of the region: made where backends are, members added
   * and removed to match (a zone without backends keeps an empty group until the cluster's
   * last Service using the groups goes). Answers the links of the groups with backends.
   */
  async sync(
    target: ServiceTarget,
    backends: readonly string[],
    signal?: AbortSignal,
  ): Promise<string[] | InProgress> {
    const name = groupName(target);
    const links: string[] = [];
    for (const zone of await this.instances.regionZones(signal)) {
      const want = backends.filter((b) => b.startsWith(`${zone}/`));
      const scope = `zones/${zone}` as const;
      const link = this.api.url(`${scope}/instanceGroups/${name}`);
      const group = await this.getGroup(zone, name, signal);
      if (group !== undefined && !ownGroup(target, group.description))
        throw new CloudError(`gcp: instance group ${zone}/${name} exists and is not the cluster's`);
      if (group === undefined) {
        if (want.length === 0) continue;
        const step = await this.insert(
          scope,
          link,
          () =>
            this.api.mutate(
              "instanceGroups.insert",
              (c, o) =>
                c.instanceGroups.insert(
                  {
                    project: this.api.project,
                    zone,
                    instanceGroupResource: {
                      name,
                      description: groupDescription(target.cluster),
                      network: this.networkUrl(target),
                    },
                  },
                  o,
                ),
              signal,
            ),
          signal,
        );
        if (step !== undefined) return step;
      }
      // A group read a moment ago can be gone by the time its members are listed (a delete of
      // ours, started by an earlier cleanup, ending meanwhile): read it again next pass.
      const have = group === undefined ? [] : await getOrUndefined(() => this.members(zone, name, signal));
      if (have === undefined)
        return inProgress(
          this.options.operationPollMs,
          `instance group ${zone}/${name} went away while read`,
        );
      const add = want.filter((b) => !have.includes(b));
      const remove = have.filter((b) => !want.includes(b));
      if (add.length > 0 || remove.length > 0) {
        const pending = await this.ops.pending(scope, link, signal);
        if (pending !== undefined) return pending;
      }
      for (const [members, add_] of [
        [remove, false],
        [add, true],
      ] as const) {
        if (members.length === 0) continue;
        const instances = members.map((b) => ({ instance: this.instanceUrl(b) }));
        const op = await this.api
          .mutate(
            add_ ? "instanceGroups.addInstances" : "instanceGroups.removeInstances",
            (c, o) =>
              add_
                ? c.instanceGroups.addInstances(
                    {
                      project: this.api.project,
                      zone,
                      instanceGroup: name,
                      instanceGroupsAddInstancesRequestResource: { instances },
                    },
                    o,
                  )
                : c.instanceGroups.removeInstances(
                    {
                      project: this.api.project,
                      zone,
                      instanceGroup: name,
                      instanceGroupsRemoveInstancesRequestResource: { instances },
                    },
                    o,
                  ),
            signal,
          )
          .catch(async (err: unknown) => {
            // The membership changed since it was read (an earlier change of ours ending
            // meanwhile, a lost answer repeated), or the group itself went (a cleanup's delete
            // ending meanwhile): read it again next pass.
            if (hasReason(err, "memberAlreadyExists", "memberNotFound")) return undefined;
            if (isNotFound(err) && (await this.getGroup(zone, name, signal)) === undefined) return undefined;
            throw err;
          });
        if (op === undefined)
          return inProgress(
            this.options.operationPollMs,
            `instance group ${zone}/${name} or its members changed meanwhile`,
          );
        const step = await this.ops.after(op, signal);
        if (step !== undefined) return step;
      }
      if (want.length > 0) links.push(link);
    }
    return links;
  }

  /** The cluster's groups, each unless another Service's backend service still uses it. */
  async deleteUnused(target: ServiceTarget, signal?: AbortSignal): Promise<Step> {
    const group = groupName(target);
    for (const zone of await this.instances.regionZones(signal)) {
      const scope = `zones/${zone}` as const;
      const step = await this.deleteOwned(
        scope,
        "instanceGroups",
        group,
        undefined,
        async () => {
          const g = await this.getGroup(zone, group, signal);
          return g === undefined || !ownGroup(target, g.description) ? undefined : g;
        },
        () =>
          this.api.mutate(
            "instanceGroups.delete",
            (c, o) => c.instanceGroups.delete({ project: this.api.project, zone, instanceGroup: group }, o),
            signal,
          ),
        signal,
      ).catch((err: unknown) => {
        if (hasReason(err, "resourceInUseByAnotherResource")) return undefined;
        throw err;
      });
      if (step !== undefined) return step;
    }
    return undefined;
  }
}
