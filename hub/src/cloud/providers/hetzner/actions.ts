/**
 * Hetzner's actions: every mutation but labels and deletes answers an action, which the
 * provider polls once (`GET /actions/{id}`) right after starting it. Still running: the call
 * answers in-progress to the hub and ends; the next call reads the resource's actions from the
 * cloud (never from memory: another replica may make it) before changing anything. No loop
 * ever waits on an action.
 */
import { SuspectAnswerError } from "../../errors.js";
import { type InProgress, inProgress } from "../../provider.js";
import type { HetznerClient } from "./client.js";
import type { WireAction } from "./wire.js";

export const ACTION_OPS = { get: "actions.get" } as const;

/** How soon to look again at a running action: Hetzner's load-balancer and route actions take about a second. */
export const ACTION_RETRY_MS = 1_000;

export function checkAction(body: unknown): WireAction {
  const a = (body as { action?: Partial<WireAction> } | null)?.action;
  if (
    typeof a !== "object" ||
    a === null ||
    !Number.isSafeInteger(a.id) ||
    typeof a.command !== "string" ||
    (a.status !== "running" && a.status !== "success" && a.status !== "error")
  )
    throw new SuspectAnswerError("Hetzner Cloud API answered something that is not an action");
  return { ...a, error: a.error ?? null } as WireAction;
}

export type ActionOutcome =
  | { readonly kind: "done" }
  | { readonly kind: "failed"; readonly action: WireAction }
  | InProgress;

/** The action an answer carries, polled once if it still runs. */
export async function pollOnce(
  client: HetznerClient,
  answer: unknown,
  what: string,
  signal?: AbortSignal,
): Promise<ActionOutcome> {
  let a = checkAction(answer);
  if (a.status === "running") a = checkAction(await client.get(ACTION_OPS.get, `/actions/${a.id}`, signal));
  if (a.status === "running")
    return inProgress(ACTION_RETRY_MS, `${what}: action ${a.id} (${a.command}) running`);
  if (a.status === "error") return { kind: "failed", action: a };
  return { kind: "done" };
}

export function describeFailure(a: WireAction): string {
  return `action ${a.id} (${a.command}) ended in error${a.error === null ? "" : `: ${a.error.code}: ${a.error.message}`}`;
}

/** A resource's latest actions (one page, newest first), and the in-progress answer while one runs. */
export interface RecentActions {
  readonly items: readonly WireAction[];
  readonly running: InProgress | undefined;
}

/**
 * The actions of `path` (e.g. `/load_balancers/7`), newest first, as the cloud holds them:
 * whoever started them (another replica, the vendor CCM), a running one is "in progress".
 * `runningOnly` asks the cloud for running ones alone (when the others do not matter).
 */
export async function recentActions(
  client: HetznerClient,
  op: string,
  path: string,
  what: string,
  signal?: AbortSignal,
  runningOnly = false,
): Promise<RecentActions> {
  const page = await client.page<WireAction>(
    op,
    `${path}/actions`,
    "actions",
    1,
    signal,
    runningOnly ? { status: ["running"] } : { sort: ["id:desc"] },
  );
  const a = page.items.find((x) => x.status === "running");
  return {
    items: page.items,
    running:
      a === undefined
        ? undefined
        : inProgress(ACTION_RETRY_MS, `${what}: action ${a.id} (${a.command}) running`),
  };
}
