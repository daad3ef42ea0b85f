import { ApplyOutcome, type ApplyResult, type NodeDesired, ObjectKind } from "@fleet-ccm/proto";
import type { V1Node, V1NodeAddress, V1NodeCondition, V1Taint } from "@kubernetes/client-node";
import type { KubeClient } from "../kube-client.js";
import { apiFailure } from "./errors.js";
import { applyGuarded, applyResult, type Target } from "./guarded.js";

type Body = Record<string, unknown>;

function sameAddresses(
  a: readonly V1NodeAddress[],
  b: readonly { type: string; address: string }[],
): boolean {
  return a.length === b.length && a.every((x, i) => x.type === b[i]?.type && x.address === b[i]?.address);
}

/** The status part of the desired state, as a merge patch, or null when the node already has it. */
export function statusPatch(node: V1Node, d: NodeDesired): Body | null {
  const status: Body = {};
  const current = node.status?.addresses ?? [];
  if (d.addresses !== undefined && !sameAddresses(current, d.addresses.items))
    status["addresses"] = d.addresses.items.map((a) => ({ type: a.type, address: a.address }));
  if (d.conditions.length > 0) {
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const conds: V1NodeCondition[] = [...(node.status?.conditions ?? [])];
    let changed = false;
    for (const want of d.conditions) {
      const i = conds.findIndex((c) => c.type === want.type);
      const have = i < 0 ? undefined : conds[i];
      if (have && have.status === want.status && have.reason === want.reason && have.message === want.message)
        continue;
      changed = true;
      const next = {
        type: want.type,
        status: want.status,
        reason: want.reason,
        message: want.message,
        lastHeartbeatTime: now,
        lastTransitionTime: have && have.status === want.status ? have.lastTransitionTime : now,
      } as unknown as V1NodeCondition;
      if (i < 0) conds.push(next);
      else conds[i] = next;
    }
    if (changed) status["conditions"] = conds;
  }
  if (Object.keys(status).length === 0) return null;
  return { metadata: preconditions(node), status };
}

/** providerID, pod CIDRs, labels and taints as a merge patch, or null when the node already has them. */
export function specPatch(node: V1Node, d: NodeDesired): Body | null {
  const metadata: Body = preconditions(node);
  const spec: Body = {};
  const labels: Record<string, string> = {};
  const have = node.metadata?.labels ?? {};
  for (const [k, v] of Object.entries(d.labels)) if (have[k] !== v) labels[k] = v;
  if (Object.keys(labels).length > 0) metadata["labels"] = labels;
  // providerID is set only from empty; the API server refuses any other change.
  if (d.providerId !== "" && (node.spec?.providerID ?? "") === "") spec["providerID"] = d.providerId;
  // Pod ranges likewise, and only onto a node that has none: never a second allocator's choice.
  if (d.podCidrs.length > 0 && !hasPodCidrs(node)) {
    spec["podCIDR"] = d.podCidrs[0];
    spec["podCIDRs"] = [...d.podCidrs];
  }
  const taints = desiredTaints(node.spec?.taints ?? [], d);
  if (taints !== null) spec["taints"] = taints;
  if (Object.keys(spec).length === 0 && metadata["labels"] === undefined) return null;
  const body: Body = { metadata };
  if (Object.keys(spec).length > 0) body["spec"] = spec;
  return body;
}

function hasPodCidrs(node: V1Node): boolean {
  return (node.spec?.podCIDR ?? "") !== "" || (node.spec?.podCIDRs ?? []).length > 0;
}

