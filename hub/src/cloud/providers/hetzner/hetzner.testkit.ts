// The Hetzner fake's truth as the conformance suite reads it. The test starts the fake
// (sim/src/hetzner) and hands it over: hub code, testkits included, never imports the simulators.
import type { FakeResource } from "../../conformance/conformance.testkit.js";
import { ownerOfLabels } from "./load-balancers.js";
import { routeClaim } from "./routes.js";

/** What hetznerResources reads of the fake's store. */
export interface HetznerStoreView {
  readonly store: {
    loadBalancersOf(account: string): readonly {
      readonly id: number;
      readonly labels: Readonly<Record<string, string>>;
      readonly services: readonly { readonly listen_port: number }[];
    }[];
    networksOf(account: string): readonly {
      readonly id: number;
      readonly labels: Readonly<Record<string, string>>;
      readonly routes: readonly { readonly destination: string }[];
    }[];
  };
}

/** Load balancers and their services with the owner their labels record; routes with their claims. */
export function hetznerResources(fake: HetznerStoreView, account: string): FakeResource[] {
  const out: FakeResource[] = [];
  for (const lb of fake.store.loadBalancersOf(account)) {
    const o = ownerOfLabels(lb.labels);
    const owner = o === undefined ? {} : { lbOwner: o };
    out.push({ kind: "load-balancer", id: String(lb.id), ...owner });
    // Services are sub-resources; targets are the backends (their count follows the node set).
    for (const s of lb.services) out.push({ kind: "service", id: `${lb.id}:${s.listen_port}`, ...owner });
  }
  for (const n of fake.store.networksOf(account))
    for (const r of n.routes) {
      const claim = routeClaim(n.labels, r.destination);
      out.push({
        kind: "route",
        id: `${n.id}/${r.destination}`,
        destinationCIDR: r.destination,
        ...(claim !== undefined && { routeOwner: claim }),
      });
    }
  return out;
}
