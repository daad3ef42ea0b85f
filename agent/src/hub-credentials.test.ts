import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, type Server, type TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { selfSignedCertificate } from "../../sim/src/util/certificate.js";
import { HubTlsCredentials, type HubTrust } from "./hub-credentials.js";

let dir: string;
let server: Server;
let port: number;
/** The server name (SNI) each accepted connection asked for; false: none (the server sees it once the client's Finished arrives). */
const sni: (string | false)[] = [];

function selfSigned(name: string, san: string): { crt: Buffer; key: Buffer } {
  const c = selfSignedCertificate(name, san);
  writeFileSync(join(dir, `${name}.crt`), c.cert);
  writeFileSync(join(dir, `${name}.key`), c.key);
  return { crt: Buffer.from(c.cert), key: Buffer.from(c.key) };
}

let hub: { crt: Buffer; key: Buffer };
let other: { crt: Buffer; key: Buffer };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fleet-ccm-hub-credentials-"));
  hub = selfSigned("hub", "IP:127.0.0.1,DNS:localhost");
  other = selfSigned("other", "DNS:elsewhere.example");
  server = createServer({ cert: hub.crt, key: hub.key, ALPNProtocols: ["h2"] }, (s: TLSSocket) => {
    sni.push((s as TLSSocket & { servername: string | false }).servername);
    s.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  port = typeof a === "object" && a !== null ? a.port : 0;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

/** Opens a TCP connection to the test server and runs the credentials' TLS handshake on it. */
async function handshake(creds: HubTlsCredentials, target: string): Promise<string> {
  const connector = creds._createSecureConnector({ path: target }, {});
  const socket = tcpConnect(port, "127.0.0.1");
  await new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  const before = sni.length;
  try {
    const r = await connector.connect(socket);
    expect(r.secure).toBe(true);
    const seen = await sniAfter(before);
    (r.socket as TLSSocket).destroy();
    return `ok alpn=${(r.socket as TLSSocket).alpnProtocol} sni=${seen}`;
  } catch (err) {
    socket.destroy();
    return `refused ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
  }
}

async function sniAfter(n: number): Promise<string> {
  for (let i = 0; i < 100 && sni.length <= n; i++) await new Promise((r) => setTimeout(r, 10));
  return String(sni[n]);
}

const ca = (pem: Buffer): HubTrust => ({ caPem: pem });

describe("HubTlsCredentials", () => {
  test("an IP address target: no SNI is sent (RFC 6066; Node.js 26 refuses one), the certificate is checked against the IP SAN", async () => {
    expect(await handshake(new HubTlsCredentials(ca(hub.crt)), "127.0.0.1:443")).toBe("ok alpn=h2 sni=false");
  });

  test("a DNS name target: SNI names it, and the certificate must name it too", async () => {
    expect(await handshake(new HubTlsCredentials(ca(hub.crt)), "localhost:443")).toBe(
      "ok alpn=h2 sni=localhost",
    );
  });

  test("a certificate that does not name the target, or is signed by another CA, is refused", async () => {
    // The hub's certificate names 127.0.0.1 and localhost, not 127.0.0.2 (a different IP SAN).
    expect(await handshake(new HubTlsCredentials(ca(hub.crt)), "127.0.0.2:443")).toBe(
      "refused ERR_TLS_CERT_ALTNAME_INVALID",
    );
    expect(await handshake(new HubTlsCredentials(ca(other.crt)), "127.0.0.1:443")).toMatch(/^refused /);
  });

  test("through an HTTP CONNECT proxy the real target names the certificate; an override wins", async () => {
    const creds = new HubTlsCredentials(ca(hub.crt));
    const via = (opts: Record<string, string>) =>
      creds._createSecureConnector({ path: "proxy.internal:3128" }, opts);
    for (const [opts, want] of [
      [{ "grpc.http_connect_target": "dns:localhost:443" }, "sni=localhost"],
      [{ "grpc.http_connect_target": "dns:127.0.0.1:443" }, "sni=false"],
      [{ "grpc.ssl_target_name_override": "localhost" }, "sni=localhost"],
    ] as const) {
      const socket = tcpConnect(port, "127.0.0.1");
      await new Promise((resolve) => socket.once("connect", resolve));
      const before = sni.length;
      const r = await via(opts).connect(socket);
      const seen = await sniAfter(before);
      (r.socket as TLSSocket).destroy();
      expect(`sni=${seen}`).toBe(want);
    }
  });

  test("files: read again for a new connection once the reload interval has passed", async () => {
    const caFile = join(dir, "ca.pem");
    const files = {
      caFile,
      certFile: join(dir, "hub.crt"),
      keyFile: join(dir, "hub.key"),
      reloadIntervalMs: 1000,
    };
    writeFileSync(caFile, other.crt);
    let now = 0;
    const creds = new HubTlsCredentials({ files }, () => now);
    expect(await handshake(creds, "127.0.0.1:443")).toMatch(/^refused /);
    writeFileSync(caFile, hub.crt);
    now = 999;
    expect(await handshake(creds, "127.0.0.1:443")).toMatch(/^refused /);
    now = 1000;
    expect(await handshake(creds, "127.0.0.1:443")).toBe("ok alpn=h2 sni=false");
  });

  test("a file that cannot be read fails the connection attempt with the reason, not the process", async () => {
    const creds = new HubTlsCredentials({
      files: {
        caFile: join(dir, "missing.pem"),
        certFile: join(dir, "hub.crt"),
        keyFile: join(dir, "hub.key"),
      },
    });
    expect(await handshake(creds, "127.0.0.1:443")).toBe("refused ENOENT");
  });
});
