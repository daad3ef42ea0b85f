/**
 * AWS's default service quotas the fake enforces, with the error AWS answers at each. Names as
 * in AWS's quota documentation ("Quotas for your Classic Load Balancers", "Quotas for your
 * Network Load Balancers", "Amazon VPC quotas"); every value may be raised per account in AWS,
 * so each is an option of the fake.
 */
export interface AwsQuotas {
  /** Classic: "Listeners per load balancer", 100 (InvalidConfigurationRequest: classic ELB models no TooManyListeners). */
  readonly classicListenersPerLoadBalancer: number;
  /** Classic: "Security groups per load balancer", 5 (InvalidConfigurationRequest). */
  readonly classicSecurityGroupsPerLoadBalancer: number;
  /** NLB: "Listeners per load balancer", 50 (TooManyListeners). */
  readonly nlbListenersPerLoadBalancer: number;
  /** NLB: "Security groups per load balancer", 5 (InvalidConfigurationRequest). */
  readonly nlbSecurityGroupsPerLoadBalancer: number;
  /** NLB: "Target groups per Region", 3000 (TooManyTargetGroups). */
  readonly targetGroupsPerRegion: number;
  /** NLB: "Load balancers per target group", 1 (TargetGroupAssociationLimit). */
  readonly loadBalancersPerTargetGroup: number;
  /** VPC: "Inbound or outbound rules per security group", 60 inbound (RulesPerSecurityGroupLimitExceeded). */
  readonly inboundRulesPerSecurityGroup: number;
}

export const AWS_DEFAULT_QUOTAS: AwsQuotas = {
  classicListenersPerLoadBalancer: 100,
  classicSecurityGroupsPerLoadBalancer: 5,
  nlbListenersPerLoadBalancer: 50,
  nlbSecurityGroupsPerLoadBalancer: 5,
  targetGroupsPerRegion: 3000,
  loadBalancersPerTargetGroup: 1,
  inboundRulesPerSecurityGroup: 60,
};
