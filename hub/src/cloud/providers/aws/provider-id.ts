/** AWS providerIDs as cloud-provider-aws writes and reads them (no SDK here: the hub loads it only for AWS accounts). */

export const PROVIDER_NAME = "aws";
export const LABEL_ZONE_ID = "topology.k8s.aws/zone-id";

const INSTANCE_ID = /^i-[0-9a-f]{8,17}$/;
/** aws:///<az>/<id>, aws:////<id> (no zone), as upstream's KubernetesInstanceID parses. */
const PROVIDER_ID = /^aws:\/\/\/([a-z0-9-]*)\/(i-[0-9a-f]{8,17})$/;

export function providerIDOf(zone: string, instanceID: string): string {
  return `aws:///${zone}/${instanceID}`;
}

/** The instance id of an AWS providerID (or a bare id) of `region`; a zone of another region is another region's instance. */
export function parseAwsProviderID(providerID: string, region: string): string | undefined {
  if (INSTANCE_ID.test(providerID)) return providerID;
  const m = PROVIDER_ID.exec(providerID);
  if (m === null) return undefined;
  const zone = m[1] ?? "";
  if (zone !== "" && !zone.startsWith(region)) return undefined;
  return m[2];
}
