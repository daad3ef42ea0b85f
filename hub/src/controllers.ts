/**
 * `--controllers` with the upstream cloud-controller-manager semantics
 * (kubernetes/controller-manager app/helper.go): default ["*"]; for each
 * controller the first entry equal to its name enables it, the first equal to
 * "-name" disables it; otherwise it runs iff "*" is present. Aliases are
 * rewritten to canonical names; unknown names are an error.
 */

export const CONTROLLERS = {
  "cloud-node-controller": "cloud-node",
  "cloud-node-lifecycle-controller": "cloud-node-lifecycle",
  "service-lb-controller": "service",
  "node-route-controller": "route",
  "node-ipam-controller": "nodeipam",
  "persistentvolume-label-controller": "persistentvolume-label",
} as const;

export type ControllerName = keyof typeof CONTROLLERS;

const ALIASES: ReadonlyMap<string, ControllerName> = new Map(
  (Object.entries(CONTROLLERS) as [ControllerName, string][]).map(([name, alias]) => [alias, name]),
);

function canonical(name: string): ControllerName | undefined {
  if (name in CONTROLLERS) return name as ControllerName;
  return ALIASES.get(name);
}

/** Validates and canonicalizes a list; throws with the upstream wording for unknown names. */
export function parseControllerList(list: readonly string[]): string[] {
  return list.map((raw) => {
    const entry = raw.trim();
    if (entry === "*") return entry;
    const negated = entry.startsWith("-");
    const name = canonical(negated ? entry.slice(1) : entry);
    if (name === undefined) {
      const known = Object.keys(CONTROLLERS).join(", ");
      throw new Error(`"${entry}" is not in the list of known controllers (${known}, or their short names)`);
    }
    return negated ? `-${name}` : name;
  });
}

/** Whether `controller` runs under a canonicalized list. */
export function isControllerEnabled(list: readonly string[], controller: ControllerName): boolean {
  for (const entry of list) {
    if (entry === controller) return true;
    if (entry === `-${controller}`) return false;
  }
  return list.includes("*");
}
