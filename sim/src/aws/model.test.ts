import { describe, expect, test } from "@jest/globals";
import { AWS_MODEL_FILES } from "./fake.js";
import { AwsModel, ModelChecker } from "./model.js";
import { parseXml } from "./xml.js";

const ec2 = AwsModel.load("ec2", AWS_MODEL_FILES.ec2);
const elb = AwsModel.load("elb", AWS_MODEL_FILES.elb);
const elbv2 = AwsModel.load("elbv2", AWS_MODEL_FILES.elbv2);
const sts = AwsModel.load("sts", AWS_MODEL_FILES.sts);
const checker = new ModelChecker([ec2, elb, elbv2, sts]);

const form = (s: string) => new URLSearchParams(s);

describe("requests against the botocore models", () => {
  test("EC2: flattened lists by capitalised locationName, nested structures, typed scalars", () => {
    const { input, problems } = ec2.decodeRequest(
      "DescribeInstances",
      form(
        "Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=vpc-id&Filter.1.Value.1=vpc-1&Filter.1.Value.2=vpc-2&MaxResults=50",
      ),
    );
    expect(problems).toEqual([]);
    expect(input).toEqual({ Filters: [{ Name: "vpc-id", Values: ["vpc-1", "vpc-2"] }], MaxResults: 50 });
    expect(
      ec2.decodeRequest(
        "CreateSecurityGroup",
        form(
          "GroupName=g&GroupDescription=d&VpcId=vpc-1&TagSpecification.1.ResourceType=security-group&TagSpecification.1.Tag.1.Key=k&TagSpecification.1.Tag.1.Value=v",
        ),
      ),
    ).toEqual({
      input: {
        GroupName: "g",
        Description: "d",
        VpcId: "vpc-1",
        TagSpecifications: [{ ResourceType: "security-group", Tags: [{ Key: "k", Value: "v" }] }],
      },
      problems: [],
    });
  });

  test("every unknown parameter, bad type, bad enum, gap and missing required member is a problem", () => {
    expect(
      ec2.decodeRequest("DescribeInstances", form("InstanceIds.1=i-1&MaxResults=lots&Filter.2.Name=x"))
        .problems,
    ).toEqual([
      "InstanceIds: not a member of DescribeInstancesRequest",
      'MaxResults: Integer must be an integer, got "lots"',
      "Filter: list indexes must run 1..N (got 2 at position 1)",
    ]);
    expect(ec2.decodeRequest("CreateTags", form("ResourceId.1=i-1")).problems).toEqual([
      "Tags: required by CreateTagsRequest",
    ]);
    expect(
      elbv2.decodeRequest("CreateTargetGroup", form("Name=t&Protocol=TCPP&Port=80&VpcId=vpc-1")).problems,
    ).toEqual([expect.stringContaining('"TCPP" is not one of ProtocolEnum')]);
  });

  test("awsQuery: lists under .member.N, an empty list as Name=", () => {
    expect(
      elb.decodeRequest(
        "DescribeLoadBalancers",
        form("LoadBalancerNames.member.1=a&LoadBalancerNames.member.2=b"),
      ),
    ).toEqual({
      input: { LoadBalancerNames: ["a", "b"] },
      problems: [],
    });
    expect(elb.decodeRequest("DescribeLoadBalancers", form("LoadBalancerNames.1=a")).problems).toEqual([
      "LoadBalancerNames: list items go under LoadBalancerNames.member.N",
    ]);
    expect(
      elbv2.decodeRequest("SetSecurityGroups", form("LoadBalancerArn=arn&SecurityGroups=")).input,
    ).toEqual({
      LoadBalancerArn: "arn",
      SecurityGroups: [],
    });
  });
});

