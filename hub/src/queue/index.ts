export type { DelayedEntry } from "./delay-heap.js";
export { DelayHeap } from "./delay-heap.js";
export { Fifo } from "./fifo.js";
export type { WorkKey } from "./key.js";
export { clusterKeyPrefix, keyOf, parseKey } from "./key.js";
export type { ClusterDepth, WorkQueueOptions } from "./work-queue.js";
export { DEFAULT_QUEUE_BACKOFF, WorkQueue } from "./work-queue.js";
export type { Requeue, WorkerPool, WorkerPoolOptions, WorkerQueue, WorkHandler } from "./workers.js";
export { DEFAULT_CONCURRENCY, runWorkers } from "./workers.js";
