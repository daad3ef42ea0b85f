#!/usr/bin/env node
/**
 * Cuts the vendor-spec subsets in sim/fixtures/ from the full vendor files:
 *
 *   node scripts/vendor-specs.mjs <path to shared/specs> [--linode <spec file>] [--linode-licence <file>]
 *
 * `--linode` cuts the Linode subset from another revision of Linode's OpenAPI document than the
 * one in shared/specs (YAML as linode/linode-api-docs published it, or JSON as
 * linode/linode-api-openapi publishes it, `openapi.json`); the subset is named after the
 * document's `info.version`, in the source's own format. `--linode-licence` copies that
 * revision's licence file to sim/fixtures/linode/LICENSE-Apache-2.0.txt.
 *
 * Each subset keeps the operations the fakes in sim/ serve (and the tests check) and everything
 * they reference, with the source's own text: kept lines are copied byte for byte, dropped
 * operations, shapes and schemas are whole blocks left out. The result is parsed back and must
 * equal the same subset taken from the parsed source, or nothing is written. An operation named
 * below that the source lacks fails the run. The fakes check at start that the subset holds
 * every operation they serve (sim/src/aws/fake.ts, sim/src/linode/fake.ts,
 * sim/src/digitalocean/fake.ts), so a new handler without its operation here fails its tests,
 * naming this script. DigitalOcean's document is many files joined by relative `$ref`s: its
 * entry file is cut the same way, and every file the kept operations reach is copied unchanged
 * to the same relative place.
 *
 * DigitalOcean's certificates operations (upstream's certificate-name lookup and Let's Encrypt
 * check) are not in shared/specs/digitalocean/, whose copy of digitalocean/openapi holds only the
 * droplets and load-balancer folders: `--digitalocean-openapi <checkout>` copies their files
 * unchanged from a checkout of digitalocean/openapi at the same revision (its
 * DigitalOcean-public.v2.yaml must equal shared/specs' byte for byte, and name these files at
 * these paths). Without it the committed copies are kept and checked against their sha256 here;
 * sim/src/digitalocean/spec.ts adds their two paths to the joined document.
 *
 * Cinder's api-ref (the page of volume operations, its parameters and two response samples) is
 * not in shared/specs either: `--cinder <checkout>` copies those files unchanged from a checkout
 * of openstack/cinder; without it the committed copies are checked against their sha256 here.
 *
 * Re-running on the same source writes the same files; sim/fixtures/README.md records the
 * source, commit and sha256 of each file.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "..", "sim", "fixtures");

/** The operations sim/src/aws/{ec2,elb,elbv2}.ts handle (the provider calls no others). */
const SUBSETS = [
  {
    source: "aws/ec2-2016-11-15/service-2.json",
    target: "aws/ec2-2016-11-15/service-2.ccm-subset.json",
    kind: "botocore",
    operations: [
      "AuthorizeSecurityGroupIngress",
      "CreateRoute",
      "CreateSecurityGroup",
      "CreateTags",
      "DeleteRoute",
      "DeleteSecurityGroup",
      "DeleteTags",
      "DescribeAddresses",
      "DescribeAvailabilityZones",
      "DescribeInstances",
      "DescribeRouteTables",
      "DescribeVolumes",
      "DescribeSecurityGroups",
      "DescribeSubnets",
      "DescribeVpcs",
      "ModifyInstanceAttribute",
      "RevokeSecurityGroupIngress",
    ],
  },
  {
    source: "aws/elb-2012-06-01/service-2.json",
    target: "aws/elb-2012-06-01/service-2.ccm-subset.json",
    kind: "botocore",
    operations: [
      "AddTags",
      "ApplySecurityGroupsToLoadBalancer",
      "ConfigureHealthCheck",
      "CreateLoadBalancer",
      "CreateLoadBalancerListeners",
      "CreateLoadBalancerPolicy",
      "DeleteLoadBalancer",
      "DeleteLoadBalancerListeners",
      "DeregisterInstancesFromLoadBalancer",
      "DescribeLoadBalancerAttributes",
      "DescribeLoadBalancers",
      "DescribeTags",
      "ModifyLoadBalancerAttributes",
      "RegisterInstancesWithLoadBalancer",
      "RemoveTags",
      "SetLoadBalancerPoliciesForBackendServer",
    ],
  },
  {
    source: "aws/elbv2-2015-12-01/service-2.json",
    target: "aws/elbv2-2015-12-01/service-2.ccm-subset.json",
    kind: "botocore",
    operations: [
      "AddTags",
      "CreateListener",
      "CreateLoadBalancer",
      "CreateTargetGroup",
      "DeleteListener",
      "DeleteLoadBalancer",
      "DeleteTargetGroup",
      "DeregisterTargets",
      "DescribeListeners",
      "DescribeLoadBalancerAttributes",
      "DescribeLoadBalancers",
      "DescribeTags",
      "DescribeTargetGroupAttributes",
      "DescribeTargetGroups",
      "DescribeTargetHealth",
      "ModifyListener",
      "ModifyLoadBalancerAttributes",
      "ModifyTargetGroup",
      "ModifyTargetGroupAttributes",
      "RegisterTargets",
      "RemoveTags",
      "SetSecurityGroups",
    ],
  },
  {
    // The routes of sim/src/linode/fake.ts (its hand-added operations, spec-additions.ts, are
    // built from get-linode-instance, post-node-balancer and delete-node-balancer), and
    // post-linode-instance, which sim/src/fake-kit/openapi.test.ts checks bodies against.
    // The default source; `--linode` names another. The target follows the document's version.
    source: "linode/linode-openapi-v4.189.0.yaml",
    target: (version, ext) => `linode/linode-openapi-v${version}.ccm-subset.${ext}`,
    kind: "openapi",
    operations: [
      "get-linode-instances",
      "post-linode-instance",
      "get-volumes",
      "get-volume",
      "get-linode-instance",
      "put-linode-instance",
      "get-linode-ips",
      "get-linode-configs",
      "put-linode-config-interface",
      "get-node-balancers",
      "post-node-balancer",
      "get-node-balancer",
      "put-node-balancer",
      "delete-node-balancer",
      "get-node-balancer-configs",
      "post-node-balancer-config",
      "get-node-balancer-config",
      "put-node-balancer-config",
      "delete-node-balancer-config",
      "post-rebuild-node-balancer-config",
      "get-node-balancer-config-nodes",
      "get-node-balancer-firewalls",
      "get-firewalls",
      "post-firewalls",
      "get-firewall",
      "put-firewall",
      "delete-firewall",
      "put-firewall-rules",
      "get-firewall-devices",
      "post-firewall-device",
      "delete-firewall-device",
      "get-vpcs",
      "get-vpc",
      "get-vpc-subnets",
      "get-vpc-ips",
    ],
  },
  {
    // The routes of sim/src/digitalocean/fake.ts. DigitalOcean's document is many files joined by
    // relative $refs: the entry file's kept operations are cut as above, and every file they
    // reach is copied unchanged to the same relative place (sim/fixtures/digitalocean/).
    source: "digitalocean/specification/DigitalOcean-public.v2.ccm-subset.yaml",
    target: "digitalocean/specification/DigitalOcean-public.v2.ccm-subset.yaml",
    kind: "openapi-files",
    licence: "digitalocean/LICENSE",
    operations: [
      "droplets_list",
      "droplets_get",
      "loadBalancers_create",
      "loadBalancers_list",
      "loadBalancers_get",
      "loadBalancers_update",
      "loadBalancers_delete",
    ],
  },
  {
    // The routes of sim/src/hetzner/fake.ts. The source is MaximilianKoestler/hcloud-openapi's
    // conversion of Hetzner's published cloud.spec.json (not the vendor's own file): where it
    // disagrees with docs.hetzner.cloud, the documentation wins (sim/fixtures/README.md).
    source: "hetzner/unofficial-MaximilianKoestler-hcloud-openapi/hcloud.json",
    target: "hetzner/hcloud-openapi-5134cbc.ccm-subset.json",
    kind: "openapi",
    operations: [
      "get_action",
      "list_servers",
      "get_server",
      "list_load_balancers",
      "create_load_balancer",
      "get_load_balancer",
      "replace_load_balancer",
      "delete_load_balancer",
      "list_actions_for_load_balancer",
      "add_service",
      "update_service",
      "delete_service",
      "add_target",
      "remove_target",
      "attach_load_balancer_to_network",
      "change_algorithm",
      "change_type_of_load_balancer",
      "enable_public_interface_of_load_balancer",
      "disable_public_interface_of_load_balancer",
      "change_load_balancer_protection",
      "change_reverse_dns_entry_for_this_load_balancer",
      "list_networks",
      "get_network",
      "replace_network",
      "list_actions_for_network",
      "add_route_to_network",
      "delete_route_from_network",
      "list_certificates",
      "create_certificate",
      "get_certificate",
      "replace_certificate",
      "delete_certificate",
      "list_actions_for_certificate",
      "list_volumes",
      "get_volume",
    ],
  },
  // The routes of sim/src/openstack/fake.ts: gtema/openstack-openapi's generated OpenAPI of
  // Keystone, Nova, Neutron and Octavia (archived; its generator moved to opendev's
  // openstack/codegenerator). Where it disagrees with the projects' api-ref, the api-ref wins
  // (sim/fixtures/README.md).
  {
    source: "openstack/openapi-gtema/specs/identity/v3.14.yaml",
    target: "openstack/identity-v3.14.ccm-subset.yaml",
    kind: "openapi",
    operations: ["auth/tokens:post"],
  },
  {
    source: "openstack/openapi-gtema/specs/compute/v2.96.yaml",
    target: "openstack/compute-v2.96.ccm-subset.yaml",
    kind: "openapi",
    operations: ["servers/detail:get", "servers/id:get"],
  },
  {
    source: "openstack/openapi-gtema/specs/network/v2.yaml",
    target: "openstack/network-v2.ccm-subset.yaml",
    kind: "openapi",
    operations: [
      "ports:get",
      "ports/port_id:put",
      "ports/port_id/add_allowed_address_pairs:put",
      "floatingips:get",
      "floatingips:post",
      "floatingips/id:get",
      "floatingips/id:put",
      "floatingips/id:delete",
      "routers/id:get",
      "routers/id/add_extraroutes:put",
      "routers/id/remove_extraroutes:put",
      "routers/router_id/tags/id:put",
      "routers/router_id/tags/id:delete",
      "ports/port_id/tags/id:put",
      "ports/port_id/tags/id:delete",
      "subnets/subnet_id:get",
      "security-groups:get",
      "security-groups:post",
      "security-groups/id:delete",
      "security-groups/security_group_id/tags/id:put",
      "security-group-rules:get",
      "security-group-rules:post",
      "security-group-rules/id:delete",
    ],
  },
  {
    source: "openstack/openapi-gtema/specs/load-balancing/v2.yaml",
    target: "openstack/load-balancing-v2.ccm-subset.yaml",
    kind: "openapi",
    operations: [
      "lbaas/loadbalancers:get",
      "lbaas/loadbalancers:post",
      "lbaas/loadbalancers/loadbalancer_id:get",
      "lbaas/loadbalancers/loadbalancer_id:put",
      "lbaas/loadbalancers/loadbalancer_id:delete",
      "lbaas/listeners:get",
      "lbaas/listeners:post",
      "lbaas/listeners/listener_id:put",
      "lbaas/listeners/listener_id:delete",
      "lbaas/pools:get",
      "lbaas/pools:post",
      "lbaas/pools/pool_id:put",
      "lbaas/pools/pool_id:delete",
      "lbaas/pools/pool_id/members:get",
      "lbaas/pools/pool_id/members:put",
      "lbaas/healthmonitors:get",
      "lbaas/healthmonitors:post",
      "lbaas/healthmonitors/healthmonitor_id:put",
      "lbaas/healthmonitors/healthmonitor_id:delete",
    ],
  },
];

