// A Hetzner Cloud project in the fake as the provider's tests use it: a network in fsn1, and an
// account binding for it (the hub's AccountBinding shape; sim never imports the hub).
import { HetznerFake } from "./fake.js";

export const REGION = "fsn1";
export const ELSEWHERE = "hel1";
export const ACCOUNT = "acme";
export const NETWORK = "fleet-net";

/** The fields of the hub's AccountBinding a Hetzner provider test binds with. */
export interface HetznerBinding {
  readonly name: string;
  readonly provider: string;
  readonly region: string;
  readonly network?: string;
  readonly endpoint?: string;
  readonly credential: string;
  readonly requestTimeoutMs: number;
}

export interface HetznerWorld {
  readonly fake: HetznerFake;
  readonly token: string;
  readonly networkId: number;
  account(): HetznerBinding;
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
