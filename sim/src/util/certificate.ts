import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestCertificate {
  /** PEM certificate. */
  readonly cert: string;
  /** PEM PKCS#8 private key. */
  readonly key: string;
}

/**
 * A fresh self-signed P-256 certificate for `commonName` (openssl), for TLS tests; with
 * `subjectAltName` (e.g. "IP:127.0.0.1,DNS:localhost") the names a client checks.
 */
export function selfSignedCertificate(commonName: string, subjectAltName?: string): TestCertificate {
  const dir = mkdtempSync(join(tmpdir(), "fleet-ccm-cert-"));
  try {
    const key = join(dir, "tls.key");
    const cert = join(dir, "tls.crt");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "2",
        "-keyout",
        key,
        "-out",
        cert,
        "-subj",
        `/CN=${commonName}`,
        ...(subjectAltName === undefined ? [] : ["-addext", `subjectAltName=${subjectAltName}`]),
      ],
      { stdio: "ignore" },
    );
    return { cert: readFileSync(cert, "utf8"), key: readFileSync(key, "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