/**
 * The Compute Engine v1 methods sim/src/gcp/fake.ts serves (the gcp provider calls no others),
 * by resource of the discovery document; every schema they reach is kept, the rest dropped.
 */
const GCP_METHODS = {
  instances: ["get", "list", "aggregatedList"],
  disks: ["get", "list", "aggregatedList"],
  regionDisks: ["get", "list"],
  zones: ["list"],
  addresses: ["get", "insert", "delete", "list"],
  firewalls: ["get", "insert", "patch", "delete", "list"],
  httpHealthChecks: ["get", "insert", "update", "delete"],
  healthChecks: ["get", "insert", "update", "delete"],
  regionHealthChecks: ["get", "insert", "update", "delete"],
  targetPools: [
    "get",
    "insert",
    "delete",
    "addInstance",
    "removeInstance",
    "addHealthCheck",
    "removeHealthCheck",
    "list",
  ],
  forwardingRules: ["get", "insert", "delete", "list", "setLabels"],
  regionBackendServices: ["get", "insert", "update", "delete", "list"],
  instanceGroups: ["get", "insert", "delete", "list", "addInstances", "removeInstances", "listInstances"],
  subnetworks: ["get", "list"],
  routes: ["get", "list", "insert", "delete"],
  zoneOperations: ["get", "wait", "list", "delete"],
  regionOperations: ["get", "wait", "list", "delete"],
  globalOperations: ["get", "wait", "list", "delete", "aggregatedList"],
};
SUBSETS.push({
  source: "gcp/compute.v1.json",
  target: "gcp/compute.v1.ccm-subset.json",
  kind: "discovery",
  operations: GCP_METHODS,
});

/** Files copied unchanged beside the subsets. */
const COPIES = ["aws/LICENSE-botocore.txt", "aws/NOTICE-botocore", "gcp/LICENSE-googleapis"];
/** Files copied under another name: source → target. */
const RENAMED_COPIES = {
  "hetzner/unofficial-MaximilianKoestler-hcloud-openapi/LICENSE": "hetzner/LICENSE-MIT-hcloud-openapi.txt",
  "openstack/openapi-gtema/LICENSE": "openstack/LICENSE-Apache-2.0-openapi-gtema.txt",
};

