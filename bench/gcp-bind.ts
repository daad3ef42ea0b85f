/**
 * What the hub pays to bind a GCP account: the provider made through the hub's own binding and
 * its first call (`findByName` on the fake Compute Engine, which builds the account's SDK
 * clients), for `--accounts` accounts one after the other, in a fresh process per tree. With
 * `--baseline-tree PATH` (another checkout, built) the same in that tree's hub, side by side.
 *
 *   node bench/dist/gcp-bind.js --accounts 20 [--baseline-tree /tmp/base] --json
 *
 * Prints JSON: per tree the first account's CPU (the SDK's load included), the median of the
 * others, the process's peak RSS; `ratio` = baseline ÷ this tree for the median.
 */
import { fork } from "node:child_process";
import { once } from "node:events";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { GcpComputeFake } from "@fleet-ccm/sim";
import { percentile, round } from "./util.js";

const PROJECT = "bind-project";
const REGION = "us-central1";

interface TreeResult {
  readonly tree: string;
  readonly accounts: number;
  readonly firstAccountCpuMs: number;
  /** null with one account. */
  readonly otherAccountsCpuMsMedian: number | null;
  readonly otherAccountsCpuMsAll: (number | null)[];
  readonly peakRssMiB: number;
}

function arg(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? undefined : process.argv[at + 1];
}

/** In the child: bind `accounts` accounts of `tree`'s hub against the fake at `url`, one at a time. */
async function child(tree: string, accounts: number, url: string, key: string): Promise<TreeResult> {
  const hub = (await import(resolve(tree, "hub/dist/index.js"))) as typeof import("@fleet-ccm/hub");
  const { pino } = await import("pino");
  const gcp = hub.builtinProviders.find((f) => f.name === "gcp");
  if (gcp === undefined) throw new Error(`no gcp provider in ${tree}`);
  const cpu: number[] = [];
  for (let n = 0; n < accounts; n++) {
    const start = process.cpuUsage();
    const provider = await hub.createProvider(
      gcp,
      {
        account: {
          name: `gcp-${n}`,
          provider: "gcp",
          region: REGION,
          endpoint: url,
          credential: key,
          requestTimeoutMs: 10_000,
        },
        logger: pino({ level: "silent" }),
        clock: hub.systemClock,
        call: (_op, fn) => fn(new AbortController().signal),
      },
      { project: PROJECT },
    );
    const found = await provider.instances.findByName("node-0");
    if (found.length !== 1) throw new Error(`account ${n}: node-0 not found`);
    const used = process.cpuUsage(start);
    cpu.push((used.user + used.system) / 1000);
  }
  const [first = 0, ...others] = cpu;
  return {
    tree,
    accounts,
    firstAccountCpuMs: Math.round(first),
    otherAccountsCpuMsMedian: round(percentile(others, 50), 1),
    otherAccountsCpuMsAll: others.map((x) => round(x, 1)),
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  };
}

async function runTree(tree: string, accounts: number, url: string, key: string): Promise<TreeResult> {
  const proc = fork(fileURLToPath(import.meta.url), ["--child", tree, "--accounts", String(accounts)], {
    env: { ...process.env, GCP_BIND_URL: url, GCP_BIND_KEY: key },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const [message] = (await once(proc, "message")) as [TreeResult];
  await once(proc, "exit");
  return message;
}

async function main(): Promise<void> {
  const accounts = Number(arg("accounts") ?? 20);
  const childTree = arg("child");
  if (childTree !== undefined) {
    const result = await child(
      childTree,
      accounts,
      process.env.GCP_BIND_URL ?? "",
      process.env.GCP_BIND_KEY ?? "",
    );
    process.send?.(result);
    return;
  }
  const fake = await GcpComputeFake.start();
  try {
    const { key } = fake.createProject(PROJECT, { [REGION]: [`${REGION}-a`] });
    fake.createInstance(PROJECT, { name: "node-0", zone: `${REGION}-a` });
    const here = resolve(fileURLToPath(import.meta.url), "../../..");
    const current = await runTree(here, accounts, fake.url, key);
    const baselineTree = arg("baseline-tree");
    const baseline =
      baselineTree === undefined ? undefined : await runTree(resolve(baselineTree), accounts, fake.url, key);
    const out = {
      scenario: "gcp-bind",
      git: process.env.GIT_REV,
      current,
      ...(baseline !== undefined && {
        baseline,
        ratio:
          baseline.otherAccountsCpuMsMedian === null || current.otherAccountsCpuMsMedian === null
            ? null
            : round(baseline.otherAccountsCpuMsMedian / Math.max(current.otherAccountsCpuMsMedian, 0.1), 1),
      }),
    };
    console.log(JSON.stringify(out, null, process.argv.includes("--json") ? undefined : 2));
  } finally {
    await fake.close();
  }
}

await main();
