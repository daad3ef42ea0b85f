/** `accounts[].options` of a GCP account (no SDK here: the hub loads it only for GCP accounts). */
import { z } from "zod";

export const GcpOptionsSchema = z
  .object({
    /** The project; default: the service-account key's `project_id`. */
    project: z
      .string()
      .regex(/^[a-z][-a-z0-9]{4,28}[a-z0-9]$/)
      .optional(),
    /** instances.list page size (maxResults, 1..500). */
    instancePageSize: z.number().int().min(1).max(500).default(500),
    /** How long the hub waits before looking at a running operation again. */
    operationPollMs: z.number().int().min(0).max(60_000).default(2_000),
    /** The port of the shared node health check (upstream: kube-proxy's healthz, 10256). */
    nodeHealthCheckPort: z.number().int().min(1).max(65_535).default(10_256),
    /**
     * The subnetwork internal load balancers take their address from (a Service's
     * networking.gke.io/internal-load-balancer-subnet overrides it); default: the cluster
     * network's one subnetwork in the region.
     */
    subnetwork: z
      .string()
      .regex(/^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$/)
      .optional(),
  })
  .strict();
export type GcpOptions = z.infer<typeof GcpOptionsSchema>;
