import { agentInboxPrefix, clusterSubjectFilter } from "@fleet-ccm/proto";
import {
  createAccount,
  createOperator,
  createUser,
  encodeAccount,
  encodeOperator,
  encodeUser,
  fmtCreds,
  fromPublic,
  fromSeed,
  newScopedSigner,
  type SigningKey,
} from "@nats-io/jwt";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { type ClusterConfig, DEFAULT_LEASE_BUCKET, type HubConfig } from "../config/schema.js";
import { resolveSecret } from "../config/secret.js";

/**
 * NATS decentralized auth for the fleet (operator, system account, one fleet account).
 *
 * Each cluster's agent holds a user credential issued by a signing key of its own, which the
 * fleet account JWT lists as a *scoped* key: the server, not the credential, fixes what its
 * users may do (subscribe to the cluster's subjects and inbox, publish nothing). The account
 * JWT is a pure function of the hub configuration's clusters, so registering a cluster is
 * adding its key and unregistering is dropping it: the server disconnects and refuses every
 * user of a dropped key as soon as the new account JWT is pushed. No server file changes.
 */

export const FLEET_ACCOUNT_NAME = "fleet-ccm";
export const HUB_INBOX_PREFIX = "_INBOX_hub";

const UNLIMITED_ACCOUNT = {
  subs: -1,
  conn: -1,
  leaf: -1,
  data: -1,
  payload: -1,
  imports: -1,
  exports: -1,
  wildcards: true,
};

/** The fleet account also has JetStream (hub replicas keep their leases in a KV bucket); the system account may not. */
const FLEET_ACCOUNT_LIMITS = {
  ...UNLIMITED_ACCOUNT,
  mem_storage: -1,
  disk_storage: -1,
  streams: -1,
  consumer: -1,
};

const enc = new TextEncoder();

/** What a cluster's agent may do on NATS: read its own subjects and inbox, publish nothing. */
export function agentNatsPermissions(cluster: string): {
  pub: { deny: string[] };
  sub: { allow: string[] };
} {
  return {
    pub: { deny: [">"] },
    sub: { allow: [clusterSubjectFilter(cluster), `${agentInboxPrefix(cluster)}.>`] },
  };
}

/**
 * The hub publishes every cluster's desired state and reads only its own inbox; with replicas
 * it also uses JetStream for the lease bucket (the default bucket's subjects only).
 */
export const HUB_NATS_PERMISSIONS = {
  pub: { allow: ["fleet.v1.>", "$JS.API.>", `$KV.${DEFAULT_LEASE_BUCKET}.>`] },
  sub: { allow: [`${HUB_INBOX_PREFIX}.>`] },
};

/** The scoped signing-key role of a cluster (shown by `nats` tooling). */
export function clusterRole(cluster: string): string {
  return `cluster-${cluster}`;
}

export interface ClusterSigningKey {
  readonly cluster: string;
  /** Public key (A…) of the cluster's scoped signing key. */
  readonly signingKey: string;
}

export function isAccountPublicKey(key: string): boolean {
  try {
    fromPublic(key);
    return /^A[A-Z2-7]{55}$/.test(key);
  } catch {
    return false;
  }
}

/** The fleet account JWT, signed by the operator: one scoped signing key per cluster. */
export async function fleetAccountJwt(
  operatorSeed: string,
  accountPublicKey: string,
  clusters: readonly ClusterSigningKey[],
): Promise<string> {
  const signingKeys: SigningKey[] = clusters.map((c) =>
    newScopedSigner(c.signingKey, clusterRole(c.cluster), agentNatsPermissions(c.cluster)),
  );
  return encodeAccount(
    FLEET_ACCOUNT_NAME,
    accountPublicKey,
    { signing_keys: signingKeys, limits: FLEET_ACCOUNT_LIMITS },
    { signer: fromSeed(enc.encode(operatorSeed)) },
  );
}

export interface ClusterNatsCredential {
  /** Goes into the hub configuration (clusters[].natsSigningKey). */
  readonly signingKey: string;
  /** The agent's .creds file (JWT and user seed): a secret. */
  readonly creds: string;
}

/**
 * A new credential for a cluster's agent: a fresh scoped signing key issues a fresh user. The
 * signing key's seed is dropped here: nothing else is ever signed with it, and the user's
 * permissions come from the account JWT's scope, not from the user JWT.
 */
export async function newClusterNatsCredential(
  accountPublicKey: string,
  cluster: string,
): Promise<ClusterNatsCredential> {
  const signer = createAccount();
  const user = createUser();
  const jwt = await encodeUser(`agent-${cluster}`, user, accountPublicKey, {}, { signer, scopedUser: true });
  return { signingKey: signer.getPublicKey(), creds: new TextDecoder().decode(fmtCreds(jwt, user)) };
}