/**
 * Azure's swagger files (Swagger 2.0, Azure/azure-rest-api-specs) are many files joined by
 * relative `$ref`s between them: every file the entry files reach (examples left out: the fake
 * never reads them) is copied unchanged to the same relative place under sim/fixtures/azure/,
 * with the repository's licence. sim/src/azure/swagger.ts joins them into one document.
 */
const AZURE = {
  entries: [
    "specification/network/resource-manager/Microsoft.Network/stable/2024-01-01/loadBalancer.json",
    "specification/network/resource-manager/Microsoft.Network/stable/2024-01-01/publicIpAddress.json",
    "specification/network/resource-manager/Microsoft.Network/stable/2024-01-01/networkSecurityGroup.json",
    "specification/network/resource-manager/Microsoft.Network/stable/2024-01-01/routeTable.json",
    "specification/network/resource-manager/Microsoft.Network/stable/2024-01-01/networkInterface.json",
    "specification/network/resource-manager/Microsoft.Network/stable/2024-01-01/virtualNetwork.json",
    "specification/compute/resource-manager/Microsoft.Compute/ComputeRP/stable/2024-07-01/virtualMachine.json",
    "specification/compute/resource-manager/Microsoft.Compute/ComputeRP/stable/2024-07-01/virtualMachineScaleSet.json",
  ],
  licence: "LICENSE",
};

function azureRefs(node, into) {
  if (Array.isArray(node)) for (const v of node) azureRefs(v, into);
  else if (node !== null && typeof node === "object")
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string") {
        const file = v.split("#")[0];
        if (file !== "" && !file.includes("/examples/")) into.add(file);
      } else if (k !== "x-ms-examples") azureRefs(v, into);
    }
}

function azureFiles(root) {
  const base = join(root, "azure");
  const seen = new Set();
  const queue = [...AZURE.entries];
  while (queue.length > 0) {
    const rel = queue.shift();
    if (seen.has(rel)) continue;
    const from = join(base, rel);
    if (!existsSync(from)) fail(`azure/${rel} not found (reached by a $ref)`);
    seen.add(rel);
    const refs = new Set();
    azureRefs(JSON.parse(readFileSync(from, "utf8")), refs);
    for (const ref of refs) queue.push(join(dirname(rel), ref).split("\\").join("/"));
  }
  let bytes = 0;
  for (const rel of [...seen].sort()) {
    const text = readFileSync(join(base, rel));
    const out = join(FIXTURES, "azure", rel);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, text);
    bytes += text.length;
    console.log(`azure/${rel}: copied, sha256 ${sha256(text)}`);
  }
  const licence = readFileSync(join(base, AZURE.licence));
  writeFileSync(join(FIXTURES, "azure", "LICENSE"), licence);
  console.log(
    `azure: ${seen.size} swagger files, ${bytes} bytes; azure/LICENSE copied, sha256 ${sha256(licence)}`,
  );
}

function fail(message) {
  console.error(`vendor-specs: ${message}`);
  process.exit(1);
}

const sha256 = (text) => createHash("sha256").update(text).digest("hex");
const indentOf = (line) => line.length - line.trimStart().length;

// ---- botocore JSON ---------------------------------------------------------------------------

/** Every shape `name` reaches through members, list members and map keys and values. */
function reachShapes(shapes, name, into) {
  if (into.has(name)) return;
  const shape = shapes[name];
  if (shape === undefined) fail(`shape ${name} is referenced but not defined`);
  into.add(name);
  const refs = [
    ...Object.values(shape.members ?? {}),
    ...[shape.member, shape.key, shape.value].filter(Boolean),
  ];
  for (const ref of refs) reachShapes(shapes, ref.shape, into);
}

/** The kept operations and shapes: the operations named, what they reach, and every error shape. */
function botocoreSubset(model, operations, file) {
  const missing = operations.filter((o) => model.operations[o] === undefined);
  if (missing.length > 0) fail(`${file} has no operation ${missing.join(", ")}`);
  const keptOps = new Set(operations);
  const keptShapes = new Set();
  for (const name of operations) {
    const op = model.operations[name];
    for (const ref of [op.input, op.output, ...(op.errors ?? [])].filter(Boolean))
      reachShapes(model.shapes, ref.shape, keptShapes);
  }
  // The checker reads every modeled error's code and status (AwsModel.errorStatus).
  for (const [name, shape] of Object.entries(model.shapes))
    if (shape.exception === true) reachShapes(model.shapes, name, keptShapes);
  return { keptOps, keptShapes };
}

/**
 * `text` with only the kept entries of the two-space-indented sections "operations" and
 * "shapes" (botocore writes one entry per block at four spaces, closing at two).
 */
function cutBotocore(text, keep) {
  const lines = text.split("\n");
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const section = /^ {2}"(operations|shapes)":\{$/.exec(line)?.[1];
    if (section === undefined) {
      out.push(line);
      i++;
      continue;
    }
    out.push(line);
    i++;
    const entries = [];
    while (!/^ {2}\}/.test(lines[i])) {
      const name = /^ {4}"([^"]+)":/.exec(lines[i])?.[1];
      if (name === undefined) fail(`unexpected line ${i + 1} in ${section}: ${lines[i].slice(0, 80)}`);
      const block = [lines[i++]];
      while (indentOf(lines[i]) > 4 || /^ {4}[}\]]/.test(lines[i])) block.push(lines[i++]);
      if (keep[section].has(name)) entries.push(block);
    }
    entries.forEach((block, n) => {
      const last = block.length - 1;
      block[last] = block[last].replace(/,$/, "") + (n < entries.length - 1 ? "," : "");
      out.push(...block);
    });
  }
  return out.join("\n");
}

function botocore(text, spec) {
  const model = JSON.parse(text);
  const { keptOps, keptShapes } = botocoreSubset(model, spec.operations, spec.source);
  const expected = {
    ...model,
    operations: Object.fromEntries(Object.entries(model.operations).filter(([k]) => keptOps.has(k))),
    shapes: Object.fromEntries(Object.entries(model.shapes).filter(([k]) => keptShapes.has(k))),
  };
  const cut = cutBotocore(text, { operations: keptOps, shapes: keptShapes });
  const summary = `${keptOps.size} of ${Object.keys(model.operations).length} operations, ${keptShapes.size} of ${Object.keys(model.shapes).length} shapes`;
  return { cut, parsed: JSON.parse(cut), expected, summary };
}

// ---- OpenAPI YAML ----------------------------------------------------------------------------

const METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);

/** Every local `$ref` under `node`, followed through the document. */
function reachRefs(doc, node, into) {
  if (Array.isArray(node)) {
    for (const n of node) reachRefs(doc, n, into);
    return;
  }
  if (typeof node !== "object" || node === null) return;
  const ref = node.$ref;
  if (typeof ref === "string") {
    if (!ref.startsWith("#/")) fail(`only local $refs are supported: ${ref}`);
    if (!into.has(ref)) {
      into.add(ref);
      let target = doc;
      for (const part of ref.slice(2).split("/"))
        target = target?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
      if (target === undefined) fail(`unresolvable $ref ${ref}`);
      reachRefs(doc, target, into);
    }
  }
  for (const v of Object.values(node)) reachRefs(doc, v, into);
}

