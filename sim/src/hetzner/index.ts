// The fake Hetzner Cloud API v1 (see fake.ts): tests, benchmarks and the demo run the Hetzner provider against it.
export type {
  CreateServerSpec,
  CreateVolumeSpec as CreateHetznerVolumeSpec,
  HetznerFakeOptions,
} from "./fake.js";
export {
  HETZNER_RATE_LIMIT,
  HETZNER_SPEC,
  HetznerFake,
  hetznerSpecChecker,
  hetznerSpecDocument,
  parseLabelSelector,
} from "./fake.js";
export type {
  FakeAction,
  FakeLbService,
  FakeLbTarget,
  FakeLoadBalancer as FakeHetznerLoadBalancer,
  FakeNetwork,
  FakeServer,
  FakeVolume as FakeHetznerVolume,
  ServerStatus,
} from "./store.js";
export { LB_TYPES, LOCATIONS } from "./store.js";
export type { HetznerBinding, HetznerWorld } from "./world.js";
export {
  ACCOUNT as HETZNER_ACCOUNT,
  ELSEWHERE as HETZNER_ELSEWHERE,
  NETWORK as HETZNER_NETWORK,
  REGION as HETZNER_REGION,
  startHetznerWorld,
} from "./world.js";
