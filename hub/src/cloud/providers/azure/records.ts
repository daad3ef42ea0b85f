/**
 * What the hub records in a cluster's load balancer's tags, the one place Azure gives it (the
 * frontends, rules and probes inside take no tags): the owning cluster, every Service the hub
 * put a frontend in (its uid, with the digest of the spec the cloud was last made to match), and
 * the digest of the backends the shared pool was last written with. A Service's record is
 * written in the same PUT as its frontend, so no crash leaves a frontend without its owner mark.
 *
 * ARM takes at most 50 tags per resource, values of at most 256 characters, and no `<>%&\?/` in
 * tag names ("Use tags to organize your Azure resources", Limitations): the Services are packed
 * several to a tag (`fleet-ccm-services-<n>`: `<uid>=<spec digest>` separated by spaces). When
 * the tags the load balancer has left cannot hold them all, the spec digests go first (a
 * restarted hub then ensures those Services once); the records of 152 Services
 * fit beside ten of a user's tags, their uids alone 228.
 */

/** Azure's tag limits (Microsoft.Resources tags). */
export const MAX_TAGS = 50;
export const MAX_TAG_VALUE = 256;

/** Owner tags, in the names Azure allows (no `/`). */
export const TAG_CLUSTER = "fleet-ccm-cluster";
export const TAG_SERVICE_UID = "fleet-ccm-service-uid";
/** The backends digest of the load balancer's pool (the cluster's backend set, shared by its Services). */
export const TAG_BACKENDS = "fleet-ccm-backends";
const SERVICES_PREFIX = "fleet-ccm-services-";

export type Tags = Readonly<Record<string, string>>;

/** Service uid → the spec digest recorded for it (undefined: none yet). */
export type ServiceRecords = ReadonlyMap<string, string | undefined>;

export function readServices(tags: Tags | undefined): Map<string, string | undefined> {
  const out = new Map<string, string | undefined>();
  for (const [k, v] of Object.entries(tags ?? {})) {
    if (!k.startsWith(SERVICES_PREFIX)) continue;
    for (const entry of v.split(" ")) {
      if (entry === "") continue;
      const eq = entry.indexOf("=");
      if (eq < 0) out.set(entry, undefined);
      else out.set(entry.slice(0, eq), entry.slice(eq + 1) || undefined);
    }
  }
  return out;
}

/** The tags with the Services' records replaced by `services`, packed as ARM's limits allow. */
export function withServices(tags: Tags | undefined, services: ServiceRecords): Record<string, string> {
  const other = Object.fromEntries(
    Object.entries(tags ?? {}).filter(([k]) => !k.startsWith(SERVICES_PREFIX)),
  );
  const room = MAX_TAGS - Object.keys(other).length;
  const uids = [...services.keys()].sort();
  const full = pack(uids.map((u) => (services.get(u) === undefined ? u : `${u}=${services.get(u)}`)));
  const values = full.length <= room ? full : pack(uids).slice(0, Math.max(0, room));
  values.forEach((v, i) => {
    other[`${SERVICES_PREFIX}${i}`] = v;
  });
  return other;
}

function pack(entries: readonly string[]): string[] {
  const out: string[] = [];
  let cur = "";
  for (const e of entries) {
    if (cur !== "" && cur.length + 1 + e.length > MAX_TAG_VALUE) {
      out.push(cur);
      cur = "";
    }
    cur = cur === "" ? e : `${cur} ${e}`;
  }
  if (cur !== "") out.push(cur);
  return out;
}
