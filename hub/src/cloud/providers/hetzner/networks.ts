/**
 * The clusters' Hetzner networks, named in the configuration by id ("4711") or by name. A name
 * is resolved with `GET /networks?name=` (names are unique in a project) and its id kept: ids
 * never change, a rename is noticed when the id answers another name. The network itself
 * (routes, labels) is always read fresh.
 */
import { CloudError, SuspectAnswerError } from "../../errors.js";
import type { HetznerClient } from "./client.js";
import { isNotFound } from "./errors.js";
import type { WireNetwork } from "./wire.js";

export const NETWORK_OPS = { get: "networks.get", byName: "networks.byName" } as const;

export function checkNetwork(body: unknown): WireNetwork {
  const n = (body as { network?: Partial<WireNetwork> } | null)?.network;
  if (
    typeof n !== "object" ||
    n === null ||
    !Number.isSafeInteger(n.id) ||
    typeof n.name !== "string" ||
    !Array.isArray(n.routes) ||
    typeof n.labels !== "object" ||
    n.labels === null
  )
    throw new SuspectAnswerError("Hetzner Cloud API answered something that is not a network");
  return n as WireNetwork;
}

export class NetworkResolver {
  private readonly ids = new Map<string, number>();

  constructor(private readonly client: HetznerClient) {}

  /** The id of the network `ref` names (one call the first time for a name, none after). */
  async id(ref: string, signal?: AbortSignal): Promise<number> {
    if (/^\d+$/.test(ref)) return Number(ref);
    const known = this.ids.get(ref);
    if (known !== undefined) return known;
    const found = await this.client.list<WireNetwork>(NETWORK_OPS.byName, "/networks", "networks", signal, {
      name: ref,
    });
    const exact = found.filter((n) => n.name === ref);
    if (exact.length !== 1)
      throw new CloudError(
        exact.length === 0
          ? `no Hetzner network named ${ref}`
          : `${exact.length} Hetzner networks are named ${ref}`,
      );
    const id = exact[0]?.id ?? 0;
    this.ids.set(ref, id);
    return id;
  }

  /** The network `ref` names, read now. */
  async get(ref: string, signal?: AbortSignal): Promise<WireNetwork> {
    const id = await this.id(ref, signal);
    let n: WireNetwork;
    try {
      n = checkNetwork(await this.client.get(NETWORK_OPS.get, `/networks/${id}`, signal));
    } catch (err) {
      // A network named in the configuration that is gone: the name may now be another's.
      if (isNotFound(err)) this.ids.delete(ref);
      throw err;
    }
    if (n.id !== id) throw new SuspectAnswerError(`asked for network ${id}, the API answered ${n.id}`);
    if (!/^\d+$/.test(ref) && n.name !== ref) {
      this.ids.delete(ref);
      throw new CloudError(`Hetzner network ${id} is now named ${n.name}, not ${ref}: resolving again`);
    }
    return n;
  }
}
