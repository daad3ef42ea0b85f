// Droplets against the fake DigitalOcean API: the DigitalOcean CCM's addresses (the first
// address of each type, as godo's PrivateIPv4/PublicIPv4/PublicIPv6 take it) and its states
// (any Droplet the API answers exists; shut down only for `off`).
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { DigitalOceanFake } from "../../../../../sim/src/digitalocean/index.js";
import { bindRecorded } from "../../recording-context.testkit.js";
import { digitalOceanProvider } from "./index.js";

const ACCOUNT = "acme";
const REGION = "nyc3";
let fake: DigitalOceanFake;
let token: string;

const bind = async () =>
  (
    await bindRecorded(digitalOceanProvider, {
      name: ACCOUNT,
      provider: "digitalocean",
      region: REGION,
      endpoint: fake.url,
      credential: token,
      requestTimeoutMs: 2_000,
    })
  ).provider.instances;

beforeAll(async () => {
  fake = await DigitalOceanFake.start({ spec: true, seed: 11 });
  token = fake.createAccount(ACCOUNT).token;
});
afterAll(async () => {
  expect(fake.specProblems()).toEqual([]);
  await fake.close();
});

describe("instances", () => {
  test("the first private IPv4, the first public IPv4 and the first public IPv6 only, as upstream", async () => {
    const d = fake.createDroplet(ACCOUNT, {
      name: "node-a",
      region: REGION,
      extraV4: [
        { ip: "10.20.0.5", type: "public" },
        { ip: "10.116.0.9", type: "private" },
      ],
    });
    const m = await (await bind()).getByProviderID(`digitalocean://${d.id}`);
    expect(m.addresses).toEqual([
      { type: "Hostname", address: "node-a" },
      { type: "InternalIP", address: d.privateIPv4 },
      { type: "ExternalIP", address: d.publicIPv4 },
      { type: "ExternalIP", address: d.ipv6 },
    ]);
  });

  test("an archived Droplet the API still answers exists and is not shut down; off is", async () => {
    const i = await bind();
    const d = fake.createDroplet(ACCOUNT, { name: "node-b", region: REGION, status: "archive" });
    const m = await i.getByProviderID(`digitalocean://${d.id}`);
    expect(m.state).not.toBe("terminated");
    expect(m.state).not.toBe("stopped");
    expect(m.state).not.toBe("stopping");
    // Looked up by name, it is not dropped as gone either.
    expect((await i.findByName("node-b")).map((x) => x.state)).toEqual([m.state]);
    fake.setDropletStatus(d.id, "off");
    expect((await i.getByProviderID(`digitalocean://${d.id}`)).state).toBe("stopped");
  });
});
