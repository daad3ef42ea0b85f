// A Linode provider bound to a fake Linode API account, for the provider's own tests.
import { pino } from "pino";
import { LinodeFake } from "../../../../../sim/src/linode/index.js";
import { systemClock } from "../../../util/clock.js";
import type { AccountBinding, CloudProvider, ProviderContext } from "../../provider.js";
import { linodeProvider } from "./index.js";

export const REGION = "us-east";
export const ACCOUNT = "acme";
export const VPC = "fleet-vpc";

export interface LinodeHarness {
  readonly fake: LinodeFake;
  readonly token: { value: string };
  readonly subnetId: number;
  /** A provider on the account; `ops` records every ctx.call op, in order. */
  provider(overrides?: Partial<AccountBinding>): { provider: CloudProvider; ops: string[] };
  close(): Promise<void>;
}

export async function startLinodeHarness(): Promise<LinodeHarness> {
  const fake = await LinodeFake.start({ spec: true, seed: 3 });
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
    provider(overrides = {}) {
      const ops: string[] = [];
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
      const ctx: ProviderContext = {
        account,
        logger: pino({ level: "silent" }),
        clock: systemClock,
        call: (op, fn) => {
          ops.push(op);
          return fn(new AbortController().signal);
        },
      };
      return { provider: linodeProvider.create(ctx), ops };
    },
    close: () => fake.close(),
  };
}
