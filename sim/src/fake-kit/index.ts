// The kit vendor fakes are built on: the JSON REST pipeline, tables, request log, faults, pagination, HTTP, spec checks.
// docs/fake-kit.md explains how to build a fake with it.
export type { ConsistencyView } from "./consistency.js";
export { consistentView, visibleVersion } from "./consistency.js";
export type { ErrorRenderer, FakeErrorKind, WireAnswer } from "./errors.js";
export { byKind, errorFields, FakeError } from "./errors.js";
export type { CallFault, FaultConfig, FaultsView, InjectedFault } from "./faults.js";
export { effectiveFaults, FAULT_ERRORS, FaultInjector, NO_FAULTS, validateFaults } from "./faults.js";
export type { ExchangeOptions, RouteLike, RouteMatch } from "./http.js";
export {
  DEFAULT_MAX_BODY_BYTES,
  Exchange,
  FakeHttpServer,
  Router,
  readBody,
  readJsonBody,
  readQueryParams,
  sendJson,
  sendText,
  sleep,
  startFake,
} from "./http.js";
export type { FormatCheck, OpenApiOptions } from "./openapi.js";
export { OpenApiChecker } from "./openapi.js";
export type { NumberedPage, PageSizeRule } from "./pagination.js";
export { decodeSeqToken, encodeSeqToken, numberedPage, parsePageSize, parseSeqToken } from "./pagination.js";
export type { RandomSource } from "./random.js";
export { seededRandom } from "./random.js";
export { defaultBurst, TokenBucket } from "./rate-limit.js";
export type {
  CallCount,
  CallStats,
  CallStatsGroup,
  LoggedRequest,
  RequestFilter,
} from "./request-log.js";
export { DEFAULT_LOG_CAPACITY, RequestLog } from "./request-log.js";
export type { SpecChecker, SpecHook, SpecProblem, SpecRequest, SpecResponse } from "./spec.js";
export { SpecViolationError, specHook } from "./spec.js";
export { fixtureSpecPath } from "./specs.js";
export type { TableItem, TablePage, TableView } from "./table.js";
export { freshId, hasTags, ResourceTable } from "./table.js";
export type {
  KeyedListing,
  ListFaults,
  ServingChecker,
  VendorAnswer,
  VendorCall,
  VendorFakeConfig,
  VendorListing,
  VendorMutation,
  VendorRoute,
} from "./vendor-fake.js";
export { VendorFake } from "./vendor-fake.js";