/** Which paths, methods, components and tags stay. */
function openapiSubset(doc, operations, file) {
  const byId = new Map();
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item))
      if (METHODS.has(method)) byId.set(op.operationId, { path, method });
  const missing = operations.filter((o) => !byId.has(o));
  if (missing.length > 0) fail(`${file} has no operation ${missing.join(", ")}`);
  const methods = new Map();
  for (const id of operations) {
    const { path, method } = byId.get(id);
    methods.set(path, new Set([...(methods.get(path) ?? []), method]));
  }
  const paths = {};
  for (const [path, item] of Object.entries(doc.paths)) {
    const kept = methods.get(path);
    if (kept === undefined) continue;
    paths[path] = Object.fromEntries(Object.entries(item).filter(([k]) => !METHODS.has(k) || kept.has(k)));
  }
  const refs = new Set();
  reachRefs(doc, paths, refs);
  const schemes = new Set();
  const tags = new Set();
  for (const item of Object.values(paths))
    for (const [k, op] of Object.entries(item)) {
      if (!METHODS.has(k)) continue;
      for (const req of op.security ?? doc.security ?? []) for (const s of Object.keys(req)) schemes.add(s);
      for (const t of op.tags ?? []) tags.add(t);
    }
  const components = {};
  for (const [kind, entries] of Object.entries(doc.components ?? {})) {
    const kept = Object.entries(entries).filter(
      ([name]) =>
        refs.has(`#/components/${kind}/${name}`) || (kind === "securitySchemes" && schemes.has(name)),
    );
    if (kept.length > 0) components[kind] = Object.fromEntries(kept);
  }
  return { paths, methods, components, tags };
}

/** Splits lines[from, to) into the entries of a block mapping (or, `list`, sequence) at `indent`. */
function entriesAt(lines, from, to, indent, list = false) {
  const starts = [];
  for (let i = from; i < to; i++) {
    const line = lines[i];
    if (line.trim() === "" || indentOf(line) !== indent) continue;
    if (line.slice(indent).startsWith("- ") === list) starts.push(i);
  }
  return starts.map((s, n) => ({ from: s, to: starts[n + 1] ?? to, key: keyOf(lines[s], indent) }));
}

function keyOf(line, indent) {
  const raw = /^(.+?):(?: |$)/.exec(line.slice(indent))?.[1] ?? "";
  return raw.startsWith("'") || raw.startsWith('"') ? parseYaml(raw) : raw;
}

/** `text` with the kept paths, methods, components and tags: whole line blocks, bytes unchanged. */
function cutOpenapiYaml(text, doc, subset) {
  const lines = text.split("\n");
  const end = lines.at(-1) === "" ? lines.length - 1 : lines.length;
  const out = [];
  const copy = (e) => out.push(...lines.slice(e.from, e.to));
  for (const top of entriesAt(lines, 0, end, 0)) {
    if (top.key === "paths") {
      out.push(lines[top.from]);
      for (const p of entriesAt(lines, top.from + 1, top.to, 2)) {
        const kept = subset.methods.get(p.key);
        if (kept === undefined) continue;
        out.push(lines[p.from]);
        for (const m of entriesAt(lines, p.from + 1, p.to, 4))
          if (!METHODS.has(m.key) || kept.has(m.key)) copy(m);
      }
    } else if (top.key === "components") {
      if (Object.keys(subset.components).length === 0) continue;
      out.push(lines[top.from]);
      for (const kind of entriesAt(lines, top.from + 1, top.to, 2)) {
        const keep = subset.components[kind.key];
        if (keep === undefined) continue;
        out.push(lines[kind.from]);
        for (const c of entriesAt(lines, kind.from + 1, kind.to, 4)) if (c.key in keep) copy(c);
      }
    } else if (top.key === "tags") {
      out.push(lines[top.from]);
      // The items at column 0 (most documents) or indented by two (gtema's OpenStack ones).
      let items = entriesAt(lines, top.from + 1, top.to, 0, true);
      if (items.length === 0) items = entriesAt(lines, top.from + 1, top.to, 2, true);
      if (items.length !== doc.tags.length) fail("the tags list is not one block per tag");
      items.forEach((item, n) => {
        if (subset.tags.has(doc.tags[n].name)) copy(item);
      });
    } else copy(top);
  }
  return `${out.join("\n")}\n`;
}

/**
 * Splits lines[from, to) of 2-space-indented JSON into the members at `indent` of one object or
 * array: a member is its first line up to the line closing it at the same indent.
 */
function jsonMembers(lines, from, to, indent) {
  const members = [];
  let i = from;
  while (i < to) {
    const line = lines[i];
    if (indentOf(line) !== indent) fail(`unexpected JSON line ${i + 1}: ${line.slice(0, 80)}`);
    const start = i++;
    if (/[{[]$/.test(line)) {
      while (i < to && indentOf(lines[i]) > indent) i++;
      if (!/^\s*[}\]],?$/.test(lines[i] ?? "")) fail(`JSON line ${start + 1} is not closed at its indent`);
      i++;
    }
    const raw = /^\s*("(?:[^"\\]|\\.)*"):/.exec(line)?.[1];
    members.push({ from: start, to: i, key: raw === undefined ? undefined : JSON.parse(raw) });
  }
  return members;
}

/** `open`, the member blocks `children` comma-separated, `close` (commas set for the new neighbours). */
function jsonBlock(open, children, close) {
  const out = [open];
  children.forEach((block, n) => {
    const last = block.length - 1;
    out.push(...block.slice(0, last), block[last].replace(/,$/, "") + (n < children.length - 1 ? "," : ""));
  });
  out.push(close);
  return out;
}

