import { parse as parseYaml } from "yaml";
import { clusterRegionProblem } from "./cloud/accounts.js";
import { checkEndpoint, credentialNames, parseOptions } from "./cloud/bind-provider.js";
import { AccountConfigError, type ProviderFactory } from "./cloud/provider.js";
import { ProviderRegistry } from "./cloud/registry.js";
import { ConfigError, formatIssues } from "./config/load.js";
import {
  type AccountConfig,
  AccountSchema,
  ClusterSchema,
  crossFieldIssues,
  type HubConfig,
  HubConfigSchema,
} from "./config/schema.js";
import { namedRefs, type SecretRef, SecretRefSchema, secretProblems } from "./config/secret.js";
import { clusterCredentials, TokenAuthenticator } from "./grpc/auth.js";
import { tlsFileProblems } from "./grpc/tls.js";

export interface CheckOptions {
  readonly providers: readonly ProviderFactory[];
  readonly env?: NodeJS.ProcessEnv;
  /**
   * Read the gRPC TLS files too (default). A reload leaves them out: they are watched on their
   * own, and one caught mid-rotation must not hold back a cluster change.
   */
  readonly tlsFiles?: boolean;
}

type Raw = Record<string, unknown>;

function obj(v: unknown): Raw {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Raw) : {};
}

function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** A secret reference where the document has a well-formed one (the schema reports the rest). */
function refAt(v: unknown): SecretRef | undefined {
  const r = SecretRefSchema.safeParse(v);
  return r.success ? r.data : undefined;
}

/** What the account's provider refuses (unknown, credential names, options, endpoint), one line each. */
function providerProblems(a: AccountConfig, i: number, registry: ProviderRegistry): string[] {
  const factory = registry.get(a.provider);
  if (factory === undefined)
    return [
      `accounts[${i}].provider: unknown provider "${a.provider}" (known: ${registry.names().join(", ")})`,
    ];
  const problems: string[] = [];
  const refused = (err: unknown) =>
    problems.push(`accounts[${i}]${err instanceof AccountConfigError ? "." : ": "}${(err as Error).message}`);
  // The provider's declarations, offline: no call goes out, no secret is needed.
  const checks = [
    () =>
      credentialNames(
        factory.credentials,
        namedRefs(a.credentials).map(([name]) => name),
      ),
    () => checkEndpoint(factory.endpoint, a.endpoint, factory.name),
    () => parseOptions(factory, a.options),
  ];
  for (const check of checks)
    try {
      check();
    } catch (err) {
      refused(err);
    }
  return problems;
}

/** Every problem of the configuration `text`, one line each naming its field; none: it is valid. */
export function hubConfigProblems(
  text: string,
  opts: CheckOptions,
): { readonly config?: HubConfig; readonly problems: readonly string[] } {
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (err) {
    return { problems: [`(root): not valid YAML: ${(err as Error).message}`] };
  }
  const env = opts.env ?? process.env;
  const doc = obj(raw);
  const schema = HubConfigSchema.safeParse(raw);
  const problems: string[] = [];
  const schemaIssues = [...(schema.success ? [] : schema.error.issues), ...crossFieldIssues(raw)];
  if (schemaIssues.length > 0) problems.push(...formatIssues(schemaIssues).split("\n"));

  // Accounts that parsed on their own: their providers, then their credentials.
  const registry = new ProviderRegistry(opts.providers);
  const accounts = new Map<string, AccountConfig>();
  const refs: [string, SecretRef | undefined][] = [];
  list(doc["accounts"]).forEach((rawAccount, i) => {
    const a = AccountSchema.safeParse(rawAccount);
    if (!a.success) return;
    if (!accounts.has(a.data.name)) accounts.set(a.data.name, a.data);
    problems.push(...providerProblems(a.data, i, registry));
    for (const [name, ref] of namedRefs(a.data.credentials))
      refs.push([`accounts[${i}].credentials${name === "" ? "" : `.${name}`}`, ref]);
  });

  // Clusters that parsed on their own: their region in their account, then their token.
  list(doc["clusters"]).forEach((rawCluster, i) => {
    const c = ClusterSchema.safeParse(rawCluster);
    if (!c.success) return;
    const account = accounts.get(c.data.account);
    const problem = account === undefined ? undefined : clusterRegionProblem(c.data, i, account.regions);
    if (problem !== undefined) problems.push(problem);
    refs.push([`clusters[${i}].token`, c.data.token]);
  });

  const nats = obj(doc["nats"]);
  const operator = obj(nats["operator"]);
  refs.unshift(
    ["nats.password", refAt(nats["password"])],
    ["nats.credentials", refAt(nats["credentials"])],
    ["nats.operator.signingKey", refAt(operator["signingKey"])],
    ["nats.operator.systemCredentials", refAt(operator["systemCredentials"])],
    ["api.token", refAt(obj(doc["api"])["token"])],
  );
  problems.push(...secretProblems(refs, env));

  const grpc = obj(doc["grpc"]);
  const tls = obj(grpc["tls"]);
  const file = (k: string) => (typeof tls[k] === "string" && tls[k] !== "" ? (tls[k] as string) : undefined);
  const certFile = file("certFile");
  const keyFile = file("keyFile");
  if (opts.tlsFiles !== false && grpc["insecure"] !== true && certFile !== undefined && keyFile !== undefined)
    problems.push(...tlsFileProblems(false, { certFile, keyFile, clientCaFile: file("clientCaFile") }));

  if (problems.length > 0 || !schema.success) return { problems: [...new Set(problems)] };
  // Whole and every secret readable: two clusters must not share a token.
  try {
    new TokenAuthenticator().replace(clusterCredentials(schema.data.clusters, env));
  } catch (err) {
    return { problems: [`clusters: ${(err as Error).message}`] };
  }
  return { config: schema.data, problems: [] };
}

/** The configuration of `text`, or a ConfigError listing every problem (`<source> is invalid:` and one line each). */
export function checkHubConfig(text: string, source: string, opts: CheckOptions): HubConfig {
  const { config, problems } = hubConfigProblems(text, opts);
  if (config === undefined) throw new ConfigError(`${source} is invalid:\n${problems.join("\n")}`);
  return config;
}
