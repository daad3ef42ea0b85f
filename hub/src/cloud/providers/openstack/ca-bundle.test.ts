// A private cloud with its own CA: the fake OpenStack cloud served over HTTPS with a generated
// certificate. Without the account's CA bundle the hub refuses it (verification is never turned
// off) and says why; with `caCertificates` Keystone and every catalog endpoint are trusted.
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { OpenStackFake } from "../../../../../sim/src/openstack/index.js";
import type { FakeNetwork } from "../../../../../sim/src/openstack/store.js";
import { selfSignedCertificate } from "../../../../../sim/src/util/certificate.js";
import type { CloudProvider } from "../../provider.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { openstackProvider } from "./index.js";
import { APP_CREDENTIAL, PROJECT, projectAccount, REGION } from "./project.testkit.js";

const certificate = selfSignedCertificate("127.0.0.1", "IP:127.0.0.1,DNS:localhost");
let fake: OpenStackFake;
let net: FakeNetwork;
let serverId: string;

beforeAll(async () => {
  fake = await OpenStackFake.start({ spec: true, tls: certificate });
  fake.createProject(PROJECT);
  fake.createApplicationCredential(PROJECT, APP_CREDENTIAL.id, APP_CREDENTIAL.secret);
  net = fake.createNetwork(PROJECT, REGION, { name: "k8s", cidr: "10.0.0.0/16" });
  serverId = fake.createServer(PROJECT, REGION, { name: "n0", networks: [net] }).id;
});

afterAll(async () => {
  expect(fake.specProblems()).toEqual([]);
  await fake.close();
});

async function provider(options: Record<string, unknown>): Promise<CloudProvider> {
  const account = projectAccount({ fake, net, ext: net });
  return (
    await bindRecorded(openstackProvider, account, { applicationCredentialId: APP_CREDENTIAL.id, ...options })
  ).provider;
}

test("the fake is served over HTTPS with its own CA", () => {
  expect(fake.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
});

test("without the account's CA bundle the cloud's certificate is refused, saying why", async () => {
  const p = await provider({});
  await expect(p.instances.getByProviderID(`openstack:///${serverId}`)).rejects.toThrow(
    /Keystone.*request failed: .*(self[- ]signed|certificate)/i,
  );
});

test("with caCertificates Keystone, Nova and Neutron are trusted", async () => {
  const p = await provider({ caCertificates: certificate.cert });
  const i = await p.instances.getByProviderID(`openstack:///${serverId}`);
  expect(i.name).toBe("n0");
  expect(i.addresses[0]?.type).toBe("InternalIP");
});

test("another CA's bundle does not vouch for the cloud", async () => {
  const other = selfSignedCertificate("127.0.0.1", "IP:127.0.0.1,DNS:localhost");
  const p = await provider({ caCertificates: other.cert });
  await expect(p.instances.getByProviderID(`openstack:///${serverId}`)).rejects.toThrow(/request failed/);
});
