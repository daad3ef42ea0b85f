import { readFileSync } from "node:fs";
import { isIP, type Socket } from "node:net";
import { connect, createSecureContext, type SecureContext } from "node:tls";
import { CallCredentials, ChannelCredentials, type ChannelOptions, experimental } from "@grpc/grpc-js";

export interface ClientTlsFiles {
  /** CA bundle that verifies the hub's certificate. */
  readonly caFile: string;
  /** This cluster's client certificate (it names the cluster) and key. */
  readonly certFile: string;
  readonly keyFile: string;
  readonly reloadIntervalMs?: number | undefined;
}

/** What verifies the hub: a CA (absent: the system's roots), or files with a client certificate too. */
export type HubTrust = { readonly caPem?: Buffer | undefined } | { readonly files: ClientTlsFiles };

/**
 * TLS credentials for the channel to the hub. grpc-js sends the target's host as the TLS server
 * name (SNI) even when it is an IP address, which RFC 6066 forbids and Node.js 26 refuses
 * (ERR_INVALID_ARG_VALUE), so an agent dialling `10.0.0.5:8443` could not connect there. These
 * send SNI only for a DNS name; the certificate is verified against the host either way (an IP
 * address needs an IP SAN). With files, they are read again for a new connection once
 * reloadIntervalMs has passed, so a renewed certificate needs no restart and open streams stay.
 */
export class HubTlsCredentials extends ChannelCredentials {
  private cached: { context: SecureContext; atMs: number } | undefined;

  constructor(
    private readonly trust: HubTrust,
    private readonly now: () => number = Date.now,
  ) {
    super();
  }

  _isSecure(): boolean {
    return true;
  }

  _equals(other: ChannelCredentials): boolean {
    return other === this;
  }

  _createSecureConnector(
    target: experimental.GrpcUri,
    options: ChannelOptions,
    callCredentials?: CallCredentials,
  ): experimental.SecureConnector {
    const host = tlsHost(target, options);
    const calls = callCredentials ?? CallCredentials.createEmpty();
    return {
      connect: (socket: Socket) =>
        new Promise<experimental.SecureConnectResult>((resolve, reject) => {
          let secureContext: SecureContext;
          try {
            secureContext = this.context();
          } catch (err) {
            reject(err);
            return;
          }
          const tlsSocket = connect(
            {
              socket,
              secureContext,
              host,
              ALPNProtocols: ["h2"],
              ...(isIP(host) === 0 && { servername: host }),
            },
            () => {
              if (!tlsSocket.authorized) reject(tlsSocket.authorizationError);
              else resolve({ socket: tlsSocket, secure: true });
            },
          );
          tlsSocket.once("error", reject);
        }),
      waitForReady: () => Promise.resolve(),
      getCallCredentials: () => calls,
      destroy: () => {},
    };
  }

  private context(): SecureContext {
    if (!("files" in this.trust)) {
      this.cached ??= { context: createSecureContext({ ca: this.trust.caPem }), atMs: 0 };
      return this.cached.context;
    }
    const f = this.trust.files;
    const t = this.now();
    if (this.cached === undefined || t - this.cached.atMs >= (f.reloadIntervalMs ?? 60_000)) {
      const context = createSecureContext({
        ca: readFileSync(f.caFile),
        cert: readFileSync(f.certFile),
        key: readFileSync(f.keyFile),
      });
      this.cached = { context, atMs: t };
    }
    return this.cached.context;
  }
}

/** The host the hub's certificate must name: the override if set, else the target's (through a proxy: the real target's). */
function tlsHost(target: experimental.GrpcUri, options: ChannelOptions): string {
  const override = options["grpc.ssl_target_name_override"];
  if (typeof override === "string" && override !== "") return override;
  const proxied = options["grpc.http_connect_target"];
  const authority = typeof proxied === "string" ? proxied.replace(/^dns:(\/\/[^/]*\/)?/, "") : target.path;
  const hp = experimental.splitHostPort(authority);
  return hp?.host ?? authority;
}
