/** Several vendor fakes at once behind one hub: each cluster runs on the fake that `cloudOf` names. */
import type { LocalCloud } from "./local-fleet.js";

export class MixedLocalCloud implements LocalCloud {
  readonly provider = "mixed";

  constructor(
    private readonly clouds: readonly LocalCloud[],
    private readonly cloudOf: (cluster: string) => LocalCloud,
  ) {}

  accountsConfig() {
    const accounts: Record<string, unknown>[] = [];
    const env: Record<string, string> = {};
    for (const c of this.clouds) {
      const part = c.accountsConfig();
      accounts.push(...part.accounts);
      for (const [k, v] of Object.entries(part.env)) {
        if (k in env && env[k] !== v) throw new Error(`two clouds set the environment variable ${k}`);
        env[k] = v;
      }
    }
    return { accounts, env };
  }

  clusterConfig(cluster: string) {
    return this.cloudOf(cluster).clusterConfig(cluster);
  }

  addMachine(cluster: string, index: number): string {
    return this.cloudOf(cluster).addMachine(cluster, index);
  }

  totalCalls(): number {
    return this.clouds.reduce((n, c) => n + c.totalCalls(), 0);
  }

  async close(): Promise<void> {
    for (const c of this.clouds) await c.close();
  }
}