/** `text` (pretty-printed JSON) with the kept paths, methods, components and tags: whole line blocks, bytes unchanged. */
function cutOpenapiJson(text, doc, subset) {
  const lines = text.split("\n");
  const end = lines.at(-1) === "" ? lines.length - 1 : lines.length;
  if (lines[0] !== "{" || lines[end - 1] !== "}")
    fail("the JSON document is not one 2-space-indented object");
  const slice = (m) => lines.slice(m.from, m.to);
  const children = (m, indent) => jsonMembers(lines, m.from + 1, m.to - 1, indent);
  const top = [];
  for (const t of jsonMembers(lines, 1, end - 1, 2)) {
    if (t.key === "paths") {
      const paths = [];
      for (const p of children(t, 4)) {
        const kept = subset.methods.get(p.key);
        if (kept === undefined) continue;
        const methods = children(p, 6).filter((m) => !METHODS.has(m.key) || kept.has(m.key));
        paths.push(jsonBlock(lines[p.from], methods.map(slice), lines[p.to - 1]));
      }
      top.push(jsonBlock(lines[t.from], paths, lines[t.to - 1]));
    } else if (t.key === "components") {
      if (Object.keys(subset.components).length === 0) continue;
      const kinds = [];
      for (const kind of children(t, 4)) {
        const keep = subset.components[kind.key];
        if (keep === undefined) continue;
        const entries = children(kind, 6).filter((c) => c.key in keep);
        kinds.push(jsonBlock(lines[kind.from], entries.map(slice), lines[kind.to - 1]));
      }
      top.push(jsonBlock(lines[t.from], kinds, lines[t.to - 1]));
    } else if (t.key === "tags") {
      const items = children(t, 4);
      if (items.length !== doc.tags.length) fail("the tags list is not one block per tag");
      const kept = items.filter((_, n) => subset.tags.has(doc.tags[n].name));
      top.push(jsonBlock(lines[t.from], kept.map(slice), lines[t.to - 1]));
    } else top.push(slice(t));
  }
  return `${jsonBlock("{", top, "}").join("\n")}${end < lines.length ? "\n" : ""}`;
}

/** The OpenAPI subset of `text`, YAML or (`json`) JSON, cut in the source's own format. */
function openapi(text, spec, json) {
  const doc = json ? JSON.parse(text) : parseYaml(text);
  const subset = openapiSubset(doc, spec.operations, spec.source);
  const expected = {};
  for (const [k, v] of Object.entries(doc)) {
    if (k === "paths") expected.paths = subset.paths;
    else if (k === "components") {
      if (Object.keys(subset.components).length > 0) expected.components = subset.components;
    } else if (k === "tags") expected.tags = v.filter((t) => subset.tags.has(t.name));
    else expected[k] = v;
  }
  const cut = json ? cutOpenapiJson(text, doc, subset) : cutOpenapiYaml(text, doc, subset);
  const ops = (paths) =>
    Object.values(paths).reduce((n, item) => n + Object.keys(item).filter((k) => METHODS.has(k)).length, 0);
  const kept = Object.entries(subset.components).map(
    ([kind, entries]) => `${kind} ${Object.keys(entries).length}`,
  );
  const summary = `${spec.operations.length} of ${ops(doc.paths)} operations in ${Object.keys(subset.paths).length} of ${Object.keys(doc.paths).length} paths; components kept: ${kept.join(", ") || "none"}`;
  return {
    cut,
    parsed: json ? JSON.parse(cut) : parseYaml(cut),
    expected,
    summary,
    version: doc.info?.version,
  };
}

// ---- OpenAPI in many files (DigitalOcean) ------------------------------------------------------

/** The file and JSON pointer a relative `$ref` in `fromFile` names. */
function splitRef(ref, fromFile) {
  const [file, pointer = ""] = ref.split("#");
  return { file: file === "" ? fromFile : join(dirname(fromFile), file), pointer };
}

function pointerGet(doc, pointer) {
  let node = doc;
  for (const part of pointer.split("/").filter((p) => p !== ""))
    node = node?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
  return node;
}

/** Every file `node` (in `file`) reaches through `$ref`s, recursively; `docs` caches parsed files. */
function reachFiles(node, file, docs, into) {
  if (Array.isArray(node)) {
    for (const n of node) reachFiles(n, file, docs, into);
    return;
  }
  if (typeof node !== "object" || node === null) return;
  if (typeof node.$ref === "string") {
    const { file: target, pointer } = splitRef(node.$ref, file);
    const key = `${target}#${pointer}`;
    if (!into.refs.has(key)) {
      into.refs.add(key);
      if (!existsSync(target)) fail(`${file}: $ref ${node.$ref}: no file ${target}`);
      if (!docs.has(target)) docs.set(target, parseYaml(readFileSync(target, "utf8")));
      into.files.add(target);
      const at = pointerGet(docs.get(target), pointer);
      if (at === undefined) fail(`${file}: unresolvable $ref ${node.$ref}`);
      reachFiles(at, target, docs, into);
    }
  }
  for (const [k, v] of Object.entries(node)) if (k !== "$ref") reachFiles(v, file, docs, into);
}

/**
 * The entry file with only the named operations (each path's methods are `$ref`s to operation
 * files, whose operationId names them), and every file those reach, copied as they are.
 */
function openapiFiles(root, spec) {
  const entry = join(root, spec.source);
  const text = readFileSync(entry, "utf8");
  const doc = parseYaml(text);
  const docs = new Map();
  const methods = new Map();
  const found = new Set();
  const paths = {};
  const reached = { refs: new Set(), files: new Set() };
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      const file = splitRef(op.$ref ?? "", entry).file;
      const id = op.$ref === undefined ? op.operationId : parseYaml(readFileSync(file, "utf8")).operationId;
      if (!spec.operations.includes(id)) continue;
      found.add(id);
      methods.set(path, new Set([...(methods.get(path) ?? []), method]));
      paths[path] = { ...(paths[path] ?? {}), [method]: op };
      reachFiles(op, entry, docs, reached);
    }
  const missing = spec.operations.filter((o) => !found.has(o));
  if (missing.length > 0) fail(`${entry} has no operation ${missing.join(", ")}`);
  const tags = new Set();
  for (const file of reached.files) for (const t of docs.get(file)?.tags ?? []) tags.add(t);
  const schemes = new Set(doc.security?.flatMap((s) => Object.keys(s)) ?? []);
  for (const file of reached.files)
    for (const s of docs.get(file)?.security ?? []) for (const k of Object.keys(s)) schemes.add(k);
  const components = {
    securitySchemes: Object.fromEntries(
      Object.entries(doc.components?.securitySchemes ?? {}).filter(([k]) => schemes.has(k)),
    ),
  };
  const subset = { paths, methods, components, tags };
  const expected = {};
  for (const [k, v] of Object.entries(doc)) {
    if (k === "paths") expected.paths = paths;
    else if (k === "components") expected.components = components;
    else if (k === "tags") expected.tags = v.filter((t) => tags.has(t.name));
    else expected[k] = v;
  }
  const cut = cutOpenapiYaml(text, doc, subset);
  const base = dirname(entry);
  const files = [...reached.files].sort().map((f) => {
    const rel = f.slice(base.length + 1);
    if (!f.startsWith(`${base}/`)) fail(`${f} lies outside ${base}`);
    return { from: f, rel };
  });
  const summary = `${spec.operations.length} operations in ${Object.keys(paths).length} of ${Object.keys(doc.paths).length} paths; ${files.length} referenced files copied`;
  return { cut, parsed: parseYaml(cut), expected, summary, files, text };
}

// ---- Google discovery JSON -------------------------------------------------------------------

/** Every schema `node` reaches through `$ref` (discovery refs name a schema: {"$ref": "Operation"}). */
function reachSchemas(schemas, node, into) {
  if (Array.isArray(node)) {
    for (const n of node) reachSchemas(schemas, n, into);
    return;
  }
  if (typeof node !== "object" || node === null) return;
  const ref = node.$ref;
  if (typeof ref === "string" && !into.has(ref)) {
    if (schemas[ref] === undefined) fail(`schema ${ref} is referenced but not defined`);
    into.add(ref);
    reachSchemas(schemas, schemas[ref], into);
  }
  for (const v of Object.values(node)) reachSchemas(schemas, v, into);
}

