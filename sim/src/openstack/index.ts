// The fake OpenStack cloud (see fake.ts): tests, benchmarks and the demo run the OpenStack provider against it.
export type { OpenStackFakeOptions } from "./fake.js";
export { NOVA_MAX_MICROVERSION, OPENSTACK_SPEC, OpenStackFake } from "./fake.js";
export { OPENSTACK_SPECS, openstackSpecChecker, servicePath } from "./spec.js";
export type {
  FakeFloatingIp as FakeOpenStackFloatingIp,
  FakeLoadBalancer as FakeOctaviaLoadBalancer,
  FakeNetwork as FakeNeutronNetwork,
  FakeServer as FakeNovaServer,
  Provisioning,
  ServerStatus as NovaServerStatus,
} from "./store.js";
