import { ForbiddenError, SuspectAnswerError } from "../../errors.js";
import type { InstanceListPage, InstanceMetadata, Instances, ProviderContext } from "../../provider.js";
import type { SimulatedClient } from "./client.js";
import {
  parseProviderIDParts,
  parseWireInstance,
  parseWireInstanceList,
  toInstanceMetadata,
  type WireInstance,
} from "./convert.js";
import { type ErrorContext, toContractError } from "./errors.js";

/** Operation names passed to ctx.call (rate limiting, metrics). */
export const OPS = {
  get: "instances.get",
  getByName: "instances.getByName",
  list: "instances.list",
} as const;

export interface SimulatedInstancesOptions {
  /** Items per list call; the cloud caps it at 500. */
  readonly pageSize?: number;
  /** findByName follows at most this many pages of a name query before calling the answer suspect. */
  readonly maxNamePages?: number;
}

const DEFAULT_PAGE_SIZE = 500;
const DEFAULT_MAX_NAME_PAGES = 5;

export class SimulatedInstances implements Instances {
  private readonly pageSize: number;
  private readonly maxNamePages: number;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly client: SimulatedClient,
    opts: SimulatedInstancesOptions = {},
  ) {
    this.pageSize = opts.pageSize ?? DEFAULT_PAGE_SIZE;
    this.maxNamePages = opts.maxNamePages ?? DEFAULT_MAX_NAME_PAGES;
  }

  /** The id, only for `simulated://<region>/<id>` in this account's region. */
  parseProviderID(providerID: string): string | undefined {
    const parts = parseProviderIDParts(providerID);
    return parts !== undefined && parts.region === this.ctx.account.region ? parts.id : undefined;
  }

  async getByProviderID(providerID: string, signal?: AbortSignal): Promise<InstanceMetadata> {
    const id = this.parseProviderID(providerID);
    if (id === undefined) {
      // Not our scheme, or another region: nothing this account may look up. Not
      // InstanceNotFoundError (that would justify deleting a node on the strength of a
      // providerID we never asked the cloud about); ForbiddenError is a refusal, not retried.
      throw new ForbiddenError(`providerID ${JSON.stringify(providerID)} is not in account scope`);
    }
    const errCtx = (): ErrorContext => ({
      lookup: { kind: "get", id, providerID },
      nowMs: this.ctx.clock.now(),
    });
    return this.ctx.call(OPS.get, async (callSignal) => {
      let body: unknown;
      try {
        body = await this.client.getInstance(id, signals(callSignal, signal));
      } catch (err) {
        throw toContractError(err, errCtx());
      }
      const wire = parseWireInstance(body);
      if (wire.id !== id)
        throw new SuspectAnswerError(`asked for instance ${id}, the cloud answered ${wire.id}`);
      this.checkRegion(wire);
      return toInstanceMetadata(wire);
    });
  }

  /**
   * A name query is a direct question: every instance of that name, whoever it belongs to
   * (the hub picks by the cluster's scope). Follows pages, since instances hidden from the API
   * (terminated) may fill a page; an answer naming another instance is suspect.
   */
  async findByName(name: string, signal?: AbortSignal): Promise<readonly InstanceMetadata[]> {
    const matches: InstanceMetadata[] = [];
    let pageToken: string | undefined;
    for (let page = 0; ; page++) {
      if (page >= this.maxNamePages) {
        throw new SuspectAnswerError(`name query ${JSON.stringify(name)} still had pages after ${page}`);
      }
      const list = await this.listCall(OPS.getByName, { name, pageSize: this.pageSize, pageToken }, signal);
      for (const wire of list.instances) {
        if (wire.name !== name) {
          throw new SuspectAnswerError(
            `name query ${JSON.stringify(name)} answered instance named ${wire.name}`,
          );
        }
        matches.push(toInstanceMetadata(wire));
      }
      pageToken = list.next_page_token;
      if (pageToken === undefined) break;
    }
    return matches;
  }

  async listPage(pageToken: string | undefined, signal?: AbortSignal): Promise<InstanceListPage> {
    const list = await this.listCall(OPS.list, { pageSize: this.pageSize, pageToken }, signal);
    const instances = list.instances.map(toInstanceMetadata);
    return list.next_page_token === undefined
      ? { instances }
      : { instances, nextPageToken: list.next_page_token };
  }

  private listCall(
    op: string,
    query: { name?: string; pageSize: number; pageToken: string | undefined },
    signal: AbortSignal | undefined,
  ) {
    return this.ctx.call(op, async (callSignal) => {
      let body: unknown;
      try {
        body = await this.client.listInstances(
          {
            pageSize: query.pageSize,
            ...(query.name !== undefined && { name: query.name }),
            ...(query.pageToken !== undefined && { pageToken: query.pageToken }),
          },
          signals(callSignal, signal),
        );
      } catch (err) {
        throw toContractError(err, { lookup: { kind: "list" }, nowMs: this.ctx.clock.now() });
      }
      const list = parseWireInstanceList(body);
      for (const wire of list.instances) this.checkRegion(wire);
      return list;
    });
  }

  private checkRegion(wire: WireInstance): void {
    if (wire.region !== this.ctx.account.region) {
      throw new SuspectAnswerError(
        `asked region ${this.ctx.account.region}, the cloud answered instance ${wire.id} in ${wire.region}`,
      );
    }
  }
}

function signals(callSignal: AbortSignal, callerSignal: AbortSignal | undefined): AbortSignal[] {
  return callerSignal === undefined ? [callSignal] : [callSignal, callerSignal];
}
