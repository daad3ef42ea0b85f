// A Linode provider bound to a fake Linode API account, for the provider's own tests. The
// test starts the fake (sim/src/linode) and hands it over: hub code, testkits included, never
// imports the simulators.
import type { AccountBinding, CloudProvider } from "../../provider.js";
import { bindRecorded, type RecordingOptions } from "../../recording-context.testkit.js";
import { linodeProvider } from "./index.js";

export const REGION = "us-east";
export const ACCOUNT = "acme";
export const VPC = "fleet-vpc";

/** What the harness needs of the fake Linode API. */
export interface HarnessFake {
  readonly url: string;
  createAccount(name: string): { token: string };
  createVpc(
    account: string,
    spec: { label: string; region: string; subnets: { label: string; ipv4: string }[] },
  ): { subnets: readonly { id: number }[] };
  close(): Promise<void>;
}

export interface LinodeHarness<F extends HarnessFake> {
  readonly fake: F;
  readonly token: { value: string };
  readonly subnetId: number;
  /** A provider on the account (`options`: accounts[].options); `ops` records every ctx.call op, in order. */
  provider(
    overrides?: Partial<AccountBinding>,
    options?: unknown,
    recording?: RecordingOptions,
  ): Promise<{ readonly provider: CloudProvider; readonly ops: string[] }>;
  close(): Promise<void>;
}

export function linodeHarness<F extends HarnessFake>(fake: F): LinodeHarness<F> {
  const { token } = fake.createAccount(ACCOUNT);
  const current = { value: token };
  const vpc = fake.createVpc(ACCOUNT, {
    label: VPC,
    region: REGION,
    subnets: [{ label: "nodes", ipv4: "10.0.0.0/16" }],
  });
  return {
    fake,
    token: current,
    subnetId: vpc.subnets[0]!.id,
    provider(overrides = {}, options, recording) {
      const account: AccountBinding = {
        name: ACCOUNT,
        provider: "linode",
        region: REGION,
        endpoint: fake.url,
        credential: token,
        secret: () => current.value,
        requestTimeoutMs: 2_000,
        ...overrides,
      };
      return bindRecorded(linodeProvider, account, options, recording);
    },
    close: () => fake.close(),
  };
}
