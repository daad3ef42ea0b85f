/**
 * Binds a declared provider (ProviderFactory) to an account: the one place the hub checks an
 * account's credentials, endpoint and options against what the provider declares, and maps
 * each problem to the field of the account it is about.
 */
import {
  AccountConfigError,
  type CloudProvider,
  type CredentialSpec,
  type ProviderContext,
  type ProviderFactory,
} from "./provider.js";

/**
 * The account's credential names as the provider reads them: a bare reference (named "")
 * becomes the provider's `bare` credential. Throws AccountConfigError naming the field.
 */
export function credentialNames(spec: CredentialSpec, given: readonly string[]): string[] {
  if (given.length === 1 && given[0] === "") {
    if (spec.bare !== undefined) return [spec.bare];
    throw new AccountConfigError(
      "credentials",
      `takes named credentials (${[...spec.required, ...(spec.optional ?? [])].join(", ")}), not one reference`,
    );
  }
  const known = [...spec.required, ...(spec.optional ?? [])];
  for (const n of given)
    if (!known.includes(n))
      throw new AccountConfigError(
        n === "" ? "credentials" : `credentials.${n}`,
        `not a credential of this provider (${known.join(", ")})`,
      );
  for (const n of spec.required)
    if (!given.includes(n)) throw new AccountConfigError(`credentials.${n}`, "required");
  for (const [n, other] of Object.entries(spec.onlyWith ?? {}))
    if (given.includes(n) && !given.includes(other))
      throw new AccountConfigError(`credentials.${n}`, `only with credentials.${other}`);
  if (spec.oneOf !== undefined && spec.oneOf.filter((n) => given.includes(n)).length !== 1)
    throw new AccountConfigError("credentials", `exactly one of ${spec.oneOf.join(", ")}`);
  return [...given];
}

/** Checks accounts[].endpoint against the provider's declaration; returns it, the declared default, or undefined (the SDK's own). */
export function checkEndpoint(
  declared: ProviderFactory["endpoint"],
  endpoint: string | undefined,
  provider: string,
): string | undefined {
  if (endpoint === undefined || endpoint === "") {
    if (typeof declared === "object") return declared.default;
    if (declared === "required")
      throw new AccountConfigError("endpoint", `required: the ${provider} provider has no public address`);
    return undefined;
  }
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

/** accounts[].options parsed by the provider's schema (defaults applied); the first problem names its field. */
export function parseOptions<O>(factory: ProviderFactory<O>, raw: unknown): O {
  const parsed = factory.options.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new AccountConfigError(
    ["options", ...(issue?.path ?? []).map(String)].join("."),
    issue?.message ?? "invalid",
  );
}

/**
 * Checks everything the factory declares and creates the provider. `ctx.account` must
 * already carry the names credentialNames returned; the binding's provider must be the factory's.
 */
export async function createProvider<O>(
  factory: ProviderFactory<O>,
  ctx: ProviderContext,
  rawOptions: unknown,
): Promise<CloudProvider> {
  const { account } = ctx;
  if (account.provider !== factory.name)
    throw new Error(`account ${account.name} is for provider ${account.provider}, not ${factory.name}`);
  const endpoint = checkEndpoint(factory.endpoint, account.endpoint, factory.name);
  const options = parseOptions(factory, rawOptions);
  // The provider finds the declared default where the account names no endpoint.
  const bound =
    endpoint === undefined || endpoint === account.endpoint
      ? ctx
      : { ...ctx, account: { ...account, endpoint } };
  const provider = await factory.create(bound, options);
  if (provider.name !== factory.name)
    throw new Error(`provider ${factory.name} created a provider named ${provider.name}`);
  // The hub sees only forwarded annotations: one it sets must be forwarded, or it is set forever.
  for (const key of provider.loadBalancers?.capabilities.serviceAnnotationKeys ?? [])
    if (!factory.annotationPrefixes.some((prefix) => key.startsWith(prefix)))
      throw new Error(
        `provider ${factory.name} sets Service annotation ${key} outside its annotationPrefixes`,
      );
  return provider;
}
