import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import type { PeerCertificate } from "node:tls";
import { experimental, ServerCredentials } from "@grpc/grpc-js";

const { createCertificateProviderServerCredentials, FileWatcherCertificateProvider } = experimental;

export interface TlsOptions {
  readonly certFile: string;
  readonly keyFile: string;
  /** CA bundle that issues agents' client certificates: set, mutual TLS is required. */
  readonly clientCaFile?: string | undefined;
  /** Where a client certificate names its cluster: a URI SAN (default) or the subject CN. */
  readonly clientIdentity?: "uri" | "cn" | undefined;
  /** With clientIdentity "uri": the cluster name is what follows this prefix. */
  readonly clientUriPrefix?: string | undefined;
  /** How often the certificate, key and CA files are read again (rotation without restart). */
  readonly reloadIntervalMs?: number | undefined;
}

export const DEFAULT_CLIENT_URI_PREFIX = "spiffe://fleet-ccm/cluster/";
const DEFAULT_RELOAD_MS = 60_000;

/** Maps a verified client certificate to the cluster it names. */
export interface ClientIdentity {
  clusterOf(cert: PeerCertificate | undefined): string | undefined;
  describe(): string;
}

export interface HubTransport {
  readonly credentials: ServerCredentials;
  /** Set with mutual TLS. */
  readonly identity: ClientIdentity | undefined;
  /** Resolves once the files were first read (before that the listener drops connections). */
  ready(): Promise<void>;
  close(): void;
}

/** What a reload changed, for the hub's log. */
export type TlsReload =
  | { readonly file: "certificate"; readonly subject: string; readonly validTo: string }
  | { readonly file: "client CA" };

/**
 * The hub's listener credentials. TLS certificate, key and client CA are files read again every
 * reloadIntervalMs: a renewed certificate serves new connections while open streams keep theirs,
 * and a CA bundle holding the old and the new CA accepts clients of both during a rotation.
 * Files are checked once, synchronously, so a missing or unreadable file fails the start.
 */
export function serverCredentials(
  insecure: boolean,
  tls: TlsOptions | undefined,
  onReload?: (r: TlsReload) => void,
): HubTransport {
  if (insecure)
    return {
      credentials: ServerCredentials.createInsecure(),
      identity: undefined,
      ready: async () => {},
      close() {},
    };
  if (tls === undefined) throw new Error("grpc.tls is required unless grpc.insecure is set");
  checkPem("grpc.tls.certFile", tls.certFile, true);
  checkPem("grpc.tls.keyFile", tls.keyFile, false);
  if (tls.clientCaFile !== undefined) checkPem("grpc.tls.clientCaFile", tls.clientCaFile, true);
  const refreshIntervalMs = tls.reloadIntervalMs ?? DEFAULT_RELOAD_MS;
  const identityFiles = new FileWatcherCertificateProvider({
    certificateFile: tls.certFile,
    privateKeyFile: tls.keyFile,
    refreshIntervalMs,
  });
  const caFiles =
    tls.clientCaFile === undefined
      ? null
      : new FileWatcherCertificateProvider({ caCertificateFile: tls.clientCaFile, refreshIntervalMs });
  // grpc-js names these parameters the other way round; the order is identity, then CA.
  const credentials = createCertificateProviderServerCredentials(identityFiles, caFiles, caFiles !== null);
  // Our own listeners: they tell when the files were first read and log each change. They keep
  // the providers' timers running until close().
  let lastCert: Buffer | undefined;
  let lastCa: Buffer | undefined;
  let certLoaded: () => void = () => {};
  let caLoaded: () => void = () => {};
  const certReady = new Promise<void>((r) => {
    certLoaded = r;
  });
  const caReady =
    caFiles === null
      ? Promise.resolve()
      : new Promise<void>((r) => {
          caLoaded = r;
        });
  const onIdentity = (u: { certificate: Buffer } | null) => {
    if (u === null) return;
    if (lastCert !== undefined && !lastCert.equals(u.certificate)) {
      const c = new X509Certificate(u.certificate);
      onReload?.({ file: "certificate", subject: c.subject, validTo: c.validTo });
    }
    lastCert = u.certificate;
    certLoaded();
  };
  const onCa = (u: { caCertificate: Buffer } | null) => {
    if (u === null) return;
    if (lastCa !== undefined && !lastCa.equals(u.caCertificate)) onReload?.({ file: "client CA" });
    lastCa = u.caCertificate;
    caLoaded();
  };
  identityFiles.addIdentityCertificateListener(onIdentity);
  caFiles?.addCaCertificateListener(onCa);
  return {
    credentials,
    identity: caFiles === null ? undefined : clientIdentity(tls),
    ready: async () => {
      await Promise.all([certReady, caReady]);
    },
    close() {
      identityFiles.removeIdentityCertificateListener(onIdentity);
      caFiles?.removeCaCertificateListener(onCa);
    },
  };
}

/** What is wrong with the TLS files a configuration names, one line each (--check-config). */
export function tlsFileProblems(insecure: boolean, tls: TlsOptions | undefined): string[] {
  if (insecure || tls === undefined) return [];
  const problems: string[] = [];
  const files: [string, string | undefined, boolean][] = [
    ["grpc.tls.certFile", tls.certFile, true],
    ["grpc.tls.keyFile", tls.keyFile, false],
    ["grpc.tls.clientCaFile", tls.clientCaFile, true],
  ];
  for (const [field, file, certificate] of files) {
    if (file === undefined) continue;
    try {
      checkPem(field, file, certificate);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  return problems;
}

function checkPem(field: string, file: string, certificate: boolean): void {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new Error(`${field}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? "error"}`);
  }
  if (certificate) {
    try {
      new X509Certificate(text);
    } catch {
      throw new Error(`${field}: ${file} holds no PEM certificate`);
    }
  } else if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) {
    throw new Error(`${field}: ${file} holds no PEM private key`);
  }
}

export function clientIdentity(tls: Pick<TlsOptions, "clientIdentity" | "clientUriPrefix">): ClientIdentity {
  if (tls.clientIdentity === "cn")
    return {
      clusterOf: (cert) => {
        const cn = cert?.subject?.CN;
        return typeof cn === "string" && cn !== "" ? cn : undefined;
      },
      describe: () => "the cluster name as the subject CN",
    };
  const prefix = tls.clientUriPrefix ?? DEFAULT_CLIENT_URI_PREFIX;
  return {
    clusterOf: (cert) => {
      const names = uriSans(cert?.subjectaltname ?? "").filter((u) => u.startsWith(prefix));
      // Two cluster URIs in one certificate name no single cluster.
      if (names.length !== 1) return undefined;
      const name = names[0]?.slice(prefix.length) ?? "";
      return name === "" || name.includes("/") ? undefined : name;
    },
    describe: () => `one URI SAN ${prefix}<cluster>`,
  };
}

/** URI entries of Node's subjectaltname string ("DNS:a, URI:spiffe://x/y", quoted when odd). */
function uriSans(san: string): string[] {
  const out: string[] = [];
  for (const m of san.matchAll(/URI:("(?:[^"\\]|\\.)*"|[^,\s]+)/g)) {
    const v = m[1] ?? "";
    out.push(v.startsWith('"') ? (JSON.parse(v) as string) : v);
  }
  return out;
}
