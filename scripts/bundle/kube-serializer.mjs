// Stands in for client-node's serializer.js in the agent bundle (scripts/bundle/agent.mjs).
// ListWatch (dist/cache.js) calls it for one thing, its label and field selectors as type
// "string", which the real ObjectSerializer gives back as they are (test/bundle-kube.test.ts);
// the real one loads every generated model at start.
export const ObjectSerializer = {
  serialize(data, type) {
    if (type === "string") return data;
    throw new Error(`ObjectSerializer.serialize(${type}) is not in the fleet-ccm agent bundle`);
  },
};
