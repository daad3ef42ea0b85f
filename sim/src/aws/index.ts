export { zonesOf } from "./ec2.js";
export type { AccountKeys, AwsFakeOptions, InstanceSpec } from "./fake.js";
export { AwsFake, EC2_VERSION, ELB_VERSION, ELBV2_VERSION, STS_VERSION } from "./fake.js";
export { AwsModel, ModelChecker } from "./model.js";
export type { Ec2Instance, InstanceStateName } from "./state.js";
export type { AwsBinding, AwsResource, AwsWorld } from "./world.js";
export { startAwsWorld } from "./world.js";
