// The fake Linode API v4 (see fake.ts): tests, benchmarks and the demo run the Linode provider against it.
export type {
  CreateLinodeSpec,
  LinodeFakeOptions,
  LinodeInventory,
  LinodeMutation,
} from "./fake.js";
export { LINODE_FORMATS, LINODE_SPEC, LinodeFake, linodeSpecChecker } from "./fake.js";
export type {
  FakeFirewall,
  FakeLinode,
  FakeNbConfig,
  FakeNodeBalancer,
  FakeVpc,
  FirewallRule,
  FirewallRules,
} from "./store.js";
