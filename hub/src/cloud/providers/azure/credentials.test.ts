// The azure provider's credentials against the fake Entra ID: a client secret rotated without a
// restart, workload identity federation (a federated token file read per token request), a
// token that ARM stops taking mid-run, and a refused credential as ForbiddenError.
import { AzureFake } from "@fleet-ccm/sim";
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { ForbiddenError } from "../../errors.js";
import type { CloudProvider } from "../../provider.js";
import { bindToFake } from "./azure.testkit.js";

const SUB = "00000000-0000-0000-0000-0000000000cc";
const REGION = "eastus";
const RG = "rg-cred";
let fake: AzureFake;
let providerID: string;

beforeAll(async () => {
  fake = await AzureFake.start();
  fake.createSubscription(SUB, "t", "app", "first");
  fake.createResourceGroup(SUB, RG);
  const vm = fake.createVm(SUB, {
    resourceGroup: RG,
    name: "node-1",
    location: REGION,
    zone: "1",
    subnetId: `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/virtualNetworks/v/subnets/nodes`,
    privateIp: "10.240.0.4",
    publicIp: "20.1.2.3",
  });
  providerID = `azure://${vm.id.replace(`/resourceGroups/${RG}/`, `/resourceGroups/${RG.toLowerCase()}/`)}`;
});
afterAll(() => fake.close());

function bind(kind: string, read: () => string): Promise<{ provider: CloudProvider }> {
  return bindToFake(
    fake,
    { subscription: SUB, resourceGroup: RG },
    { name: "cred", region: REGION, credential: read(), secret: () => read(), credentialNames: [kind] },
  );
}

test("a VM read with a client secret: upstream's providerID, zone and addresses", async () => {
  const { provider } = await bind("clientSecret", () => "first");
  const meta = await provider.instances.getByProviderID(providerID);
  expect(meta).toMatchObject({
    providerID,
    name: "node-1",
    region: REGION,
    zone: `${REGION}-1`,
    instanceType: "Standard_D2s_v3",
    state: "running",
    network: "v",
    addresses: [
      { type: "InternalIP", address: "10.240.0.4" },
      { type: "Hostname", address: "node-1" },
      { type: "ExternalIP", address: "20.1.2.3" },
    ],
  });
});

test("a rotated client secret is used without a restart once ARM stops taking the old token", async () => {
  let secret = "first";
  const { provider } = await bind("clientSecret", () => secret);
  await provider.instances.getByProviderID(providerID);
  fake.entra.rotateSecret("t", "app", "second");
  secret = "second";
  fake.entra.expireTokens();
  const issued = fake.entra.issued;
  expect((await provider.instances.getByProviderID(providerID)).providerID).toBe(providerID);
  expect(fake.entra.issued).toBe(issued + 1);
});

test("workload identity federation: the federated token is read at each token request", async () => {
  let assertion = fake.entra.issueAssertion("t", "app");
  const { provider } = await bind("federatedToken", () => assertion);
  await provider.instances.getByProviderID(providerID);
  assertion = fake.entra.issueAssertion("t", "app");
  fake.entra.expireTokens();
  expect((await provider.instances.getByProviderID(providerID)).name).toBe("node-1");
});

test("a refused credential is ForbiddenError, never 'not found'", async () => {
  const { provider } = await bind("clientSecret", () => "wrong");
  const err = await provider.instances.getByProviderID(providerID).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ForbiddenError);
  expect((err as Error).message).toMatch(/AADSTS7000215/);
  expect((err as Error).message).not.toMatch(/wrong/);
});
