/**
 * The smallest RBAC authorizer: one user, the PolicyRules of its (Cluster)Roles, checked as
 * kube-apiserver's RBAC authorizer does for resource requests (apiGroups, resources with
 * subresources as "resource/sub", verbs, resourceNames; "*" matches anything). Tests run an
 * agent under the ClusterRole it ships with, so a request outside it fails here as in a cluster.
 */
export interface PolicyRule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly verbs: readonly string[];
  readonly resourceNames?: readonly string[];
}

export interface RbacOptions {
  /** The user every request is made as, e.g. system:serviceaccount:fleet-ccm-system:fleet-ccm-agent. */
  readonly user: string;
  readonly rules: readonly PolicyRule[];
}

export interface ResourceAttributes {
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  /** "" or e.g. "status". */
  readonly subresource: string;
  readonly name: string | undefined;
}

const has = (list: readonly string[] | undefined, v: string) =>
  list !== undefined && (list.includes("*") || list.includes(v));

export function allows(rules: readonly PolicyRule[], a: ResourceAttributes): boolean {
  const resource = a.subresource === "" ? a.resource : `${a.resource}/${a.subresource}`;
  return rules.some(
    (r) =>
      has(r.verbs, a.verb) &&
      has(r.apiGroups, a.group) &&
      (has(r.resources, resource) ||
        (a.subresource !== "" && (r.resources ?? []).includes(`${a.resource}/*`))) &&
      (r.resourceNames === undefined ||
        r.resourceNames.length === 0 ||
        (a.name !== undefined && r.resourceNames.includes(a.name))),
  );
}

/** The request verb of an HTTP method on a resource path (apiserver's RequestInfo). */
export function requestVerb(method: string, named: boolean, watch: boolean): string {
  switch (method) {
    case "GET":
    case "HEAD":
      return watch ? "watch" : named ? "get" : "list";
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return named ? "delete" : "deletecollection";
    default:
      return method.toLowerCase();
  }
}
