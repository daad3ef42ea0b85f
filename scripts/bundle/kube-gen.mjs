// Stands in for client-node's generated API index (dist/gen/index.js) in the agent bundle
// (scripts/bundle/agent.mjs). KubeConfig imports it only for makeApiClient, which the agent never
// calls: it makes its few core/v1 calls itself (agent/src/kube-client.ts). The real index loads
// every generated API and model at start.
function notInBundle() {
  return new Error("client-node's generated API clients are not in the fleet-ccm agent bundle");
}

export function createConfiguration() {
  throw notInBundle();
}

export class ServerConfiguration {
  constructor() {
    throw notInBundle();
  }
}