describe("STS against its botocore model (the hand-added fixture)", () => {
  test("AssumeRole as the SDK sends it decodes clean; bounds and unknown parameters are problems", () => {
    expect(
      checker.checkRequest({
        method: "POST",
        path: "/",
        headers: {},
        query: form(
          "Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Ff&RoleSessionName=fleet-ccm&DurationSeconds=3600&ExternalId=ext-1",
        ),
      }),
    ).toEqual({ specOperation: "AssumeRole", problems: [] });
    expect(
      sts.decodeRequest("AssumeRole", form("RoleArn=short&RoleSessionName=s&DurationSeconds=60&Serial=1"))
        .problems,
    ).toEqual([
      "RoleArn: shorter than 20",
      "RoleSessionName: shorter than 2",
      "DurationSeconds: 60 outside 900..43200",
      "Serial: not a member of AssumeRoleRequest",
    ]);
  });

  test("an AssumeRole answer: rendered from the model, checked element by element, wrapped in AssumeRoleResult", () => {
    const xml = sts.renderResponse(
      "AssumeRole",
      {
        Credentials: {
          AccessKeyId: "ASIA0123456789ABCDEF",
          SecretAccessKey: "s",
          SessionToken: "t",
          Expiration: new Date(0),
        },
        AssumedRoleUser: { AssumedRoleId: "AROA1:s1", Arn: "arn:aws:sts::1:assumed-role/r/s1" },
      },
      "req-1",
    );
    expect(xml).toContain(
      '<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials><AccessKeyId>',
    );
    const check = (body: string, status = 200) =>
      checker.checkResponse({ method: "POST", path: "/" }, { status, headers: {}, body }).problems;
    expect(check(xml)).toEqual([]);
    expect(
      check(
        '<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials><Expiration>soon</Expiration></Credentials><Token>x</Token></AssumeRoleResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></AssumeRoleResponse>',
      ),
    ).toEqual([
      expect.stringContaining('Expiration: dateType must be an ISO 8601 UTC timestamp, got "soon"'),
      "/AssumeRoleResponse/Token: not an element of AssumeRoleResponse",
    ]);
    expect(
      check(
        '<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>m</Message></Error><RequestId>r</RequestId></ErrorResponse>',
        403,
      ),
    ).toEqual([]);
    expect(
      check(
        '<ErrorResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><Error><Type>Sender</Type><Code>X</Code><Message>m</Message></Error><RequestId>r</RequestId></ErrorResponse>',
        400,
      ),
    ).toEqual(["<ErrorResponse>: xmlns http://ec2.amazonaws.com/doc/2016-11-15/ is not a query service's"]);
  });
});

