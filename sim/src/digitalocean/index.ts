// The fake DigitalOcean API v2 (see fake.ts): tests run the DigitalOcean provider against it.
export type { CreateDropletSpec, DigitalOceanFakeOptions, DigitalOceanMutation } from "./fake.js";
export { DigitalOceanFake, DO_HOURLY_LIMIT } from "./fake.js";
export { bundleSpec, DIGITALOCEAN_SPEC, digitalOceanSpecChecker } from "./spec.js";
export type {
  FakeDroplet,
  FakeForwardingRule,
  FakeLoadBalancer as FakeDoLoadBalancer,
  LbStatus,
} from "./store.js";