/**
 * The discovery subset: the named methods of the named resources, the schemas they reach;
 * `parameters`, `auth` and every other top-level member whole. Cut as whole 2-space-indented
 * JSON member blocks (resources at 4, their `methods` at 6, methods at 8; schemas at 4).
 */
function discovery(text, spec) {
  const doc = JSON.parse(text);
  const missing = [];
  for (const [resource, methods] of Object.entries(spec.operations))
    for (const m of methods)
      if (doc.resources?.[resource]?.methods?.[m] === undefined) missing.push(`${resource}.${m}`);
  if (missing.length > 0) fail(`${spec.source} has no method ${missing.join(", ")}`);
  const resources = {};
  for (const [resource, methods] of Object.entries(spec.operations)) {
    const all = doc.resources[resource];
    resources[resource] = {
      ...all,
      methods: Object.fromEntries(Object.entries(all.methods).filter(([k]) => methods.includes(k))),
    };
  }
  const keptSchemas = new Set();
  reachSchemas(doc.schemas, resources, keptSchemas);
  const expected = {};
  for (const [k, v] of Object.entries(doc)) {
    if (k === "resources")
      expected.resources = Object.fromEntries(
        Object.keys(doc.resources)
          .filter((r) => r in resources)
          .map((r) => [r, resources[r]]),
      );
    else if (k === "schemas")
      expected.schemas = Object.fromEntries(Object.entries(v).filter(([name]) => keptSchemas.has(name)));
    else expected[k] = v;
  }
  const lines = text.split("\n");
  const end = lines.at(-1) === "" ? lines.length - 1 : lines.length;
  if (lines[0] !== "{" || lines[end - 1] !== "}")
    fail("the discovery document is not one 2-space-indented object");
  const slice = (m) => lines.slice(m.from, m.to);
  const children = (m, indent) => jsonMembers(lines, m.from + 1, m.to - 1, indent);
  const top = [];
  for (const t of jsonMembers(lines, 1, end - 1, 2)) {
    if (t.key === "resources") {
      const kept = [];
      for (const r of children(t, 4)) {
        const methods = spec.operations[r.key];
        if (methods === undefined) continue;
        const members = children(r, 6).map((member) => {
          if (member.key !== "methods") return slice(member);
          const ms = children(member, 8).filter((m) => methods.includes(m.key));
          return jsonBlock(lines[member.from], ms.map(slice), lines[member.to - 1]);
        });
        kept.push(jsonBlock(lines[r.from], members, lines[r.to - 1]));
      }
      top.push(jsonBlock(lines[t.from], kept, lines[t.to - 1]));
    } else if (t.key === "schemas") {
      const kept = children(t, 4).filter((c) => keptSchemas.has(c.key));
      top.push(jsonBlock(lines[t.from], kept.map(slice), lines[t.to - 1]));
    } else top.push(slice(t));
  }
  const cut = `${jsonBlock("{", top, "}").join("\n")}${end < lines.length ? "\n" : ""}`;
  const kept = Object.values(spec.operations).reduce((n, ms) => n + ms.length, 0);
  const total = Object.values(doc.resources).reduce((n, r) => n + Object.keys(r.methods ?? {}).length, 0);
  const summary = `${kept} of ${total} methods in ${Object.keys(resources).length} of ${Object.keys(doc.resources).length} resources, ${keptSchemas.size} of ${Object.keys(doc.schemas).length} schemas`;
  return { cut, parsed: JSON.parse(cut), expected, summary };
}

// ---- DigitalOcean certificates (files shared/specs lacks) -------------------------------------