describe("answers against the botocore models", () => {
  test("a rendered answer checks clean; the renderer refuses what the model lacks", () => {
    const xml = ec2.renderResponse(
      "DescribeInstances",
      {
        Reservations: [
          {
            ReservationId: "r-1",
            Instances: [
              {
                InstanceId: "i-1",
                State: { Code: 16, Name: "running" },
                LaunchTime: new Date(0),
                Tags: [{ Key: "k", Value: "v" }],
              },
            ],
          },
        ],
      },
      "req-1",
    );
    expect(xml).toContain(
      "<reservationSet><item><reservationId>r-1</reservationId><instancesSet><item><instanceId>i-1</instanceId>",
    );
    expect(
      checker.checkResponse({ method: "POST", path: "/" }, { status: 200, headers: {}, body: xml }).problems,
    ).toEqual([]);
    expect(() => ec2.renderResponse("DescribeInstances", { Instances: [] }, "r")).toThrow(
      "Instances is not a member of DescribeInstancesResult",
    );
    expect(() => ec2.renderResponse("DescribeInstances", { NextToken: true }, "r")).toThrow(
      "nextToken must be a string",
    );
  });

  test("the checker reads the XML itself: wrong names, types, wrappers and envelopes are problems", () => {
    const check = (body: string, status = 200) =>
      checker.checkResponse({ method: "POST", path: "/" }, { status, headers: {}, body }).problems;
    expect(
      check(
        '<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><reservationSet><member><instanceId>i</instanceId></member></reservationSet></DescribeInstancesResponse>',
      ),
    ).toEqual(["/DescribeInstancesResponse/reservationSet/member: list items are <item>"]);
    expect(
      check(
        '<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><reservationSet><item><instancesSet><item><launchTime>yesterday</launchTime><amiLaunchIndex>x</amiLaunchIndex></item></instancesSet></item></reservationSet></DescribeInstancesResponse>',
      ),
    ).toEqual([
      expect.stringContaining('launchTime: DateTime must be an ISO 8601 UTC timestamp, got "yesterday"'),
      expect.stringContaining('amiLaunchIndex: Integer must be an integer, got "x"'),
    ]);
    expect(
      check(
        '<DescribeLoadBalancersResponse xmlns="http://elasticloadbalancing.amazonaws.com/doc/2012-06-01/"><LoadBalancerDescriptions/><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></DescribeLoadBalancersResponse>',
      ),
    ).toEqual(["<DescribeLoadBalancersResponse>: the result goes in <DescribeLoadBalancersResult>"]);
    expect(
      check(
        "<Response><Errors><Error><Code>X</Code></Error></Errors><RequestID>r</RequestID></Response>",
        400,
      ),
    ).toEqual(["<Errors><Error> holds Code,Message"]);
    expect(
      check(
        '<ErrorResponse xmlns="http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/"><Error><Type>Sender</Type><Code>ValidationError</Code><Message>m</Message></Error><RequestId>r</RequestId></ErrorResponse>',
        200,
      ),
    ).toEqual(["an error envelope with status 200"]);
  });

  test("error codes and statuses: the query services' as their models say, EC2's server codes 5xx, others 4xx", () => {
    const check = (body: string, status: number) =>
      checker.checkResponse({ method: "POST", path: "/" }, { status, headers: {}, body }).problems;
    const query = (ns: string, code: string) =>
      `<ErrorResponse xmlns="http://elasticloadbalancing.amazonaws.com/doc/${ns}/"><Error><Type>Sender</Type><Code>${code}</Code><Message>m</Message></Error><RequestId>r</RequestId></ErrorResponse>`;
    const ec2Error = (code: string) =>
      `<Response><Errors><Error><Code>${code}</Code><Message>m</Message></Error></Errors><RequestID>r</RequestID></Response>`;
    expect(check(query("2015-12-01", "TargetGroupNotFound"), 400)).toEqual([]);
    expect(check(query("2012-06-01", "LoadBalancerNotFound"), 400)).toEqual([]);
    expect(check(query("2012-06-01", "Throttling"), 400)).toEqual([]);
    expect(check(query("2012-06-01", "InvalidConfigurationRequest"), 400)).toEqual([
      "InvalidConfigurationRequest is a 409, not a 400",
    ]);
    expect(check(query("2012-06-01", "TargetGroupNotFound"), 400)).toEqual([
      "TargetGroupNotFound is neither an error of elb's model nor a common AWS error",
    ]);
    expect(check(ec2Error("InvalidInstanceID.NotFound"), 400)).toEqual([]);
    expect(check(ec2Error("RequestLimitExceeded"), 503)).toEqual([]);
    expect(check(ec2Error("RequestLimitExceeded"), 400)).toEqual([
      "EC2's RequestLimitExceeded is not a 400 (it is 503)",
    ]);
    expect(check(ec2Error("DependencyViolation"), 500)).toEqual(["EC2's DependencyViolation is not a 500"]);
  });

  test("the XML reader unescapes text and refuses broken documents", () => {
    expect(parseXml('<?xml version="1.0"?><a x="1"><b>&lt;&amp;&#65;</b><c/></a>')).toEqual({
      name: "a",
      attributes: { x: "1" },
      text: "",
      children: [
        { name: "b", attributes: {}, children: [], text: "<&A" },
        { name: "c", attributes: {}, children: [], text: "" },
      ],
    });
    expect(() => parseXml("<a><b></a>")).toThrow("</b> expected");
    expect(() => parseXml("<a>x<b/></a>")).toThrow("<a> mixes text and elements");
  });
});
