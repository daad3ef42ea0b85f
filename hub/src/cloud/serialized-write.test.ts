import { expect, test } from "@jest/globals";
import { KeyedLock } from "../util/keyed-lock.js";
import { ConflictError, TransientCloudError } from "./errors.js";
import { CONFLICT_ATTEMPTS, serializedWrite } from "./serialized-write.js";

test("a ConflictError is repeated at once, with nothing else thrown in between, until the write goes through", async () => {
  const cloud = { writeLocks: new KeyedLock() };
  let attempts = 0;
  const answer = await serializedWrite(cloud, "lb-of-cluster", async () => {
    attempts++;
    if (attempts < CONFLICT_ATTEMPTS) throw new ConflictError("etag changed");
    return "written";
  });
  expect({ answer, attempts }).toEqual({ answer: "written", attempts: CONFLICT_ATTEMPTS });
});

test("conflicts every time become the failure after CONFLICT_ATTEMPTS; any other error at once", async () => {
  const cloud = { writeLocks: new KeyedLock() };
  let attempts = 0;
  const always = serializedWrite(cloud, "k", async () => {
    attempts++;
    throw new ConflictError("busy");
  });
  await expect(always).rejects.toBeInstanceOf(ConflictError);
  expect(attempts).toBe(CONFLICT_ATTEMPTS);
  attempts = 0;
  const other = serializedWrite(cloud, "k", async () => {
    attempts++;
    throw new TransientCloudError("503");
  });
  await expect(other).rejects.toBeInstanceOf(TransientCloudError);
  expect(attempts).toBe(1);
});

test("two clusters of one account writing one shared object never overlap", async () => {
  const shared = new KeyedLock();
  const clusterA = { writeLocks: shared };
  const clusterB = { writeLocks: shared };
  let inside = 0;
  let most = 0;
  const write = async () => {
    inside++;
    most = Math.max(most, inside);
    await new Promise((r) => setTimeout(r, 5));
    inside--;
  };
  await Promise.all([
    serializedWrite(clusterA, "route-table-1", write),
    serializedWrite(clusterB, "route-table-1", write),
    serializedWrite(clusterA, "route-table-1", write),
  ]);
  expect(most).toBe(1);
});