/** The operations and the paths DigitalOcean-public.v2.yaml lists them under (GET both). */
const DO_SUPPLEMENT = {
  base: "digitalocean/specification",
  paths: {
    "/v2/certificates": "resources/certificates/certificates_list.yml",
    "/v2/certificates/{certificate_id}": "resources/certificates/certificates_get.yml",
    "/v2/volumes": "resources/volumes/volumes_list.yml",
    "/v2/volumes/{volume_id}": "resources/volumes/volumes_get.yml",
  },
  /** sha256 of every file they reach, relative to base (digitalocean/openapi @ 7c1300c4). */
  files: {
    "resources/certificates/certificates_get.yml":
      "f89a8baa01f593dce3cf7f6190c405739bd0d17effd0f89dcea16e2a707c66b6",
    "resources/certificates/certificates_list.yml":
      "1a9fe09e42e34409145a33eb8724470b508047684a4e0ea4575ceb5ecd869cc8",
    "resources/certificates/examples/curl/certificates_get.yml":
      "0ff7d3948e94fd968af81b5e036129bd622a51b09f470bfe2930091bdfe7b5ad",
    "resources/certificates/examples/curl/certificates_list.yml":
      "b1879569e5209d030b9e072334e99485683496a2819bd152918708f9e8f0d886",
    "resources/certificates/examples/go/certificates_get.yml":
      "59cc37db66954f69579081a958c03c1a0b31b301a9fbc7f679b6d01e42486f12",
    "resources/certificates/examples/go/certificates_list.yml":
      "a8e5759d94cd46c8ae8951eb79a3000847ef464d9d623b0ea853bc65c2d26b8e",
    "resources/certificates/examples/python/certificates_get.yml":
      "999f12958f554c089b1b334ddfc17445e2f968d64dd63b87a3652c9df77b6654",
    "resources/certificates/examples/python/certificates_list.yml":
      "a241e0f3d66807bd337efcbca011936afd7df98651a9aab6675e6c4afad89578",
    "resources/certificates/examples/ruby/certificates_get.yml":
      "d85f985e5a99e9ce7814fafc1932fbab320dec4fb42a3f584a40835f35ddc77b",
    "resources/certificates/examples/ruby/certificates_list.yml":
      "daf6ed89517b7966ae9d1177b0f1959861daac95b08a0fbb6f20019ca0991814",
    "resources/certificates/models/certificate.yml":
      "5739e384f70454c1c43d0884dd427f39e5fe3b6efd87e1e00968e9fef6c350e3",
    "resources/certificates/parameters.yml":
      "80f57488da5149e16cc9c6dd9710e973f138da1f860c3b8f220ce7c9b7724ffd",
    "resources/certificates/responses/all_certificates.yml":
      "129dbc74ce80df6bfe9fe97f316a4bc31d397275d2f005704dd163067f6a10dd",
    "resources/certificates/responses/examples.yml":
      "6418d3ed3c80d87876b925dfda700439a790402aa1f16f5fa3bc100229be345e",
    "resources/certificates/responses/existing_certificate.yml":
      "d43fe60d2e8eadcac476ba7b68736eaef8d4f76e861eb38827affce280dda0ea",
    "resources/regions/models/region.yml": "ec1e4b4a96715fd6e2325f43d53db7ef6d0ef2b245bfd5d02019faecbb6b03bd",
    "resources/volumes/examples.yml": "649aaaa95916ccea1f172490e148d0fc91c531165eedf17738b1c14b6697a913",
    "resources/volumes/examples/curl/volumes_get.yml":
      "d5525a8fda06a165c575b8f91ea0593e0987d1734fe7b7db8575cd9366b24a39",
    "resources/volumes/examples/curl/volumes_list.yml":
      "0e68593d68c5467b1f39adcf254bceaec4ff86875fd3b8a2634b7c367604ab9d",
    "resources/volumes/examples/go/volumes_get.yml":
      "b73662a8605872eb842514fb7287c37452213ad36f7d8d36b6f0987a493b3de6",
    "resources/volumes/examples/go/volumes_list.yml":
      "d7072f7dbbde2511e04fe94bcdd33721309e2118b8038840e05c53a43dcce76f",
    "resources/volumes/examples/python/volumes_get.yml":
      "8bdddd3b2d2b06ca6232263e71b079d32a01803e3e3081c2a144bcb8b52f2409",
    "resources/volumes/examples/python/volumes_list.yml":
      "f1dc65407dc14cd883888be25c8d121063205a7902fe345fc93019fe0ce34d2a",
    "resources/volumes/examples/ruby/volumes_get.yml":
      "ff94d5126d0af83a18fab6ee9fa2e1bb446822755ab7ec682bd879c78c4e3cbc",
    "resources/volumes/examples/ruby/volumes_list.yml":
      "d35fde6b1bfddefbd8e15704c94ee1c1b7c7b4b7d72b768e45bbd306ee42d780",
    "resources/volumes/models/volume_base_read.yml":
      "008b7e8307918c48a554ee4a85243f37d46b92c371a6f4424fc6ba717aacd935",
    "resources/volumes/models/volume_full.yml":
      "9e1f40248421425f9f120aacc8efcd4a32477ea2262aa9ef13663184fc868410",
    "resources/volumes/parameters.yml": "0662ca99ab87c9a09a5fbd4c049fdc0a9edaf77d9f25c174c79a404ad7183db0",
    "resources/volumes/responses/volume.yml":
      "e0a44580d1c61b6030cfd2b84489b4129e980509c5355a5f6a20ef1cc423187f",
    "resources/volumes/responses/volumes.yml":
      "3b2026be99fa3b7e34fc8b99751be0747e70fe50f584d089e0c8dbf3549d492d",
    "resources/volumes/volumes_get.yml": "fbae5fd80351d97804add0e45d58974fe25640ff805dba62b91a9aa90f373045",
    "resources/volumes/volumes_list.yml": "9e6db7d6adf0718e3e5eef423cbd795b016bed14081f4da912ce944f45940e3f",
    "shared/attributes/region_slug.yml": "60f66750e984862a9b94a6412861b711b435dbc4cb3ffa7687072d16559eca91",
    "shared/attributes/tags_array_read.yml":
      "9f97da73dd9d6d75a818ea2843bef1fed42a6627c3f474cfa118839e91487afe",
    "shared/headers.yml": "6d7b7509a87da53de6dd8436af6646c8d6f7255e210d5875d8449a273f451f36",
    "shared/meta.yml": "00cdb2e7554865aef20ccf9bc33f3305c21c9e5c55ade935d77fbc3f6c677561",
    "shared/models/error.yml": "dbb6b736e0a146a577572661147b34a898df5e5994635f87a9230d1ab1087b6f",
    "shared/models/meta_properties.yml": "8d1f1b23436d5d75f5d8b8d25f7b586479ae164065844166be2713d6b43a093d",
    "shared/pages.yml": "ca32eeff9d3df02797f7b1df595f7a0c9a7cc9e492b8ea9432fa1cb2a3f64a7c",
    "shared/parameters.yml": "6e084f48f0998210cb5a48c6b71a864a6c75b4de449e2494c36f96dd113ace01",
    "shared/responses/not_found.yml": "8e0d547566cfe81cbb7e56ba184eb0cf35e0d09a1778e69714bf7ba0c69d0aec",
    "shared/responses/server_error.yml": "64c0fa3daae5a2ee702b0771a34afd3898031bc3c0c75b22095129a3a1499488",
    "shared/responses/too_many_requests.yml":
      "359c4b1eb758e60333be4bad101f3efd5d30323da83c7ca625fc0385a73e15b5",
    "shared/responses/unauthorized.yml": "7139c8a3a23680afc3a8945eb344c8c91dce6e5c87d0bf0aa5975e38f982914c",
    "shared/responses/unexpected_error.yml":
      "3c82e1d9ceb61e9c2493d770969a597de85ba088777a8682fab7b0267eb4c449",
  },
};

function doSupplement(root, checkout) {
  const out = join(FIXTURES, DO_SUPPLEMENT.base);
  if (checkout === undefined) {
    for (const [rel, want] of Object.entries(DO_SUPPLEMENT.files)) {
      const at = join(out, rel);
      if (!existsSync(at)) fail(`${at} is missing: run with --digitalocean-openapi <checkout>`);
      const got = sha256(readFileSync(at));
      if (got !== want) fail(`${at}: sha256 ${got}, not the recorded ${want}`);
    }
    console.log(
      `${DO_SUPPLEMENT.base}: ${Object.keys(DO_SUPPLEMENT.files).length} supplement files (certificates, volumes) kept as committed (sha256 checked)`,
    );
    return;
  }
  const base = join(checkout, "specification");
  const full = readFileSync(join(base, "DigitalOcean-public.v2.yaml"));
  if (!full.equals(readFileSync(join(root, DO_SUPPLEMENT.base, "DigitalOcean-public.v2.yaml"))))
    fail(`${base}/DigitalOcean-public.v2.yaml is not the revision shared/specs holds`);
  const doc = parseYaml(full.toString("utf8"));
  const docs = new Map();
  const reached = { refs: new Set(), files: new Set() };
  for (const [path, rel] of Object.entries(DO_SUPPLEMENT.paths)) {
    if (doc.paths?.[path]?.get?.$ref !== rel) fail(`DigitalOcean-public.v2.yaml: GET ${path} is not ${rel}`);
    reachFiles({ $ref: rel }, join(base, "DigitalOcean-public.v2.yaml"), docs, reached);
  }
  const files = {};
  for (const f of [...reached.files].sort()) {
    if (!f.startsWith(`${base}/`)) fail(`${f} lies outside ${base}`);
    const rel = f.slice(base.length + 1);
    const bytes = readFileSync(f);
    mkdirSync(dirname(join(out, rel)), { recursive: true });
    writeFileSync(join(out, rel), bytes);
    files[rel] = sha256(bytes);
  }
  console.log(
    `${DO_SUPPLEMENT.base}: ${reached.files.size} supplement files (certificates, volumes) copied from ${base}`,
  );
  if (JSON.stringify(files) !== JSON.stringify(DO_SUPPLEMENT.files))
    console.log(`record these in DO_SUPPLEMENT.files:\n${JSON.stringify(files, null, 2)}`);
}

