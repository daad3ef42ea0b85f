import { isMap, isSeq, parseDocument, type YAMLMap, type YAMLSeq } from "yaml";
import { ConfigError, parseHubConfig } from "./load.js";
import type { HubConfig } from "./schema.js";

/**
 * Edits of the hub configuration file that keep the user's comments, order and layout (the
 * `yaml` document model): only the entries touched change. Each result is validated as a whole
 * configuration before it is returned, so a bad edit never reaches the file.
 */

function document(text: string, source: string) {
  const doc = parseDocument(text);
  if (doc.errors.length > 0)
    throw new ConfigError(`${source}: not valid YAML: ${doc.errors[0]?.message ?? "parse error"}`);
  return doc;
}

function validated(text: string, source: string): { text: string; config: HubConfig } {
  return { text, config: parseHubConfig(text, source) };
}

/** The text with `entry` appended to `clusters` (created if absent). */
export function addClusterEntry(
  text: string,
  entry: Record<string, unknown>,
  source = "config",
): { text: string; config: HubConfig } {
  const doc = document(text, source);
  const clusters = doc.get("clusters", true);
  const node = doc.createNode(entry);
  if (clusters === undefined || clusters === null || (isSeq(clusters) && clusters.items.length === 0)) {
    // `clusters: []` (flow style) becomes a block list.
    const seq = doc.createNode([entry]) as YAMLSeq;
    seq.flow = false;
    doc.set("clusters", seq);
  } else if (isSeq(clusters)) {
    clusters.items.push(node);
  } else {
    throw new ConfigError(`${source}: clusters must be a list`);
  }
  return validated(doc.toString({ flowCollectionPadding: false }), source);
}

function clusterAt(text: string, name: string, source: string) {
  const doc = document(text, source);
  const clusters = doc.get("clusters", true);
  if (!isSeq(clusters)) throw new ConfigError(`${source}: no cluster "${name}"`);
  const index = clusters.items.findIndex((item) => isMap(item) && (item as YAMLMap).get("name") === name);
  if (index < 0) throw new ConfigError(`${source}: no cluster "${name}"`);
  return { doc, clusters, index, entry: clusters.items[index] as YAMLMap };
}

/** The text without the cluster called `name`; throws if there is none. */
export function removeClusterEntry(
  text: string,
  name: string,
  source = "config",
): { text: string; config: HubConfig } {
  const { doc, clusters, index } = clusterAt(text, name, source);
  clusters.items.splice(index, 1);
  return validated(doc.toString({ flowCollectionPadding: false }), source);
}

/** The text with the cluster called `name` marked `decommission: true` (see ClusterSchema). */
export function markClusterDecommissioned(
  text: string,
  name: string,
  source = "config",
): { text: string; config: HubConfig } {
  const { doc, entry } = clusterAt(text, name, source);
  entry.set("decommission", true);
  return validated(doc.toString({ flowCollectionPadding: false }), source);
}

/** The text with `nats` set to `value`, keeping the rest. */
export function setNatsSection(text: string, value: Record<string, unknown>, source = "config"): string {
  const doc = document(text, source);
  doc.set("nats", doc.createNode(value));
  return doc.toString({ flowCollectionPadding: false });
}
