// The fake DigitalOcean API v2 (see fake.ts): tests run the DigitalOcean provider against it.
export type {
  CreateCertificateSpec,
  CreateDropletSpec,
  CreateVolumeSpec,
  DigitalOceanFakeOptions,
  DigitalOceanMutation,
} from "./fake.js";
export { DigitalOceanFake, DO_HOURLY_LIMIT } from "./fake.js";
export {
  bundleSpec,
  DIGITALOCEAN_SPEC,
  DIGITALOCEAN_SUPPLEMENT_PATHS,
  digitalOceanSpecChecker,
} from "./spec.js";
export type {
  CertificateType,
  FakeCertificate,
  FakeDroplet,
  FakeForwardingRule,
  FakeLoadBalancer as FakeDoLoadBalancer,
  FakeVolume as FakeDoVolume,
  LbStatus,
} from "./store.js";
