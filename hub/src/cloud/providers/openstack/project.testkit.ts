// The OpenStack provider tests' common ground: a fake OpenStack cloud (spec-checked) with one
// project, its application credential, the nodes' network and an external network, and the
// account binding of that project.
import { OpenStackFake } from "../../../../../sim/src/openstack/index.js";
import type { FakeNetwork } from "../../../../../sim/src/openstack/store.js";
import type { AccountBinding } from "../../provider.js";

export const PROJECT = "demo";
export const REGION = "RegionOne";
export const APP_CREDENTIAL = { id: "app-1", secret: "s3cret" } as const;

export interface FakeProject {
  readonly fake: OpenStackFake;
  /** The nodes' network (10.0.0.0/16). */
  readonly net: FakeNetwork;
  /** The floating IPs' network (172.24.4.0/24). */
  readonly ext: FakeNetwork;
}

/** `now`: the fake's clock (default the system's). */
export async function startFakeProject(now?: () => number): Promise<FakeProject> {
  const fake = await OpenStackFake.start({ spec: true, ...(now !== undefined && { now }) });
  fake.createProject(PROJECT);
  fake.createApplicationCredential(PROJECT, APP_CREDENTIAL.id, APP_CREDENTIAL.secret);
  const net = fake.createNetwork(PROJECT, REGION, { name: "k8s", cidr: "10.0.0.0/16" });
  const ext = fake.createNetwork(PROJECT, REGION, { name: "public", cidr: "172.24.4.0/24", external: true });
  return { fake, net, ext };
}

/** The project's account with its application credential. */
export function projectAccount(p: FakeProject): AccountBinding {
  return {
    name: PROJECT,
    provider: "openstack",
    region: REGION,
    network: p.net.id,
    endpoint: p.fake.url,
    credential: APP_CREDENTIAL.secret,
    secret: () => APP_CREDENTIAL.secret,
    credentialNames: ["applicationCredentialSecret"],
    requestTimeoutMs: 5_000,
  };
}
