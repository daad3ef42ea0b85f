import type { PeerCertificate } from "node:tls";
import { describe, expect, test } from "@jest/globals";
import { clientIdentity, serverCredentials, tlsFileProblems } from "./tls.js";

const cert = (san: string, cn = "x") =>
  ({ subjectaltname: san, subject: { CN: cn } }) as unknown as PeerCertificate;

describe("clientIdentity", () => {
  const uri = clientIdentity({});
  test("the cluster is what follows the URI prefix, in exactly one URI SAN", () => {
    expect(uri.clusterOf(cert("DNS:a.example, URI:spiffe://fleet-ccm/cluster/prod-1"))).toBe("prod-1");
    expect(uri.clusterOf(cert('URI:"spiffe://fleet-ccm/cluster/prod-2"'))).toBe("prod-2");
    expect(
      uri.clusterOf(cert("URI:spiffe://fleet-ccm/cluster/a, URI:spiffe://fleet-ccm/cluster/b")),
    ).toBeUndefined();
    expect(uri.clusterOf(cert("URI:spiffe://other/cluster/a"))).toBeUndefined();
    expect(uri.clusterOf(cert("URI:spiffe://fleet-ccm/cluster/a/b"))).toBeUndefined();
    expect(uri.clusterOf(cert("DNS:prod-1"))).toBeUndefined();
    expect(uri.clusterOf(undefined)).toBeUndefined();
  });
  test("cn mode reads the subject CN; a custom prefix is honoured", () => {
    expect(clientIdentity({ clientIdentity: "cn" }).clusterOf(cert("", "prod-3"))).toBe("prod-3");
    const custom = clientIdentity({ clientUriPrefix: "urn:fleet:" });
    expect(custom.clusterOf(cert("URI:urn:fleet:prod-4"))).toBe("prod-4");
  });
});

test("a missing certificate file fails the start with the field and the file, not a stack", () => {
  expect(() =>
    serverCredentials(false, { certFile: "/nonexistent/tls.crt", keyFile: "/nonexistent/tls.key" }),
  ).toThrow("grpc.tls.certFile: cannot read /nonexistent/tls.crt: ENOENT");
  expect(() => serverCredentials(false, undefined)).toThrow(
    "grpc.tls is required unless grpc.insecure is set",
  );
});

test("tlsFileProblems lists every unreadable or wrong TLS file, one line each", () => {
  expect(tlsFileProblems(true, undefined)).toEqual([]);
  const here = new URL(import.meta.url).pathname;
  expect(
    tlsFileProblems(false, { certFile: here, keyFile: "/nonexistent/k", clientCaFile: "/nonexistent/ca" }),
  ).toEqual([
    `grpc.tls.certFile: ${here} holds no PEM certificate`,
    "grpc.tls.keyFile: cannot read /nonexistent/k: ENOENT",
    "grpc.tls.clientCaFile: cannot read /nonexistent/ca: ENOENT",
  ]);
});
