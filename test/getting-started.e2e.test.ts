/**
 * README's "Getting started" as written: its shell blocks, taken from the README itself (the one
 * source), run with bash as a user pasting them would, each in order, under `sudo` (the
 * machine's when it can run without a password, else a stand-in that does what matters here:
 * it closes every descriptor but 0, 1 and 2, as sudo does), with /etc/fleet-ccm and
 * /var/lib/nats moved under a temporary directory. What this machine cannot run (apt-get, git
 * clone, a hub or nats-server left running, kubectl against a real cluster, curl to them) is
 * left out and listed; the rest runs: the certificates, the configuration, nats-init, the NATS
 * configuration test, --check-config and register. A failing command in a step stops it.
 */
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { parse } from "yaml";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(ROOT, "bin/fleet-ccm.js");

/** The README's "Getting started" section: each numbered step's (and the removal's) sh blocks. */
function guideSteps(readme: string): Map<string, string> {
  const start = readme.indexOf("\n## Getting started");
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  const steps = new Map<string, string>();
  let current = "intro";
  for (const part of section.split(/^```/m).map((p, i) => ({ p, code: i % 2 === 1 }))) {
    if (!part.code) {
      const headings = [...part.p.matchAll(/^\*\*(\d+)\.|^\*\*(Removing a cluster)\*\*/gm)];
      const last = headings.at(-1);
      if (last !== undefined) current = last[1] ?? last[2] ?? current;
      continue;
    }
    if (!part.p.startsWith("sh\n")) continue;
    steps.set(current, (steps.get(current) ?? "") + part.p.slice(3));
  }
  return steps;
}

/** A block's commands: continuation lines joined, a heredoc kept with its command. */
function commands(block: string): string[] {
  const lines = block.split("\n");
  const out: string[] = [];
  let cur: string[] = [];
  let heredoc: string | undefined;
  let depth = 0;
  for (const line of lines) {
    cur.push(line);
    if (heredoc !== undefined) {
      if (line === heredoc) heredoc = undefined;
      else continue;
    } else {
      const h = /<<-?'?(\w+)'?/.exec(line);
      if (h?.[1] !== undefined) {
        heredoc = h[1];
        continue;
      }
      // A subshell ( … ) spans lines: one command.
      const code = line.replace(/#.*$/, "");
      depth += (code.match(/^\s*\($/) ?? []).length - (code.match(/^\s*\)\s*$/) ?? []).length;
      if (line.endsWith("\\") || depth > 0) continue;
    }
    const cmd = cur.join("\n").trim();
    if (cmd !== "") out.push(cmd);
    cur = [];
  }
  return out;
}

/** What this machine cannot run: needs the network, a running hub or NATS, a real cluster. */
const NOT_HERE: readonly [RegExp, string][] = [
  [/^sudo apt-get /, "installs packages"],
  [/^git clone /, "needs the network"],
  [/^npm ci/, "the checkout is built already"],
  [/^sudo ln -s .* \/usr\/local\/bin\/fleet-ccm$/, "fleet-ccm is put on PATH by the test instead"],
  [/&$/, "leaves a server running (4222, 7443 are shared on this machine)"],
  [/^curl /, "asks the hub that is not left running"],
  [/^kubectl /, "needs a real cluster"],
  [/^sudo -E fleet-ccm unregister .*--delete-cloud-resources/, "needs the cloud account's API"],
];

function runnable(cmd: string): { run: true } | { run: false; why: string } {
  const bare = cmd.replace(/\s+#[^'"\n]*$/, "");
  for (const [re, why] of NOT_HERE) if (re.test(bare)) return { run: false, why };
  return { run: true };
}

/** True when the machine's sudo runs a command without asking for a password. */
function realSudo(): boolean {
  return spawnSync("sudo", ["-n", "true"], { stdio: "ignore" }).status === 0;
}

describe("README's Getting started, run as written", () => {
  let dir: string;
  let bin: string;
  let env: NodeJS.ProcessEnv;
  const skipped: string[] = [];
  const steps = guideSteps(readFileSync(join(ROOT, "README.md"), "utf8"));
  let sudoNote = "";

  /** Runs a step's block with bash (no -e at the top: a paste into a terminal), paths moved. */
  const step = (name: string, extraPath?: string) => {
    const block = steps.get(name);
    if (block === undefined) throw new Error(`the guide has no step ${name}`);
    const lines = commands(block).map((c) => {
      const r = runnable(c);
      if (r.run) return c;
      skipped.push(`step ${name}: ${c.split("\n")[0]} (${r.why})`);
      return ":";
    });
    const script = [
      // Every failing command is reported (set -E: inside the step's subshell too).
      "set -E",
      "trap 'echo \"guide: failed: $BASH_COMMAND\" >&2; failed=1' ERR",
      ...lines,
      "exit $((failed))",
    ]
      .join("\n")
      .replaceAll("/etc/fleet-ccm", join(dir, "etc/fleet-ccm"))
      .replaceAll("/var/lib/nats", join(dir, "var/lib/nats"));
    const r = spawnSync("bash", ["-c", script], {
      cwd: join(dir, "home"),
      env: { ...env, PATH: `${extraPath === undefined ? "" : `${extraPath}:`}${env["PATH"]}` },
      encoding: "utf8",
      timeout: 60_000,
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const pki = (f: string) => join(dir, "etc/fleet-ccm/pki", f);

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "getting-started-"));
    mkdirSync(join(dir, "home"));
    bin = join(dir, "bin");
    mkdirSync(bin);
    // Step 1's `ln -s …/bin/fleet-ccm.js /usr/local/bin/fleet-ccm`, into a PATH of the test's own.
    symlinkSync(CLI, join(bin, "fleet-ccm"));
    if (realSudo()) sudoNote = "the machine's sudo";
    else {
      // No password-less sudo (here: root without sudo). What breaks `<(…)` under sudo is that
      // it closes every descriptor above 2; so does this stand-in (and it keeps -E's env).
      writeFileSync(
        join(bin, "sudo"),
        [
          "#!/usr/bin/python3",
          "import os, sys",
          "args = sys.argv[1:]",
          'if args and args[0] == "-E":',
          "    args = args[1:]",
          "os.closerange(3, 65536)",
          "os.execvp(args[0], args)",
          "",
        ].join("\n"),
      );
      chmodSync(join(bin, "sudo"), 0o755);
      sudoNote = "a stand-in for sudo (none runs without a password here) that closes descriptors above 2";
    }
    env = {
      PATH: `${bin}:${dirname(process.execPath)}:/usr/sbin:/usr/bin:/sbin:/bin`,
      HOME: join(dir, "home"),
      CLOUD_API_KEY: "test-cloud-key-0123456789",
    };
  });

  afterAll(() => {
    process.stderr.write(
      `getting started: ran under ${sudoNote}; not run here:\n${skipped.map((s) => `  ${s}`).join("\n")}\n`,
    );
    rmSync(dir, { recursive: true, force: true });
  });

  test("the guide's blocks are found: steps 1 to 8 and the removal", () => {
    expect([...steps.keys()]).toEqual(["1", "2", "3", "4", "5", "6", "7", "8", "Removing a cluster"]);
  });

  test("1–2: the CA and the hub's and NATS' certificates, each for its name", () => {
    expect(step("1").status).toBe(0);
    const r = step("2");
    expect(r.stderr).not.toContain("guide: failed");
    expect(r.status).toBe(0);
    for (const f of ["ca.key", "ca.crt", "hub.key", "hub.crt", "nats.key", "nats.crt"])
      expect(existsSync(pki(f))).toBe(true);
    expect(r.stdout).toContain("hub.crt: OK");
    expect(r.stdout).toContain("nats.crt: OK");
    for (const name of ["hub", "nats"]) {
      const san = spawnSync(
        "openssl",
        ["x509", "-in", pki(`${name}.crt`), "-noout", "-ext", "subjectAltName"],
        {
          encoding: "utf8",
        },
      );
      expect(san.stdout).toContain(`DNS:${name}.fleet.example.com`);
    }
  });

  test("2: a failing command stops the step (the loop does not carry on to the next certificate)", () => {
    const saved = dir;
    dir = mkdtempSync(join(tmpdir(), "getting-started-fail-"));
    mkdirSync(join(dir, "home"));
    try {
      // openssl fails signing the hub's certificate, once.
      const failing = join(dir, "failing-bin");
      mkdirSync(failing);
      writeFileSync(
        join(failing, "openssl"),
        `#!/bin/bash\ncase " $* " in *" -in hub.csr "*) echo "openssl: injected failure" >&2; exit 1;; esac\nexec /usr/bin/openssl "$@"\n`,
      );
      chmodSync(join(failing, "openssl"), 0o755);
      const r = step("2", failing);
      expect(r.status).not.toBe(0);
      expect(r.stderr).toContain("injected failure");
      expect(existsSync(pki("hub.crt"))).toBe(false);
      // Stopped there: NATS' key and certificate were never made.
      expect(existsSync(pki("nats.key"))).toBe(false);
      expect(existsSync(pki("nats.crt"))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      dir = saved;
    }
  });

  test("3–6: the configuration, nats-init, the NATS configuration test and --check-config", () => {
    const s3 = step("3");
    expect(s3).toMatchObject({ status: 0, stderr: "" });
    expect(readFileSync(join(dir, "etc/fleet-ccm/cloud-main"), "utf8")).toBe("test-cloud-key-0123456789");
    const s4 = step("4");
    expect(s4.stderr).not.toContain("guide: failed");
    expect(s4.status).toBe(0);
    const hubYaml = parse(readFileSync(join(dir, "etc/fleet-ccm/hub.yaml"), "utf8")) as {
      nats: { servers: string[]; operator?: unknown };
    };
    expect(hubYaml.nats.servers).toEqual(["tls://nats.fleet.example.com:4222"]);
    expect(existsSync(join(dir, "etc/fleet-ccm/nats/nats-auth.conf"))).toBe(true);
    const s5 = step("5");
    expect(s5.stderr).not.toContain("guide: failed");
    expect(s5.status).toBe(0);
    expect(`${s5.stdout}${s5.stderr}`).toMatch(/configuration file .*nats\.conf is valid/);
    const s6 = step("6");
    expect(s6.stderr).not.toContain("guide: failed");
    expect(s6.status).toBe(0);
  });

  test("7: register adds the cluster to hub.yaml and writes its manifest; --check-config still passes", () => {
    const r = step("7");
    expect(r.stderr).not.toContain("guide: failed");
    expect(r.status).toBe(0);
    const manifest = readFileSync(join(dir, "home/prod-eu-1.yaml"), "utf8");
    expect(manifest).toContain("kind: Deployment");
    const hubYaml = parse(readFileSync(join(dir, "etc/fleet-ccm/hub.yaml"), "utf8")) as {
      clusters: { name: string; account: string }[];
    };
    expect(hubYaml.clusters.map((c) => [c.name, c.account])).toEqual([["prod-eu-1", "main"]]);
    expect(step("6").status).toBe(0);
  });
});