// ---- Cinder's api-ref (not in shared/specs) ----------------------------------------------------

/** Cinder's api-ref files the fake's spec reads (openstack/cinder @ ab09bc39), unchanged, by sha256. */
const CINDER_FILES = {
  base: "openstack/cinder",
  /** Fixture path (below base) → the checkout's path. */
  from: {
    LICENSE: "LICENSE",
    "parameters.yaml": "api-ref/source/v3/parameters.yaml",
    "volumes-v3-volumes.inc": "api-ref/source/v3/volumes-v3-volumes.inc",
    "samples/volumes/volume-show-response.json":
      "api-ref/source/v3/samples/volumes/volume-show-response.json",
    "samples/volumes/volumes-list-detailed-response.json":
      "api-ref/source/v3/samples/volumes/volumes-list-detailed-response.json",
  },
  files: {
    LICENSE: "5df2a0d87d6c562f0ea11c688ac52532aa28d744cabc7994ff0537f64b3b3320",
    "parameters.yaml": "12921cc09c321776b57301d0198067025e7d911acff8ad2640afe1814162837d",
    "volumes-v3-volumes.inc": "aa125bc806991d624bd05d948159e4399ecaf3d9407941e46e6939349190315d",
    "samples/volumes/volume-show-response.json":
      "21fa0126aa5d68c310039b885d1cdd109cbdf8882c58e233e0f360b781d341eb",
    "samples/volumes/volumes-list-detailed-response.json":
      "db2c4e72ed5897f7623c1f611cb7719fc0bdc47448598fce7524b0687c80b0f8",
  },
};

/** With a checkout: copy Cinder's files and print any sha256 that differs from the record; without: check the committed copies. */
function cinderFiles(checkout) {
  const out = join(FIXTURES, CINDER_FILES.base);
  const got = {};
  for (const [rel, src] of Object.entries(CINDER_FILES.from)) {
    const at = join(out, rel);
    if (checkout !== undefined) {
      const bytes = readFileSync(join(checkout, src));
      mkdirSync(dirname(at), { recursive: true });
      writeFileSync(at, bytes);
    } else if (!existsSync(at)) fail(`${at} is missing: run with --cinder <openstack/cinder checkout>`);
    got[rel] = sha256(readFileSync(at));
    if (checkout === undefined && got[rel] !== CINDER_FILES.files[rel])
      fail(`${at}: sha256 ${got[rel]}, not the recorded ${CINDER_FILES.files[rel]}`);
  }
  console.log(
    `${CINDER_FILES.base}: ${Object.keys(got).length} files ${checkout === undefined ? "kept as committed (sha256 checked)" : `copied from ${checkout}`}`,
  );
  if (JSON.stringify(got) !== JSON.stringify(CINDER_FILES.files))
    console.log(`record these in CINDER_FILES.files:\n${JSON.stringify(got, null, 2)}`);
}

// ---- main ------------------------------------------------------------------------------------

const USAGE =
  "usage: node scripts/vendor-specs.mjs <path to shared/specs> [--linode <spec file>] [--linode-licence <file>] [--digitalocean-openapi <digitalocean/openapi checkout>] [--cinder <openstack/cinder checkout>]";
const args = process.argv.slice(2);
const option = (name) => {
  const at = args.indexOf(name);
  if (at === -1) return undefined;
  const value = args[at + 1];
  if (value === undefined || value.startsWith("--")) fail(`${name} needs a file\n${USAGE}`);
  args.splice(at, 2);
  return resolve(value);
};
const linodeSource = option("--linode");
const doOpenapi = option("--digitalocean-openapi");
const cinderCheckout = option("--cinder");
const linodeLicence = option("--linode-licence");
if (args.length !== 1 || args[0].startsWith("--")) fail(USAGE);
const root = resolve(args[0]);
for (const spec of SUBSETS) {
  if (spec.kind === "openapi-files") {
    const { cut, parsed, expected, summary, files, text } = openapiFiles(root, spec);
    if (JSON.stringify(parsed) !== JSON.stringify(expected))
      fail(
        `${spec.target}: the cut text does not parse to the subset (the source's layout is not the expected one)`,
      );
    const to = join(FIXTURES, spec.target);
    mkdirSync(dirname(to), { recursive: true });
    writeFileSync(to, cut);
    for (const f of files) {
      const out = join(dirname(to), f.rel);
      mkdirSync(dirname(out), { recursive: true });
      writeFileSync(out, readFileSync(f.from));
    }
    const all = [cut, ...files.map((f) => readFileSync(f.from, "utf8"))].join("");
    console.log(
      `${spec.target}: ${summary}; ${Buffer.byteLength(all)} bytes in ${files.length + 1} files; entry sha256 ${sha256(text)}`,
    );
    const licence = readFileSync(join(root, spec.licence));
    writeFileSync(join(FIXTURES, spec.licence), licence);
    console.log(`${spec.licence}: copied, sha256 ${sha256(licence)}`);
    continue;
  }
  const from = spec.kind === "openapi" && linodeSource !== undefined ? linodeSource : join(root, spec.source);
  if (!existsSync(from)) fail(`${from} not found`);
  const text = readFileSync(from, "utf8");
  const json = from.endsWith(".json");
  const { cut, parsed, expected, summary, version } =
    spec.kind === "botocore"
      ? botocore(text, spec)
      : spec.kind === "discovery"
        ? discovery(text, spec)
        : openapi(text, { ...spec, source: from }, json);
  const target =
    typeof spec.target === "function" ? spec.target(version, json ? "json" : "yaml") : spec.target;
  if (typeof spec.target === "function" && !/^[0-9][0-9A-Za-z.-]*$/.test(String(version)))
    fail(`${from}: info.version ${version} is not a version to name the subset after`);
  if (JSON.stringify(parsed) !== JSON.stringify(expected))
    fail(
      `${target}: the cut text does not parse to the subset (the source's layout is not the expected one)`,
    );
  const to = join(FIXTURES, target);
  mkdirSync(dirname(to), { recursive: true });
  writeFileSync(to, cut);
  console.log(
    `${target}: ${summary}; ${Buffer.byteLength(cut)} of ${Buffer.byteLength(text)} bytes; source sha256 ${sha256(text)}`,
  );
}
doSupplement(root, doOpenapi);
cinderFiles(cinderCheckout);
azureFiles(root);
const copies = [
  ...COPIES.map((file) => ({ from: join(root, file), to: file })),
  ...Object.entries(RENAMED_COPIES).map(([from, to]) => ({ from: join(root, from), to })),
];
if (linodeLicence !== undefined) copies.push({ from: linodeLicence, to: "linode/LICENSE-Apache-2.0.txt" });
for (const { from, to } of copies) {
  // Read and written, not copied: the sources may be read-only, their copies must not be.
  const bytes = readFileSync(from);
  writeFileSync(join(FIXTURES, to), bytes);
  console.log(`${to}: copied from ${from}, sha256 ${sha256(bytes)}`);
}
