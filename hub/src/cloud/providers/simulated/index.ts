/**
 * The `simulated` provider: an adapter for the simulated cloud that sim/ serves over HTTP.
 * It reaches the cloud only through the account's `endpoint`, like any real provider.
 */
import { z } from "zod";
import {
  AccountConfigError,
  type CloudProvider,
  type ProviderContext,
  type ProviderFactory,
} from "../../provider.js";
import { SimulatedClient } from "./client.js";
import { ANNOTATION_PREFIX, PROVIDER_NAME } from "./convert.js";
import { SimulatedInstances } from "./instances.js";
import { SimulatedLoadBalancers } from "./load-balancers.js";
import { SimulatedRoutes } from "./routes.js";

/** `accounts[].options` of a simulated account. */
export const SimulatedOptionsSchema = z
  .object({
    /** Load-balancer creates and deletes answer "in progress" this many polls before done. */
    asyncPolls: z.number().int().min(0).max(1000).default(0),
    /** The delay each "in progress" answer asks for. */
    asyncPollMs: z.number().int().positive().default(1000),
  })
  .strict();
export type SimulatedOptions = z.infer<typeof SimulatedOptionsSchema>;

export function parseSimulatedOptions(options: unknown): SimulatedOptions {
  const parsed = SimulatedOptionsSchema.safeParse(options ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = ["options", ...(issue?.path ?? []).map(String)].join(".");
  throw new AccountConfigError(where, issue?.message ?? "invalid");
}

/** The simulated cloud's one credential: `credentials: {apiKey: <ref>}`, or just `<ref>`. */
const API_KEY = "apiKey";

export const simulatedProvider: ProviderFactory = {
  name: PROVIDER_NAME,
  annotationPrefixes: [ANNOTATION_PREFIX],
  checkCredentials(names) {
    if (names.length === 1 && names[0] === "") return;
    for (const n of names)
      if (n !== API_KEY)
        throw new AccountConfigError(
          `credentials.${n}`,
          "not a credential of the simulated provider (apiKey)",
        );
    if (!names.includes(API_KEY)) throw new AccountConfigError("credentials.apiKey", "required");
  },
  create(ctx: ProviderContext): CloudProvider {
    const { account } = ctx;
    if (account.provider !== PROVIDER_NAME) {
      throw new Error(`account ${account.name} is for provider ${account.provider}, not ${PROVIDER_NAME}`);
    }
    const endpoint = checkEndpoint(account.endpoint);
    const options = parseSimulatedOptions(account.options);
    if (!(account.requestTimeoutMs > 0)) {
      throw new Error(`account ${account.name}: requestTimeoutMs must be > 0`);
    }
    const client = new SimulatedClient({
      endpoint,
      credential: () => account.secret?.(API_KEY) ?? account.credential,
      region: account.region,
      requestTimeoutMs: account.requestTimeoutMs,
      clock: ctx.clock,
      ...(account.userAgent !== undefined && { userAgent: account.userAgent }),
    });
    ctx.logger.debug({ account: account.name, region: account.region, endpoint }, "simulated provider bound");
    return {
      name: PROVIDER_NAME,
      instances: new SimulatedInstances(ctx, client),
      loadBalancers: new SimulatedLoadBalancers(ctx, client, {
        asyncPolls: options.asyncPolls,
        asyncPollMs: options.asyncPollMs,
      }),
      routes: new SimulatedRoutes(ctx, client),
    };
  },
};

/** The simulated cloud has no public address: an account must name its endpoint. */
function checkEndpoint(endpoint: string | undefined): string {
  if (endpoint === undefined || endpoint === "")
    throw new AccountConfigError("endpoint", "required: the simulated provider has no public address");
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new AccountConfigError("endpoint", `${JSON.stringify(endpoint)} is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new AccountConfigError("endpoint", `must be http(s), got ${url.protocol}`);
  return endpoint;
}
