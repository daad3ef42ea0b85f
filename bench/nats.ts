// A real nats-server for the benchmark: the fleet's per-user permissions, plus the monitoring
// port (/connz) so the bytes the hub publishes can be read from the server.

import { type FleetNatsIdentity, fleetNatsUsers, type NatsUser, startNatsServer } from "@fleet-ccm/sim";
import { httpText } from "./util.js";

export interface BenchNats {
  readonly url: string;
  readonly port: number;
  readonly monitorUrl: string;
  readonly pid: number;
  /** Payload bytes the connection named `name` has published (nats-server's in_bytes); null if unknown. */
  publishedBytes(name: string): Promise<{ bytes: number; clientPort: number } | null>;
  stop(): Promise<void>;
}

export type NatsIdentity = FleetNatsIdentity;

export const natsUsers = fleetNatsUsers;

interface Connz {
  connections?: { name?: string; port?: number; in_bytes?: number }[];
}

export async function startBenchNats(users: readonly NatsUser[], jetstream = false): Promise<BenchNats> {
  const server = await startNatsServer({ users, monitor: true, jetstream });
  const monitorUrl = server.monitorUrl ?? "";
  return {
    url: server.url,
    port: server.port,
    monitorUrl,
    pid: server.pid(),
    async publishedBytes(name) {
      try {
        const connz = JSON.parse(await httpText(`${monitorUrl}/connz?limit=100000`)) as Connz;
        const c = connz.connections?.find((x) => x.name === name);
        return c === undefined ? null : { bytes: c.in_bytes ?? 0, clientPort: c.port ?? 0 };
      } catch {
        return null;
      }
    },
    stop: () => server.stop(),
  };
}