/** Everything `fleet-ccm nats-init` makes; seeds and creds are secrets. */
export interface NatsAuthSetup {
  readonly operatorJwt: string;
  /** Operator seed: the hub signs the fleet account JWT with it. */
  readonly operatorSeed: string;
  readonly systemAccount: string;
  readonly systemAccountJwt: string;
  /** The system account's user, with which the hub pushes account JWTs. */
  readonly systemCreds: string;
  readonly fleetAccount: string;
  /** The fleet account's seed: only needed to issue a new hub credential; keep it offline. */
  readonly fleetAccountSeed: string;
  readonly fleetAccountJwt: string;
  /** The hub's user in the fleet account. */
  readonly hubCreds: string;
}

export async function createNatsAuth(): Promise<NatsAuthSetup> {
  const operator = createOperator();
  const system = createAccount();
  const fleet = createAccount();
  const dec = new TextDecoder();
  const operatorJwt = await encodeOperator("fleet-ccm", operator, {
    system_account: system.getPublicKey(),
  });
  const systemAccountJwt = await encodeAccount(
    "SYS",
    system,
    { limits: UNLIMITED_ACCOUNT },
    { signer: operator },
  );
  const sysUser = createUser();
  const systemCreds = dec.decode(
    fmtCreds(await encodeUser("fleet-ccm-hub-system", sysUser, system), sysUser),
  );
  const operatorSeed = dec.decode(operator.getSeed());
  const fleetJwt = await fleetAccountJwt(operatorSeed, fleet.getPublicKey(), []);
  const hubUser = createUser();
  const hubCreds = dec.decode(
    fmtCreds(await encodeUser("fleet-ccm-hub", hubUser, fleet, HUB_NATS_PERMISSIONS), hubUser),
  );
  return {
    operatorJwt,
    operatorSeed,
    systemAccount: system.getPublicKey(),
    systemAccountJwt,
    systemCreds,
    fleetAccount: fleet.getPublicKey(),
    fleetAccountSeed: dec.decode(fleet.getSeed()),
    fleetAccountJwt: fleetJwt,
    hubCreds,
  };
}

/**
 * The nats-server (2.9+) configuration block of the setup: trust the operator, keep account
 * JWTs in `resolverDir` (the "full" resolver, which takes pushed updates), preloaded with the
 * system and fleet accounts. No secret in it.
 */
export function natsServerAuthConfig(setup: NatsAuthSetup, resolverDir: string): string {
  return [
    "# fleet-ccm decentralized auth (fleet-ccm nats-init). No secret here: the server holds",
    "# public keys and JWTs only. The hub keeps the fleet account's JWT current.",
    `operator: ${setup.operatorJwt}`,
    `system_account: ${setup.systemAccount}`,
    "resolver: {",
    "  type: full",
    `  dir: ${JSON.stringify(resolverDir)}`,
    "  allow_delete: false",
    '  interval: "2m"',
    "}",
    "resolver_preload: {",
    `  ${setup.systemAccount}: ${setup.systemAccountJwt}`,
    `  ${setup.fleetAccount}: ${setup.fleetAccountJwt}`,
    "}",
    "",
  ].join("\n");
}

/** How long the server has to answer a claims update. */
const PUSH_TIMEOUT_MS = 5000;

/**
 * Pushes an account JWT to the NATS servers over the system account
 * (`$SYS.REQ.ACCOUNT.<account>.CLAIMS.UPDATE`); resolves once a server accepted it.
 */
export async function pushAccountJwt(
  servers: readonly string[],
  systemCreds: string,
  accountPublicKey: string,
  accountJwt: string,
): Promise<void> {
  const nc = await connect({
    servers: [...servers],
    authenticator: credsAuthenticator(enc.encode(`${systemCreds}\n`)),
    name: "fleet-ccm-account-push",
    timeout: PUSH_TIMEOUT_MS,
    maxReconnectAttempts: 0,
  });
  try {
    const reply = await nc.request(`$SYS.REQ.ACCOUNT.${accountPublicKey}.CLAIMS.UPDATE`, accountJwt, {
      timeout: PUSH_TIMEOUT_MS,
    });
    const body = reply.json<{
      data?: { code?: number; message?: string };
      error?: { description?: string };
    }>();
    const code = body.data?.code ?? 0;
    if (code !== 200)
      throw new Error(
        `NATS refused the fleet account update: ${body.error?.description ?? body.data?.message ?? `code ${code}`}`,
      );
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/**
 * Makes the servers' fleet account JWT match `clusters` (nats.operator of the hub
 * configuration): the one way both the hub and `fleet-ccm unregister` update it.
 */
export async function pushFleetAccount(
  nats: HubConfig["nats"],
  clusters: readonly Pick<ClusterConfig, "name" | "natsSigningKey">[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const op = nats.operator;
  if (op === undefined) throw new Error("nats.operator is not set");
  const keys = clusters.flatMap((c) =>
    c.natsSigningKey === undefined ? [] : [{ cluster: c.name, signingKey: c.natsSigningKey }],
  );
  const jwt = await fleetAccountJwt(
    resolveSecret(op.signingKey, "nats.operator.signingKey", env),
    op.account,
    keys,
  );
  await pushAccountJwt(
    nats.servers,
    resolveSecret(op.systemCredentials, "nats.operator.systemCredentials", env),
    op.account,
    jwt,
  );
}
