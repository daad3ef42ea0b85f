// The Hetzner fake as the provider's tests use it: a project with a network in fsn1, servers
// in it, and the fake's truth read back as conformance resources.
import { HetznerFake } from "../../../../../sim/src/hetzner/index.js";
import type { FakeResource } from "../../conformance/conformance.testkit.js";
import type { AccountBinding } from "../../provider.js";
import { ownerOfLabels } from "./load-balancers.js";
import { routeClaim } from "./routes.js";

export const REGION = "fsn1";
export const ELSEWHERE = "hel1";
export const ACCOUNT = "acme";
export const NETWORK = "fleet-net";

export interface HetznerWorld {
  readonly fake: HetznerFake;
  readonly token: string;
  readonly networkId: number;
  account(): AccountBinding;
}

export async function startHetznerWorld(actionPolls = 0): Promise<HetznerWorld> {
  const fake = await HetznerFake.start({ spec: true, seed: 7 });
  fake.setActionPolls(actionPolls);
  const { token } = fake.createAccount(ACCOUNT);
  const net = fake.createNetwork(ACCOUNT, { name: NETWORK, ipRange: "10.0.0.0/16" });
  return {
    fake,
    token,
    networkId: net.id,
    account: () => ({
      name: ACCOUNT,
      provider: "hetzner",
      region: REGION,
      network: NETWORK,
      endpoint: `${fake.url}/v1`,
      credential: token,
      requestTimeoutMs: 2_000,
    }),
  };
}

/** Load balancers and their services with the owner their labels record; routes with their claims. */
export function hetznerResources(fake: HetznerFake, account: string): FakeResource[] {
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