function desiredTaints(current: readonly V1Taint[], d: NodeDesired): V1Taint[] | null {
  const remove = new Set(d.removeTaintKeys);
  const out = current
    .filter((t) => !remove.has(t.key))
    .map((t) => {
      const copy: V1Taint = { key: t.key, effect: t.effect };
      if (t.value !== undefined) copy.value = t.value;
      if (t.timeAdded !== undefined) copy.timeAdded = t.timeAdded;
      return copy;
    });
  let changed = out.length !== current.length;
  for (const add of d.addTaints) {
    const i = out.findIndex((t) => t.key === add.key && t.effect === add.effect);
    const want: V1Taint = { key: add.key, effect: add.effect };
    if (add.value !== "") want.value = add.value;
    if (i < 0) {
      out.push(want);
      changed = true;
    } else if ((out[i]?.value ?? "") !== add.value) {
      out[i] = want;
      changed = true;
    }
  }
  return changed ? out : null;
}

/** uid and resourceVersion in the body: the server refuses the patch if the object changed or was replaced. */
function preconditions(node: V1Node): Body {
  return { uid: node.metadata?.uid, resourceVersion: node.metadata?.resourceVersion };
}

/**
 * Pod CIDRs received before the current hub stream began are not applied: the hub that rebuilt
 * its allocation from this stream's snapshot (a restart, another replica) may have given them to
 * another node. STALE: a hub that still wants them publishes them again.
 */
export function podCidrsFromEarlierStream(d: NodeDesired): ApplyResult {
  return applyResult(
    { kind: ObjectKind.OBJECT_KIND_NODE, namespace: "", name: d.name, uid: d.uid, generation: d.generation },
    ApplyOutcome.APPLY_OUTCOME_STALE,
    {
      reason: "EarlierStream",
      message: `pod CIDRs ${d.podCidrs.join(",")} were received before the current hub stream; not applied`,
    },
  );
}

/**
 * Applies one desired node state with a uid precondition: a patch meant for a node that was
 * deleted and recreated under the same name never lands on the new one. `wrote` is called after
 * each write that landed (each comes back as a watch event).
 */
export async function applyNodeDesired(
  api: KubeClient,
  d: NodeDesired,
  cached: V1Node | undefined,
  wrote: () => void = () => undefined,
): Promise<ApplyResult> {
  const target: Target = {
    kind: ObjectKind.OBJECT_KIND_NODE,
    namespace: "",
    name: d.name,
    uid: d.uid,
    generation: d.generation,
  };
  if (d.delete) {
    try {
      await api.deleteNode(d.name, d.uid);
      return applyResult(target, ApplyOutcome.APPLY_OUTCOME_APPLIED);
    } catch (err) {
      const f = apiFailure(err);
      const gone = f.code === 404 || f.code === 409;
      return applyResult(
        target,
        gone ? ApplyOutcome.APPLY_OUTCOME_STALE : ApplyOutcome.APPLY_OUTCOME_FAILED,
        f,
      );
    }
  }
  return applyGuarded(
    target,
    cached,
    () => api.readNode(d.name),
    async (node) => {
      // Addresses first, so the node never loses its taint before it has its addresses.
      const sp = statusPatch(node, d);
      let current = node;
      if (sp !== null) {
        current = await api.patchNodeStatus(d.name, sp);
        wrote();
      }
      const mp = specPatch(current, d);
      if (mp === null) return;
      await api.patchNode(d.name, mp);
      wrote();
    },
  );
}

/**
 * Which fields of a Node the desired state changes, as the dispatcher's slot: each hub
 * controller sends only its own (node-init, node-ipam, routes, lifecycle), so a newer state
 * replaces a waiting one only where it changes the same fields.
 */
export function nodeDesiredSlot(d: NodeDesired): string {
  if (d.delete) return "delete";
  let slot = d.providerId === "" ? "" : "providerId,";
  for (const _ in d.labels) {
    slot += "labels,";
    break;
  }
  if (d.addresses !== undefined) slot += "addresses,";
  if (d.addTaints.length > 0) slot += "addTaints,";
  if (d.removeTaintKeys.length > 0) slot += "removeTaints,";
  if (d.conditions.length > 0) slot += "conditions,";
  if (d.podCidrs.length > 0) slot += "podCidrs,";
  return slot;
}
