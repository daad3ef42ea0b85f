import type http from "node:http";
import { describe, expect, test } from "@jest/globals";
import type { KubeConfig } from "@kubernetes/client-node";
import { withConnectionReuse } from "./connection-reuse.js";

type Factory = (cluster: unknown, options: Record<string, unknown>) => http.Agent;

/** client-node's KubeConfig.createAgent is called for every request; count what it would make. */
function kubeConfig(): { kc: KubeConfig; originals: () => number } {
  let calls = 0;
  const kc = { createAgent: () => ({ calls: ++calls }) as unknown as http.Agent };
  withConnectionReuse(kc as unknown as KubeConfig);
  return { kc: kc as unknown as KubeConfig, originals: () => calls };
}

const create = (kc: KubeConfig, cluster: unknown, options: Record<string, unknown>) =>
  (kc as unknown as { createAgent: Factory }).createAgent(cluster, options);

describe("withConnectionReuse", () => {
  test("one agent while the settings are equal, though certificates arrive as new Buffers", () => {
    const { kc } = kubeConfig();
    const cluster = { server: "https://api.example:6443" };
    const opts = () => ({ ca: Buffer.from("CA"), cert: Buffer.from("C"), key: Buffer.from("K") });
    const a = create(kc, cluster, opts());
    let destroyed = false;
    a.destroy = () => {
      destroyed = true;
    };
    expect(create(kc, cluster, opts())).toBe(a);
    const rotated = create(kc, cluster, { ...opts(), cert: Buffer.from("C2") });
    expect(rotated).not.toBe(a);
    expect(destroyed).toBe(true);
    expect(create(kc, cluster, { ...opts(), cert: Buffer.from("C2") })).toBe(rotated);
    const bundle = () => ({ ...opts(), ca: [Buffer.from("CA1"), Buffer.from("CA2")] });
    const withBundle = create(kc, cluster, bundle());
    expect(create(kc, cluster, bundle())).toBe(withBundle);
    withBundle.destroy();
  });

  test("a proxied cluster keeps client-node's own agent for every request", () => {
    const { kc, originals } = kubeConfig();
    const cluster = { server: "https://api.example:6443", proxyUrl: "http://proxy:3128" };
    create(kc, cluster, {});
    create(kc, cluster, {});
    expect(originals()).toBe(2);
  });
});
